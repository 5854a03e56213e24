#include "formats/catalog_format.hpp"

#include "base/os/sys.hpp"
#include "formats/catalog_codec.hpp"

#include <algorithm>
#include <ostream>
#include <utility>
#include <cstdio>
#include <cstring>

namespace hpak::formats {

const char* node_type_name(NodeType t) {
  switch (t) {
  case NodeType::Dir: return "dir";
  case NodeType::File: return "file";
  case NodeType::Symlink: return "symlink";
  case NodeType::Hardlink: return "hardlink";
  }
  return "?";
}

const char* reloc_kind_name(RelocKind k) {
  switch (k) {
  case RelocKind::Unclassified: return "unclassified";
  case RelocKind::Text: return "text";
  case RelocKind::InPlace: return "in-place";
  case RelocKind::SameLength: return "same-length";
  case RelocKind::Verbatim: return "verbatim";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& o, PathRef p) { return o << p.view(); }

PathStore& PathStore::operator=(PathStore&& o) noexcept {
  if (this != &o) {
    blocks_ = std::move(o.blocks_);
    next_ = std::exchange(o.next_, nullptr);
    left_ = std::exchange(o.left_, 0);
    last_size_ = std::exchange(o.last_size_, 0);
    o.blocks_.clear();
  }
  return *this;
}

void PathStore::reserve(size_t bytes) {
  if (bytes <= left_) return;
  // 64 KiB, then each block twice the last, up to 1 MiB: a large catalog's
  // paths in a few blocks, a small one's in one small block.
  const size_t grown = blocks_.empty() ? size_t(64) << 10 : std::min(last_size_ * 2, size_t(1) << 20);
  const size_t size = std::max(bytes, grown);
  blocks_.push_back(std::make_unique_for_overwrite<char[]>(size));
  next_ = blocks_.back().get();
  os::fault_in(next_, size); // (os::fault_in leaves the first, small block alone)
  left_ = size;
  last_size_ = size;
}

PathRef PathStore::keep(std::string_view head, std::string_view tail) {
  const size_t size = head.size() + tail.size();
  if (size > UINT32_MAX) throw Error("internal error: a path of " + std::to_string(size) + " bytes kept");
  reserve(size + 1);
  char* at = next_;
  if (!head.empty()) std::memcpy(at, head.data(), head.size());
  if (!tail.empty()) std::memcpy(at + head.size(), tail.data(), tail.size());
  at[size] = '\0'; // for c_str()
  next_ += size + 1;
  left_ -= size + 1;
  return PathRef(at, uint32_t(size));
}

Catalog::Catalog(const Catalog& o) : version(o.version), name(o.name), roots(o.roots), nodes(o.nodes) {
  size_t bytes = 0;
  for (const Node& n : nodes) bytes += n.path.size();
  paths.reserve(bytes);
  for (Node& n : nodes) n.path = paths.keep(n.path);
}

Catalog& Catalog::operator=(const Catalog& o) {
  if (this != &o) *this = Catalog(o);
  return *this;
}

bool path_less(std::string_view a, std::string_view b) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; i++) {
    unsigned char x = a[i] == '/' ? 0 : (unsigned char)a[i];
    unsigned char y = b[i] == '/' ? 0 : (unsigned char)b[i];
    if (x != y) return x < y;
  }
  return a.size() < b.size();
}

std::optional<size_t> find_path(const Catalog& c, std::string_view path) {
  auto it = std::lower_bound(c.nodes.begin(), c.nodes.end(), path, [](const Node& a, std::string_view p) { return path_less(a.path, p); });
  if (it == c.nodes.end() || it->path != path) return std::nullopt;
  return size_t(it - c.nodes.begin());
}

