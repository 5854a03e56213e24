// Materialize: writes a catalog's tree into an (empty) target directory with
// the fewest syscalls the kernel allows.
//
// Directories are created once, in catalog order, each with mkdirat relative
// to its parent's fd, and opened (O_DIRECTORY|O_NOFOLLOW) only if it has
// subdirectories; the files of a leaf directory are created beneath its
// parent with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) on "leaf/name". So
// no path is ever resolved through a symlink and nothing can land outside
// the target. One worker makes the directories while the others already
// write files into the ones made so far. Regular files are written by N workers: openat(parent_fd, name,
// O_CREAT|O_EXCL|O_NOFOLLOW, final mode) + write + [futimens] + close — no temp
// file, rename or chmod (umask is cleared for the duration). Each object's
// stored bytes are checked (XXH3; with `verify`, its SHA-256 too) before its
// bytes are written (streamed objects: before close), and a file whose object fails is unlinked again, so a corrupt object
// never leaves a file that looks complete. Hardlinks and symlinks
// follow; directory modes and mtimes are applied last, deepest first.
#pragma once

#include <string>
#include <vector>

#include "core/object_source.hpp"
#include "core/progress.hpp"
#include "formats/catalog_format.hpp"

namespace hpak {

struct MaterializeOptions {
  unsigned threads = 0;         // 0 = all cores
  bool restore_mtime = true;
  bool verify = true;           // check each object's SHA-256 as it is read (restore: off)
  std::string relocate_to;      // empty: write objects unrelocated
  bool partial = false;         // continue past unreadable objects
  bool force = false;           // replace existing entries in the target
  Progress progress;
};

struct Failure {
  std::string path;
  std::string digest; // hex, may be empty
  std::string why;
};

struct MaterializeStats {
  uint64_t files = 0, dirs = 0, symlinks = 0, hardlinks = 0;
  uint64_t bytes = 0;
  std::vector<Failure> failures;
};

// `target_fd` is an open directory; `target_shown` names it in messages.
MaterializeStats materialize(const formats::Catalog& cat, const ObjectSource& src, int target_fd,
                             const std::string& target_shown, const MaterializeOptions& opts);

// Writes one catalog file's content (relocated if asked) to an open fd,
// reading through `src`; throws on a missing or corrupt object (messages name
// target_shown + "/" + n.path). Shared by materialize and the dirty restore.
void write_file_content(const formats::Node& n, const formats::Catalog& cat, const ObjectSource& src, int fd,
                        const std::string& target_shown, const std::string& relocate_to, bool verify, Bytes& scratch);

} // namespace hpak
