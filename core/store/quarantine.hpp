// What does not belong in a library folder, and leftovers of writers that are
// gone (man/hpak-library.7, LAYOUT; man/hpak-gc.1, step 8).
//
// A junk entry of catalogs/ (a directory, a symlink, a FIFO, a malformed or
// oversized file under a valid name) may name objects nobody can read, so gc
// refuses to collect while it is there; `hpak repair` and `hpak catalogs rm`
// move it, as it is (rename: never followed, opened or deleted), into
// LIB/quarantine/ for the operator to look at.
#pragma once

#include <string>

#include "core/store/layout.hpp"

namespace hpak::store {

// What is at `path`, for a message: "a directory", "a symbolic link", "a FIFO",
// "a regular file of N bytes", "nothing".
std::string describe_entry(const std::string& path);

// Moves catalogs/NAME into LIB/quarantine/ as catalogs.NAME.<UTC time>[.N],
// then syncs both folders (the move survives a power loss before it is
// reported). Returns the new path.
std::string quarantine_catalog_entry(const Layout& layout, bool shared, const std::string& name);

// A temp file (AtomicFile's name, in any folder of the library) whose writer
// is gone: its name records a process of this host that no longer exists, and
// nobody holds the flock its writer held. Such a file can go at once.
bool temp_writer_gone(const std::string& dir, const std::string& name);

} // namespace hpak::store