DirSlots dir_slots(const Catalog& c) {
  DirSlots d;
  d.dir_nodes.push_back(SIZE_MAX);
  d.parent.assign(c.nodes.size(), 0);
  std::vector<uint32_t> open;
  for (size_t i = 0; i < c.nodes.size(); i++) {
    std::string_view p = c.nodes[i].path;
    auto inside = [&](uint32_t slot) {
      std::string_view dir = c.nodes[d.dir_nodes[slot]].path;
      return p.size() > dir.size() && p[dir.size()] == '/' && p.compare(0, dir.size(), dir) == 0;
    };
    while (!open.empty() && !inside(open.back())) open.pop_back();
    d.parent[i] = open.empty() ? 0 : open.back();
    if (c.nodes[i].type == NodeType::Dir) {
      open.push_back(uint32_t(d.dir_nodes.size()));
      d.dir_nodes.push_back(i);
    }
  }
  return d;
}

std::string check_name(std::string_view name) {
  if (name.empty()) return "empty name";
  if (name.size() > kMaxName) return "name longer than 255 bytes";
  if (name == "." || name == "..") return "'" + std::string(name) + "' component";
  if (name.find('\0') != std::string_view::npos) return "NUL byte in name";
  if (name.find('/') != std::string_view::npos) return "'/' in name";
  return {};
}

// check_path's rules in one pass over the bytes (no message): a catalog's
// decode checks every path, and the component-by-component check with a
// message per component was ~3% of a no-op restore's CPU (25,369 paths,
// issue 32). check_path runs the slow check only to say why a path fails.
// `from`: the start of a component, every component before it known valid.
bool path_ok(std::string_view path, size_t from) {
  if (path.empty() || path.size() > kMaxPath || path[0] == '/') return false;
  size_t start = from;
  for (size_t i = from; i <= path.size(); i++) {
    if (i < path.size() && path[i] != '/') {
      if (path[i] == '\0') return false;
      continue;
    }
    size_t len = i - start;
    if (len == 0 || len > kMaxName) return false;
    if (path[start] == '.' && (len == 1 || (len == 2 && path[start + 1] == '.'))) return false;
    start = i + 1;
  }
  return true;
}

std::string check_path(std::string_view path) {
  if (path_ok(path)) return {};
  if (path.empty()) return "empty path";
  if (path.size() > kMaxPath) return "path longer than 4095 bytes";
  if (path[0] == '/') return "absolute path";
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    std::string_view comp = path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    std::string why = check_name(comp);
    if (!why.empty()) return why;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return {};
}

// A path from a (possibly hostile) catalog, made safe for a one-line message:
// control bytes (NUL, ESC, newline...) escaped as \xNN, long paths shortened.
std::string shown(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 256)) {
    if (c < 0x20 || c == 0x7f || c == '\\') {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  if (s.size() > 256) out += "...";
  return out;
}

static void put_relocs(Bytes& b, const std::vector<uint64_t>& r) {
  put_u32(b, uint32_t(r.size()));
  for (uint64_t o : r) put_u64(b, o);
}

Bytes encode_catalog(const Catalog& c, uint32_t version) {
  if (version < kOldestCatalogVersion || version > kNewestCatalogVersion) throw Error("internal error: catalog version " + std::to_string(version));
  if (version >= 3) return encode_catalog_v3(c);
  Bytes b;
  b.reserve(64 + c.nodes.size() * 96);
  b.insert(b.end(), {'H', 'P', 'C', 'T'});
  put_u32(b, version);
  put_u32(b, 0);
  put_str(b, c.name);
  put_u32(b, uint32_t(c.roots.size()));
  for (auto& root : c.roots) put_str(b, root);
  put_u64(b, c.nodes.size());
  for (const Node& n : c.nodes) {
    put_u8(b, uint8_t(n.type));
    put_u32(b, n.mode);
    put_u64(b, uint64_t(n.mtime_ns));
    put_u64(b, n.size);
    put_str(b, n.path);
    switch (n.type) {
    case NodeType::File:
      put_bytes(b, n.digest);
      put_relocs(b, n.relocs);
      if (version >= 2 && !n.relocs.empty()) {
        if (n.reloc_kind == RelocKind::Unclassified) throw Error("internal error: '" + n.path + "' has relocations of no kind");
        put_u8(b, uint8_t(n.reloc_kind));
      }
      break;
    case NodeType::Dir: break;
    case NodeType::Symlink:
      put_str(b, n.target);
      put_relocs(b, n.relocs);
      break;
    case NodeType::Hardlink: put_str(b, n.target); break;
    }
  }
  return b;
}

static std::vector<uint64_t> get_relocs(ByteReader& r, uint64_t limit, const std::vector<std::string>& roots) {
  uint32_t n = r.u32();
  if (n > 0 && roots.empty()) r.fail("relocation offsets without a relocation root");
  // Each offset takes 8 bytes of the catalog: a count the bytes cannot hold
  // is refused before anything is reserved for it.
  if (n > limit || n > r.remaining() / 8) r.fail("too many relocation offsets");
  std::vector<uint64_t> out;
  out.reserve(n);
  uint64_t next_min = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t v = r.u64();
    unsigned idx = reloc_root(v);
    if (idx >= roots.size()) r.fail("relocation names root " + std::to_string(idx) + ", catalog has " + std::to_string(roots.size()));
    uint64_t o = reloc_offset(v);
    size_t len = roots[idx].size();
    if (o < next_min || o > limit || limit - o < len) r.fail("relocation offset out of range or overlapping");
    out.push_back(v);
    next_min = o + len;
  }
  return out;
}

