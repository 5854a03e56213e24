#include "cmd/duration.hpp"

#include <cctype>
#include <cstdint>

#include "base/error.hpp"

namespace hpak::cmd {

int64_t parse_duration(const std::string& s) {
  if (s.empty()) throw Error("empty duration");
  size_t i = 0;
  int64_t v = 0;
  while (i < s.size() && isdigit((unsigned char)s[i])) {
    if (v > INT64_MAX / 10 - 10) throw Error("duration '" + s + "' is too large");
    v = v * 10 + (s[i++] - '0');
  }
  if (i == 0) throw Error("duration '" + s + "' does not start with a number");
  std::string unit = s.substr(i);
  int64_t mul;
  if (unit.empty() || unit == "s") mul = 1;
  else if (unit == "m") mul = 60;
  else if (unit == "h") mul = 3600;
  else if (unit == "d") mul = 86400;
  else if (unit == "w") mul = 7 * 86400;
  else throw Error("duration '" + s + "' has an unknown unit (use s, m, h, d or w)");
  if (v > INT64_MAX / mul) throw Error("duration '" + s + "' is too large");
  return v * mul;
}

} // namespace hpak::cmd
