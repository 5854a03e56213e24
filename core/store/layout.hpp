// The storage layer's map of a library directory: every folder, file name and
// suffix a library holds is named here and nowhere else (pack file names:
// formats/pack_name.hpp). man/hpak-library.7 describes the same layout:
//
//   LIB/HPAKLIB                      marker: "hpak-library 1" (+ "shared", "level N")
//   LIB/packs/pack-<sha256>.hpak     immutable; named by the SHA-256 of the file
//   LIB/packs/pack-<sha256>.hidx     its index, published *after* the pack: a pack
//                                    is visible exactly when its .hidx exists
//   LIB/packs/midx-<sha256>.midx     a layer of the multi-pack index (disposable,
//                                    rebuildable; formats/midx_format.hpp), named by its trailer
//   LIB/packs/multi.midx             the single multi-pack index of older hpak: read as a layer
//   LIB/packs/*.condemned            packs (and indexes) a gc is deleting: invisible
//   LIB/catalogs/<name>              "hpak-catalog 1\n<catalog digest>\n", replaced by rename
//   LIB/used/<name>                  mtime = last restore of that catalog
//   LIB/tmp/                         packs being written (temp names)
//   LIB/locks/gc.lock                held by a running gc (or repair)
//   LIB/locks/publish.lock           shared by adds setting a name, exclusive by gc
//   LIB/damaged/                     packs `hpak repair` moved out of packs/ (made on demand)
//   LIB/quarantine/                  entries of catalogs/ that are not name files (a directory,
//                                    a link, a malformed file), moved aside by `hpak repair` or
//                                    `hpak catalogs rm` as catalogs.<name>.<time> (made on demand)
//   LIB/workspaces/<id>              gc roots of writable workspaces (hpak mount --writable;
//                                    core/store/workspace_roots.hpp; made on demand)
//   LIB/id                           a shared library's id (32 hex digits), made by its owner
//   LIB/allowed_signers              restores require a name signed by one of these keys
//   LIB/signatures/<name>            the signed statement of a name (hpak sign)
//   LIB/remote/published             what `hpak publish` sent last, per destination
//   LIB/remote/indexes/              pack indexes fetched from a remote library
//   */.tmp-*                         AtomicFile temp names (base/os/file.hpp)
#pragma once

#include <string>
#include <string_view>

#include "base/hash.hpp"

namespace hpak::store {

constexpr const char* kMarkerFile = "HPAKLIB";
constexpr const char* kMidxFile = "multi.midx";
// Created by `hpak init`, in this order.
constexpr const char* kLibrarySubdirs[] = {"packs", "catalogs", "used", "tmp", "locks"};

class Layout {
public:
  explicit Layout(std::string root) : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  std::string marker() const { return root_ + "/" + kMarkerFile; }
  std::string subdir(const char* name) const { return root_ + "/" + name; }
  std::string packs_dir() const { return root_ + "/packs"; }
  std::string catalogs_dir() const { return root_ + "/catalogs"; }
  std::string used_dir() const { return root_ + "/used"; }
  std::string tmp_dir() const { return root_ + "/tmp"; }
  std::string locks_dir() const { return root_ + "/locks"; }
  std::string damaged_dir() const { return root_ + "/damaged"; }
  std::string quarantine_dir() const { return root_ + "/quarantine"; }
  std::string workspaces_dir() const { return root_ + "/workspaces"; }
  // Where a junk entry catalogs/NAME goes, moved aside at `stamp` (UTC,
  // YYYYMMDDTHHMMSSZ); `n` > 0 when that name is taken already.
  std::string quarantined_catalog(const std::string& name, const std::string& stamp, int n = 0) const {
    return quarantine_dir() + "/catalogs." + name + "." + stamp + (n ? "." + std::to_string(n) : "");
  }

  std::string pack_path(const Digest& file_sum) const;
  std::string index_path(const Digest& file_sum) const;
  // The legacy single multi-pack index (read as a layer; no longer written).
  std::string midx_path() const { return packs_dir() + "/" + kMidxFile; }
  std::string midx_layer_path(const Digest& trailer) const;
  std::string catalog_path(const std::string& name) const { return catalogs_dir() + "/" + name; }
  std::string used_path(const std::string& name) const { return used_dir() + "/" + name; }
  std::string gc_lock() const { return locks_dir() + "/gc.lock"; }
  std::string id_file() const { return root_ + "/id"; }
  std::string allowed_signers_file() const { return root_ + "/allowed_signers"; }
  std::string signatures_dir() const { return root_ + "/signatures"; }
  std::string remote_dir() const { return root_ + "/remote"; }
  std::string remote_published() const { return remote_dir() + "/published"; }
  std::string remote_indexes_dir() const { return remote_dir() + "/indexes"; }
  std::string publish_lock() const { return locks_dir() + "/publish.lock"; }
  // Where a writer's pack is written before it is published: tmp/<what> (an
  // AtomicFile base name: the file is tmp/.tmp-<what>-<random>).
  std::string temp_pack(const char* what) const { return tmp_dir() + "/" + what; }

private:
  std::string root_;
};

// The index beside any pack file: "dir/env.hpak" -> "dir/env.hidx"; other
// names get ".hidx" appended.
std::string index_path_for(const std::string& pack_path);
// The name a gc renames a pack file or index to while it deletes it.
std::string condemned_path(const std::string& path);
// An AtomicFile temp name: being written, or left by a killed writer.
bool is_temp_name(std::string_view name);

} // namespace hpak::store
