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

} // namespace hpak::formats