RelocKind get_reloc_kind(ByteReader& r) {
  uint8_t k = r.u8();
  if (k < uint8_t(RelocKind::Text) || k > uint8_t(RelocKind::Verbatim)) r.fail("unknown relocation kind " + std::to_string(k));
  return RelocKind(k);
}

void NodePlacer::place(const std::vector<Node>& nodes, size_t i, const Node& n, const std::string& where, uint64_t at,
                       size_t shared) {
  if (i == 0 || shared > n.path.size() || shared > nodes[i - 1].path.size()) shared = 0;
  // Node i - 1's path was checked: the components n's path shares whole with
  // it (those before the last '/' of the shared bytes) need no second look.
  const size_t slash_in_shared = shared ? n.path.rfind('/', shared - 1) : std::string::npos;
  if (!path_ok(n.path, slash_in_shared == std::string::npos ? 0 : slash_in_shared + 1))
    throw Corrupt(where, at, "bad path '" + shown(n.path) + "': " + check_path(n.path));
  // The first `shared` bytes are equal, so the order is decided after them.
  if (i > 0 && !path_less(std::string_view(nodes[i - 1].path).substr(shared), std::string_view(n.path).substr(shared)))
    throw Corrupt(where, at, "path '" + shown(n.path) + "' is out of order or repeated");
  // Paths are in path_less order, which lists each directory's subtree right
  // after it: the directories enclosing the current node form a stack, so
  // "the parent is a directory of the catalog" needs no lookup table.
  auto inside = [&](std::string_view dir) {
    return n.path.size() > dir.size() && n.path[dir.size()] == '/' && n.path.compare(0, dir.size(), dir) == 0;
  };
  while (!open_dirs_.empty() && !inside(nodes[open_dirs_.back()].path)) open_dirs_.pop_back();
  auto slash = n.path.rfind('/');
  if (slash != std::string::npos && (open_dirs_.empty() || nodes[open_dirs_.back()].path.size() != slash))
    throw Corrupt(where, at, "parent of '" + shown(n.path) + "' is not a directory of the catalog");
}

void NodePlacer::added(const Node& n, size_t i) {
  if (n.type == NodeType::Dir) open_dirs_.push_back(i);
}

const Node& hardlinked_file(const Catalog& c, size_t before, const Node& link, ByteReader& r) {
  auto end = c.nodes.begin() + ptrdiff_t(before);
  auto it = std::lower_bound(c.nodes.begin(), end, link.target, [](const Node& a, std::string_view t) { return path_less(a.path, t); });
  if (it == end || it->path != link.target || it->type != NodeType::File)
    r.fail("hardlink '" + shown(link.path) + "' to '" + shown(link.target) + "', which is not an earlier file");
  return *it;
}

