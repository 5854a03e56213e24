// Output of `hpak verify LIB` (a library directory): human and JSON forms of
// a LibraryVerifyReport (core/verify/verify_library.hpp).
#pragma once

#include <functional>
#include <string>

#include "cmd/json.hpp"
#include "core/verify/verify_library.hpp"

namespace hpak::cmd {

// Writes more members into the object being written (e.g. "signatures").
using JsonMembers = std::function<void(JsonWriter&)>;

// One JSON object: the library, the verdict, per-pack summaries, bad objects
// with the paths they break, each catalog; then what `extra` adds.
void write_library_json(JsonWriter& w, const LibraryVerifyReport& r, double secs, const JsonMembers& extra = {});
void print_library_human(const LibraryVerifyReport& r, double secs);

// True if `path` is a directory (following symlinks): verify treats it as a library.
bool is_directory(const std::string& path);

} // namespace hpak::cmd
