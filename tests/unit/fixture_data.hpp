// The part of the unit tests' helpers that touches no disk: a deterministic
// generator of bytes, conversions, error capture. Portable (the Windows unit
// tests, cmake/windows.cmake, use it alone); tree_fixture.hpp adds the trees.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "base/error.hpp"
#include "base/hash.hpp"
#include "formats/catalog_format.hpp"

namespace fx {

using hpak::Bytes;
using hpak::ByteSpan;

// splitmix64: small, fast, deterministic.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
  uint64_t range(uint64_t lo, uint64_t hi) { return lo + below(hi - lo + 1); }
};

inline Bytes to_bytes(std::string_view s) { return Bytes(s.begin(), s.end()); }
inline std::string to_string(ByteSpan b) { return std::string(b.begin(), b.end()); }

// Content that looks like what a Python env holds: source text (compressible)
// or binary (mostly incompressible), `n` bytes.
inline Bytes make_content(Rng& rng, size_t n, bool text) {
  static const char* words[] = {"def ",     "return ", "import ", "self.", "class ", "    ",   "if ",    "else:\n",
                                "None",     "True",    "False",   "(",     ")",      ":\n",    " = ",    "__init__",
                                "numpy",    "value",   "items",   "for ",  " in ",   "raise ", "yield ", "lambda ",
                                "# noqa\n", "\"\"\"",  "\n",      ", ",    "[0]",    "dict()", "async ", "await "};
  Bytes out;
  out.reserve(n);
  if (text) {
    while (out.size() < n) {
      const char* w = words[rng.below(sizeof words / sizeof *words)];
      for (const char* p = w; *p && out.size() < n; p++) out.push_back(uint8_t(*p));
    }
  } else {
    while (out.size() < n) {
      uint64_t v = rng.next();
      for (int i = 0; i < 8 && out.size() < n; i++) out.push_back(uint8_t(v >> (8 * i)));
    }
  }
  return out;
}

inline std::string join_lines(const std::vector<std::string>& v, size_t max = 20) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < max; i++) s += v[i] + "\n";
  if (v.size() > max) s += "... and " + std::to_string(v.size() - max) + " more\n";
  return s;
}

// Replaces every occurrence of `from` in `s` by `to`.
inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
  return s;
}

// The message of the hpak::Error `f` throws, or "" if it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const hpak::Error& e) {
    return e.what();
  }
  return "";
}

// A digest with every byte `fill` (a name for tests that need distinct ones).
inline hpak::Digest digest_filled(uint8_t fill) {
  hpak::Digest d{};
  d.fill(fill);
  return d;
}

// A node path kept for the whole run, for nodes a test builds before (or
// without) the catalog that would keep it (Catalog's copy keeps it again).
inline hpak::formats::PathRef kept(std::string_view path) {
  static std::mutex mu;
  static hpak::formats::PathStore store;
  std::lock_guard lk(mu);
  return store.keep(path);
}

} // namespace fx
