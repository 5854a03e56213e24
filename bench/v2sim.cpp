// hpak-v2sim: sizes the pack-format-v2 candidates of issue 15 on one tree,
// without writing a pack. Throwaway measuring tool (kept so the table in
// bench/RESULTS.md can be reproduced); it does not share code with core/.
//
//   hpak-v2sim [--level L] [--catalog-bytes N] DIR
//
// Walks DIR like `hpak pack` (depth-first, siblings sorted bytewise), keeps
// regular files, dedups them by SHA-256 in first-seen order, and prints one
// line per candidate: the bytes of pack content + index, where
//   v1        72-byte entry header + each object compressed alone, 72 B/object index
//   dict      v1 + a per-pack zstd dictionary (64 KiB, trained on the small objects)
//   blkB      small objects (raw < B/2) concatenated in pack order into blocks of
//             ~B KiB raw, each block one zstd frame; per block a 48-byte header and
//             a 36-byte member (digest + u32 raw_len) per object; large objects as v1;
//             index records 44 B/object (digest 32 + offset u64 + member u32)
//   blkB+dict the same, each block compressed with the trained dictionary
//   blkB/idx20 blocks with a 20 B/object index (8-byte digest prefix + offset + member)
// `--catalog-bytes` (the catalogs' share of a real v1 pack, measured by the
// caller) is added to every candidate so totals compare with a .tar.zst.
//
//   hpak-v2sim --catalogs [--level L] [--name NAME] DIR          (issue 32)
//
// Catalog candidates on format 2's pack layout (blocks of ~64 KiB, objects
// below 32 KiB, raw entries >= 64 KiB aligned): walks DIR exactly as `hpak
// pack` does (directories, files, symlinks, hardlinks; relocations found as
// occurrences of DIR's real path) and prints, per candidate, the pack's fixed
// bytes, content (item headers + compressed payloads), block tables, the
// dictionary (entry + mirror), the catalog entries and the index. The `cat2`
// row is today's writer: catalog format 2 written twice (entry + mirror),
// 36-byte members, 56-byte index records (32 + 24); it equals the real
// `hpak pack -l 3` pack + index byte for byte (bench/catalog-candidates.sh).
//   names-once      catalog version "3" as sketched in bench/RESULTS.md: files
//                   name objects by pack ordinal, one copy, columns, zstd
//   /rows           the same fields node by node instead of in columns
//   /idx20          index records of 20 bytes (8-byte prefix + offset + member)
//   /sorted-ord     ordinals into the digest-sorted order (= index position)
//   self-contained  names-once plus the 32-byte digest of every object it names
//   /tbl4           block members of 4 bytes (raw_len only: the digest lives in
//                   the index alone, 44-byte records = digest + offset + member)
//   dictK+          blocks compressed with a K KiB dictionary trained per pack
//   /blk128         128 KiB blocks
//   sorted+sizes+mirror  the proposed format 3 catalog: digest-sorted
//                   ordinals, the files' sizes kept, an entry and its mirror
//   /entries        the single entries (objects >= half a block) compressed
//                   with the dictionary too
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <openssl/sha.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>
#include <zdict.h>
#include <zstd.h>

namespace {

using Bytes = std::vector<uint8_t>;

struct Obj {
  Bytes raw;
};

// The names in `dir` (not . and ..), sorted bytewise like hpak's walk; false if unreadable.
bool sorted_names(const std::string& dir, std::vector<std::string>& names) {
  DIR* d = opendir(dir.c_str());
  if (!d) return false;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return true;
}

void walk(const std::string& dir, std::vector<std::string>& files) {
  std::vector<std::string> names;
  if (!sorted_names(dir, names)) return;
  for (auto& n : names) {
    std::string p = dir + "/" + n;
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) walk(p, files);
    else if (S_ISREG(st.st_mode)) files.push_back(p);
  }
}

