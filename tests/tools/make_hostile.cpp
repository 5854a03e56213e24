// hpak_make_hostile OUTDIR: writes the hostile-pack corpus of tests/data/hostile.
//
// Each case is a small pack (sometimes with a .hidx) built with PackWriter and
// a raw catalog encoder that bypasses every validation rule, so the packs are
// well-formed containers carrying malicious content. OUTDIR/README lists every
// file, the exit statuses `hpak verify`, `hpak ls` and `hpak unpack` must
// give on it, and the attack, one line each; tests/cli/test_hostile.sh reads
// those lines. The output is deterministic: regenerate and commit when a case
// is added (`hpak_make_hostile tests/data/hostile`).
//
// Paths that would land outside an unpack target name harmless canary files
// (hpak-hostile-*), never real system files, so that even a regression in the
// checks cannot damage the machine running the tests.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include "core/pack/pack_reader.hpp"
#include "core/pack/pack_writer.hpp"
#include "base/zstd_codec.hpp"
#include "formats/catalog_format.hpp"
#include "formats/index_format.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

std::string g_out;
std::string g_readme;

Bytes bytes_of(std::string_view s) { return Bytes(s.begin(), s.end()); }

// ---- raw catalog encoder (no validation at all) ----------------------------

struct RawNode {
  uint8_t type = 2;
  uint32_t mode = 0644;
  int64_t mtime_ns = 1600000000000000000ll;
  uint64_t size = 0;
  std::string path;
  Digest digest{};
  std::string target;
  std::vector<uint64_t> relocs;
};

struct RawCatalog {
  std::string name = "hostile";
  std::vector<std::string> roots;
  std::vector<RawNode> nodes;
  std::optional<uint64_t> count; // override of node_count
  uint32_t version = 1;
  // Version 3 only: overrides of what the encoder computes (empty: computed).
  std::vector<Digest> table;  // the digest table (else the files' digests, sorted, each once)
  std::vector<uint64_t> refs; // each file's table index
  std::vector<uint64_t> plens; // each path's bytes shared with the previous one
};

void put_str_raw(Bytes& b, std::string_view s) {
  put_u32(b, uint32_t(s.size()));
  b.insert(b.end(), s.begin(), s.end());
}

Bytes raw_catalog_v3(const RawCatalog& c);

Bytes raw_catalog(const RawCatalog& c) {
  if (c.version == 3) return raw_catalog_v3(c);
  Bytes b = bytes_of("HPCT");
  put_u32(b, c.version);
  put_u32(b, 0);
  put_str_raw(b, c.name);
  put_u32(b, uint32_t(c.roots.size()));
  for (auto& r : c.roots) put_str_raw(b, r);
  put_u64(b, c.count ? *c.count : c.nodes.size());
  for (auto& n : c.nodes) {
    put_u8(b, n.type);
    put_u32(b, n.mode);
    put_u64(b, uint64_t(n.mtime_ns));
    put_u64(b, n.size);
    put_str_raw(b, n.path);
    switch (n.type) {
    case 2:
      put_bytes(b, n.digest);
      put_u32(b, uint32_t(n.relocs.size()));
      for (auto r : n.relocs) put_u64(b, r);
      break;
    case 3:
      put_str_raw(b, n.target);
      put_u32(b, uint32_t(n.relocs.size()));
      for (auto r : n.relocs) put_u64(b, r);
      break;
    case 4: put_str_raw(b, n.target); break;
    default: break;
    }
  }
  return b;
}

size_t shared_prefix(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) i++;
  return i;
}

std::vector<Digest> v3_table(const RawCatalog& c) {
  if (!c.table.empty()) return c.table;
  std::vector<Digest> t;
  for (auto& n : c.nodes)
    if (n.type == 2) t.push_back(n.digest);
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  return t;
}

void put_v3_paths(Bytes& b, const RawCatalog& c) {
  std::vector<uint64_t> plens = c.plens;
  if (plens.empty())
    for (size_t i = 0; i < c.nodes.size(); i++) plens.push_back(i ? shared_prefix(c.nodes[i - 1].path, c.nodes[i].path) : 0);
  for (auto p : plens) put_var(b, p);
  for (size_t i = 0; i < c.nodes.size(); i++) put_var(b, c.nodes[i].path.size() - std::min<uint64_t>(plens[i], c.nodes[i].path.size()));
  for (size_t i = 0; i < c.nodes.size(); i++) b.insert(b.end(), c.nodes[i].path.begin() + ptrdiff_t(std::min<uint64_t>(plens[i], c.nodes[i].path.size())), c.nodes[i].path.end());
}

void put_v3_relocs(Bytes& b, const RawCatalog& c, const RawNode& n) {
  put_var(b, n.relocs.size());
  uint64_t next_min = 0;
  for (auto v : n.relocs) {
    unsigned root = reloc_root(v);
    if (c.roots.size() > 1) put_var(b, root);
    put_var(b, reloc_offset(v) - next_min);
    next_min = reloc_offset(v) + (root < c.roots.size() ? c.roots[root].size() : 0);
  }
}

