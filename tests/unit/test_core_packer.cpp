// core/packer: pack_to_file of generated trees. The catalog must describe the
// tree exactly (types, modes, sizes, mtimes, targets, hardlinks, relocations),
// every object must hold its file's bytes, and the output must be
// byte-identical whatever the thread count and memory budget.
#include <dirent.h>
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pack/pack_reader.hpp"
#include "core/pack/packer.hpp"
#include "core/pack/relocation.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

PackOptions quiet_opts(unsigned threads = 2) {
  PackOptions o;
  o.threads = threads;
  o.name = "env";
  return o;
}

std::vector<std::string> dir_entries(const std::string& d) {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::directory_iterator(d)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Checks a catalog against the tree it was packed from.
void check_catalog_matches_tree(const Catalog& c, const std::string& root, const PackReader& pack, bool mtimes = true) {
  size_t count = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(root); it != std::filesystem::recursive_directory_iterator(); ++it) count++;
  CHECK(c.nodes.size() == count);
  std::map<std::pair<dev_t, ino_t>, std::string> first_link;
  for (const Node& n : c.nodes) {
    CAPTURE(n.path);
    std::string full = root + "/" + n.path;
    struct stat st;
    REQUIRE(lstat(full.c_str(), &st) == 0);
    if (mtimes) CHECK(n.mtime_ns == int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
    else CHECK(n.mtime_ns == 0);
    switch (n.type) {
    case NodeType::Dir:
      CHECK(S_ISDIR(st.st_mode));
      CHECK(n.mode == (st.st_mode & 07777));
      CHECK(n.size == 0);
      break;
    case NodeType::File: {
      CHECK(S_ISREG(st.st_mode));
      CHECK(n.mode == (st.st_mode & 07777));
      CHECK(n.size == uint64_t(st.st_size));
      Bytes content = fx::read_file(full);
      CHECK(n.digest == sha256(content));
      auto rec = pack.find(n.digest);
      REQUIRE(rec.has_value());
      CHECK(pack.read(*rec) == content);
      CHECK(n.relocs == (c.roots.empty() ? std::vector<uint64_t>{} : find_relocations(content, c.roots)));
      if (st.st_nlink > 1) first_link.emplace(std::make_pair(st.st_dev, st.st_ino), n.path);
      break;
    }
    case NodeType::Hardlink: {
      CHECK(S_ISREG(st.st_mode));
      auto it = first_link.find({st.st_dev, st.st_ino});
      REQUIRE(it != first_link.end());
      CHECK(n.target == it->second);
      CHECK(n.size == uint64_t(st.st_size));
      break;
    }
    case NodeType::Symlink: {
      CHECK(S_ISLNK(st.st_mode));
      char buf[4096];
      ssize_t len = readlink(full.c_str(), buf, sizeof buf);
      REQUIRE(len > 0);
      CHECK(n.target == std::string(buf, size_t(len)));
      CHECK(n.size == uint64_t(len));
      break;
    }
    }
  }
}

} // namespace

TEST_CASE("packer: pack_to_file of a Python-env-like tree") {
  fx::TempDir dir("packer");
  std::string src = dir / "src";
  fx::TreeSpec spec;
  spec.files = 300;
  fx::TreeInfo info = fx::make_tree(src, spec);
  std::string out = dir / "out/env.hpak";
  fx::mkdirs(dir / "out");
  PackFileResult r = pack_to_file(src, out, quiet_opts());
  CHECK(dir_entries(dir / "out") == std::vector<std::string>{"env.hidx", "env.hpak"}); // no temp files left
  const PackStats& s = r.stats;
  CHECK(s.files == info.files); // a hardlinked file is one File node plus Hardlink nodes
  CHECK(s.hardlinks == info.hardlinks);
  CHECK(s.symlinks == info.symlinks);
  CHECK(s.dirs == info.dirs);
  CHECK(s.unique_objects < s.files); // duplicates and empty files share objects
  CHECK(s.objects_written == s.unique_objects);
  CHECK(s.objects_present == 0);
  CHECK(s.relocated_files == info.self_path_files.size());
  CHECK(s.skipped.empty());
  CHECK(r.pack.size == fx::read_file(out).size());
  CHECK(sha256(fx::read_file(out)) == r.pack.file_sum);
  CHECK(fx::read_file(index_path_for(out)) == encode_index(r.pack.records, r.pack.size, r.pack.pack_sum, r.pack.index_version()));

  PackReader pack(out);
  CHECK(pack.index_source() == PackReader::IndexSource::File);
  CHECK(pack.damage().empty());
  Catalog c = pack.load_catalog();
  CHECK(c.name == "env");
  CHECK(sha256(encode_catalog(c)) == r.catalog_digest);
  REQUIRE(c.roots.size() == 1);
  CHECK(c.roots[0] == src);
  check_catalog_matches_tree(c, src, pack);
  // Blobs are written once each; the catalog twice.
  size_t blobs = 0, catalogs = 0;
  for (auto& rec : r.pack.records) (rec.kind == Kind::Blob ? blobs : catalogs)++;
  CHECK(blobs == s.unique_objects);
  CHECK(catalogs == 2);
}

