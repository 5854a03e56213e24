// Output of `hpak verify LIB` (a library directory): human and JSON forms of
// a LibraryVerifyReport (core/verify_library.hpp).
#pragma once

#include <string>

#include "core/verify_library.hpp"

namespace hpak::cmd {

// One JSON object (preceded by ',' unless `first`): the library, the verdict,
// per-pack summaries, bad objects with the paths they break, each catalog.
void print_library_json(const LibraryVerifyReport& r, double secs, bool first, const std::string& extra = "");
void print_library_human(const LibraryVerifyReport& r, double secs);

// True if `path` is a directory (following symlinks): verify treats it as a library.
bool is_directory(const std::string& path);

} // namespace hpak::cmd
