// Catalog format version 3 (grammar in catalog_format.hpp): each object's
// digest once, in a sorted table; the nodes in columns of varints, paths
// prefix-compressed against the previous path. Decoding checks everything
// versions 1 and 2 check (NodePlacer, hardlinked_file) plus what the columns
// add: every count fits the bytes left, every reference names a table entry,
// every table entry is named, each value in its one shortest encoding.
#include <algorithm>
#include <cstring>

#include "base/os/sys.hpp"
#include "formats/catalog_codec.hpp"

namespace hpak::formats {

namespace {

// ---- writing -------------------------------------------------------------------

std::vector<Digest> digest_table(const Catalog& c) {
  std::vector<Digest> t;
  for_each_file(c, [&](const Node& n) { t.push_back(n.digest); });
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  return t;
}

size_t shared_prefix(std::string_view a, std::string_view b) {
  size_t n = std::min(a.size(), b.size()), i = 0;
  while (i < n && a[i] == b[i]) i++;
  return i;
}

void put_header(Bytes& b, const Catalog& c, const std::vector<Digest>& table) {
  b.insert(b.end(), {'H', 'P', 'C', 'T'});
  put_u32(b, 3);
  put_u32(b, 0);
  put_vstr(b, c.name);
  put_var(b, c.roots.size());
  for (auto& root : c.roots) put_vstr(b, root);
  put_var(b, table.size());
  for (const Digest& d : table) put_bytes(b, d);
  put_var(b, c.nodes.size());
}

void put_node_columns(Bytes& b, const Catalog& c) {
  for (const Node& n : c.nodes) put_u8(b, uint8_t(n.type));
  for (const Node& n : c.nodes) put_var(b, n.mode);
  int64_t prev_mtime = 0;
  for (const Node& n : c.nodes) {
    put_var(b, zigzag(int64_t(uint64_t(n.mtime_ns) - uint64_t(prev_mtime))));
    prev_mtime = n.mtime_ns;
  }
  std::vector<size_t> plens(c.nodes.size());
  for (size_t i = 1; i < c.nodes.size(); i++) plens[i] = shared_prefix(c.nodes[i - 1].path, c.nodes[i].path);
  for (size_t p : plens) put_var(b, p);
  for (size_t i = 0; i < c.nodes.size(); i++) put_var(b, c.nodes[i].path.size() - plens[i]);
  for (size_t i = 0; i < c.nodes.size(); i++) put_bytes(b, ByteSpan(reinterpret_cast<const uint8_t*>(c.nodes[i].path.data()) + plens[i], c.nodes[i].path.size() - plens[i]));
}

void put_file_columns(Bytes& b, const Catalog& c, const std::vector<Digest>& table) {
  for_each_file(c, [&](const Node& n) { put_var(b, n.size); });
  for_each_file(c, [&](const Node& n) { put_var(b, uint64_t(std::lower_bound(table.begin(), table.end(), n.digest) - table.begin())); });
  for (const Node& n : c.nodes)
    if (n.type == NodeType::Symlink || n.type == NodeType::Hardlink) put_vstr(b, n.target);
}

// Offsets as gaps after the previous occurrence. A catalog that breaks the
// rules (tests write them) gets a gap that wraps, which decode refuses.
void put_relocs(Bytes& b, const Catalog& c, const Node& n) {
  put_var(b, n.relocs.size());
  uint64_t next_min = 0;
  for (uint64_t v : n.relocs) {
    unsigned root = reloc_root(v);
    if (c.roots.size() > 1) put_var(b, root);
    put_var(b, reloc_offset(v) - next_min);
    next_min = reloc_offset(v) + (root < c.roots.size() ? c.roots[root].size() : 0);
  }
}

void put_reloc_columns(Bytes& b, const Catalog& c) {
  for (const Node& n : c.nodes)
    if (n.type == NodeType::File || n.type == NodeType::Symlink) put_relocs(b, c, n);
  for_each_file(c, [&](const Node& n) {
    if (n.relocs.empty()) return;
    if (n.reloc_kind == RelocKind::Unclassified) throw Error("internal error: '" + n.path + "' has relocations of no kind");
    put_u8(b, uint8_t(n.reloc_kind));
  });
}

// ---- reading -------------------------------------------------------------------

// A count of items that take at least `min_bytes` each: refused if the bytes
// left cannot hold them, before anything is reserved for them.
uint64_t count_of(ByteReader& r, uint64_t min_bytes, const char* what) {
  uint64_t n = r.var();
  if (n > r.remaining() / min_bytes) r.fail(std::string(what) + " count " + std::to_string(n) + " larger than the catalog");
  return n;
}

std::vector<Digest> read_digest_table(ByteReader& r) {
  uint64_t n = count_of(r, 32, "digest");
  std::vector<Digest> t;
  os::resize_faulted(t, size_t(n));
  for (uint64_t i = 0; i < n; i++) {
    std::memcpy(t[i].data(), r.bytes(32).data(), 32);
    if (i > 0 && !(t[i - 1] < t[i])) r.fail("digest table out of order or repeated at entry " + std::to_string(i));
  }
  return t;
}

void read_header(ByteReader& r, Catalog& c) {
  c.version = 3;
  c.name = std::string(r.vstr(kMaxPath));
  uint64_t nroots = r.var();
  if (nroots > kMaxRoots) r.fail("more than 16 relocation roots");
  for (uint64_t i = 0; i < nroots; i++) c.roots.push_back(checked_root(r, r.vstr(kMaxPath)));
}

void read_types(ByteReader& r, Catalog& c, uint64_t count) {
  if (count > kMaxNodes) r.fail("node count " + std::to_string(count) + " above the limit of " + std::to_string(kMaxNodes));
  os::resize_faulted(c.nodes, size_t(count)); // a restore's largest buffer: its pages in one call
  for (Node& n : c.nodes) {
    uint8_t type = r.u8();
    if (type < 1 || type > 4) r.fail("unknown node type " + std::to_string(type));
    n.type = NodeType(type);
  }
}

void read_modes_and_mtimes(ByteReader& r, Catalog& c) {
  for (Node& n : c.nodes) {
    uint64_t mode = r.var();
    if (mode & ~uint64_t(07777)) r.fail("mode has bits outside 07777");
    n.mode = uint32_t(mode);
  }
  uint64_t mtime = 0;
  for (Node& n : c.nodes) {
    mtime += uint64_t(unzigzag(r.var())); // wraps like the writer's subtraction
    n.mtime_ns = int64_t(mtime);
  }
}

// plens, slens, then the suffix bytes: each path is the previous path's first
// plen bytes and its suffix; every one checked by NodePlacer as it is placed.
void read_paths(ByteReader& r, Catalog& c, const std::string& where) {
  std::vector<uint64_t> plens(c.nodes.size()), slens(c.nodes.size());
  for (uint64_t& p : plens) p = r.var();
  for (uint64_t& s : slens) s = r.var();
  NodePlacer placer;
  std::string_view prev;
  for (size_t i = 0; i < c.nodes.size(); i++) {
    uint64_t at = r.abs_pos();
    if (plens[i] > prev.size()) r.fail("path shares " + std::to_string(plens[i]) + " bytes with a previous path of " + std::to_string(prev.size()));
    if (slens[i] > kMaxPath) r.fail("path longer than 4095 bytes");
    ByteSpan suffix = r.bytes(size_t(slens[i]));
    if (plens[i] < prev.size() && !suffix.empty() && uint8_t(prev[size_t(plens[i])]) == suffix[0])
      r.fail("path shares more than the " + std::to_string(plens[i]) + " bytes it says with the previous path");
    Node& n = c.nodes[i];
    const size_t plen = size_t(plens[i]);
    n.path = c.paths.keep(prev.substr(0, plen), std::string_view(reinterpret_cast<const char*>(suffix.data()), suffix.size()));
    placer.place(c.nodes, i, n, where, at, plen);
    placer.added(n, i);
    prev = n.path;
  }
}

void read_files(ByteReader& r, Catalog& c, const std::vector<Digest>& table) {
  std::vector<bool> named(table.size());
  for (Node& n : c.nodes)
    if (n.type == NodeType::File) n.size = r.var();
  for (Node& n : c.nodes) {
    if (n.type != NodeType::File) continue;
    uint64_t k = r.var();
    if (k >= table.size()) r.fail("file '" + shown(n.path) + "' names digest " + std::to_string(k) + " of a table of " + std::to_string(table.size()));
    n.digest = table[k];
    named[k] = true;
  }
  auto unnamed = std::find(named.begin(), named.end(), false);
  if (unnamed != named.end()) r.fail("digest table entry " + std::to_string(unnamed - named.begin()) + " is named by no file");
}

void read_targets(ByteReader& r, Catalog& c) {
  for (size_t i = 0; i < c.nodes.size(); i++) {
    Node& n = c.nodes[i];
    if (n.type != NodeType::Symlink && n.type != NodeType::Hardlink) continue;
    n.target = std::string(r.vstr(kMaxPath));
    if (n.type == NodeType::Symlink) {
      check_symlink_target(n, r);
      n.size = n.target.size();
    } else {
      n.size = hardlinked_file(c, i, n, r).size;
    }
  }
}

void read_relocs(ByteReader& r, const Catalog& c, Node& n) {
  uint64_t count = r.var();
  if (count > 0 && c.roots.empty()) r.fail("relocation offsets without a relocation root");
  // Each offset takes at least one byte and one root's length of the object.
  if (count > r.remaining() || count > n.size) r.fail("too many relocation offsets");
  n.relocs.reserve(size_t(count));
  uint64_t next_min = 0;
  for (uint64_t i = 0; i < count; i++) {
    uint64_t root = c.roots.size() > 1 ? r.var() : 0;
    if (root >= c.roots.size()) r.fail("relocation names root " + std::to_string(root) + ", catalog has " + std::to_string(c.roots.size()));
    uint64_t gap = r.var(), len = c.roots[root].size();
    if (gap > n.size || next_min > n.size - gap || n.size - (next_min + gap) < len) r.fail("relocation offset out of range");
    uint64_t offset = next_min + gap;
    if (offset > kRelocOffsetMask) r.fail("relocation offset out of range");
    n.relocs.push_back(make_reloc(offset, unsigned(root)));
    next_min = offset + len;
  }
}

void read_reloc_columns(ByteReader& r, Catalog& c) {
  for (Node& n : c.nodes)
    if (n.type == NodeType::File || n.type == NodeType::Symlink) read_relocs(r, c, n);
  for (Node& n : c.nodes)
    if (n.type == NodeType::File && !n.relocs.empty()) n.reloc_kind = get_reloc_kind(r);
}

} // namespace

Bytes encode_catalog_v3(const Catalog& c) {
  std::vector<Digest> table = digest_table(c);
  Bytes b;
  b.reserve(64 + table.size() * 32 + c.nodes.size() * 24);
  put_header(b, c, table);
  put_node_columns(b, c);
  put_file_columns(b, c, table);
  put_reloc_columns(b, c);
  return b;
}

Catalog decode_catalog_v3(ByteReader& r, const std::string& where) {
  Catalog c;
  read_header(r, c);
  std::vector<Digest> table = read_digest_table(r);
  // A node takes at least 5 bytes: type, mode, mtime, plen and slen.
  read_types(r, c, count_of(r, 5, "node"));
  read_modes_and_mtimes(r, c);
  read_paths(r, c, where);
  read_files(r, c, table);
  read_targets(r, c);
  read_reloc_columns(r, c);
  if (!r.at_end()) r.fail("trailing bytes after the last column");
  return c;
}

std::vector<Digest> catalog_v3_digest_table(ByteReader& r) {
  Catalog c;
  read_header(r, c);
  return read_digest_table(r);
}

} // namespace hpak::formats
