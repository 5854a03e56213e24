// Names Windows cannot hold (windows_names.hpp).
#include "core/restore/windows_names.hpp"

#include <array>
#include <string_view>
#include <unordered_map>

#include "base/error.hpp"
#include "formats/catalog_name.hpp"

namespace hpak {

namespace {

// Decodes one UTF-8 code point at `i` (advancing it); a malformed byte is
// returned as itself (0x80-0xFF), which folds to itself.
uint32_t next_code_point(std::string_view s, size_t& i) {
  const auto b = uint8_t(s[i]);
  const int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (len <= 1 || i + len > s.size()) return i++, b;
  uint32_t cp = b & (0x7F >> len);
  for (int k = 1; k < len; k++) {
    const auto c = uint8_t(s[i + k]);
    if ((c >> 6) != 2) return i++, b;
    cp = (cp << 6) | (c & 0x3F);
  }
  i += len;
  return cp;
}

// Simple upper case for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic.
uint32_t fold(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;          // Latin-1
  if ((c >= 0x100 && c <= 0x137 && c != 0x130 && c != 0x131) || (c >= 0x14A && c <= 0x177)) return c & ~1u; // Latin Extended-A: upper even
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c - 1) | 1u;                          // upper odd
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;         // Greek
  if (c >= 0x430 && c <= 0x44F) return c - 32;                         // Cyrillic
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

std::string folded(std::string_view path) {
  std::string out;
  for (size_t i = 0; i < path.size();) {
    uint32_t cp = fold(next_code_point(path, i));
    out.append(reinterpret_cast<const char*>(&cp), sizeof cp);
  }
  return out;
}

std::string path_problem(std::string_view path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string why = windows_component_problem(std::string(path.substr(start, end - start)));
    if (!why.empty()) return "'" + std::string(path) + "' cannot be created on Windows: " + why;
    start = end + 1;
  }
  return "";
}

} // namespace

std::string windows_component_problem(const std::string& name) {
  for (char c : name) {
    const auto u = uint8_t(c);
    if (u < 32) return "its name holds the control character " + std::to_string(u);
    if (std::string_view("<>:\"\\|?*").find(c) != std::string_view::npos)
      return std::string("its name holds '") + c + "'" + (c == ':' ? " (an alternate data stream)" : c == '\\' ? " (a separator)" : "");
  }
  if (!name.empty() && (name.back() == '.' || name.back() == ' ') && name != "." && name != "..")
    return std::string("its name ends in ") + (name.back() == '.' ? "a dot" : "a space") + " (Windows drops it)";
  if (formats::is_windows_device_name(name)) return "'" + name + "' is a reserved device name";
  return "";
}

void refuse_windows_names(const formats::Catalog& cat) {
  if (std::string why = windows_name_problem(cat); !why.empty()) throw Error(why + "; nothing was written");
}

std::string windows_name_problem(const formats::Catalog& cat) {
  std::unordered_map<std::string, std::string_view> seen; // case-folded path -> the path
  seen.reserve(cat.nodes.size());
  for (const auto& n : cat.nodes) {
    if (std::string why = path_problem(n.path); !why.empty()) return why;
    auto [it, fresh] = seen.emplace(folded(n.path), n.path.view());
    if (!fresh) return "'" + std::string(it->second) + "' and '" + n.path + "' differ only in case: Windows would make them one file";
  }
  return "";
}

} // namespace hpak
