#include "formats/catalog_name.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace hpak::formats {

namespace {

bool name_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '+' ||
         c == '@';
}

char ascii_upper(char c) { return c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c; }

} // namespace

bool is_windows_device_name(std::string_view name) {
  std::string stem;
  for (char c : name.substr(0, name.find('.'))) stem += ascii_upper(c);
  while (!stem.empty() && stem.back() == ' ') stem.pop_back(); // "NUL .txt" is the device too
  for (std::string_view d : {"CON", "PRN", "AUX", "NUL"})
    if (stem == d) return true;
  return stem.size() == 4 && (stem.compare(0, 3, "COM") == 0 || stem.compare(0, 3, "LPT") == 0) && stem[3] >= '1' && stem[3] <= '9';
}

std::string catalog_name_windows_problem(std::string_view name) {
  if (is_windows_device_name(name))
    return "catalog name " + quoted(name) + " is a Windows device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9, also before a dot)";
  if (!name.empty() && name.back() == '.') return "catalog name " + quoted(name) + " ends in a dot, which Windows drops";
  return {};
}

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
