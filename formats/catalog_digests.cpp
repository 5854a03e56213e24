#include "formats/catalog_digests.hpp"

#include <cstring>

#include "formats/catalog_format.hpp"

namespace hpak::formats {

namespace {

// ByteReader's reads, inlined: the mark reads every field of millions of
// nodes, and a call per field was a tenth of its time. The same bounds and
// the same messages (Corrupt naming `where` and the offset).
class Cursor {
public:
  Cursor(ByteSpan data, const std::string& where) : p_(data.data()), end_(data.data() + data.size()), begin_(data.data()), where_(where) {}
  size_t remaining() const { return size_t(end_ - p_); }
  bool at_end() const { return p_ == end_; }
  const uint8_t* need(size_t n) {
    if (n > remaining()) [[unlikely]]
      fail("truncated: need " + std::to_string(n) + " bytes, " + std::to_string(remaining()) + " left");
    const uint8_t* at = p_;
    p_ += n;
    return at;
  }
  uint8_t u8() { return *need(1); }
  uint32_t u32() { return get_u32(need(4)); }
  uint64_t u64() { return get_u64(need(8)); }
  void skip(size_t n) { (void)need(n); }
  // A u32 length then that many bytes, skipped; the length at most kMaxPath.
  void skip_str() {
    uint32_t n = u32();
    if (n > kMaxPath) [[unlikely]]
      fail("string length " + std::to_string(n) + " exceeds limit " + std::to_string(kMaxPath));
    skip(n);
  }
  [[noreturn]] void fail(const std::string& why) const { throw Corrupt(where_, uint64_t(p_ - begin_), why); }

private:
  const uint8_t* p_;
  const uint8_t* end_;
  const uint8_t* begin_;
  const std::string& where_;
};

// relocs ::= n:u32 reloc:u64 * n; returns n.
uint32_t skip_relocs(Cursor& r) {
  uint32_t n = r.u32();
  if (n > r.remaining() / 8) r.fail("too many relocation offsets");
  r.skip(size_t(n) * 8);
  return n;
}

// catalog ::= "HPCT" version flags name nroots root*; returns the version.
uint32_t skip_header(Cursor& r) {
  if (std::memcmp(r.need(4), "HPCT", 4) != 0) r.fail("not an HPAK catalog (bad magic)");
  uint32_t version = r.u32();
  if (version < kOldestCatalogVersion || version > kCatalogVersion) r.fail("unsupported catalog version " + std::to_string(version));
  if (r.u32() != 0) r.fail("unknown catalog flags");
  r.skip_str();
  uint32_t nroots = r.u32();
  if (nroots > kMaxRoots) r.fail("more than 16 relocation roots");
  for (uint32_t i = 0; i < nroots; i++) r.skip_str();
  return version;
}

// node ::= type mode mtime_ns size path body; a file's digest into `out`.
void read_node(Cursor& r, uint32_t version, std::vector<Digest>& out) {
  uint8_t type = r.u8();
  if (type < 1 || type > 4) r.fail("unknown node type " + std::to_string(type));
  r.skip(4 + 8 + 8); // mode, mtime_ns, size
  r.skip_str();      // path
  switch (NodeType(type)) {
  case NodeType::File: {
    Digest& d = out.emplace_back();
    std::memcpy(d.data(), r.need(32), 32);
    if (skip_relocs(r) > 0 && version >= 2) r.skip(1); // how
    break;
  }
  case NodeType::Dir:
    break;
  case NodeType::Symlink:
    r.skip_str(); // target
    skip_relocs(r);
    break;
  case NodeType::Hardlink:
    r.skip_str(); // the earlier file's path
    break;
  }
}

} // namespace

std::vector<Digest> catalog_file_digests(ByteSpan bytes, const std::string& where) {
  Cursor r(bytes, where);
  const uint32_t version = skip_header(r);
  uint64_t count = r.u64();
  if (count > r.remaining() / 25) r.fail("node count " + std::to_string(count) + " larger than the catalog");
  std::vector<Digest> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; i++) read_node(r, version, out);
  if (!r.at_end()) r.fail("trailing bytes after the last node");
  return out;
}

} // namespace hpak::formats
