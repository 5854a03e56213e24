// hpak commit: a writable view (core/mount/workspace.hpp) recorded as a new
// catalog. The base catalog is the one the workspace mounted (by digest);
// only what overlayfs's upper layer holds is read and hashed:
//   - a whiteout (a character device 0/0) removes the path and its subtree;
//   - a directory with trusted.overlay.opaque = "y" drops the base's
//     children first (a directory removed and made again);
//   - any other directory keeps (or replaces) the base's node with its own
//     mode and mtime and is walked;
//   - a regular file becomes a File node hashed from the upper layer, its
//     relocations found and classified as pack does (core/pack/pack_passes:
//     hash_file) against the base's roots plus the view's real path (files
//     written in the view may hold it); a file linked several times in the
//     upper layer becomes one File node and Hardlink nodes;
//   - a symlink becomes a Symlink node (its target's relocations found).
// The mount uses redirect_dir=off and metacopy=off, so a renamed directory
// and a chmod are copied up whole; an upper entry with a redirect or metacopy
// xattr is refused. A base Hardlink whose file was removed or replaced becomes
// a File node with the old content. FIFOs, sockets and devices are refused.
//
// Upper files are hashed, and new objects read and compressed, on all cores
// (base/parallel.hpp).
//
// Objects go through Library::add_set (the publish protocol of add_tree).
// An upper file is read once: the bytes hashed are kept in memory (up to
// CommitOptions::keep_upper_bytes in all, MergedView::upper_bytes) and are what is written;
// a file beyond that is read again and its SHA-256 checked against the digest
// it was hashed to. A base object is copied from the base library's packs
// (decoded and checked), so the new catalog may go into another library.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "base/progress.hpp"
#include "core/library/library.hpp"
#include "formats/catalog_format.hpp"

namespace hpak {

// The most bytes of upper files kept from the hash to the write (256 MiB):
// a commit of a change no larger reads each new file once.
inline constexpr uint64_t kKeptUpperBytes = uint64_t(256) << 20;

struct CommitOptions {
  std::string upper;    // W/upper
  std::string view_dir; // the view's real path: a root new files are relocated from
  std::string shown;    // the view as the user named it (messages)
  int level = 3;        // zstd level of the new objects
  Progress progress;    // "hash": upper files hashed of those found
  uint64_t keep_upper_bytes = kKeptUpperBytes; // the bytes hashed kept for the write, at most (tests: 0)
};

struct CommitCounts {
  uint64_t changed = 0; // upper files, links and directories replacing a base entry of another kind or content
  uint64_t added = 0;   // upper entries at a path the base did not have
  uint64_t removed = 0; // base entries removed (whiteouts, opaque directories, replaced subtrees)
  uint64_t hashed = 0;  // upper files read and hashed
};

// The base catalog with the upper layer applied (named `name`), and where
// each new object's bytes are.
struct MergedView {
  formats::Catalog catalog;
  std::map<Digest, std::string> upper_objects; // digest -> the upper file holding it (its path under upper)
  // The bytes hashed, for the objects that fit in kKeptUpperBytes (nullopt
  // once written: a second write, after a gc hid the first, reads again).
  std::map<Digest, std::optional<Bytes>> upper_bytes;
  CommitCounts counts;
};
MergedView merge_upper(const formats::Catalog& base, const std::string& name, const CommitOptions& opts);

struct CommitResult {
  Digest digest{};
  CommitCounts counts;
  Library::AddSetResult added;
};
// Records the merged view as `name` in `into`; base objects come from `base_lib`.
CommitResult commit_view(const Library& base_lib, const formats::Catalog& base, Library& into, const std::string& name,
                         const CommitOptions& opts);

} // namespace hpak
