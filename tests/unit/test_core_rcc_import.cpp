// rcc import: Go modes, rewrite-offset mapping, JSON grammar, decoding limits.
#include <doctest/doctest.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/import/rcc_import.hpp"
#include "base/zstd_codec.hpp"

using namespace hpak;
using namespace hpak::formats;

static Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }

TEST_CASE("rcc: Go file modes map to POSIX bits") {
  CHECK(go_mode_to_posix(0755) == 0755);
  CHECK(go_mode_to_posix(kGoModeDir | 0750) == 0750);
  CHECK(go_mode_to_posix(kGoModeSetuid | 0755) == 04755);
  CHECK(go_mode_to_posix(kGoModeSetgid | 0755) == 02755);
  CHECK(go_mode_to_posix(kGoModeSticky | kGoModeDir | 0777) == 01777);
  CHECK(go_mode_is_special(kGoModeNamedPipe | 0644));
  CHECK(go_mode_is_special(kGoModeDevice | kGoModeCharDevice | 0644));
  CHECK_FALSE(go_mode_is_special(kGoModeSymlink | 0777));
}

namespace {
size_t text_size_find(const Bytes& b, const std::string& s) {
  return std::string(b.begin(), b.end()).find(s);
}
} // namespace

TEST_CASE("rcc: rewrite offsets of the space name become relocations of the space path") {
  const std::string path = "/home/u/.robocorp/holotree/h1234567_abcdefabcdefabt";
  const std::string id = "h1234567_abcdefabcdefabt";
  std::string text = "#!" + path + "/bin/python\nx=" + path + "\n";
  Bytes data = bytes_of(text);
  size_t first = 2 + path.size() - id.size();
  size_t second = text.find(path, 3) + path.size() - id.size();
  auto m = map_rcc_rewrites(data, {int64_t(second), int64_t(first)}, path, id, "t");
  const auto& r = m.relocs;
  REQUIRE(r.size() == 2);
  CHECK(m.names_kept == 0);
  CHECK(reloc_offset(r[0]) == 2);
  CHECK(reloc_offset(r[1]) == text.find(path, 3));
  CHECK(reloc_root(r[0]) == 0);
  // The space name alone (a prompt, a label) is no path: left as it is, counted.
  Bytes bare = bytes_of("#!" + path + "/bin/python\nPROMPT=(" + id + ")\n");
  size_t in_path = 2 + path.size() - id.size(), alone = text_size_find(bare, "(" + id) + 1;
  auto k = map_rcc_rewrites(bare, {int64_t(alone), int64_t(in_path)}, path, id, "t");
  REQUIRE(k.relocs.size() == 1);
  CHECK(reloc_offset(k.relocs[0]) == 2);
  CHECK(k.names_kept == 1);
  // The name ending another path would still point at the old space: refused.
  Bytes other = bytes_of("x=/elsewhere/" + id + "\n");
  CHECK_THROWS_AS(map_rcc_rewrites(other, {13}, path, id, "t"), RccRefused);
  // An offset that does not hold the name, or lies past the end.
  CHECK_THROWS_AS(map_rcc_rewrites(data, {int64_t(first + 1)}, path, id, "t"), RccRefused);
  CHECK_THROWS_AS(map_rcc_rewrites(data, {int64_t(data.size())}, path, id, "t"), RccRefused);
  // A path that does not end in its identity.
  CHECK_THROWS_AS(map_rcc_rewrites(data, {int64_t(first)}, "/x/y", id, "t"), RccRefused);
}

