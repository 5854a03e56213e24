// Walks a directory tree once into catalog nodes (without file digests yet).
//
// The walk is fd-relative (openat/fstatat with AT_SYMLINK_NOFOLLOW), sorts each
// directory's names bytewise, and emits nodes depth-first, which is exactly the
// catalog order (formats/catalog_format.hpp). A regular file seen again through
// another hard link becomes a Hardlink node naming the first path. Devices,
// sockets and fifos are refused unless `skip_special`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "formats/catalog_format.hpp"

namespace hpak {

struct ScanOptions {
  bool skip_special = false;
  bool record_mtime = true;
  // Paths (relative to the root) to leave out, e.g. the pack being written.
  std::function<bool(const std::string& rel)> exclude;
};

struct ScannedTree {
  std::vector<formats::Node> nodes;
  formats::PathStore paths; // the nodes' paths (a Catalog takes it with them)
  std::vector<size_t> files; // indices of File nodes, in catalog order
  std::vector<std::string> skipped; // special files skipped
  uint64_t file_bytes = 0;
};

// Walks the directory open as `rootfd` (`root` names it in errors).
ScannedTree scan_tree(int rootfd, const std::string& root, const ScanOptions& opts);

} // namespace hpak
