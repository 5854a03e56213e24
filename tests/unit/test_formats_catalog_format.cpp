// formats/catalog_format: encode/decode round trip and every validation rule
// of decode_catalog (each must be refused with a Corrupt, never accepted and
// never a crash).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "formats/catalog_digests.hpp"
#include "formats/catalog_format.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

Digest digest_of(std::string_view s) { return sha256(fx::to_bytes(s)); }

Node dir(std::string path, uint32_t mode = 0755) {
  Node n;
  n.type = NodeType::Dir;
  n.mode = mode;
  n.path = fx::kept(path);
  return n;
}
Node file(std::string path, uint64_t size = 5, std::vector<uint64_t> relocs = {}) {
  Node n;
  n.type = NodeType::File;
  n.mode = 0644;
  n.size = size;
  n.path = fx::kept(path);
  n.digest = digest_of(n.path);
  n.relocs = std::move(relocs);
  if (!n.relocs.empty()) n.reloc_kind = RelocKind::Text;
  return n;
}
Node slink(std::string path, std::string target, std::vector<uint64_t> relocs = {}) {
  Node n;
  n.type = NodeType::Symlink;
  n.mode = 0777;
  n.path = fx::kept(path);
  n.target = std::move(target);
  n.size = n.target.size();
  n.relocs = std::move(relocs);
  return n;
}
Node hlink(std::string path, std::string target, uint64_t size = 5) {
  Node n;
  n.type = NodeType::Hardlink;
  n.mode = 0644;
  n.size = size;
  n.path = fx::kept(path);
  n.target = std::move(target);
  return n;
}

Catalog make(std::vector<Node> nodes, std::vector<std::string> roots = {}) {
  Catalog c;
  c.name = "env";
  c.roots = std::move(roots);
  c.nodes = std::move(nodes);
  return c;
}

// A catalog using every node type and a relocation of each kind.
Catalog sample() {
  Catalog c = make({}, {"/opt/env", "/opt/env/lib"});
  c.nodes.push_back(dir("a", 0700));
  Node f = file("a/f", 40, {make_reloc(2, 0), make_reloc(20, 1)});
  f.mtime_ns = -1234567890123; // before 1970: mtimes are signed
  c.nodes.push_back(f);
  c.nodes.push_back(hlink("a/h", "a/f", 40));
  c.nodes.push_back(slink("a/l", "/opt/env/lib/python", {make_reloc(0, 1)}));
  c.nodes.push_back(dir("a/sub"));
  c.nodes.push_back(file("a/sub/empty", 0));
  c.nodes.push_back(file("a-b"));
  c.nodes.push_back(dir("b", 01777));
  c.nodes.push_back(slink("c", "a/f"));
  return c;
}

void check_equal(const Catalog& x, const Catalog& y) {
  CHECK(x.name == y.name);
  CHECK(x.roots == y.roots);
  REQUIRE(x.nodes.size() == y.nodes.size());
  for (size_t i = 0; i < x.nodes.size(); i++) {
    const Node &a = x.nodes[i], &b = y.nodes[i];
    CAPTURE(a.path);
    CHECK(a.type == b.type);
    CHECK(a.mode == b.mode);
    CHECK(a.mtime_ns == b.mtime_ns);
    CHECK(a.size == b.size);
    CHECK(a.path == b.path);
    CHECK(a.target == b.target);
    CHECK(a.relocs == b.relocs);
    if (a.type == NodeType::File) CHECK(a.digest == b.digest);
    if (a.type == NodeType::File) CHECK(a.reloc_kind == b.reloc_kind);
  }
}

// decode_catalog must throw Corrupt whose message contains `why`.
void expect_corrupt(const Bytes& bytes, const std::string& why) {
  try {
    decode_catalog(bytes, "test-catalog");
    FAIL_CHECK("catalog accepted; expected a Corrupt containing '" << why << "'");
  } catch (const Corrupt& e) {
    CHECK_MESSAGE(std::string(e.what()).find(why) != std::string::npos, "message: " << std::string(e.what()) << " / expected: " << why);
    CHECK(e.where() == "test-catalog");
    CHECK(e.offset() <= bytes.size());
  }
}
// Every rule is checked in versions 2 and 3. `why3` is the message version 3
// gives when it differs ("=": the same), or "-" where version 3's grammar has
// no room for the fault (a directory's size, a symlink's or hardlink's: none
// is stored; overlapping relocations: each is stored as a gap after the last).
void expect_corrupt(const Catalog& c, const std::string& why, const std::string& why3 = "=") {
  expect_corrupt(encode_catalog(c, 2), why);
  if (why3 == "-") return;
  expect_corrupt(encode_catalog(c, 3), why3 == "=" ? why : why3);
}