// Catalog format 3 (formats/catalog_format.hpp), with no validation at all.
Bytes raw_catalog_v3(const RawCatalog& c) {
  Bytes b = bytes_of("HPCT");
  put_u32(b, c.version);
  put_u32(b, 0);
  put_vstr(b, c.name);
  put_var(b, c.roots.size());
  for (auto& r : c.roots) put_vstr(b, r);
  std::vector<Digest> table = v3_table(c);
  put_var(b, table.size());
  for (auto& d : table) put_bytes(b, d);
  put_var(b, c.count ? *c.count : c.nodes.size());
  for (auto& n : c.nodes) put_u8(b, n.type);
  for (auto& n : c.nodes) put_var(b, n.mode);
  int64_t prev = 0;
  for (auto& n : c.nodes) {
    put_var(b, zigzag(int64_t(uint64_t(n.mtime_ns) - uint64_t(prev))));
    prev = n.mtime_ns;
  }
  put_v3_paths(b, c);
  for (auto& n : c.nodes)
    if (n.type == 2) put_var(b, n.size);
  size_t k = 0;
  for (auto& n : c.nodes)
    if (n.type == 2) {
      uint64_t ref = uint64_t(std::lower_bound(table.begin(), table.end(), n.digest) - table.begin());
      put_var(b, k < c.refs.size() ? c.refs[k] : ref);
      k++;
    }
  for (auto& n : c.nodes)
    if (n.type == 3 || n.type == 4) put_vstr(b, n.target);
  for (auto& n : c.nodes)
    if (n.type == 2 || n.type == 3) put_v3_relocs(b, c, n);
  for (auto& n : c.nodes)
    if (n.type == 2 && !n.relocs.empty()) put_u8(b, 1); // text
  return b;
}

const Bytes kHello = bytes_of("hello from a hostile pack\n");
const Bytes kHello2 = bytes_of("a second hostile file\n");
const Bytes kPwned = bytes_of("pwned: this file must never be written\n");

RawNode dir(std::string path, uint32_t mode = 0755) {
  RawNode n;
  n.type = 1;
  n.mode = mode;
  n.path = std::move(path);
  return n;
}
RawNode file(std::string path, const Bytes& content = kPwned) {
  RawNode n;
  n.type = 2;
  n.path = std::move(path);
  n.size = content.size();
  n.digest = sha256(content);
  return n;
}
RawNode slink(std::string path, std::string target) {
  RawNode n;
  n.type = 3;
  n.mode = 0777;
  n.path = std::move(path);
  n.target = std::move(target);
  n.size = n.target.size();
  return n;
}
RawNode hlink(std::string path, std::string target, uint64_t size) {
  RawNode n;
  n.type = 4;
  n.path = std::move(path);
  n.target = std::move(target);
  n.size = size;
  return n;
}

// ---- pack writer ------------------------------------------------------------

struct Blob {
  Kind kind = Kind::Blob;
  Codec codec = Codec::Zstd;
  Digest digest{};
  uint64_t raw_len = 0;
  Bytes stored;
};

Blob blob(const Bytes& content) {
  Blob b;
  b.digest = sha256(content);
  b.raw_len = content.size();
  zstd_compress(content, 3, nullptr, b.stored);
  return b;
}

struct PackSpec {
  std::vector<Blob> blobs;
  std::vector<Bytes> catalogs;          // raw catalog bytes, each stored twice
  std::optional<uint64_t> catalog_raw_len; // lie about the catalog's size
  // Both copies of each catalog stored against this base (codec zstd-base):
  // the digest named, and the bytes the frame is made against.
  std::optional<std::pair<Digest, Bytes>> catalog_against;
  bool write_index = false;
  // Format 2: blocks written verbatim (header fields as given, checksums
  // computed), before the blobs. Cases without blocks stay format 1.
  struct RawBlock {
    BlockHeader header;
    std::vector<BlockMember> members;
    Bytes payload;
  };
  std::vector<RawBlock> blocks;
};

PackResult write_pack(const std::string& name, const PackSpec& spec) {
  std::string path = g_out + "/" + name;
  ::unlink(path.c_str());
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    perror(path.c_str());
    exit(2);
  }
  PackResult res;
  {
    PackWriter pw(fd, path, 3, spec.blocks.empty() ? kPackVersion : kPackVersion2);
    for (auto& bl : spec.blocks) {
      BlockHeader h = bl.header;
      h.stored_len = uint32_t(bl.payload.size());
      h.stored_xxh = xxh64(bl.payload);
      Bytes table = encode_block_table(h, bl.members);
      h.table_xxh = xxh64(table);
      pw.append_block_copy(h, bl.members, table, bl.payload);
    }
    for (auto& b : spec.blobs) pw.append(b.kind, b.codec, b.digest, b.raw_len, b.stored, 0, true);
    for (auto& raw : spec.catalogs) {
      Bytes stored;
      Codec codec = Codec::Zstd;
      Digest d = sha256(raw);
      if (spec.catalog_against) {
        codec = Codec::ZstdBase;
        const Digest& base = spec.catalog_against->first;
        Bytes frame;
        zstd_compress_against(raw, spec.catalog_against->second, 3, frame);
        stored.assign(base == Digest{} ? d.begin() : base.begin(), base == Digest{} ? d.end() : base.end()); // zero: itself
        stored.insert(stored.end(), frame.begin(), frame.end());
      } else {
        zstd_compress(raw, 3, nullptr, stored);
      }
      uint64_t raw_len = spec.catalog_raw_len ? *spec.catalog_raw_len : raw.size();
      pw.append(Kind::Catalog, codec, d, raw_len, stored, 0, true);
      pw.append(Kind::Catalog, codec, d, raw_len, stored, 1, true);
    }
    res = pw.finish();
  }
  ::close(fd);
  std::string ip = index_path_for(path);
  ::unlink(ip.c_str());
  if (spec.write_index) {
    Bytes idx = encode_index(res.records, res.size, res.pack_sum, spec.blocks.empty() ? kIndexVersion : kIndexVersion2);
    int ifd = ::open(ip.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    write_all(ifd, idx, ip);
    ::close(ifd);
  }
  return res;
}

