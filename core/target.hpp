// Opening the directory a tree is written into.
//
// `open_unpack_target` creates the directory if it is missing (parents must
// exist), refuses a path that is a file or a symlink, and refuses a non-empty
// directory unless `force`, naming the catalog paths that would be overwritten.
#pragma once

#include <string>

#include "core/util/file.hpp"
#include "formats/catalog_format.hpp"

namespace hpak {

Fd open_unpack_target(const std::string& path, const formats::Catalog& cat, bool force);

// Creates `path` as a directory if missing; returns an O_DIRECTORY fd.
// Refuses a non-directory and a symlink.
Fd open_or_create_dir(const std::string& path, mode_t mode = 0755);

} // namespace hpak