// Offset of node_count in a version 2 catalog.
size_t count_offset(const Catalog& c) {
  size_t off = 12 + 4 + c.name.size() + 4;
  for (auto& r : c.roots) off += 4 + r.size();
  return off;
}

} // namespace

TEST_CASE("catalog: encode/decode round trip keeps every field (versions 2 and 3)") {
  for (uint32_t version : {2u, 3u}) {
    CAPTURE(version);
    Catalog c = sample();
    Bytes b = encode_catalog(c, version);
    Catalog d = decode_catalog(b, "x");
    CHECK(d.version == version);
    check_equal(c, d);
    // Encoding is canonical: re-encoding the decoded catalog gives the same bytes.
    CHECK(encode_catalog(d, version) == b);
  }
  CHECK(decode_catalog(encode_catalog(sample()), "x").version == 3); // what is written
}

TEST_CASE("catalog: paths live in their catalog's store; a copy keeps its own, a moved store hands out none of its old blocks") {
  const Bytes raw = encode_catalog(sample());
  std::vector<std::string> want;
  for (const Node& n : sample().nodes) want.push_back(n.path.str());
  std::optional<Catalog> decoded(decode_catalog(raw, "x"));
  for (size_t i = 0; i < want.size(); i++) {
    CHECK(decoded->nodes[i].path == want[i]);
    CHECK(std::strlen(decoded->nodes[i].path.c_str()) == want[i].size()); // kept with a NUL after it
  }
  Catalog copy = *decoded;
  Catalog assigned;
  assigned = *decoded;
  for (size_t i = 0; i < want.size(); i++) {
    CHECK(copy.nodes[i].path.data() != decoded->nodes[i].path.data());
    CHECK(assigned.nodes[i].path.data() != decoded->nodes[i].path.data());
  }
  Catalog moved = std::move(*decoded);
  decoded.reset(); // the copies' paths must not point into what it held (ASan checks the reads)
  for (size_t i = 0; i < want.size(); i++) {
    CHECK(copy.nodes[i].path == want[i]);
    CHECK(assigned.nodes[i].path == want[i]);
    CHECK(moved.nodes[i].path == want[i]); // a move keeps the blocks, so the views
  }

  PathStore a;
  const PathRef first = a.keep("dir/", "file");
  PathStore b = std::move(a);
  const PathRef after = a.keep("other"); // the moved-from store starts a block of its own
  CHECK(first == "dir/file");
  CHECK(after == "other");
  CHECK((after.data() < first.data() || after.data() > first.data() + 64 * 1024));
  CHECK(b.keep("x") == "x");
  CHECK(first == "dir/file"); // b's next path went after it, not over it
}

TEST_CASE("catalog: empty catalog and a catalog without roots round trip") {
  Catalog c = make({});
  check_equal(c, decode_catalog(encode_catalog(c), "x"));
  Catalog d = make({dir("x"), file("x/y")});
  d.name = "";
  check_equal(d, decode_catalog(encode_catalog(d), "x"));
}

TEST_CASE("catalog: path_less compares component by component") {
  CHECK(path_less("a/b", "a-b"));
  CHECK_FALSE(path_less("a-b", "a/b"));
  CHECK(path_less("a", "a/b"));
  CHECK(path_less("a/b", "a.b"));
  CHECK_FALSE(path_less("a", "a"));
  CHECK(path_less("A", "a"));
  CHECK(path_less("a/\xff", "b"));
  // A/B-ordered: siblings bytewise, parents before children.
  CHECK(decode_catalog(encode_catalog(make({dir("a"), file("a/x"), file("a-b")})), "x").nodes.size() == 3);
  expect_corrupt(make({dir("a"), file("a-b"), file("a/x")}), "out of order");
}

TEST_CASE("catalog: check_name and check_path") {
  CHECK(check_name("ok").empty());
  CHECK(check_name(std::string(255, 'n')).empty());
  CHECK_FALSE(check_name(std::string(256, 'n')).empty());
  CHECK_FALSE(check_name("").empty());
  CHECK_FALSE(check_name(".").empty());
  CHECK_FALSE(check_name("..").empty());
  CHECK(check_name("...").empty());
  CHECK(check_name(".hidden").empty());
  CHECK_FALSE(check_name(std::string("a\0b", 3)).empty());
  CHECK_FALSE(check_name("a/b").empty());
  CHECK(check_path("a/b/c").empty());
  for (const std::string bad : {"", "/a", "a//b", "a/", "a/./b", "a/../b", "..", "a/.", "a/..", "./a", "../a", "/", "a/b/", "a/b//"}) {
    INFO("path '" << bad << "'");
    CHECK_FALSE(check_path(bad).empty());
  }
  CHECK_FALSE(check_path(std::string(4096, 'a')).empty());
  // check_path's one-pass check accepts exactly what the component check does
  // (a path it refuses is checked again, component by component, for the message).
  CHECK(check_path("a/..b/.c/.../b..").empty());
  CHECK(check_path(std::string(255, 'n') + "/" + std::string(255, 'm')).empty());
  std::string deep; // 20 components of 199 bytes, then one of 95: 4,095 bytes
  for (int i = 0; i < 20; i++) deep += std::string(199, 'd') + "/";
  CHECK(check_path(deep + std::string(95, 'e')).empty());
  CHECK_FALSE(check_path(deep + std::string(96, 'e')).empty()); // 4,096 bytes
  CHECK_FALSE(check_path(std::string(256, 'n')).empty());
  CHECK_FALSE(check_path("a/" + std::string(256, 'n') + "/b").empty());
  CHECK_FALSE(check_path(std::string("a/b\0c/d", 7)).empty());
  CHECK_FALSE(check_path(std::string("\0", 1)).empty());
}

