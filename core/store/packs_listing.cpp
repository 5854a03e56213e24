#include "core/store/packs_listing.hpp"

#include <algorithm>

#include "core/store/dir_stream.hpp"
#include "formats/pack_name.hpp"

namespace hpak::store {

bool PacksListing::has_pack_file(const Digest& d) const { return std::binary_search(pack_files.begin(), pack_files.end(), d); }

bool PacksListing::has_index_file(const Digest& d) const { return std::binary_search(index_files.begin(), index_files.end(), d); }

std::vector<std::string> PacksListing::midx_files(const Layout& layout) const {
  std::vector<std::string> out;
  for (auto& t : midx_layers) out.push_back(layout.midx_layer_path(t));
  if (has_midx) out.push_back(layout.midx_path());
  return out;
}

PacksListing list_packs(const Layout& layout) {
  PacksListing out;
  for (auto& name : list_dir(layout.packs_dir())) {
    auto f = formats::parse_pack_file_name(name);
    if (f && f->condemned) out.condemned.push_back(name);
    else if (f) (f->kind == formats::PackFileKind::Pack ? out.pack_files : out.index_files).push_back(f->sum);
    else if (name == kMidxFile) out.has_midx = true;
    else if (auto layer = formats::parse_midx_layer_name(name)) out.midx_layers.push_back(*layer);
    else if (is_temp_name(name)) out.temps.push_back(name);
    else out.other.push_back(name);
  }
  std::sort(out.pack_files.begin(), out.pack_files.end());
  std::sort(out.index_files.begin(), out.index_files.end());
  std::sort(out.midx_layers.begin(), out.midx_layers.end());
  return out;
}

} // namespace hpak::store