void write_bytes(const std::string& name, const Bytes& b) {
  std::string path = g_out + "/" + name;
  ::unlink(path.c_str());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  write_all(fd, b, path);
  ::close(fd);
}

// Expected exit statuses: verify, ls, unpack. "0" for unpack means the pack
// is intact and must restore (only its index is hostile).
void note(const std::string& file, const char* expect, const std::string& what) {
  char line[512];
  std::snprintf(line, sizeof line, "%-28s %-20s %s\n", file.c_str(), expect, what.c_str());
  g_readme += line;
}

// A pack of one hostile catalog (plus the blobs its files need).
void catalog_case(const std::string& name, const RawCatalog& c, const std::string& what,
                  const char* expect = "verify=1 ls=2 unpack=2") {
  PackSpec s;
  s.blobs = {blob(kPwned), blob(kHello)};
  s.catalogs = {raw_catalog(c)};
  write_pack(name + ".hpak", s);
  note(name + ".hpak", expect, what);
}

RawCatalog cat(std::vector<RawNode> nodes, std::vector<std::string> roots = {}) {
  RawCatalog c;
  c.nodes = std::move(nodes);
  c.roots = std::move(roots);
  return c;
}
RawCatalog cat3(std::vector<RawNode> nodes, std::vector<std::string> roots = {}) {
  RawCatalog c = cat(std::move(nodes), std::move(roots));
  c.version = 3;
  return c;
}

Bytes zstd_stream_no_size(const Bytes& in) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
  Bytes out(ZSTD_compressBound(in.size()) + 1024);
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  ZSTD_outBuffer ob{out.data(), out.size(), 0};
  size_t rem = ZSTD_compressStream2(c, &ob, &ib, ZSTD_e_end);
  if (ZSTD_isError(rem) || rem != 0) {
    fprintf(stderr, "zstd stream failed\n");
    exit(2);
  }
  out.resize(ob.pos);
  ZSTD_freeCCtx(c);
  return out;
}

} // namespace