Bytes slurp(const std::string& p) {
  Bytes b;
  int fd = open(p.c_str(), O_RDONLY);
  if (fd < 0) return b;
  struct stat st;
  fstat(fd, &st);
  b.resize(size_t(st.st_size));
  size_t got = 0;
  while (got < b.size()) {
    ssize_t n = read(fd, b.data() + got, b.size() - got);
    if (n <= 0) break;
    got += size_t(n);
  }
  b.resize(got);
  close(fd);
  return b;
}

size_t zsize(const uint8_t* p, size_t n, int level, ZSTD_CDict* cd, ZSTD_CCtx* cx) {
  if (level <= 0) return n;
  Bytes out(ZSTD_compressBound(n));
  size_t r = cd ? ZSTD_compress_usingCDict(cx, out.data(), out.size(), p, n, cd) : ZSTD_compressCCtx(cx, out.data(), out.size(), p, n, level);
  if (ZSTD_isError(r)) return n;
  return std::min(r, n); // stored raw when compression does not pay
}

struct Sizes {
  uint64_t pack = 0, index = 0, blocks = 0, max_block_raw = 0;
};

Sizes v1(const std::vector<Obj>& objs, int level, ZSTD_CDict* cd, size_t dict_bytes, ZSTD_CCtx* cx) {
  Sizes s;
  s.pack = 32 + 32 + 32 + dict_bytes + (dict_bytes ? 72 : 0);
  for (auto& o : objs) s.pack += 72 + zsize(o.raw.data(), o.raw.size(), level, cd, cx);
  s.index = 56 + 1024 + 32 + 72 * objs.size();
  return s;
}

Sizes blocks(const std::vector<Obj>& objs, int level, size_t target, ZSTD_CDict* cd, size_t dict_bytes, ZSTD_CCtx* cx,
             size_t index_rec) {
  Sizes s;
  s.pack = 32 + 32 + 32 + dict_bytes + (dict_bytes ? 72 : 0);
  Bytes cur;
  size_t members = 0;
  auto close_block = [&] {
    if (members == 0) return;
    s.pack += 48 + 36 * members + zsize(cur.data(), cur.size(), level, cd, cx);
    s.max_block_raw = std::max<uint64_t>(s.max_block_raw, cur.size());
    s.blocks++;
    cur.clear();
    members = 0;
  };
  for (auto& o : objs) {
    if (o.raw.size() >= target / 2) {
      s.pack += 72 + zsize(o.raw.data(), o.raw.size(), level, nullptr, cx);
      continue;
    }
    if (!cur.empty() && cur.size() + o.raw.size() > target) close_block();
    cur.insert(cur.end(), o.raw.begin(), o.raw.end());
    members++;
  }
  close_block();
  s.index = 56 + 1024 + 32 + index_rec * objs.size();
  return s;
}

Bytes train(const std::vector<Obj>& objs, size_t cap) {
  Bytes samples;
  std::vector<size_t> lens;
  for (auto& o : objs) {
    if (o.raw.size() >= 64 * 1024 || o.raw.empty()) continue;
    if (samples.size() + o.raw.size() > (64u << 20)) break;
    samples.insert(samples.end(), o.raw.begin(), o.raw.end());
    lens.push_back(o.raw.size());
  }
  Bytes dict(cap);
  if (lens.size() < 10) return {};
  size_t r = ZDICT_trainFromBuffer(dict.data(), dict.size(), samples.data(), lens.data(), unsigned(lens.size()));
  if (ZDICT_isError(r)) return {};
  dict.resize(r);
  return dict;
}

// ---- issue 32: catalog candidates on format 2's blk64 layout ----------------

struct Node {
  uint8_t type = 2; // 1 dir, 2 file, 3 symlink, 4 hardlink (catalog format 2)
  uint32_t mode = 0;
  int64_t mtime = 0;
  uint64_t size = 0;
  std::string path, target;
  uint32_t ord = 0;             // file: the object's ordinal in pack order
  uint32_t link_node = 0;       // hardlink: index of the first link's node
  std::vector<uint64_t> relocs; // (root index << 56) | offset
};