TEST_CASE("catalog: path rules are enforced on decode") {
  SUBCASE("..") {
    expect_corrupt(make({file("..")}), "'..' component");
    expect_corrupt(make({dir("a"), file("a/..")}), "'..' component");
    expect_corrupt(make({file("../escape")}), "'..' component");
    expect_corrupt(make({dir("a"), file("a/../../x")}), "'..' component");
  }
  SUBCASE("a bad component that starts inside the bytes shared with the previous path") {
    expect_corrupt(make({dir("lib"), file("lib/.-"), file("lib/..")}), "'..' component");
    expect_corrupt(make({dir("lib"), file("lib/a"), file(std::string("lib/a\0b", 7))}), "NUL byte");
    expect_corrupt(make({dir("lib"), file("lib/" + std::string(255, 'n')), file("lib/" + std::string(256, 'n'))}), "longer than 255");
  }
  SUBCASE(".") {
    expect_corrupt(make({file(".")}), "'.' component");
    expect_corrupt(make({dir("a"), file("a/./b")}), "'.' component");
  }
  SUBCASE("absolute") {
    expect_corrupt(make({file("/etc/passwd")}), "absolute path");
    expect_corrupt(make({dir("/")}), "absolute path");
  }
  SUBCASE("empty path and empty component") {
    expect_corrupt(make({file("")}), "empty path");
    expect_corrupt(make({dir("a"), file("a//b")}), "empty name");
    expect_corrupt(make({dir("a/")}), "empty name");
  }
  SUBCASE("NUL in name") {
    expect_corrupt(make({file(std::string("a\0b", 3))}), "NUL");
    expect_corrupt(make({dir("a"), file(std::string("a/\0", 3))}), "NUL");
  }
  SUBCASE("control bytes are escaped in messages") {
    try {
      decode_catalog(encode_catalog(make({file(std::string("x\0\x1b]0;pwned\x07", 12))})), "x");
      FAIL_CHECK("accepted a NUL in a name");
    } catch (const Corrupt& e) {
      std::string msg = e.what();
      CHECK(msg.find("NUL byte in name") != std::string::npos);
      CHECK(msg.find("x\\x00\\x1b]0;pwned\\x07") != std::string::npos);
      for (unsigned char ch : msg) CHECK(ch >= 0x20);
    }
    try {
      decode_catalog(encode_catalog(make({file("b"), file("a\nfake: line")})), "x");
      FAIL_CHECK("accepted out-of-order paths");
    } catch (const Corrupt& e) {
      CHECK(std::string(e.what()).find("a\\x0afake: line") != std::string::npos);
    }
  }
  SUBCASE("name longer than 255") {
    CHECK_NOTHROW(decode_catalog(encode_catalog(make({file(std::string(255, 'n'))})), "x"));
    expect_corrupt(make({file(std::string(256, 'n'))}), "longer than 255");
  }
  SUBCASE("path longer than 4095") {
    // 16 components of 255 bytes: exactly 4095 bytes, the longest allowed.
    std::vector<Node> nodes;
    std::string p;
    for (int i = 0; i < 15; i++) {
      p += (p.empty() ? "" : "/") + std::string(255, char('a' + i));
      nodes.push_back(dir(p));
    }
    std::string longest = p + "/" + std::string(255, 'z');
    REQUIRE(longest.size() == 4095);
    nodes.push_back(file(longest));
    Catalog ok = make(nodes);
    CHECK(decode_catalog(encode_catalog(ok), "x").nodes.back().path == longest);
    nodes.back() = dir(longest);
    nodes.push_back(file(longest + "/x"));
    expect_corrupt(make(nodes), "exceeds limit 4095", "longer than 4095");
  }
}

