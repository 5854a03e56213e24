#include "formats/catalog_name.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace hpak::formats {

namespace {

bool name_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '+' ||
         c == '@';
}

} // namespace

bool is_catalog_name(std::string_view n) { return catalog_name_problem(n).empty(); }

std::string catalog_name_problem(std::string_view name) {
  if (name.empty()) return "catalog name is empty";
  if (name.size() > kMaxCatalogName)
    return "catalog name " + quoted(name, 40) + " is longer than " + std::to_string(kMaxCatalogName) + " characters";
  if (name[0] == '.' || name[0] == '-') return "catalog name " + quoted(name) + " may not start with '.' or '-'";
  if (!std::all_of(name.begin(), name.end(), name_char))
    return "catalog name " + quoted(name) + " has a character outside [A-Za-z0-9._+@-]";
  return {};
}

} // namespace hpak::formats