void walk_nodes(const std::string& root, const std::string& rel, std::vector<Node>& out,
                std::map<std::pair<dev_t, ino_t>, std::pair<std::string, uint32_t>>& links) {
  std::string dir = rel.empty() ? root : root + "/" + rel;
  std::vector<std::string> names;
  if (!sorted_names(dir, names)) return;
  for (auto& name : names) {
    std::string path = rel.empty() ? name : rel + "/" + name;
    std::string full = root + "/" + path;
    struct stat st;
    if (lstat(full.c_str(), &st) != 0) continue;
    Node n;
    n.path = path;
    n.mode = st.st_mode & 07777;
    n.mtime = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (S_ISDIR(st.st_mode)) {
      n.type = 1;
      out.push_back(n);
      walk_nodes(root, path, out, links);
    } else if (S_ISREG(st.st_mode)) {
      n.size = uint64_t(st.st_size);
      if (st.st_nlink > 1) {
        auto key = std::make_pair(st.st_dev, st.st_ino);
        auto it = links.find(key);
        if (it != links.end()) {
          n.type = 4;
          n.target = it->second.first;
          n.link_node = it->second.second;
          out.push_back(n);
          continue;
        }
        links.emplace(key, std::make_pair(path, uint32_t(out.size())));
      }
      n.type = 2;
      out.push_back(n);
    } else if (S_ISLNK(st.st_mode)) {
      n.type = 3;
      char buf[4096];
      ssize_t len = readlink(full.c_str(), buf, sizeof buf);
      if (len <= 0) continue;
      n.target.assign(buf, size_t(len));
      n.size = n.target.size();
      n.mode = 0777;
      out.push_back(n);
    }
  }
}

std::vector<uint64_t> find_relocs(const uint8_t* p, size_t n, const std::string& root) {
  std::vector<uint64_t> out;
  if (root.empty()) return out;
  size_t i = 0;
  while (i + root.size() <= n) {
    const void* hit = memmem(p + i, n - i, root.data(), root.size());
    if (!hit) break;
    size_t off = size_t(static_cast<const uint8_t*>(hit) - p);
    out.push_back(off); // root index 0
    i = off + root.size();
  }
  return out;
}

void put_u8(Bytes& b, uint8_t v) { b.push_back(v); }
void put_u32(Bytes& b, uint32_t v) { for (int i = 0; i < 4; i++) b.push_back(uint8_t(v >> (8 * i))); }
void put_u64(Bytes& b, uint64_t v) { for (int i = 0; i < 8; i++) b.push_back(uint8_t(v >> (8 * i))); }
void put_str(Bytes& b, const std::string& s) { put_u32(b, uint32_t(s.size())); b.insert(b.end(), s.begin(), s.end()); }
void put_var(Bytes& b, uint64_t v) {
  while (v >= 0x80) { b.push_back(uint8_t(v | 0x80)); v >>= 7; }
  b.push_back(uint8_t(v));
}
uint64_t zigzag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
void put_vstr(Bytes& b, const std::string& s) { put_var(b, s.size()); b.insert(b.end(), s.begin(), s.end()); }

// Catalog format 2 exactly as formats/catalog_format.cpp encodes it.
Bytes encode_cat2(const std::string& name, const std::vector<std::string>& roots, const std::vector<Node>& nodes,
                  const std::vector<std::array<uint8_t, 32>>& digests) {
  Bytes b;
  b.insert(b.end(), {'H', 'P', 'C', 'T'});
  put_u32(b, 2);
  put_u32(b, 0);
  put_str(b, name);
  put_u32(b, uint32_t(roots.size()));
  for (auto& r : roots) put_str(b, r);
  put_u64(b, nodes.size());
  for (auto& n : nodes) {
    put_u8(b, n.type);
    put_u32(b, n.mode);
    put_u64(b, uint64_t(n.mtime));
    put_u64(b, n.size);
    put_str(b, n.path);
    if (n.type == 2) {
      b.insert(b.end(), digests[n.ord].begin(), digests[n.ord].end());
      put_u32(b, uint32_t(n.relocs.size()));
      for (auto r : n.relocs) put_u64(b, r);
      if (!n.relocs.empty()) put_u8(b, 1); // the kind (one byte; its value does not change the size)
    } else if (n.type == 3) {
      put_str(b, n.target);
      put_u32(b, uint32_t(n.relocs.size()));
      for (auto r : n.relocs) put_u64(b, r);
    } else if (n.type == 4) {
      put_str(b, n.target);
    }
  }
  return b;
}