TEST_CASE("catalog: order, duplicates and parents") {
  SUBCASE("out of order") { expect_corrupt(make({file("b"), file("a")}), "out of order"); }
  SUBCASE("out of order after a shared prefix (version 3 compares from where the paths differ)") {
    expect_corrupt(make({dir("lib"), file("lib/ab"), file("lib/aa")}), "out of order");
    expect_corrupt(make({dir("lib"), dir("lib/a"), file("lib/a-b"), file("lib/a/x")}), "out of order");
    expect_corrupt(make({dir("lib"), file("lib/abc"), file("lib/ab")}), "out of order");
    expect_corrupt(make({dir("lib"), file("lib/ab"), file("lib/ab")}), "out of order or repeated");
  }
  SUBCASE("duplicate path") {
    expect_corrupt(make({file("a"), file("a")}), "out of order or repeated");
    expect_corrupt(make({dir("a"), dir("a")}), "repeated");
    expect_corrupt(make({dir("a"), file("a/x"), file("a/x")}), "repeated");
  }
  SUBCASE("child before parent") { expect_corrupt(make({file("a/x"), dir("a")}), "not a directory"); }
  SUBCASE("missing parent") { expect_corrupt(make({dir("a"), file("b/x")}), "not a directory of the catalog"); }
  SUBCASE("file as parent") { expect_corrupt(make({file("a"), file("a/passwd")}), "not a directory"); }
  SUBCASE("symlink as parent: a -> /etc, then a/passwd") {
    expect_corrupt(make({slink("a", "/etc"), file("a/passwd")}), "parent of 'a/passwd' is not a directory");
    expect_corrupt(make({slink("up", ".."), file("up/x")}), "not a directory");
    expect_corrupt(make({slink("a", "/etc"), dir("a/sub")}), "not a directory");
  }
  SUBCASE("hardlink as parent") {
    expect_corrupt(make({file("a"), hlink("b", "a"), file("b/x")}), "not a directory");
  }
}

TEST_CASE("catalog: hardlinks must name an earlier regular file") {
  CHECK_NOTHROW(decode_catalog(encode_catalog(make({file("a"), hlink("b", "a")})), "x"));
  SUBCASE("later file") { expect_corrupt(make({hlink("a", "b"), file("b")}), "not an earlier file"); }
  SUBCASE("missing") { expect_corrupt(make({hlink("a", "zzz")}), "not an earlier file"); }
  SUBCASE("itself") { expect_corrupt(make({hlink("a", "a")}), "not an earlier file"); }
  SUBCASE("outside") {
    expect_corrupt(make({hlink("a", "/etc/shadow")}), "not an earlier file");
    expect_corrupt(make({file("a"), hlink("b", "../a")}), "not an earlier file");
  }
  SUBCASE("a directory") { expect_corrupt(make({dir("a"), hlink("b", "a", 0)}), "not an earlier file"); }
  SUBCASE("a symlink") { expect_corrupt(make({slink("a", "x"), hlink("b", "a", 1)}), "not an earlier file"); }
  SUBCASE("another hardlink") { expect_corrupt(make({file("a"), hlink("b", "a"), hlink("c", "b")}), "not an earlier file"); }
  SUBCASE("size differs") { expect_corrupt(make({file("a", 5), hlink("b", "a", 6)}), "size differs", "-"); }
}

TEST_CASE("catalog: node fields are checked") {
  SUBCASE("mode") { Node n = file("a"); n.mode = 0100644; expect_corrupt(make({n}), "mode"); }
  SUBCASE("unknown type") {
    for (uint8_t t : {0, 5, 255}) {
      Bytes b = encode_catalog(make({file("a")}), 2);
      b[count_offset(make({})) + 8] = t;
      expect_corrupt(b, "unknown node type");
      b = encode_catalog(make({file("a")}), 3);
      // magic version flags (12), name "env" (1 + 3), nroots (1), ndigests (1), a digest (32), node_count (1)
      REQUIRE(b[51] == uint8_t(NodeType::File));
      b[51] = t;
      expect_corrupt(b, "unknown node type");
    }
  }
  SUBCASE("dir with a size") { Node n = dir("a"); n.size = 1; expect_corrupt(make({n}), "directory with a size", "-"); }
  SUBCASE("symlink target") {
    expect_corrupt(make({slink("a", "")}), "bad symlink target");
    expect_corrupt(make({slink("a", std::string("x\0y", 3))}), "bad symlink target");
    Node n = slink("a", "target");
    n.size = 3;
    expect_corrupt(make({n}), "symlink size", "-");
  }
}

