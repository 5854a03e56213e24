// core/pack_passes: each pass of pack_tree on its own. walk gives the tree's
// nodes in catalog order with the catalog's roots; hash gives the bytes, the
// SHA-256 and the relocations (the large-file path agrees with the small);
// compress stores raw what does not shrink and everything at level 0; write
// appends each object once and counts what the library already has.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <map>
#include <stdexcept>
#include <unistd.h>

#include "core/pack/pack_passes.hpp"
#include "core/pack/relocation.hpp"
#include "base/os/file.hpp"
#include "base/zstd_codec.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

Bytes text_bytes(size_t n, uint64_t seed = 1) {
  fx::Rng rng(seed);
  return fx::make_content(rng, n, true);
}
Bytes random_bytes(size_t n, uint64_t seed = 2) {
  fx::Rng rng(seed);
  return fx::make_content(rng, n, false);
}

// An open file and its LargeFile view.
struct OpenLarge {
  hpak::Fd fd;
  LargeFile file;
  explicit OpenLarge(const std::string& path)
      : fd(open(path.c_str(), O_RDONLY | O_CLOEXEC)), file{fd.get(), uint64_t(fx::read_file(path).size()), path} {
    REQUIRE(fd);
  }
};

Bytes collect_stored(const LargeFile& f, Codec codec, int level) {
  Bytes out;
  stream_stored(f, codec, level, 2, [&](ByteSpan b) { out.insert(out.end(), b.begin(), b.end()); });
  return out;
}

} // namespace

TEST_CASE("walk_tree: nodes in catalog order, no digests yet, and the catalog's roots") {
  fx::TempDir dir("passes");
  std::string src = dir / "src";
  fx::mkdirs(src + "/b/c");
  fx::write_file(src + "/a.txt", "hello");
  fx::write_file(src + "/b/c/d.bin", "data");
  fx::hardlink(src + "/a.txt", src + "/b/e");
  fx::symlink_to("../a.txt", src + "/b/link");
  fx::write_file(src + "/skip.me", "x");
  PackOptions o;
  o.name = "tree";
  o.extra_roots = {"/opt/app", "", src};
  o.exclude = [](const std::string& rel) { return rel == "skip.me"; };
  WalkedTree w = walk_tree(src + "/b/..", o);

  CHECK(w.root == src);
  CHECK(w.catalog.name == "tree");
  CHECK(w.catalog.roots == std::vector<std::string>{src, "/opt/app"}); // the tree first, no empty or repeated root
  CHECK(w.catalog.nodes.empty());
  std::vector<std::pair<std::string, NodeType>> got;
  for (const Node& n : w.tree.nodes) got.emplace_back(n.path, n.type);
  std::vector<std::pair<std::string, NodeType>> want = {
      {"a.txt", NodeType::File}, {"b", NodeType::Dir},      {"b/c", NodeType::Dir},
      {"b/c/d.bin", NodeType::File}, {"b/e", NodeType::Hardlink}, {"b/link", NodeType::Symlink}};
  CHECK(got == want);
  REQUIRE(w.tree.files.size() == 2);
  CHECK(w.tree.nodes[w.tree.files[0]].path == "a.txt");
  CHECK(w.tree.nodes[w.tree.files[1]].path == "b/c/d.bin");
  CHECK(w.tree.nodes[w.tree.files[1]].size == 4);
  CHECK(w.tree.nodes[4].target == "a.txt");
  CHECK(w.tree.nodes[5].target == "../a.txt");
  for (const Node& n : w.tree.nodes) CHECK(n.digest == Digest{});

  o.relocate = false;
  CHECK(walk_tree(src, o).catalog.roots.empty());
  o.relocate = true;
  o.extra_roots.assign(16, "");
  for (size_t i = 0; i < o.extra_roots.size(); i++) o.extra_roots[i] = "/r" + std::to_string(i);
  CHECK_THROWS_WITH_AS(walk_tree(src, o), "too many --relocate paths (at most 15)", Error);
}