size_t common_prefix(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) i++;
  return i;
}

// names-once: files name their object by ordinal (delta to the previous file's
// ordinal + 1, zigzag varint); no digests, no sizes (a file's size is its
// object's raw_len in the block table; a symlink's its target's length; a
// hardlink names its first link by node index); paths as (shared prefix with
// the previous path, suffix); mtimes as zigzag deltas. `columns`: each field in
// its own run (all types, all modes, ...), else node by node.
Bytes encode_names_once(const std::string& name, const std::vector<std::string>& roots, const std::vector<Node>& nodes,
                        bool columns, const std::vector<uint32_t>* remap = nullptr, std::vector<Bytes>* cols_out = nullptr,
                        bool sizes = false) {
  Bytes head;
  head.insert(head.end(), {'H', 'P', 'C', '3'});
  put_var(head, 3);
  put_vstr(head, name);
  put_var(head, roots.size());
  for (auto& r : roots) put_vstr(head, r);
  put_var(head, nodes.size());
  enum { TYPE, MODE, MTIME, PLEN, SLEN, SUFFIX, ORD, TARGET, RELOC, SIZE, NCOL };
  std::vector<Bytes> col(NCOL);
  Bytes rows;
  auto C = [&](int c) -> Bytes& { return columns ? col[c] : rows; };
  std::string prev;
  int64_t prev_mtime = 0;
  int64_t next_ord = 0;
  for (size_t i = 0; i < nodes.size(); i++) {
    const Node& n = nodes[i];
    put_u8(C(TYPE), n.type);
    if (n.type != 3) put_var(C(MODE), n.mode);
    put_var(C(MTIME), zigzag(n.mtime - prev_mtime));
    prev_mtime = n.mtime;
    size_t cp = common_prefix(prev, n.path);
    put_var(C(PLEN), cp);
    put_var(C(SLEN), n.path.size() - cp);
    C(SUFFIX).insert(C(SUFFIX).end(), n.path.begin() + long(cp), n.path.end());
    prev = n.path;
    if (n.type == 2) {
      int64_t ord = remap ? int64_t((*remap)[n.ord]) : int64_t(n.ord);
      put_var(C(ORD), zigzag(ord - next_ord));
      next_ord = ord + 1;
      if (sizes) put_var(C(SIZE), n.size);
    }
    if (n.type == 3) put_vstr(C(TARGET), n.target);
    if (n.type == 4) put_var(C(TARGET), i - n.link_node);
    if (n.type == 2 || n.type == 3) {
      put_var(C(RELOC), n.relocs.size());
      uint64_t last = 0;
      for (auto r : n.relocs) {
        if (roots.size() > 1) put_u8(C(RELOC), uint8_t(r >> 56));
        uint64_t off = r & ((uint64_t(1) << 56) - 1);
        put_var(C(RELOC), off - last);
        last = off;
      }
      if (n.type == 2 && !n.relocs.empty()) put_u8(C(RELOC), 1);
    }
  }
  if (cols_out) *cols_out = col;
  Bytes out = head;
  if (columns) {
    for (auto& c : col) put_var(out, c.size());
    for (auto& c : col) out.insert(out.end(), c.begin(), c.end());
  } else {
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

// Format 2's layout (blocks of ~64 KiB raw of the objects below 32 KiB, the
// others single entries, raw ones >= 64 KiB aligned to 4096), with `member`
// bytes per block member (36 today: digest + raw_len).
struct Layout {
  uint64_t fixed = 96; // pack header, footer, trailer
  uint64_t content = 0, tables = 0, items = 0, blocks = 0;
};

Layout layout2(const std::vector<Obj>& objs, int level, ZSTD_CDict* cd, ZSTD_CCtx* cx, size_t member, size_t target = 64 * 1024,
               bool dict_entries = false) {
  Layout s;
  uint64_t pos = 32;
  Bytes cur;
  size_t members = 0;
  auto close_block = [&] {
    if (members == 0) return;
    size_t z = zsize(cur.data(), cur.size(), level, cd, cx);
    s.content += 48 + z;
    s.tables += member * members;
    pos += 48 + member * members + z;
    s.blocks++;
    s.items++;
    cur.clear();
    members = 0;
  };
  for (auto& o : objs) {
    if (o.raw.size() >= target / 2) {
      size_t z = zsize(o.raw.data(), o.raw.size(), level, dict_entries ? cd : nullptr, cx);
      uint64_t pad = 0;
      if (z == o.raw.size() && z >= 64 * 1024) pad = (4096 - (pos + 72) % 4096) % 4096;
      s.content += pad + 72 + z;
      pos += pad + 72 + z;
      s.items++;
      continue;
    }
    if (!cur.empty() && cur.size() + o.raw.size() > target) close_block();
    cur.insert(cur.end(), o.raw.begin(), o.raw.end());
    members++;
  }
  close_block();
  return s;
}

} // namespace

int main(int argc, char** argv) {
  int level = 3;
  uint64_t catalog = 0;
  bool catalogs = false;
  std::string dir, name;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--level" && i + 1 < argc) level = std::atoi(argv[++i]);
    else if (a == "--catalog-bytes" && i + 1 < argc) catalog = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--catalogs") catalogs = true;
    else if (a == "--name" && i + 1 < argc) name = argv[++i];
    else dir = a;
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: hpak-v2sim [--level L] [--catalog-bytes N] DIR\n"
                         "       hpak-v2sim --catalogs [--level L] [--name NAME] DIR   (issue 32)\n");
    return 2;
  }
  if (catalogs) {
    char* rp = realpath(dir.c_str(), nullptr);
    std::string root = rp ? rp : dir;
    free(rp);
    if (name.empty()) name = root.substr(root.rfind('/') + 1);
    std::vector<Node> nodes;
    std::map<std::pair<dev_t, ino_t>, std::pair<std::string, uint32_t>> links;
    walk_nodes(root, "", nodes, links);
    std::map<std::string, uint32_t> seen;
    std::vector<Obj> objs;
    std::vector<std::array<uint8_t, 32>> digests;
    uint64_t files = 0;
    for (auto& n : nodes) {
      if (n.type == 3) n.relocs = find_relocs(reinterpret_cast<const uint8_t*>(n.target.data()), n.target.size(), root);
      if (n.type != 2) continue;
      files++;
      Bytes b = slurp(root + "/" + n.path);
      n.relocs = find_relocs(b.data(), b.size(), root);
      std::array<uint8_t, 32> md;
      SHA256(b.data(), b.size(), md.data());
      std::string key(reinterpret_cast<char*>(md.data()), 32);
      auto [it, fresh] = seen.emplace(key, uint32_t(objs.size()));
      n.ord = it->second;
      if (!fresh) continue;
      digests.push_back(md);
      objs.push_back({std::move(b)});
    }
    ZSTD_CCtx* cx = ZSTD_createCCtx();
    auto zs = [&](const Bytes& b) { return zsize(b.data(), b.size(), level, nullptr, cx); };
    Bytes c2 = encode_cat2(name, {root}, nodes, digests);
    Bytes n1 = encode_names_once(name, {root}, nodes, true);
    Bytes n1rows = encode_names_once(name, {root}, nodes, false);
    // names-once/sorted: ordinals into the digest-sorted order (an index record's position)
    std::vector<uint32_t> rank(objs.size());
    {
      std::vector<uint32_t> by(objs.size());
      for (uint32_t i = 0; i < by.size(); i++) by[i] = i;
      std::sort(by.begin(), by.end(), [&](uint32_t a, uint32_t b) { return digests[a] < digests[b]; });
      for (uint32_t i = 0; i < by.size(); i++) rank[by[i]] = i;
    }
    std::vector<Bytes> cols;
    Bytes n1sorted = encode_names_once(name, {root}, nodes, true, &rank, nullptr);
    encode_names_once(name, {root}, nodes, true, nullptr, &cols, true);
    Bytes n1sizes = encode_names_once(name, {root}, nodes, true, &rank, nullptr, true);
    std::printf("# %s: %zu nodes, %llu files, %zu objects, level %d; catalog raw: cat2 %zu, names-once %zu (rows %zu)\n",
                root.c_str(), nodes.size(), (unsigned long long)files, objs.size(), level, c2.size(), n1.size(), n1rows.size());
    {
      const char* cn[] = {"types", "modes", "mtimes", "prefix-lens", "suffix-lens", "suffixes", "ordinals", "targets", "relocs", "sizes"};
      std::printf("# names-once columns, raw/zstd alone:");
      for (size_t c = 0; c < cols.size(); c++) std::printf(" %s %zu/%zu", cn[c], cols[c].size(), zs(cols[c]));
      std::printf("\n");
    }
    {
      // What blocking costs: all objects as one solid zstd stream (no random
      // access), the content a .tar.zst holds without its tar headers.
      Bytes solid;
      for (auto& o : objs) solid.insert(solid.end(), o.raw.begin(), o.raw.end());
      std::printf("# content as one solid zstd stream at level %d: %zu bytes (raw %zu)\n", level, zs(solid), solid.size());
    }
    Layout l36 = layout2(objs, level, nullptr, cx, 36);
    Layout l4 = layout2(objs, level, nullptr, cx, 4);
    const uint64_t idx_fixed = 56 + 1024 + 32;
    std::printf("%-22s %10s %10s %10s %10s %10s %10s %10s\n", "candidate", "fixed", "content", "tables", "dict", "catalog",
                "index", "total");
    auto row = [&](const std::string& cand, const Layout& l, uint64_t dict_store, unsigned dict_entries, uint64_t cat_store,
                   unsigned cat_entries, size_t rec) {
      uint64_t index = idx_fixed + rec * (objs.size() + dict_entries + cat_entries);
      uint64_t total = l.fixed + l.content + l.tables + dict_store + cat_store + index;
      std::printf("%-22s %10llu %10llu %10llu %10llu %10llu %10llu %10llu\n", cand.c_str(), (unsigned long long)l.fixed,
                  (unsigned long long)l.content, (unsigned long long)l.tables, (unsigned long long)dict_store,
                  (unsigned long long)cat_store, (unsigned long long)index, (unsigned long long)total);
    };
    const uint64_t cat2 = 2 * (72 + zs(c2)), once = 72 + zs(n1), rows = 72 + zs(n1rows);
    row("cat2", l36, 0, 0, cat2, 2, 56);
    row("cat2/idx20", l36, 0, 0, cat2, 2, 20);
    row("names-once/rows", l36, 0, 0, rows, 1, 56);
    row("names-once", l36, 0, 0, once, 1, 56);
    row("names-once/idx20", l36, 0, 0, once, 1, 20);
    // self-contained: the catalog carries the digests of the objects it names
    // (first-use order, the files' ordinals index it): pack-independent, the
    // cost of a `pack --into` catalog whose objects all live in older packs.
    Bytes selfc = n1;
    for (auto& d : digests) selfc.insert(selfc.end(), d.begin(), d.end());
    row("self-contained", l36, 0, 0, 72 + zs(selfc), 1, 56);
    row("self-contained/idx20", l36, 0, 0, 72 + zs(selfc), 1, 20);
    row("names-once/sorted-ord", l36, 0, 0, 72 + zs(n1sorted), 1, 56);
    row("names-once/sorted/idx20", l36, 0, 0, 72 + zs(n1sorted), 1, 20);
    row("names-once/tbl4", l4, 0, 0, once, 1, 56);
    // the proposal: digest-sorted ordinals, file sizes kept, the mirror kept
    const uint64_t prop = 2 * (72 + zs(n1sizes));
    row("sorted+sizes+mirror/tbl4/idx44", l4, 0, 0, prop, 2, 44);
    row("names-once/tbl4/idx44", l4, 0, 0, once, 1, 44);
    for (size_t cap : {16 * 1024, 64 * 1024}) {
      Bytes dict = level > 0 ? train(objs, cap) : Bytes{};
      if (dict.empty()) continue;
      ZSTD_CDict* cd = ZSTD_createCDict(dict.data(), dict.size(), level);
      uint64_t dstore = 2 * (72 + zs(dict)); // an entry and its mirror, like a catalog
      std::string k = "dict" + std::to_string(cap / 1024) + "+names-once";
      Layout d36 = layout2(objs, level, cd, cx, 36);
      Layout d4 = layout2(objs, level, cd, cx, 4);
      row(k, d36, dstore, 2, once, 1, 56);
      row(k + "/idx20", d36, dstore, 2, once, 1, 20);
      row(k + "/tbl4/idx44", d4, dstore, 2, once, 1, 44);
      row("dict" + std::to_string(cap / 1024) + "+sorted+sizes+mirror/tbl4/idx44", d4, dstore, 2, prop, 2, 44);
      if (cap == 64 * 1024) {
        Layout b128 = layout2(objs, level, cd, cx, 4, 128 * 1024);
        row(k + "/tbl4/idx44/blk128", b128, dstore, 2, once, 1, 44);
        Layout all = layout2(objs, level, cd, cx, 4, 128 * 1024, true);
        row(k + "/tbl4/idx44/blk128/entries", all, dstore, 2, once, 1, 44);
      }
      ZSTD_freeCDict(cd);
    }
    ZSTD_freeCCtx(cx);
    return 0;
  }
  std::vector<std::string> files;
  walk(dir, files);
  std::map<std::string, bool> seen;
  std::vector<Obj> objs;
  uint64_t raw_total = 0, small = 0;
  for (auto& f : files) {
    Bytes b = slurp(f);
    uint8_t md[32];
    SHA256(b.data(), b.size(), md);
    std::string key(reinterpret_cast<char*>(md), 32);
    if (!seen.emplace(key, true).second) continue;
    raw_total += b.size();
    if (b.size() < 1024) small++;
    objs.push_back({std::move(b)});
  }
  std::printf("# %s: %zu files, %zu unique objects (%llu under 1 KiB), %llu raw bytes, level %d, catalogs %llu bytes\n",
              dir.c_str(), files.size(), objs.size(), (unsigned long long)small, (unsigned long long)raw_total, level,
              (unsigned long long)catalog);
  std::printf("%-16s %12s %12s %12s %8s\n", "candidate", "pack", "index", "total", "blocks");
  ZSTD_CCtx* cx = ZSTD_createCCtx();
  auto row = [&](const char* name, const Sizes& s) {
    std::printf("%-16s %12llu %12llu %12llu %8llu\n", name, (unsigned long long)(s.pack + catalog), (unsigned long long)s.index,
                (unsigned long long)(s.pack + catalog + s.index), (unsigned long long)s.blocks);
  };
  row("v1", v1(objs, level, nullptr, 0, cx));
  Bytes dict = level > 0 ? train(objs, 64 * 1024) : Bytes{};
  ZSTD_CDict* cd = dict.empty() ? nullptr : ZSTD_createCDict(dict.data(), dict.size(), level);
  if (cd) row("dict", v1(objs, level, cd, dict.size(), cx));
  for (size_t kib : {16, 32, 64, 128}) {
    std::string n = "blk" + std::to_string(kib);
    row(n.c_str(), blocks(objs, level, kib * 1024, nullptr, 0, cx, 44));
    if (cd) row((n + "+dict").c_str(), blocks(objs, level, kib * 1024, cd, dict.size(), cx, 44));
    row((n + "/idx20").c_str(), blocks(objs, level, kib * 1024, nullptr, 0, cx, 20));
  }
  if (cd) ZSTD_freeCDict(cd);
  ZSTD_freeCCtx(cx);
  return 0;
}