TEST_CASE("catalog: relocation offsets are checked") {
  const std::vector<std::string> roots = {"/opt/env"}; // 8 bytes
  CHECK_NOTHROW(decode_catalog(encode_catalog(make({file("a", 16, {make_reloc(0, 0), make_reloc(8, 0)})}, roots)), "x"));
  SUBCASE("past the end") {
    expect_corrupt(make({file("a", 16, {make_reloc(9, 0)})}, roots), "out of range");
    expect_corrupt(make({file("a", 16, {make_reloc(100, 0)})}, roots), "out of range");
    expect_corrupt(make({file("a", 4, {make_reloc(0, 0)})}, roots), "out of range");
    expect_corrupt(make({file("a", 16, {make_reloc(kRelocOffsetMask, 0)})}, roots), "out of range");
    expect_corrupt(make({slink("l", "/opt/en", {make_reloc(0, 0)})}, roots), "out of range");
  }
  SUBCASE("overlapping or descending") {
    expect_corrupt(make({file("a", 32, {make_reloc(0, 0), make_reloc(4, 0)})}, roots), "overlapping", "-");
    expect_corrupt(make({file("a", 32, {make_reloc(16, 0), make_reloc(0, 0)})}, roots), "overlapping", "-");
    expect_corrupt(make({file("a", 32, {make_reloc(8, 0), make_reloc(8, 0)})}, roots), "overlapping", "-");
  }
  SUBCASE("bad root index") {
    expect_corrupt(make({file("a", 16, {make_reloc(0, 1)})}, roots), "names root 1", "-"); // one root: none named
    expect_corrupt(make({file("a", 16, {make_reloc(0, 2)})}, {"/opt/env", "/opt"}), "names root 2");
    expect_corrupt(make({file("a", 16, {make_reloc(0, 255)})}, {"/opt/env", "/opt"}), "names root 255");
  }
  SUBCASE("relocations without roots") { expect_corrupt(make({file("a", 16, {make_reloc(0, 0)})}), "without a relocation root"); }
  SUBCASE("more offsets than bytes") {
    Bytes b = encode_catalog(make({file("a", 2)}, roots), 2);
    // The relocs count is the last u32 of the only node.
    set_u32(b.data() + b.size() - 4, 3);
    expect_corrupt(b, "too many relocation offsets");
    set_u32(b.data() + b.size() - 4, 0xffffffffu);
    expect_corrupt(b, "too many relocation offsets");
  }
  SUBCASE("count larger than the buffer") {
    Bytes b = encode_catalog(make({file("a", 1u << 20)}, roots), 2);
    set_u32(b.data() + b.size() - 4, 1000);
    expect_corrupt(b, ""); // "truncated", or refused up front as more than the bytes can hold
  }
}

TEST_CASE("catalog: header, roots and counts") {
  Catalog c = sample();
  Bytes good = encode_catalog(c, 2);
  SUBCASE("magic") {
    for (uint32_t v : {2u, 3u}) {
      Bytes b = encode_catalog(c, v);
      b[0] = 'X';
      expect_corrupt(b, "bad magic");
    }
  }
  SUBCASE("version") {
    for (uint32_t v : {2u, 3u}) {
      Bytes b = encode_catalog(c, v);
      b[4] = 4;
      expect_corrupt(b, "unsupported catalog version 4");
    }
  }
  SUBCASE("flags") {
    for (uint32_t v : {2u, 3u}) {
      Bytes b = encode_catalog(c, v);
      b[8] = 1;
      expect_corrupt(b, "unknown catalog flags");
    }
  }
  SUBCASE("too many roots") {
    Catalog d = make({});
    for (int i = 0; i < 17; i++) d.roots.push_back("/r" + std::to_string(i));
    expect_corrupt(d, "more than 16");
    d.roots.pop_back();
    CHECK_NOTHROW(decode_catalog(encode_catalog(d), "x"));
  }
  SUBCASE("empty root or NUL in root") {
    expect_corrupt(make({}, {""}), "empty relocation root");
    expect_corrupt(make({}, {std::string("/a\0b", 4)}), "NUL");
  }
  SUBCASE("node count larger than the buffer") {
    for (uint64_t n : {uint64_t(c.nodes.size() + 1), uint64_t(1) << 32, uint64_t(1) << 62, ~uint64_t(0)}) {
      CAPTURE(n);
      Bytes b = good;
      set_u64(b.data() + count_offset(c), n);
      try {
        decode_catalog(b, "x");
        FAIL_CHECK("accepted a node count of " << n);
      } catch (const Corrupt&) {
      }
    }
    Bytes b = good;
    set_u64(b.data() + count_offset(c), ~uint64_t(0));
    expect_corrupt(b, "larger than the catalog");
  }
  SUBCASE("node count smaller than the nodes") {
    Bytes b = good;
    set_u64(b.data() + count_offset(c), c.nodes.size() - 1);
    expect_corrupt(b, "trailing bytes");
  }
  SUBCASE("string length past the end") {
    Bytes b = good;
    set_u32(b.data() + 12, 0xfffffff0u); // the name's length
    expect_corrupt(b, "exceeds limit");
    set_u32(b.data() + 12, 4000);
    expect_corrupt(b, "truncated");
  }
}