// --forge NAME_FILE CONTENT_FILE DIR: a library pack (DIR/pack-<sum>.hpak and
// its .hidx) whose one blob is named by the SHA-256 of NAME_FILE but holds the
// bytes of CONTENT_FILE, every checksum consistent: a member's forgery that only
// a SHA-256 of the content against its name can tell (tests/cli/test_trust.sh).
int forge(const std::string& name_file, const std::string& content_file, const std::string& dir) {
  Bytes name_bytes = read_file(name_file), content = read_file(content_file);
  std::string tmp = dir + "/forged.tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
  if (fd < 0) return perror(tmp.c_str()), 1;
  PackResult r;
  {
    PackWriter w(fd, tmp, 0);
    w.append(Kind::Blob, Codec::Raw, sha256(name_bytes), content.size(), content);
    r = w.finish();
  }
  close(fd);
  std::string stem = dir + "/pack-" + to_hex(r.file_sum);
  if (rename(tmp.c_str(), (stem + ".hpak").c_str()) != 0) return perror("rename"), 1;
  Bytes idx = encode_index(r.records, r.size, r.pack_sum);
  int ifd = open((stem + ".hidx").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
  if (ifd < 0 || write(ifd, idx.data(), idx.size()) != ssize_t(idx.size())) return perror("index"), 1;
  close(ifd);
  printf("%s.hpak\n", stem.c_str());
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--forge") return forge(argv[2], argv[3], argv[4]);
  if (argc != 2) {
    fprintf(stderr, "usage: hpak_make_hostile OUTDIR | --forge NAME_FILE CONTENT_FILE DIR\n");
    return 2;
  }
  g_out = argv[1];
  mkdir(g_out.c_str(), 0755);

  // ---- paths ----
  catalog_case("path-dotdot", cat({file("../hpak-hostile-escape")}), "file path '../hpak-hostile-escape' climbs out of the target");
  catalog_case("path-dotdot-nested", cat({dir("a"), file("a/../../hpak-hostile-escape")}), "'a/../../x': '..' inside a path");
  catalog_case("path-absolute", cat({file("/tmp/hpak-hostile-absolute")}), "absolute file path '/tmp/hpak-hostile-absolute'");
  catalog_case("path-dot", cat({file("./x")}), "'.' component './x'");
  catalog_case("name-nul", cat({file(std::string("a\0b", 3))}), "NUL byte inside a name ('a\\0b' would be cut to 'a')");
  catalog_case("name-empty", cat({dir("a"), file("a//b")}), "empty component 'a//b'");
  catalog_case("path-empty", cat({file("")}), "empty path (would name the target itself)");
  catalog_case("name-too-long", cat({file(std::string(256, 'n'))}), "a 256-byte name");
  {
    // 2100 levels of "d/": a path of 4200 bytes.
    std::vector<RawNode> nodes;
    std::string p;
    for (int i = 0; i < 2100; i++) {
      p += (p.empty() ? "d" : "/d");
      nodes.push_back(dir(p));
    }
    nodes.push_back(file(p + "/leaf"));
    catalog_case("deep-nesting", cat(nodes), "2100 nested dirs: paths past 4095 bytes");
  }
  {
    std::vector<RawNode> nodes;
    std::string p;
    for (int i = 0; i < 16; i++) {
      p += (p.empty() ? "" : "/") + std::string(255, char('a' + i));
      nodes.push_back(dir(p));
    }
    nodes.push_back(file(p + "/" + std::string(255, 'z')));
    catalog_case("path-too-long", cat(nodes), "16 nested 255-byte names: a 4095-byte dir, then a 4351-byte path");
  }
  catalog_case("control-chars", cat({file("ok", kHello), file("ok\x1b]0;pwned\x07\n", kHello)}),
               "a name with a terminal escape and a newline: valid on Linux, restored as is",
               "verify=0 ls=0 unpack=0");

  // ---- symlinks and hardlinks ----
  catalog_case("symlink-parent-etc", cat({slink("a", "/etc"), file("a/hpak-hostile-canary")}),
               "symlink 'a -> /etc' then a file 'a/hpak-hostile-canary' written through it");
  catalog_case("symlink-parent-canary", cat({slink("up", "../../canary"), file("up/pwned")}),
               "symlink 'up -> ../../canary' (the test's canary dir) then 'up/pwned' through it");
  catalog_case("symlink-dotdot-write", cat({slink("up", ".."), dir("up/x"), file("up/x/hpak-hostile-escape")}),
               "symlink 'up -> ..' then a dir and a file through it");
  catalog_case("symlink-then-dir-same-name", cat({slink("a", "/tmp"), dir("a")}), "symlink 'a' then dir 'a' (repeated path)");
  catalog_case("hardlink-outside", cat({hlink("h", "/etc/hostname", 10)}), "hardlink to '/etc/hostname', outside the tree");
  catalog_case("hardlink-dotdot", cat({file("a"), hlink("h", "../a", kPwned.size())}), "hardlink to '../a'");
  catalog_case("hardlink-later", cat({hlink("a", "z", kPwned.size()), file("z")}), "hardlink to a file that comes later");
  catalog_case("hardlink-to-symlink", cat({slink("s", "/etc/hostname"), hlink("t", "s", 13)}),
               "hardlink to a symlink that points outside");
  catalog_case("hardlink-to-dir", cat({dir("d"), hlink("h", "d", 0)}), "hardlink to a directory");

  // ---- order and duplicates ----
  catalog_case("duplicate-path", cat({file("a", kHello), file("a", kPwned)}), "the same file path twice (second overwrites first)");
  catalog_case("duplicate-dir-file", cat({dir("a"), file("a")}), "dir 'a' then file 'a'");
  catalog_case("out-of-order", cat({file("b", kHello), file("a", kHello)}), "paths out of order");
  catalog_case("child-before-parent", cat({file("a/x"), dir("a")}), "a child before its directory");

  // ---- node fields and counts ----
  {
    RawNode n = file("setuid", kHello);
    n.mode = 0104755;
    catalog_case("mode-file-type-bits", cat({n}), "mode carries file-type bits (0104755)");
  }
  {
    RawNode n = file("x", kHello);
    n.type = 9;
    catalog_case("node-type-unknown", cat({n}), "unknown node type 9");
  }
  {
    RawCatalog c = cat({file("a", kHello)});
    c.count = uint64_t(1) << 62;
    catalog_case("node-count-huge", c, "node_count 2^62 (would reserve exabytes)");
    c.count = 2;
    catalog_case("node-count-plus-one", c, "node_count one more than the nodes present");
  }
  {
    RawCatalog c = cat({});
    for (int i = 0; i < 40; i++) c.roots.push_back("/r" + std::to_string(i));
    catalog_case("roots-too-many", c, "40 relocation roots (at most 16)");
    catalog_case("root-nul", cat({}, {std::string("/a\0b", 4)}), "NUL byte in a relocation root");
  }
  {
    RawCatalog c = cat({});
    c.version = 7;
    catalog_case("catalog-version", c, "catalog format version 7");
  }
  // ---- relocations ----
  {
    RawNode n = file("f", kHello);
    n.relocs = {make_reloc(100, 0)};
    catalog_case("reloc-past-end", cat({n}, {"/hostile/root"}), "relocation offset 100 in a 26-byte file");
    n.relocs = {make_reloc(uint64_t(1) << 55, 0)};
    catalog_case("reloc-huge-offset", cat({n}, {"/hostile/root"}), "relocation offset 2^55");
    n.relocs = {make_reloc(0, 5)};
    catalog_case("reloc-bad-root", cat({n}, {"/hostile/root"}), "relocation names root 5 of 1");
  }
  {
    RawNode n = file("f", kHello);
    n.relocs = {make_reloc(0, 0), make_reloc(2, 0)};
    catalog_case("reloc-overlapping", cat({n}, {"/hostile"}), "overlapping relocations (offsets 0 and 2 of an 8-byte root)");
    RawNode l = slink("l", "/x");
    l.relocs = {make_reloc(0, 0)};
    catalog_case("reloc-symlink-past-end", cat({l}, {"/hostile/root"}), "symlink relocation longer than its target");
    n.relocs = {make_reloc(0, 0)};
    catalog_case("reloc-without-root", cat({n}), "relocation offsets but no relocation root");
  }

  // ---- catalog format 3: the rules above in its encoding, and what its columns add ----
  catalog_case("v3-path-dotdot", cat3({file("../hpak-hostile-escape")}), "v3: file path '../hpak-hostile-escape'");
  catalog_case("v3-symlink-parent-etc", cat3({slink("a", "/etc"), file("a/hpak-hostile-canary")}),
               "v3: symlink 'a -> /etc' then a file written through it");
  catalog_case("v3-hardlink-outside", cat3({hlink("h", "/etc/hostname", 10)}), "v3: hardlink to '/etc/hostname'");
  catalog_case("v3-out-of-order", cat3({file("b", kHello), file("a", kHello)}), "v3: paths out of order");
  {
    RawNode n = file("f", kHello);
    n.relocs = {make_reloc(100, 0)};
    catalog_case("v3-reloc-past-end", cat3({n}, {"/hostile/root"}), "v3: relocation gap 100 in a 26-byte file");
  }
  {
    RawCatalog c = cat3({file("a", kHello), file("b", kPwned)});
    c.table = v3_table(c);
    std::swap(c.table[0], c.table[1]);
    c.refs = {1, 0};
    catalog_case("v3-table-unsorted", c, "v3: digest table out of order");
    c = cat3({file("a", kHello), file("b", kPwned)});
    c.refs = {0, 2};
    catalog_case("v3-ref-past-table", c, "v3: a file names table entry 2 of 2");
    c = cat3({file("a", kHello)});
    c.table = {sha256(kHello), sha256(kPwned)};
    std::sort(c.table.begin(), c.table.end());
    c.refs = {uint64_t(std::find(c.table.begin(), c.table.end(), sha256(kHello)) - c.table.begin())};
    catalog_case("v3-table-unnamed", c, "v3: a table entry no file names (gc would keep it)");
    c = cat3({dir("ab"), file("ab/c", kHello)});
    c.plens = {0, 7};
    catalog_case("v3-prefix-past-previous", c, "v3: a path sharing 7 bytes with a 2-byte path");
    c = cat3({file("a", kHello)});
    c.count = uint64_t(1) << 62;
    catalog_case("v3-node-count-huge", c, "v3: node_count 2^62 (would reserve exabytes)");
  }

  // ---- objects ----
  {
    // Declared 1 TB, a tiny frame: the catalog agrees, so only the reader can refuse.
    Blob b = blob(kHello);
    b.raw_len = uint64_t(1) << 40;
    RawNode n = file("bomb", kHello);
    n.size = b.raw_len;
    PackSpec s;
    s.blobs = {b};
    s.catalogs = {raw_catalog(cat({n}))};
    s.write_index = true;
    write_pack("bomb-declared-1tb.hpak", s);
    note("bomb-declared-1tb.hpak", "verify=1 ls=0 unpack=2", "entry and catalog declare 1 TB for a 30-byte zstd frame (+ .hidx)");
    note("bomb-declared-1tb.hidx", "-", "its index");
  }
  {
    // A frame that expands to 10 MiB (it says so) behind an entry declaring 100 bytes.
    Bytes big(10 << 20, 0);
    Blob b;
    zstd_compress(big, 19, nullptr, b.stored);
    Bytes small(100, 0);
    b.digest = sha256(small);
    b.raw_len = 100;
    RawNode n = file("bomb", small);
    PackSpec s;
    s.blobs = {b};
    s.catalogs = {raw_catalog(cat({n}))};
    write_pack("bomb-frame-expands.hpak", s);
    note("bomb-frame-expands.hpak", "verify=1 ls=0 unpack=2", "entry declares 100 bytes, its zstd frame expands to 10 MiB");
    // The same without a content size in the frame header.
    b.stored = zstd_stream_no_size(big);
    s.blobs = {b};
    write_pack("bomb-frame-nosize.hpak", s);
    note("bomb-frame-nosize.hpak", "verify=1 ls=0 unpack=2", "entry declares 100 bytes, a frame without content size expands to 10 MiB");
  }
  {
    // The streaming path (objects > 64 MiB): declared 64 MiB + 1, frame expands to 80 MiB.
    Bytes big(80 << 20, 0);
    Blob b;
    b.stored = zstd_stream_no_size(big);
    uint64_t declared = (64ull << 20) + 1;
    Bytes part(big.begin(), big.begin() + long(declared));
    b.digest = sha256(part);
    b.raw_len = declared;
    RawNode n = file("bomb", part);
    PackSpec s;
    s.blobs = {b};
    s.catalogs = {raw_catalog(cat({n}))};
    write_pack("bomb-stream-expands.hpak", s);
    note("bomb-stream-expands.hpak", "verify=1 ls=0 unpack=2", "streamed entry declares 64 MiB + 1, its frame expands to 80 MiB");
  }
  {
    // A raw entry whose header (with a valid checksum) says stored != raw.
    Blob b;
    b.codec = Codec::Raw;
    b.stored = kHello;
    b.digest = sha256(kHello);
    b.raw_len = 999;
    Blob ok = blob(kPwned);
    RawNode n = file("a", kHello);
    RawNode m = file("b", kPwned);
    PackSpec s;
    s.blobs = {b, ok};
    s.catalogs = {raw_catalog(cat({n, m}))};
    write_pack("raw-size-mismatch.hpak", s);
    note("raw-size-mismatch.hpak", "verify=1 ls=0 unpack=2", "raw entry with a forged header checksum: stored 26 bytes, raw 999");
  }
  {
    // Content that does not match its name.
    Blob b = blob(kPwned);
    b.digest = sha256(kHello);
    b.raw_len = kPwned.size();
    RawNode n = file("a", kHello);
    n.size = kPwned.size();
    PackSpec s;
    s.blobs = {b};
    s.catalogs = {raw_catalog(cat({n}))};
    write_pack("wrong-digest.hpak", s);
    note("wrong-digest.hpak", "verify=1 ls=0 unpack=2", "an object whose bytes do not hash to its name (substituted content)");
  }
  {
    RawNode n = file("a", kHello);
    n.size = 5;
    PackSpec s;
    s.blobs = {blob(kHello)};
    s.catalogs = {raw_catalog(cat({n}))};
    write_pack("size-mismatch.hpak", s);
    note("size-mismatch.hpak", "verify=1 ls=0 unpack=2", "catalog says 5 bytes, the object has 26");
  }
  {
    PackSpec s;
    s.blobs = {blob(kHello)};
    s.catalogs = {raw_catalog(cat({file("a", kHello), file("b", bytes_of("not in this pack"))}))};
    write_pack("missing-object.hpak", s);
    note("missing-object.hpak", "verify=1 ls=0 unpack=2", "the catalog names an object the pack does not hold");
  }
  {
    PackSpec s;
    s.blobs = {blob(kHello)};
    s.catalogs = {raw_catalog(cat({file("a", kHello)}))};
    s.catalog_raw_len = uint64_t(1) << 40;
    write_pack("catalog-declared-1tb.hpak", s);
    note("catalog-declared-1tb.hpak", "verify=1 ls=2 unpack=2", "the catalog entry declares 1 TB");
  }
  {
    // A garbage dictionary, and an object that needs it.
    Blob d;
    d.kind = Kind::Dict;
    d.codec = Codec::Raw;
    d.stored = bytes_of("this is not a zstd dictionary");
    d.digest = sha256(d.stored);
    d.raw_len = d.stored.size();
    Blob o = blob(kHello);
    o.codec = Codec::ZstdDict;
    PackSpec s;
    s.blobs = {d, o};
    s.catalogs = {raw_catalog(cat({file("a", kHello)}))};
    write_pack("dict-garbage.hpak", s);
    note("dict-garbage.hpak", "verify=1 ls=0 unpack=2", "a dictionary entry that is not a dictionary; an object claims to use one");
  }
  {
    // Catalogs stored against a base (codec zstd-base), both copies: a base
    // the pack does not hold, the catalog itself, a blob of the pack.
    PackSpec s;
    s.blobs = {blob(kHello)};
    s.catalogs = {raw_catalog(cat({file("a", kHello)}))};
    const Bytes other = raw_catalog(cat({file("b", kHello)}));
    s.catalog_against = std::make_pair(sha256(other), other);
    write_pack("catalog-base-missing.hpak", s);
    note("catalog-base-missing.hpak", "verify=1 ls=2 unpack=2", "the catalog is stored against a catalog the pack does not hold");
    s.catalog_against = std::make_pair(Digest{}, other);
    write_pack("catalog-base-self.hpak", s);
    note("catalog-base-self.hpak", "verify=1 ls=2 unpack=2", "the catalog is stored against itself");
    s.catalog_against = std::make_pair(sha256(kHello), kHello);
    write_pack("catalog-base-blob.hpak", s);
    note("catalog-base-blob.hpak", "verify=1 ls=2 unpack=2", "the catalog is stored against a blob of the pack");
  }
  {
    PackSpec s;
    s.blobs = {blob(kHello)};
    write_pack("no-catalog.hpak", s);
    note("no-catalog.hpak", "verify=1 ls=2 unpack=2", "a pack without a catalog");
  }

  // ---- indexes (the packs are intact: unpack must work through a scan) ----
  {
    PackSpec s;
    s.blobs = {blob(kHello)};
    s.catalogs = {raw_catalog(cat({dir("d"), file("d/hello", kHello)}))};
    s.write_index = true;
    PackResult r = write_pack("index-outside.hpak", s);
    std::vector<IndexRecord> recs = r.records;
    recs[0].offset = r.size + 4096; // past the end of the pack
    write_bytes("index-outside.hidx", encode_index(recs, r.size, r.pack_sum));
    note("index-outside.hpak", "verify=1 ls=0 unpack=0", "intact pack; its index points past the pack's end");
    note("index-outside.hidx", "-", "that index (trailer valid, tied to the pack)");

    r = write_pack("index-overlap.hpak", s);
    recs = r.records;
    recs[1].offset = recs[0].offset; // two records, one entry
    recs[1].stored_len = recs[0].stored_len;
    write_bytes("index-overlap.hidx", encode_index(recs, r.size, r.pack_sum));
    note("index-overlap.hpak", "verify=1 ls=0 unpack=0", "intact pack; its index sends the catalog's lookup to the blob's entry");
    note("index-overlap.hidx", "-", "that index");

    r = write_pack("index-huge-count.hpak", s);
    Bytes idx = encode_index(r.records, r.size, r.pack_sum);
    set_u64(idx.data() + 8, uint64_t(1) << 40);
    Digest sum = sha256(ByteSpan(idx.data(), idx.size() - 32));
    std::memcpy(idx.data() + idx.size() - 32, sum.data(), 32);
    write_bytes("index-huge-count.hidx", idx);
    note("index-huge-count.hpak", "verify=1 ls=0 unpack=0", "intact pack; its index claims 2^40 records (resealed)");
    note("index-huge-count.hidx", "-", "that index");

    // An index from another pack, renamed to sit beside this one.
    PackSpec other = s;
    other.catalogs = {raw_catalog(cat({file("other", kPwned)}))};
    other.blobs = {blob(kPwned)};
    other.write_index = true;
    write_pack("index-other-pack.hpak", other);
    std::string tmp = g_out + "/index-other-pack.hidx";
    Bytes foreign = read_file(tmp);
    write_pack("index-other-pack.hpak", s);
    write_bytes("index-other-pack.hidx", foreign);
    note("index-other-pack.hpak", "verify=1 ls=0 unpack=0", "intact pack; beside it the index of another pack");
    note("index-other-pack.hidx", "-", "the other pack's index");
  }

  // ---- format 2: blocks of small objects ----
  {
    // A raw block whose second member's bytes are not what its name says.
    PackSpec s;
    PackSpec::RawBlock bl;
    bl.header.codec = Codec::Raw;
    bl.members = {{sha256(kHello), uint32_t(kHello.size())}, {sha256(kHello2), uint32_t(kPwned.size())}};
    bl.payload = kHello;
    bl.payload.insert(bl.payload.end(), kPwned.begin(), kPwned.end());
    bl.header.count = 2;
    bl.header.raw_len = uint32_t(bl.payload.size());
    s.blocks = {bl};
    RawNode b = file("b", kHello2);
    b.size = kPwned.size();
    s.catalogs = {raw_catalog(cat({file("a", kHello), b}))};
    write_pack("v2-block-wrong-digest.hpak", s);
    note("v2-block-wrong-digest.hpak", "verify=1 ls=0 unpack=2", "format 2: a block member whose bytes do not hash to its name");
  }
  {
    // A zstd block whose frame expands to 10 MiB; the header says 26 bytes.
    PackSpec s;
    PackSpec::RawBlock bl;
    bl.header.codec = Codec::Zstd;
    bl.members = {{sha256(kHello), uint32_t(kHello.size())}};
    Bytes big(10 << 20, 0);
    std::memcpy(big.data(), kHello.data(), kHello.size());
    zstd_compress(big, 19, nullptr, bl.payload);
    bl.header.count = 1;
    bl.header.raw_len = uint32_t(kHello.size());
    s.blocks = {bl};
    s.catalogs = {raw_catalog(cat({file("a", kHello)}))};
    s.write_index = true;
    write_pack("v2-block-bomb.hpak", s);
    note("v2-block-bomb.hpak", "verify=1 ls=0 unpack=0", "format 2: a block declaring 26 bytes whose frame expands to 10 MiB (+ .hidx): a read decodes only up to its member (restores); verify reports the frame");
    note("v2-block-bomb.hidx", "-", "its index");
  }
  {
    // Members whose sizes add up to more than the block holds (checksums valid).
    PackSpec s;
    PackSpec::RawBlock bl;
    bl.header.codec = Codec::Raw;
    bl.members = {{sha256(kHello), uint32_t(kHello.size())}, {sha256(kPwned), 1u << 30}};
    bl.payload = kHello;
    bl.header.count = 2;
    bl.header.raw_len = uint32_t(kHello.size());
    s.blocks = {bl};
    s.catalogs = {raw_catalog(cat({file("a", kHello), file("b", kPwned)}))};
    write_pack("v2-block-sizes-lie.hpak", s);
    note("v2-block-sizes-lie.hpak", "verify=1 ls=0 unpack=2", "format 2: a block table whose member sizes exceed the block (1 GiB member)");
  }

  {
    // A table of lengths only (names in the index alone), with an index that
    // names the second member kHello2 although its bytes are kPwned.
    PackSpec s;
    PackSpec::RawBlock bl;
    bl.header.codec = Codec::Raw;
    bl.header.flags = kBflagLengths;
    bl.members = {{sha256(kHello), uint32_t(kHello.size())}, {sha256(kHello2), uint32_t(kPwned.size())}};
    bl.payload = kHello;
    bl.payload.insert(bl.payload.end(), kPwned.begin(), kPwned.end());
    bl.header.count = 2;
    bl.header.raw_len = uint32_t(bl.payload.size());
    s.blocks = {bl};
    RawNode b = file("b", kHello2);
    b.size = kPwned.size();
    s.catalogs = {raw_catalog(cat({file("a", kHello), b}))};
    s.write_index = true;
    write_pack("v2-lengths-index-lies.hpak", s);
    note("v2-lengths-index-lies.hpak", "verify=1 ls=0 unpack=2",
         "format 2, lengths-only block: its index (+ .hidx) names a member by bytes it does not hold");
    note("v2-lengths-index-lies.hidx", "-", "its index");
  }
  {
    // A lengths-only block holding the same object twice: the scan that names
    // its members by hashing finds a repeat (a writer never makes one).
    PackSpec s;
    PackSpec::RawBlock bl;
    bl.header.codec = Codec::Raw;
    bl.header.flags = kBflagLengths;
    bl.members = {{sha256(kHello), uint32_t(kHello.size())}, {sha256(kHello2), uint32_t(kHello.size())}};
    bl.payload = kHello;
    bl.payload.insert(bl.payload.end(), kHello.begin(), kHello.end());
    bl.header.count = 2;
    bl.header.raw_len = uint32_t(bl.payload.size());
    s.blocks = {bl};
    s.catalogs = {raw_catalog(cat({file("a", kHello)}))};
    write_pack("v2-lengths-twice.hpak", s);
    note("v2-lengths-twice.hpak", "verify=1 ls=0 unpack=2", "format 2, lengths-only block holding one object twice");
  }
  {
    // Block flags no hpak knows (bit 1): refused, never read as either table.
    PackSpec s;
    PackSpec::RawBlock bl;
    bl.header.codec = Codec::Raw;
    bl.header.flags = 2;
    bl.members = {{sha256(kHello), uint32_t(kHello.size())}};
    bl.payload = kHello;
    bl.header.count = 1;
    bl.header.raw_len = uint32_t(bl.payload.size());
    s.blocks = {bl};
    s.catalogs = {raw_catalog(cat({file("a", kHello)}))};
    write_pack("v2-block-flags.hpak", s);
    note("v2-block-flags.hpak", "verify=1 ls=0 unpack=2", "format 2: a block with flags no hpak knows (bit 1)");
  }

  // ---- whole-pack refusals ----
  {
    PackSpec s;
    s.blobs = {blob(kHello)};
    s.catalogs = {raw_catalog(cat({file("a", kHello)}))};
    write_pack("version-future.hpak", s);
    Bytes b = read_file(g_out + "/version-future.hpak");
    b[4] = 3; // pack version 3 (1 and 2 are read)
    set_u32(b.data() + b.size() - 64 + 4, 3); // and footer version 3
    Digest sum = sha256(ByteSpan(b.data(), b.size() - 32));
    std::memcpy(b.data() + b.size() - 32, sum.data(), 32);
    write_bytes("version-future.hpak", b);
    note("version-future.hpak", "verify=2 ls=2 unpack=2", "pack and footer version 3 (a future format): refused, never misread");
    write_bytes("not-a-pack.hpak", bytes_of(std::string(200, 'A')));
    note("not-a-pack.hpak", "verify=2 ls=2 unpack=2", "200 bytes of 'A'");
    write_bytes("empty.hpak", Bytes{});
    note("empty.hpak", "verify=2 ls=2 unpack=2", "an empty file");
  }

  std::string readme =
      "Hostile packs: well-formed containers with malicious content, and damaged\n"
      "indexes. Generated by tests/tools/make_hostile.cpp (hpak_make_hostile DIR);\n"
      "checked in so the corpus is stable. tests/cli/test_hostile.sh runs hpak\n"
      "verify, ls and unpack on every .hpak below in a sandbox and expects the\n"
      "exit statuses given (unpack=0: the pack itself is intact and must restore),\n"
      "a one-line 'hpak: error:' message on refusal, no crash or sanitizer report,\n"
      "and nothing created outside the unpack target. Paths that would escape\n"
      "name harmless hpak-hostile-* canaries, never real system files.\n"
      "\n";
  // Cases that cannot live in git, made at run time by the suites (issue 27).
  std::string runtime_cases =
      "\n"
      "Library, target and server files that cannot live in git (FIFOs, symlinks,\n"
      "sparse files, misbehaving servers) are made at run time by the suites that\n"
      "use them; these are the cases of issue 27:\n"
      "\n"
      "tests/cli/test_hostile_library.sh\n"
      "  LIB/id, LIB/allowed_signers: a FIFO, a symlink to /dev/zero (refused, no hang)\n"
      "  LIB/signatures/NAME: a FIFO (refused, no hang)\n"
      "  LIB/remote/indexes/X.hidx: a FIFO, a symlink to /dev/zero (ignored, fetched again, replaced)\n"
      "  TARGET/.hpak-state: a FIFO, a symlink to /dev/zero, a sparse 3 GB file (no state: refused, --force replaces it)\n"
      "tests/cli/test_remote_bounds.sh (tests/tools/bad_http_server.py)\n"
      "  a root claiming a 10^12-byte index, the index streamed as zeros (fails at its header, RSS bounded)\n"
      "  a root claiming an index larger than its pack can need (refused before any index request)\n"
      "  an index placing a catalog at the start of a 10^12-byte pack, the range streamed as zeros (range capped)\n"
      "  an index giving an object more bytes than its catalog (refused)\n"
      "  the root at 2 bytes/s; redirects to another origin, from https to http, an S3 endpoint redirecting elsewhere\n"
      "tests/cli/test_trust_race.sh, tests/cli/test_shared_policy.sh (two users of a shared library)\n"
      "  a member's pack rewritten in place after it was verified; a member's allowed_signers, id and marker\n";
  write_bytes("README", bytes_of(readme + g_readme + runtime_cases));
  return 0;
}