TEST_CASE("hash_file and hash_large_file: the bytes, their SHA-256 and where the roots occur") {
  fx::TempDir dir("passes");
  std::string root = dir.path();
  std::vector<std::string> roots = {root, "/opt/app"};
  // A root straddling the 8 MiB window boundary, another near the end.
  Bytes big = random_bytes((9u << 20) + 5);
  auto put = [&](size_t at, const std::string& s) { std::copy(s.begin(), s.end(), big.begin() + long(at)); };
  put(LargeFile::kWindow - 3, root);
  put(big.size() - 20, "/opt/app");
  put(100, "/opt/app/lib");
  fx::write_file(dir / "big.bin", big);

  Fd rootfd(open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  HashedFile small = hash_file(rootfd.get(), "big.bin", dir / "big.bin", roots);
  CHECK(small.raw == big);
  CHECK(small.digest == sha256(big));
  std::vector<uint64_t> want = {make_reloc(100, 1), make_reloc(LargeFile::kWindow - 3, 0), make_reloc(big.size() - 20, 1)};
  CHECK(small.relocs == want);
  CHECK(hash_file(rootfd.get(), "big.bin", "x", {}).relocs.empty());

  OpenLarge f(dir / "big.bin");
  HashedFile large = hash_large_file(f.file, roots);
  CHECK(large.raw.empty()); // not held in memory
  CHECK(large.digest == small.digest);
  CHECK(large.relocs == small.relocs);
  CHECK(hash_large_file(f.file, {}).relocs.empty());
  CHECK(hash_large_file(f.file, {}).digest == small.digest);

  CHECK_THROWS_AS(hash_file(rootfd.get(), "missing", dir / "missing", roots), Error);
}

TEST_CASE("compress_object: zstd only when it shrinks and the level is above 0") {
  Bytes text = text_bytes(64 << 10);
  StoredForm z = compress_object(text, 3, nullptr);
  CHECK(z.codec == Codec::Zstd);
  CHECK(z.stored.size() < text.size());
  Bytes back(text.size());
  zstd_decompress(z.stored, back, nullptr, "object");
  CHECK(back == text);

  StoredForm level0 = compress_object(text, 0, nullptr);
  CHECK(level0.codec == Codec::Raw);
  CHECK(level0.stored.empty());

  StoredForm noise = compress_object(random_bytes(64 << 10), 19, nullptr);
  CHECK(noise.codec == Codec::Raw);
  CHECK(noise.stored.empty());
  CHECK(noise.stored.capacity() == 0); // nothing held while it waits to be written
}

TEST_CASE("compress_object: with the pack's dictionary below kEntryDictMax, without above") {
  Bytes sample = text_bytes(256 << 10);
  std::vector<size_t> sizes(256, 1024);
  ZstdDict dict(zstd_train_dict(sample, sizes, 16 << 10, 3), 3);
  Bytes mid = text_bytes(40 << 10);
  StoredForm d = compress_object(mid, 3, &dict);
  CHECK(d.codec == Codec::ZstdDict);
  CHECK(zstd_frame_dict_id(d.stored) == dict.id());
  Bytes back(mid.size());
  zstd_decompress(d.stored, back, &dict, "object");
  CHECK(back == mid);
  StoredForm plain = compress_object(mid, 3, nullptr);
  CHECK(plain.codec == Codec::Zstd);
  CHECK(d.stored.size() < plain.stored.size());

  Bytes large = text_bytes(kEntryDictMax);
  CHECK(compress_object(large, 3, &dict).codec == Codec::Zstd); // at the limit: plain
  CHECK(compress_object(mid, 0, &dict).codec == Codec::Raw);    // level 0: never compressed
  StoredForm noise = compress_object(random_bytes(40 << 10), 3, &dict);
  CHECK(noise.codec == Codec::Raw);
  CHECK(noise.stored.capacity() == 0);
}

TEST_CASE("worth_compressing and stream_stored: large files raw at level 0 or when samples do not shrink") {
  fx::TempDir dir("passes");
  fx::write_file(dir / "text.bin", text_bytes(20u << 20));
  fx::write_file(dir / "noise.bin", random_bytes(20u << 20));
  OpenLarge text(dir / "text.bin"), noise(dir / "noise.bin");
  CHECK(worth_compressing(text.file, 3));
  CHECK_FALSE(worth_compressing(text.file, 0));
  CHECK_FALSE(worth_compressing(noise.file, 3));

  CHECK(collect_stored(noise.file, Codec::Raw, 3) == fx::read_file(dir / "noise.bin"));
  Bytes frame = collect_stored(text.file, Codec::Zstd, 3);
  CHECK(frame.size() < text.file.size / 2);
  Bytes back(text.file.size);
  zstd_decompress(frame, back, nullptr, "frame");
  CHECK(back == fx::read_file(dir / "text.bin"));

  // A sink that throws mid-stream: the error comes out, nothing leaks (ASan).
  int calls = 0;
  auto failing = [&](ByteSpan) {
    if (++calls == 2) throw Error("no space left");
  };
  CHECK_THROWS_WITH_AS(stream_stored(noise.file, Codec::Zstd, 3, 2, failing), "no space left", Error);
  CHECK(calls == 2);
}

TEST_CASE("WritePass: each object once, present ones counted, raw at level 0 and when not smaller") {
  fx::TempDir dir("passes");
  Bytes text = text_bytes(300 << 10, 1), noise = random_bytes(300 << 10), kept = text_bytes(300 << 10, 3);
  Bytes tiny = fx::to_bytes("small object");
  for (int level : {0, 3}) {
    CAPTURE(level);
    std::string path = dir / ("p" + std::to_string(level) + ".hpak");
    Fd fd(open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    REQUIRE(fd);
    PackWriter writer(fd.get(), path, level);
    REQUIRE(writer.is_small(tiny.size()));
    REQUIRE_FALSE(writer.is_small(text.size()));
    PackOptions o;
    o.level = level;
    o.have = [&](const Digest& d) { return d == sha256(kept); };
    PackStats stats;
    WritePass write(writer, o, 2, stats);
    write.write_small(sha256(text), text, std::nullopt);
    write.write_small(sha256(text), text, std::nullopt); // a duplicate: written once
    write.write_small(sha256(noise), noise, compress_object(noise, level, nullptr));
    write.write_small(sha256(kept), kept, std::nullopt); // in the library already
    write.write_small(sha256(tiny), tiny, std::nullopt); // into a block
    CHECK(stats.unique_objects == 4);
    CHECK(stats.objects_written == 3);
    CHECK(stats.objects_present == 1);
    CHECK(stats.raw_written == text.size() + noise.size() + tiny.size());
    writer.close_block();
    PackResult r = writer.finish();
    std::map<Digest, Codec> codecs;
    for (const IndexRecord& rec : r.records) codecs[rec.digest] = rec.codec;
    CHECK(codecs.size() == 3);
    CHECK(codecs.count(sha256(kept)) == 0);
    CHECK(codecs.at(sha256(text)) == (level == 0 ? Codec::Raw : Codec::Zstd));
    CHECK(codecs.at(sha256(noise)) == Codec::Raw);
    CHECK(stats.stored_written == (level == 0 ? text.size() : compress_object(text, 3, nullptr).stored.size()) + noise.size());
  }
}

TEST_CASE("finish_nodes: counts by type, hardlinks take their file's size, symlinks get relocations") {
  std::vector<Node> nodes(5);
  nodes[0].type = NodeType::Dir;
  nodes[0].path = "d";
  nodes[1].type = NodeType::File;
  nodes[1].path = "d/f";
  nodes[1].size = 1234; // as hashed, perhaps not as walked
  nodes[2].type = NodeType::Hardlink;
  nodes[2].path = "d/g";
  nodes[2].target = "d/f";
  nodes[2].size = 1;
  nodes[3].type = NodeType::Symlink;
  nodes[3].path = "d/s";
  nodes[3].target = "/opt/app/bin/tool";
  nodes[4].type = NodeType::Symlink;
  nodes[4].path = "d/t";
  nodes[4].target = "f";
  PackStats stats;
  finish_nodes(nodes, {"/opt/app"}, stats);
  CHECK(stats.dirs == 1);
  CHECK(stats.files == 1);
  CHECK(stats.hardlinks == 1);
  CHECK(stats.symlinks == 2);
  CHECK(nodes[2].size == 1234);
  CHECK(nodes[3].relocs == std::vector<uint64_t>{make_reloc(0, 0)});
  CHECK(nodes[4].relocs.empty());
}