// Every cut of `good` (each strict prefix), and `good` with a byte more, must
// be refused by `read` with a Corrupt.
template <class Read> void expect_cuts_refused(const Bytes& good, Read read) {
  for (size_t len = 0; len < good.size(); len++) {
    CAPTURE(len);
    CHECK_THROWS_AS(read(ByteSpan(good.data(), len)), Corrupt);
  }
  Bytes longer = good;
  longer.push_back(0);
  CHECK_THROWS_AS(read(longer), Corrupt);
}

TEST_CASE("catalog: every truncation is refused") {
  for (uint32_t version : {2u, 3u}) {
    CAPTURE(version);
    expect_cuts_refused(encode_catalog(sample(), version), [](ByteSpan b) { return decode_catalog(b, "x"); });
  }
}

TEST_CASE("catalog: random damage never crashes the decoder") {
  for (uint32_t version : {2u, 3u}) {
  CAPTURE(version);
  Bytes good = encode_catalog(sample(), version);
  fx::Rng rng(7);
  for (int round = 0; round < 3000; round++) {
    Bytes b = good;
    int flips = 1 + int(rng.below(4));
    for (int i = 0; i < flips; i++) b[rng.below(b.size())] ^= uint8_t(1 + rng.below(255));
    try {
      Catalog c = decode_catalog(b, "x");
      // Whatever is accepted still obeys the rules.
      for (size_t i = 0; i < c.nodes.size(); i++) {
        CHECK(check_path(c.nodes[i].path).empty());
        if (i) CHECK(path_less(c.nodes[i - 1].path, c.nodes[i].path));
      }
    } catch (const Corrupt&) {
    }
  }
  }
}

TEST_CASE("catalog: spliced_size") {
  Catalog c = sample();
  const Node& f = c.nodes[1]; // relocs of root 0 (8 bytes) and root 1 (12 bytes)
  CHECK(spliced_size(f, c.roots, 8) == 40 - 8 - 12 + 16);
  CHECK(spliced_size(f, c.roots, 1) == 40 - 8 - 12 + 2);
  const Node& l = c.nodes[3];
  CHECK(spliced_size(l, c.roots, 3) == l.size - 12 + 3);
  CHECK(spliced_size(c.nodes[5], c.roots, 100) == 0);
}

TEST_CASE("catalog: version 2 records each relocated file's kind; version 1 is read without kinds") {
  Catalog c = make({file("a", 40, {make_reloc(2, 0)}), file("b", 40, {make_reloc(2, 0)}), file("c", 40, {make_reloc(2, 0)}),
                    file("d", 40, {make_reloc(2, 0)}), file("e", 40)},
                   {"/opt/env"});
  c.nodes[1].reloc_kind = RelocKind::InPlace;
  c.nodes[2].reloc_kind = RelocKind::SameLength;
  c.nodes[3].reloc_kind = RelocKind::Verbatim;
  SUBCASE("version 2 and 3 round trip") {
    for (uint32_t version : {2u, 3u}) {
      Bytes b = encode_catalog(c, version);
      Catalog d = decode_catalog(b, "x");
      CHECK(d.version == version);
      check_equal(c, d);
      CHECK(d.nodes[4].reloc_kind == RelocKind::Unclassified); // no relocations: no kind
      CHECK(encode_catalog(d, version) == b);
    }
  }
  SUBCASE("version 1: the same bytes but the kinds, which read back unclassified") {
    Bytes v1 = encode_catalog(c, 1);
    CHECK(v1.size() + 4 == encode_catalog(c, 2).size());
    Catalog d = decode_catalog(v1, "x");
    CHECK(d.version == 1);
    for (auto& n : d.nodes) CHECK(n.reloc_kind == RelocKind::Unclassified);
    CHECK(encode_catalog(d, 1) == v1);
    CHECK_THROWS_WITH(encode_catalog(d), doctest::Contains("relocations of no kind"));
  }
  SUBCASE("an unknown kind is refused") {
    for (uint32_t version : {2u, 3u})
      for (uint8_t bad : {0, 5, 255}) {
        Bytes b = encode_catalog(make({file("a", 40, {make_reloc(2, 0)})}, {"/opt/env"}), version);
        b.back() = bad; // the kind is the last byte of the last file (version 3: of the kinds column)
        expect_corrupt(b, "unknown relocation kind");
      }
  }
  SUBCASE("versions past 3 and 0 are refused") {
    for (uint32_t v : {0u, 4u}) {
      Bytes b = encode_catalog(c);
      b[4] = uint8_t(v);
      expect_corrupt(b, "unsupported catalog version");
    }
  }
}

