// What LIB/packs holds, by kind (core/store/layout.hpp): the one listing of
// packs/ that readers, verify and gc share.
#pragma once

#include <string>
#include <vector>

#include "core/store/layout.hpp"

namespace hpak::store {

struct PacksListing {
  std::vector<Digest> pack_files;   // pack-<hex>.hpak, sorted
  std::vector<Digest> index_files;  // pack-<hex>.hidx, sorted
  std::vector<std::string> condemned; // *.condemned names a gc left
  std::vector<std::string> temps;     // .tmp-* names (being written, or left by a killed writer)
  std::vector<std::string> other;     // anything else but the multi-pack index's files
  std::vector<Digest> midx_layers;    // midx-<hex>.midx (by trailer), sorted
  bool has_midx = false;              // the legacy multi.midx

  // Every file of the multi-pack index: the layers, then the legacy file.
  std::vector<std::string> midx_files(const Layout& layout) const;

  // Packs readers see: those with an index (whether or not the pack file is
  // still there: readers open it and skip it if it is gone).
  const std::vector<Digest>& visible() const { return index_files; }
  bool has_pack_file(const Digest& d) const;
  bool has_index_file(const Digest& d) const;
};

PacksListing list_packs(const Layout& layout);

} // namespace hpak::store