TEST_CASE("rcc: catalog JSON grammar") {
  std::string json = R"({"rcc":"v18","identity":"sp","path":"/b/sp","platform":"linux_amd64","blueprint":"00","lifted":true,
    "tree":{"name":"","mode":2147484141,"subdirs":{"d":{"name":"d","mode":2147484141,"subdirs":{},"files":{}},
      "l":{"name":"l","symlink":"d","mode":2147484141,"subdirs":{"s":{"name":"s","mode":2147484141,"shadow":true,"subdirs":{},"files":{}}},
           "files":{"f":{"name":"f","size":0,"mode":420,"digest":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","rewrite":[]}}}},
    "files":{"e":{"name":"e","size":0,"mode":8389101,"digest":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","rewrite":[]},
             "k":{"name":"k","symlink":"e","size":0,"mode":420,"digest":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","rewrite":[]}}}})";
  RccCatalog rc = parse_rcc_catalog(bytes_of(json), "t");
  CHECK(rc.path == "/b/sp");
  CHECK(rc.tree.subdirs.at("l").symlink == "d");
  CHECK(rc.tree.subdirs.at("l").subdirs.at("s").shadow);
  auto conv = convert_rcc_catalog(rc, "n", "t", [](const std::string&, uint64_t) -> Bytes { FAIL("no object needed"); return {}; });
  const Catalog& c = conv.catalog;
  REQUIRE(c.nodes.size() == 4); // d, e, k, l: nothing under the symlinked directory
  CHECK(c.nodes[0].path == "d");
  CHECK(c.nodes[0].type == NodeType::Dir);
  CHECK(c.nodes[1].path == "e");
  CHECK(c.nodes[1].mode == 04755);
  CHECK(c.nodes[2].type == NodeType::Symlink);
  CHECK(c.nodes[2].target == "e");
  CHECK(c.nodes[3].type == NodeType::Symlink);
  CHECK(c.nodes[3].target == "d");
  CHECK(conv.summary.left_out == 2);
  CHECK(c.roots == std::vector<std::string>{"/b/sp"});
  // The result is a valid HPAK catalog.
  CHECK_NOTHROW(decode_catalog(encode_catalog(c), "t"));

  CHECK_THROWS_AS(parse_rcc_catalog(bytes_of("{\"tree\":"), "t"), Corrupt);
  CHECK_THROWS_AS(parse_rcc_catalog(bytes_of(R"({"identity":"a","path":"/a","tree":{"name":"","mode":-1,"subdirs":{},"files":{}}})"), "t"),
                  Corrupt);
  CHECK_THROWS_AS(parse_rcc_catalog(bytes_of(R"({"identity":"a","path":"/a","tree":[]})"), "t"), Corrupt);
  // A name with a slash, or recorded under another key, is refused.
  std::string bad = R"({"identity":"a","path":"/a","tree":{"name":"","mode":0,"subdirs":{},"files":{"..":{"name":"..","size":0,"mode":420,"digest":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","rewrite":[]}}}})";
  RccCatalog rb = parse_rcc_catalog(bytes_of(bad), "t");
  CHECK_THROWS_AS(convert_rcc_catalog(rb, "n", "t", nullptr), RccRefused);
}

TEST_CASE("rcc: decoding by magic stops at the size claimed") {
  Bytes raw(100000, 'a');
  Bytes gz(compressBound(raw.size()) + 64);
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  zs.next_in = raw.data();
  zs.avail_in = uInt(raw.size());
  zs.next_out = gz.data();
  zs.avail_out = uInt(gz.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  gz.resize(zs.total_out);
  deflateEnd(&zs);
  CHECK(rcc_decode(gz, raw.size(), "t") == raw);
  // Past the cap: RccTooLarge, which says the cap; malformed data is only RccRefused.
  try {
    rcc_decode(gz, raw.size() - 1, "t");
    FAIL("decoded past the cap");
  } catch (const RccTooLarge& e) {
    CHECK(e.cap() == raw.size() - 1);
  }
  CHECK(rcc_decoded_size(gz, raw.size(), "t") == raw.size());
  CHECK_THROWS_AS(rcc_decoded_size(gz, raw.size() - 1, "t"), RccTooLarge);
  Bytes twice = gz;
  twice.insert(twice.end(), gz.begin(), gz.end()); // two gzip members read as one stream
  CHECK(rcc_decode(twice, 2 * raw.size(), "t").size() == 2 * raw.size());
  Bytes truncated(gz.begin(), gz.begin() + ptrdiff_t(gz.size() / 2));
  CHECK_THROWS_AS(rcc_decode(truncated, raw.size(), "t"), RccRefused);
  try {
    rcc_decode(truncated, raw.size(), "t");
  } catch (const RccTooLarge&) {
    FAIL("a truncated stream taken for one too large");
  } catch (const RccRefused&) {
  }

  Bytes zs_bytes;
  zstd_compress(raw, 3, nullptr, zs_bytes);
  CHECK(rcc_decode(zs_bytes, raw.size(), "t") == raw);
  CHECK_THROWS_AS(rcc_decode(zs_bytes, 10, "t"), RccTooLarge);
  CHECK(rcc_decoded_size(zs_bytes, raw.size(), "t") == raw.size());
  CHECK_THROWS_AS(rcc_decoded_size(zs_bytes, raw.size() - 1, "t"), RccTooLarge);
  Bytes zt(zs_bytes.begin(), zs_bytes.end() - 3);
  CHECK_THROWS_AS(rcc_decode(zt, raw.size(), "t"), RccRefused);

  Bytes plain = bytes_of("plain bytes");
  CHECK(rcc_decode(plain, plain.size(), "t") == plain);
  CHECK_THROWS_AS(rcc_decode(plain, 3, "t"), RccTooLarge);
  CHECK(rcc_decoded_size(plain, plain.size(), "t") == plain.size());
  // Counting goes through a small buffer: a stream far larger than it is counted whole.
  Bytes big(3u << 20, 'b'), big_zs;
  zstd_compress(big, 3, nullptr, big_zs);
  CHECK(rcc_decoded_size(big_zs, big.size(), "t") == big.size());
  CHECK(rcc_decode(big_zs, big.size(), "t") == big);
}

TEST_CASE("rcc: relocated files are read at most 256 MiB (as claimed) at a time") {
  RccCatalog rc;
  rc.path = "/b/sp";
  rc.identity = "sp";
  auto add = [&](const std::string& name, int64_t size, char digit) {
    RccFile f;
    f.name = name;
    f.size = size;
    f.mode = 0644;
    f.digest = std::string(63, 'a') + digit;
    f.rewrite = {5};
    rc.tree.files[name] = f;
  };
  // 16 files claiming 200 MiB each: any two would pass the budget.
  for (int i = 0; i < 16; i++) add("f" + std::to_string(i), int64_t(200) << 20, "0123456789abcdef"[i]);
  std::atomic<int> in_flight{0}, most{0}, calls{0};
  auto loader = [&](const std::string&, uint64_t) {
    int n = ++in_flight;
    for (int m = most.load(); n > m && !most.compare_exchange_weak(m, n);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    calls++;
    --in_flight;
    return bytes_of("#!/b/sp/bin/python\n"); // the space path at offset 2, its name at 5
  };
  RccConverted c = convert_rcc_tree(rc, "n", "t");
  map_rcc_relocations(c, loader, 4);
  CHECK(calls == 16);
  CHECK(most == 1);
  for (const Node& n : c.catalog.nodes) CHECK(n.relocs.size() == 1);
}
