// Opening the directory a tree is written into.
//
// The target is opened once, as one O_DIRECTORY | O_NOFOLLOW descriptor, and
// every later check and write goes through that descriptor, never the path
// again: a target swapped for a symlink between a check and a use is never
// followed. Missing parents are created like `mkdir -p`, each made with
// mkdirat and opened with O_NOFOLLOW relative to its parent's fd; parents
// that already exist are opened as the user named them (symlinks followed,
// as any tool resolves a path it is given). The target itself is never a
// symlink: it is refused, even to a directory (name the directory itself).
//
// `open_unpack_target` also refuses a non-empty directory unless `force`,
// naming the catalog paths that would be overwritten.
#pragma once

#include <functional>
#include <string>

#include "base/os/file.hpp"
#include "formats/catalog_format.hpp"

namespace hpak {

// With `relocate` (unpack --relocate), the catalog's relocation to the
// target's real path is checked (check_relocation, core/pack/relocation.hpp)
// before anything is created, and `relocate->path` set to that path.
struct RelocTo;
Fd open_unpack_target(const std::string& path, const formats::Catalog& cat, bool force, RelocTo* relocate = nullptr);

// Opens (creating it and its missing parents if need be) the directory
// `path`; returns an O_RDONLY | O_DIRECTORY fd opened with O_NOFOLLOW.
// Refuses a non-directory and a symlink. `before_create`, if given, is called
// before the first directory is created (to refuse before anything is made)
// with the fd of the deepest existing parent (O_PATH), that parent as named
// in `path`, and the components still to create ("b/c").
using BeforeCreate = std::function<void(int parent_fd, const std::string& parent_shown, const std::string& rest)>;
Fd open_target_dir(const std::string& path, os::Mode mode = 0755, const BeforeCreate& before_create = {});
Fd open_or_create_dir(const std::string& path, os::Mode mode = 0755);

// The absolute path of the opened target directory `fd` (from
// /proc/self/fd, else from resolving `shown`), checked to name the same
// (st_dev, st_ino) as fd; throws if the directory was moved meanwhile.
std::string target_path(int fd, const std::string& shown);

} // namespace hpak