// formats/catalog_digests: gc's mark reads a catalog's objects without
// decoding it; it must name exactly the files' digests decode_catalog gives.
TEST_CASE("catalog_file_digests: the file nodes' digests, in order, as decode_catalog reads them (versions 1 and 2; 3: its table)") {
  Catalog c = sample();
  c.nodes.push_back(file("d", 7)); // another file after the links
  for (uint32_t version : {1u, 2u}) {
    CAPTURE(version);
    Bytes b = encode_catalog(c, version);
    std::vector<Digest> want;
    for_each_file(decode_catalog(b, "x"), [&](const Node& n) { want.push_back(n.digest); });
    REQUIRE(want.size() >= 3);
    CHECK(catalog_file_digests(b, "x") == want);
    // Version 3: the same objects, each once, sorted.
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    CHECK(catalog_file_digests(encode_catalog(c, 3), "x") == want);
  }
  CHECK(catalog_file_digests(encode_catalog(make({})), "x").empty());
}

TEST_CASE("catalog_file_digests: a cut or padded catalog, bad magic, version or node type is refused") {
  // Version 2 (version 3's reader stops after the table: what follows is the
  // decoder's to check, and the caller has checked the SHA-256 of it all).
  Bytes b = encode_catalog(sample(), 2);
  expect_cuts_refused(b, [](ByteSpan bytes) { return catalog_file_digests(bytes, "x"); });
  Bytes magic = b;
  magic[0] = 'X';
  CHECK_THROWS_AS(catalog_file_digests(magic, "x"), Corrupt);
  Bytes version = b;
  version[4] = 9;
  CHECK_THROWS_AS(catalog_file_digests(version, "x"), Corrupt);
  Bytes type = encode_catalog(make({file("a")}), 2);
  size_t first_node = 4 + 4 + 4 + 4 + 3 + 4 + 8; // magic version flags name("env") nroots count
  REQUIRE(type[first_node] == uint8_t(NodeType::File));
  type[first_node] = 9;
  CHECK_THROWS_AS(catalog_file_digests(type, "x"), Corrupt);
}

// ---- version 3: what its columns add to the rules --------------------------

namespace {

// Offset of the digest table's count in a version 3 catalog without roots.
size_t v3_table_offset(const Catalog& c) { return 12 + 1 + c.name.size() + 1; }

} // namespace

TEST_CASE("catalog v3: each object's digest once, sorted; files name it by index") {
  Catalog c = make({dir("a"), file("a/x"), file("a/y"), file("b")});
  c.nodes[2].digest = c.nodes[1].digest; // two files, one object
  Bytes b = encode_catalog(c, 3);
  size_t t = v3_table_offset(c);
  REQUIRE(b[t] == 2); // two distinct digests
  Digest first, second;
  std::memcpy(first.data(), &b[t + 1], 32);
  std::memcpy(second.data(), &b[t + 33], 32);
  CHECK(first < second);
  check_equal(c, decode_catalog(b, "x"));
  // The version 2 catalog repeats the shared digest: three 32-byte digests.
  CHECK(encode_catalog(c, 2).size() > b.size() + 32);
  // gc reads the table alone: each object once.
  CHECK(catalog_file_digests(b, "x") == std::vector<Digest>{first, second});
}

TEST_CASE("catalog v3: the digest table and the references are checked") {
  Catalog c = make({file("a"), file("b")}); // two digests
  Bytes good = encode_catalog(c, 3);
  size_t t = v3_table_offset(c);
  SUBCASE("out of order") {
    Bytes b = good;
    std::swap_ranges(b.begin() + ptrdiff_t(t + 1), b.begin() + ptrdiff_t(t + 33), b.begin() + ptrdiff_t(t + 33));
    expect_corrupt(b, "digest table out of order or repeated");
    CHECK_THROWS_WITH_AS(catalog_file_digests(b, "x"), doctest::Contains("out of order"), Corrupt);
  }
  SUBCASE("repeated") {
    Bytes b = good;
    std::copy(b.begin() + ptrdiff_t(t + 1), b.begin() + ptrdiff_t(t + 33), b.begin() + ptrdiff_t(t + 33));
    expect_corrupt(b, "out of order or repeated");
  }
  SUBCASE("a count larger than the bytes") {
    Bytes b = good;
    b[t] = 0x7f;
    expect_corrupt(b, "digest count 127 larger than the catalog");
  }
  // The refs column is the two bytes before the two empty relocation counts.
  SUBCASE("a reference past the table") {
    Bytes b = good;
    b[b.size() - 3] = 2;
    expect_corrupt(b, "names digest 2 of a table of 2");
  }
  SUBCASE("a table entry no file names") {
    Bytes b = good;
    b[b.size() - 4] = 0; // both files name entry 0
    b[b.size() - 3] = 0;
    expect_corrupt(b, "digest table entry 1 is named by no file");
  }
}

