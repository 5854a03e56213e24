#include "formats/remote_root_format.hpp"

#include <algorithm>
#include <cctype>

#include "base/error.hpp"
#include "formats/catalog_name.hpp"

namespace hpak::formats {

namespace {

bool is_lower_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

struct Lines {
  std::string_view text;
  std::string where;
  size_t pos = 0;
  bool next(std::string_view& line) {
    if (pos >= text.size()) return false;
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) throw Corrupt(where, pos, "last line has no newline (truncated?)");
    line = text.substr(pos, nl - pos);
    pos = nl + 1;
    return true;
  }
  [[noreturn]] void bad(const std::string& why) const { throw Corrupt(where, pos, why); }
};

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t sp = line.find(' ', start);
    out.push_back(line.substr(start, sp == std::string_view::npos ? std::string_view::npos : sp - start));
    if (sp == std::string_view::npos) break;
    start = sp + 1;
  }
  return out;
}

bool parse_u63(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 19 || (s.size() > 1 && s[0] == '0')) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  if (v >> 63) return false;
  out = v;
  return true;
}

Digest parse_digest(const Lines& in, std::string_view hex) {
  auto d = hex.size() == 64 && is_lower_hex(hex) ? digest_from_hex(hex) : std::nullopt;
  if (!d) in.bad("'" + std::string(hex.substr(0, 80)) + "' is not a lower-case SHA-256");
  return *d;
}

} // namespace

std::string encode_remote_root(RemoteRoot root) {
  std::sort(root.packs.begin(), root.packs.end(), [](auto& a, auto& b) { return a.name < b.name; });
  std::sort(root.catalogs.begin(), root.catalogs.end(), [](auto& a, auto& b) { return a.name < b.name; });
  std::string s = "hpak-remote " + std::to_string(root.version) + "\ngeneration " + std::to_string(root.generation) + "\n";
  if (root.version >= 2)
    s += "library " + root.library + "\ntime " + std::to_string(root.time) + "\nexpires " + std::to_string(root.expires) + "\n";
  for (auto& p : root.packs)
    s += "pack " + p.name + " " + std::to_string(p.size) + " " + to_hex(p.index_sum) + " " + std::to_string(p.index_size) + "\n";
  for (auto& c : root.catalogs) s += "catalog " + c.name + " " + to_hex(c.digest) + "\n";
  s += "end\n";
  return s;
}

RemoteRootParts split_remote_root(ByteSpan bytes) {
  static const std::string begin = "\n-----BEGIN SSH SIGNATURE-----\n";
  std::string_view all(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  size_t at = all.find(begin);
  if (at == std::string_view::npos) return {bytes, {}};
  return {bytes.first(at + 1), std::string(all.substr(at + 1))};
}

RemoteRoot decode_remote_root(ByteSpan bytes, const std::string& where) {
  if (bytes.size() > kRemoteRootMaxSize) throw Corrupt(where, 0, "larger than 16 MiB");
  Lines in{std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), where};
  RemoteRoot root;
  std::string_view line;
  if (!in.next(line) || (line != "hpak-remote 1" && line != "hpak-remote 2"))
    in.bad("not an hpak remote root of a version this hpak reads (expected 'hpak-remote 1' or 'hpak-remote 2')");
  root.version = line == "hpak-remote 1" ? 1 : 2;
  if (!in.next(line) || line.rfind("generation ", 0) != 0 || !parse_u63(line.substr(11), root.generation))
    in.bad("expected 'generation N'");
  if (root.version >= 2) {
    if (!in.next(line) || line.rfind("library ", 0) != 0 || line.size() != 8 + 32 || !is_lower_hex(line.substr(8)))
      in.bad("expected 'library' and 32 lower-case hex digits");
    root.library = std::string(line.substr(8));
    if (!in.next(line) || line.rfind("time ", 0) != 0 || !parse_u63(line.substr(5), root.time)) in.bad("expected 'time T'");
    if (!in.next(line) || line.rfind("expires ", 0) != 0 || !parse_u63(line.substr(8), root.expires)) in.bad("expected 'expires T'");
    if (root.expires < root.time) in.bad("it expires before it was published");
  }
  bool ended = false;
  while (in.next(line)) {
    if (line == "end") {
      ended = true;
      break;
    }
    auto f = fields(line);
    if (f[0] == "pack" && f.size() == 5) {
      if (!root.catalogs.empty()) in.bad("pack line after a catalog line");
      RemotePackEntry p;
      p.name = std::string(f[1]);
      if (!is_pack_name(p.name)) in.bad("'" + p.name.substr(0, 80) + "' is not a pack name");
      if (!root.packs.empty() && root.packs.back().name >= p.name) in.bad("packs out of order or repeated");
      if (!parse_u63(f[2], p.size) || !parse_u63(f[4], p.index_size)) in.bad("bad size");
      p.index_sum = parse_digest(in, f[3]);
      root.packs.push_back(std::move(p));
    } else if (f[0] == "catalog" && f.size() == 3) {
      RemoteCatalogEntry c;
      c.name = std::string(f[1]);
      if (!is_catalog_name(c.name)) in.bad(catalog_name_problem(c.name));
      if (!root.catalogs.empty() && root.catalogs.back().name >= c.name) in.bad("catalogs out of order or repeated");
      c.digest = parse_digest(in, f[2]);
      root.catalogs.push_back(std::move(c));
    } else {
      in.bad("unexpected line '" + std::string(line.substr(0, 80)) + "'");
    }
  }
  if (!ended) in.bad("no 'end' line (truncated?)");
  if (in.pos != in.text.size()) in.bad("bytes after the 'end' line");
  return root;
}

} // namespace hpak::formats