TEST_CASE("packer: same tree, any thread count or budget, byte-identical pack and index") {
  fx::TempDir dir("packer");
  std::string src = dir / "src";
  fx::TreeSpec spec;
  spec.files = 250;
  spec.seed = 3;
  fx::make_tree(src, spec);
  // A few multi-MiB files so the streaming path (append_stream, zstd workers) runs too.
  fx::write_big_file(src + "/big1.bin", 3 << 20, 11);
  fx::write_big_file(src + "/big2.bin", (5 << 20) + 17, 12);
  fx::copy_file(src + "/big1.bin", src + "/big1-copy.bin");
  struct Run {
    unsigned threads;
    uint64_t budget;
  };
  std::vector<Bytes> packs, indexes;
  for (Run run : {Run{1, 256ull << 20}, Run{4, 256ull << 20}, Run{3, 100 << 10}}) {
    CAPTURE(run.threads);
    PackOptions o = quiet_opts(run.threads);
    o.large_threshold = 1 << 20;
    o.memory_budget = run.budget;
    std::string out = dir / ("j" + std::to_string(run.threads) + ".hpak");
    PackFileResult r = pack_to_file(src, out, o);
    CHECK(r.stats.objects_written == r.stats.unique_objects);
    packs.push_back(fx::read_file(out));
    indexes.push_back(fx::read_file(index_path_for(out)));
  }
  for (size_t i = 1; i < packs.size(); i++) {
    CHECK_MESSAGE(packs[i] == packs[0], "pack " << i << " differs from the -j1 pack");
    CHECK_MESSAGE(indexes[i] == indexes[0], "index " << i << " differs from the -j1 index");
  }
  PackReader pack(dir / "j1.hpak");
  Catalog c = pack.load_catalog();
  check_catalog_matches_tree(c, src, pack);
  auto big = pack.find(sha256(fx::read_file(src + "/big2.bin")));
  REQUIRE(big.has_value());
  CHECK(big->codec == Codec::Zstd);
  CHECK(big->raw_len == (5u << 20) + 17);
}

