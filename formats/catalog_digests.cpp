#include "formats/catalog_digests.hpp"

#include <cstring>

#include "formats/catalog_format.hpp"

namespace hpak::formats {

namespace {

void skip_str(ByteReader& r) { (void)r.str(kMaxPath); }

// relocs ::= n:u32 reloc:u64 * n; returns n.
uint32_t skip_relocs(ByteReader& r) {
  uint32_t n = r.u32();
  if (n > r.remaining() / 8) r.fail("too many relocation offsets");
  (void)r.bytes(size_t(n) * 8);
  return n;
}

// catalog ::= "HPCT" version flags name nroots root*; returns the version.
uint32_t skip_header(ByteReader& r) {
  if (std::memcmp(r.bytes(4).data(), "HPCT", 4) != 0) r.fail("not an HPAK catalog (bad magic)");
  uint32_t version = r.u32();
  if (version < kOldestCatalogVersion || version > kCatalogVersion) r.fail("unsupported catalog version " + std::to_string(version));
  if (r.u32() != 0) r.fail("unknown catalog flags");
  skip_str(r);
  uint32_t nroots = r.u32();
  if (nroots > kMaxRoots) r.fail("more than 16 relocation roots");
  for (uint32_t i = 0; i < nroots; i++) skip_str(r);
  return version;
}

// node ::= type mode mtime_ns size path body; a file's digest into `out`.
void read_node(ByteReader& r, uint32_t version, std::vector<Digest>& out) {
  uint8_t type = r.u8();
  if (type < 1 || type > 4) r.fail("unknown node type " + std::to_string(type));
  (void)r.bytes(4 + 8 + 8); // mode, mtime_ns, size
  skip_str(r);              // path
  switch (NodeType(type)) {
  case NodeType::File: {
    Digest d;
    std::memcpy(d.data(), r.bytes(32).data(), 32);
    out.push_back(d);
    if (skip_relocs(r) > 0 && version >= 2) (void)r.u8(); // how
    break;
  }
  case NodeType::Dir:
    break;
  case NodeType::Symlink:
    skip_str(r); // target
    skip_relocs(r);
    break;
  case NodeType::Hardlink:
    skip_str(r); // the earlier file's path
    break;
  }
}

} // namespace

std::vector<Digest> catalog_file_digests(ByteSpan bytes, const std::string& where) {
  ByteReader r(bytes, where);
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