TEST_CASE("catalog v3: paths are prefix-compressed, each in its one encoding") {
  Catalog c = make({dir("lib"), file("lib/aa"), file("lib/ab")});
  Bytes b = encode_catalog(c, 3);
  check_equal(c, decode_catalog(b, "x"));
  // plens 0 3 5 ("lib" / "lib/aa" / "lib/ab"), slens 3 3 1, suffixes "lib", "/aa", "b".
  const std::string cols("\x00\x03\x05\x03\x03\x01lib/aab", 13);
  auto at = std::search(b.begin(), b.end(), cols.begin(), cols.end());
  REQUIRE(at != b.end());
  size_t p = size_t(at - b.begin());
  SUBCASE("a prefix longer than the previous path") {
    Bytes d = b;
    d[p + 1] = 4;
    expect_corrupt(d, "path shares 4 bytes with a previous path of 3");
  }
  SUBCASE("a prefix shorter than the bytes shared") {
    // "lib/ab" as plen 4 + "ab": the same path, not the shortest encoding.
    Bytes d(b.begin(), b.begin() + ptrdiff_t(p));
    const std::string alt = std::string("\x00\x03\x04\x03\x03\x02", 6) + "lib/aaab";
    d.insert(d.end(), alt.begin(), alt.end());
    d.insert(d.end(), b.begin() + ptrdiff_t(p + cols.size()), b.end());
    expect_corrupt(d, "shares more than the 4 bytes");
  }
  SUBCASE("a suffix past the end") {
    Bytes d = b;
    d[p + 5] = 0x7f;
    expect_corrupt(d, "truncated");
  }
}

TEST_CASE("catalog v3: varints in their shortest form, within 64 bits") {
  Bytes b;
  put_var(b, 0);
  put_var(b, 127);
  put_var(b, 128);
  put_var(b, ~uint64_t(0));
  CHECK(b.size() == 1 + 1 + 2 + 10);
  ByteReader r(b, "x");
  CHECK(r.var() == 0);
  CHECK(r.var() == 127);
  CHECK(r.var() == 128);
  CHECK(r.var() == ~uint64_t(0));
  CHECK(r.at_end());
  for (int64_t v : {int64_t(0), int64_t(-1), int64_t(1), INT64_MIN, INT64_MAX}) CHECK(unzigzag(zigzag(v)) == v);
  CHECK(zigzag(-1) == 1);
  const Bytes overlong = {0x80, 0x00};                                                  // 0 in two bytes
  const Bytes too_wide = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}; // 2^64 and more
  const Bytes endless = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x00};
  CHECK_THROWS_WITH_AS(ByteReader(overlong, "x").var(), doctest::Contains("shortest form"), Corrupt);
  CHECK_THROWS_WITH_AS(ByteReader(too_wide, "x").var(), doctest::Contains("past 64 bits"), Corrupt);
  CHECK_THROWS_WITH_AS(ByteReader(endless, "x").var(), doctest::Contains("past 64 bits"), Corrupt);
  CHECK_THROWS_AS(ByteReader(Bytes{0x80}, "x").var(), Corrupt); // cut
}

TEST_CASE("catalog v3: smaller than version 2 on a tree of many files") {
  Catalog c = make({dir("site-packages")});
  for (int p = 0; p < 20; p++) {
    std::string pkg = "site-packages/pkg" + std::to_string(p);
    c.nodes.push_back(dir(pkg));
    for (int m = 0; m < 50; m++) {
      Node f = file(pkg + "/module_" + std::to_string(1000 + m) + ".py", 1000 + m);
      f.mtime_ns = 1700000000000000000ll + m;
      c.nodes.push_back(f);
    }
  }
  std::sort(c.nodes.begin(), c.nodes.end(), [](const Node& a, const Node& b) { return path_less(a.path, b.path); });
  size_t v2 = encode_catalog(c, 2).size(), v3 = encode_catalog(c, 3).size();
  CAPTURE(v2);
  CAPTURE(v3);
  CHECK(v3 * 10 < v2 * 6); // raw, before zstd: the digests (32 B per file) dominate both
  check_equal(c, decode_catalog(encode_catalog(c, 3), "x"));
}

TEST_CASE("catalog v3: more than kMaxNodes nodes is refused before anything is reserved") {
  // Enough bytes for the count to pass "larger than the catalog" (5 per node):
  // only the limit refuses it (else the zero type bytes would).
  Catalog c = make({});
  Bytes b = encode_catalog(c, 3);
  REQUIRE(b.back() == 0); // node_count 0, the last byte
  b.pop_back();
  put_var(b, kMaxNodes + 1);
  b.resize(b.size() + 5 * (kMaxNodes + 1));
  expect_corrupt(b, "above the limit of 16777216");
}