TEST_CASE("packer: options") {
  fx::TempDir dir("packer");
  std::string src = dir / "src";
  fx::TreeSpec spec;
  spec.files = 40;
  fx::TreeInfo info = fx::make_tree(src, spec);
  fx::write_file(src + "/share/extra-root.txt", "prefix=/opt/other/root/lib and /opt/other/root\n");

  SUBCASE("no mtime") {
    PackOptions o = quiet_opts();
    o.record_mtime = false;
    pack_to_file(src, dir / "p.hpak", o);
    PackReader pack(dir / "p.hpak");
    check_catalog_matches_tree(pack.load_catalog(), src, pack, false);
  }
  SUBCASE("no relocation") {
    PackOptions o = quiet_opts();
    o.relocate = false;
    PackFileResult r = pack_to_file(src, dir / "p.hpak", o);
    CHECK(r.stats.relocated_files == 0);
    Catalog c = PackReader(dir / "p.hpak").load_catalog();
    CHECK(c.roots.empty());
    for (auto& n : c.nodes) CHECK(n.relocs.empty());
  }
  SUBCASE("extra relocation roots") {
    PackOptions o = quiet_opts();
    o.extra_roots = {"/opt/other/root", src};
    PackFileResult r = pack_to_file(src, dir / "p.hpak", o);
    PackReader pack(dir / "p.hpak");
    Catalog c = pack.load_catalog();
    CHECK(c.roots == std::vector<std::string>{src, "/opt/other/root"}); // the source root is not repeated
    CHECK(r.stats.relocated_files == info.self_path_files.size() + 1);
    check_catalog_matches_tree(c, src, pack);
    for (auto& n : c.nodes)
      if (n.path == "share/extra-root.txt") CHECK(n.relocs.size() == 2);
  }
  SUBCASE("objects already present are not written") {
    // First pack everything, then pack again with `have` saying yes to half.
    PackFileResult full = pack_to_file(src, dir / "full.hpak", quiet_opts());
    DigestSet have;
    size_t i = 0;
    for (auto& rec : full.pack.records)
      if (rec.kind == Kind::Blob && i++ % 2 == 0) have.insert(rec.digest);
    PackOptions o = quiet_opts();
    o.have = [&](const Digest& d) { return have.count(d) != 0; };
    PackFileResult part = pack_to_file(src, dir / "part.hpak", o);
    CHECK(part.stats.objects_present == have.size());
    CHECK(part.stats.objects_written + part.stats.objects_present == part.stats.unique_objects);
    PackReader pack(dir / "part.hpak");
    for (auto& d : have) CHECK_FALSE(pack.find(d).has_value());
    CHECK(part.catalog_digest == full.catalog_digest); // the catalog does not depend on where objects live
  }
  SUBCASE("catalog name") {
    PackOptions o = quiet_opts();
    o.name = "my env \xe2\x9c\x93";
    pack_to_file(src, dir / "p.hpak", o);
    CHECK(PackReader(dir / "p.hpak").load_catalog().name == o.name);
  }
}

TEST_CASE("packer: special files, errors and atomic output") {
  fx::TempDir dir("packer");
  std::string src = dir / "src";
  fx::mkdirs(src + "/sub");
  fx::write_file(src + "/a.txt", "a");
  REQUIRE(mkfifo((src + "/sub/fifo").c_str(), 0644) == 0);
  fx::mkdirs(dir / "out");
  std::string out = dir / "out/p.hpak";
  try {
    pack_to_file(src, out, quiet_opts());
    FAIL_CHECK("packed a fifo");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("sub/fifo") != std::string::npos);
    CHECK(std::string(e.what()).find("special file") != std::string::npos);
  }
  CHECK(dir_entries(dir / "out").empty()); // neither pack, index nor temp file
  PackOptions o = quiet_opts();
  o.skip_special = true;
  PackFileResult r = pack_to_file(src, out, o);
  CHECK(r.stats.skipped == std::vector<std::string>{"sub/fifo"});
  Catalog c = PackReader(out).load_catalog();
  REQUIRE(c.nodes.size() == 2);
  CHECK(c.nodes[0].path == "a.txt");
  CHECK(c.nodes[1].path == "sub");

  CHECK_THROWS_AS(pack_to_file(dir / "missing", dir / "out/q.hpak", quiet_opts()), Error);
  CHECK_THROWS_AS(pack_to_file(src, dir / "no/such/dir/q.hpak", o), Error);
  std::vector<std::string> expect_out = {"p.hidx", "p.hpak"};
  CHECK(dir_entries(dir / "out") == expect_out);
}

TEST_CASE("packer: an empty tree and a tree of empty things") {
  fx::TempDir dir("packer");
  fx::mkdirs(dir / "empty");
  PackFileResult r = pack_to_file(dir / "empty", dir / "e.hpak", quiet_opts());
  CHECK(r.stats.files == 0);
  Catalog c = PackReader(dir / "e.hpak").load_catalog();
  CHECK(c.nodes.empty());

  fx::mkdirs(dir / "hollow/a/b/c");
  fx::write_file(dir / "hollow/a/empty1", "");
  fx::write_file(dir / "hollow/a/b/empty2", "");
  r = pack_to_file(dir / "hollow", dir / "h.hpak", quiet_opts());
  CHECK(r.stats.files == 2);
  CHECK(r.stats.unique_objects == 1);
  CHECK(r.stats.dirs == 3);
  PackReader pack(dir / "h.hpak");
  check_catalog_matches_tree(pack.load_catalog(), dir / "hollow", pack);
}