void check_symlink_target(const Node& n, ByteReader& r) {
  if (n.target.empty() || n.target.find('\0') != std::string::npos) r.fail("bad symlink target");
}

static Catalog decode_catalog_v12(ByteReader& r, uint32_t version, const std::string& where) {
  Catalog c;
  c.version = version;
  c.name = std::string(r.str(kMaxPath));
  uint32_t nroots = r.u32();
  if (nroots > kMaxRoots) r.fail("more than 16 relocation roots");
  for (uint32_t i = 0; i < nroots; i++) c.roots.push_back(checked_root(r, r.str(kMaxPath)));
  uint64_t count = r.u64();
  // Each node takes at least 25 bytes; refuse counts the buffer cannot hold.
  if (count > r.remaining() / 25) r.fail("node count " + std::to_string(count) + " larger than the catalog");
  if (count > kMaxNodes) r.fail("node count " + std::to_string(count) + " above the limit of " + std::to_string(kMaxNodes));
  c.nodes.reserve(count);
  NodePlacer placer;
  for (uint64_t i = 0; i < count; i++) {
    uint64_t at = r.abs_pos();
    Node n;
    uint8_t type = r.u8();
    if (type < 1 || type > 4) r.fail("unknown node type " + std::to_string(type));
    n.type = NodeType(type);
    n.mode = r.u32();
    if (n.mode & ~07777u) r.fail("mode has bits outside 07777");
    n.mtime_ns = int64_t(r.u64());
    n.size = r.u64();
    n.path = c.keep(r.str(kMaxPath));
    placer.place(c.nodes, c.nodes.size(), n, where, at);
    switch (n.type) {
    case NodeType::File:
      std::memcpy(n.digest.data(), r.bytes(32).data(), 32);
      n.relocs = get_relocs(r, n.size, c.roots);
      if (version >= 2 && !n.relocs.empty()) n.reloc_kind = get_reloc_kind(r);
      break;
    case NodeType::Dir:
      if (n.size != 0) r.fail("directory with a size");
      break;
    case NodeType::Symlink: {
      n.target = std::string(r.str(kMaxPath));
      check_symlink_target(n, r);
      if (n.size != n.target.size()) r.fail("symlink size does not match its target");
      n.relocs = get_relocs(r, n.target.size(), c.roots);
      break;
    }
    case NodeType::Hardlink: {
      n.target = std::string(r.str(kMaxPath));
      if (n.size != hardlinked_file(c, c.nodes.size(), n, r).size) r.fail("hardlink size differs from its file");
      break;
    }
    }
    c.nodes.push_back(std::move(n));
    placer.added(c.nodes.back(), c.nodes.size() - 1);
  }
  if (!r.at_end()) r.fail("trailing bytes after the last node");
  return c;
}

std::string checked_root(ByteReader& r, std::string_view root) {
  if (root.empty() || root.find('\0') != std::string_view::npos) r.fail("empty relocation root or NUL byte in it");
  return std::string(root);
}

uint32_t catalog_version(ByteReader& r) {
  ByteSpan magic = r.bytes(4);
  if (std::memcmp(magic.data(), "HPCT", 4) != 0) r.fail("not an HPAK catalog (bad magic)");
  uint32_t version = r.u32();
  if (version < kOldestCatalogVersion || version > kNewestCatalogVersion) r.fail("unsupported catalog version " + std::to_string(version));
  if (r.u32() != 0) r.fail("unknown catalog flags");
  return version;
}

Catalog decode_catalog(ByteSpan bytes, const std::string& where) {
  ByteReader r(bytes, where);
  uint32_t version = catalog_version(r);
  return version >= 3 ? decode_catalog_v3(r, where) : decode_catalog_v12(r, version, where);
}

uint64_t spliced_size(const Node& n, const std::vector<std::string>& roots, size_t new_root_len) {
  uint64_t size = n.size;
  for (uint64_t v : n.relocs) size = size - roots[reloc_root(v)].size() + new_root_len;
  return size;
}

} // namespace hpak::formats
