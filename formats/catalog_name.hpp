// Catalog names (LIB/catalogs/<name>, the names of a remote root): the one
// place that says what a valid name is.
//
//   name ::= [A-Za-z0-9_+@] [A-Za-z0-9._+@-]{0,127}
//
// (1 to 128 characters, not starting with '.' or '-'): a file name in any
// file system, never a temp name (".tmp-"), never an option, printable as is.
#pragma once

#include <string>
#include <string_view>

namespace hpak::formats {

constexpr size_t kMaxCatalogName = 128;

bool is_catalog_name(std::string_view name);
// "" if `name` is valid; otherwise a one-line reason naming it quoted (control
// characters escaped, a long name shortened: base/error.hpp, quoted()).
std::string catalog_name_problem(std::string_view name);

// Whether Windows reads `name` as a device: CON, PRN, AUX, NUL, COM1-COM9,
// LPT1-LPT9 (any case), alone or before a dot ("nul.txt"; spaces before the
// dot too). Such a file cannot be made or opened by its Win32 name.
bool is_windows_device_name(std::string_view name);
// What a new catalog name must also avoid where the library is on Windows:
// "" or a one-line reason (a device name, or a name ending in a dot, which
// Win32 drops).
std::string catalog_name_windows_problem(std::string_view name);

} // namespace hpak::formats
