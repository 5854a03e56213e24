// core/materialize (+ core/target): unpacking a pack reproduces the packed
// tree file by file (content, modes, symlinks, hardlinks as one inode, empty
// dirs, mtimes), relocates the tree's own path into a longer or shorter one,
// refuses or replaces what is in the way, and never leaves a partial file.
#include <algorithm>
#include <map>
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/restore/materialize.hpp"
#include "core/pack/pack_reader.hpp"
#include "core/pack/packer.hpp"
#include "core/restore/target.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

PackOptions popts() {
  PackOptions o;
  o.threads = 2;
  o.name = "env";
  return o;
}

MaterializeStats unpack(const std::string& pack_path, const std::string& target, MaterializeOptions mo = {},
                        bool force = false) {
  PackReader pack(pack_path);
  Catalog cat = pack.load_catalog();
  Fd fd = open_unpack_target(target, cat, force);
  if (!mo.threads) mo.threads = 2;
  mo.force = mo.force || force;
  PackSource src(pack);
  return materialize(cat, src, fd.get(), target, mo);
}

std::string slurp(const std::string& path) { return fx::to_string(fx::read_file(path)); }

std::string link_target(const std::string& path) {
  char buf[4096];
  ssize_t n = readlink(path.c_str(), buf, sizeof buf);
  REQUIRE(n >= 0);
  return std::string(buf, size_t(n));
}

} // namespace

TEST_CASE("materialize: round trip of a tree with a 70 MiB file") {
  fx::TempDir dir("mat");
  std::string src = dir / "src";
  fx::TreeSpec spec;
  spec.files = 200;
  spec.big_file = true;
  fx::TreeInfo info = fx::make_tree(src, spec);
  PackFileResult pr = pack_to_file(src, dir / "env.hpak", popts());
  {
    PackReader pack(dir / "env.hpak");
    auto big = pack.find(sha256(fx::read_file(src + "/lib/big/libhuge.so")));
    REQUIRE(big.has_value());
    CHECK(big->raw_len == spec.big_size);
    CHECK(big->codec == Codec::Zstd);
    CHECK(big->stored_len < big->raw_len / 2); // the repeated block compressed
  }
  MaterializeStats st = unpack(dir / "env.hpak", dir / "out");
  CHECK(st.failures.empty());
  CHECK(st.files == info.files);
  CHECK(st.hardlinks == info.hardlinks);
  CHECK(st.symlinks == info.symlinks);
  CHECK(st.dirs == info.dirs);
  CHECK(st.bytes == info.bytes);
  auto diffs = fx::compare_trees(src, dir / "out");
  CHECK_MESSAGE(diffs.empty(), fx::join_lines(diffs));
  // Hardlinks are one inode in the restored tree.
  struct stat a, b, c;
  REQUIRE(stat((dir / "out/bin/pip3.11").c_str(), &a) == 0);
  REQUIRE(stat((dir / "out/bin/pip").c_str(), &b) == 0);
  REQUIRE(stat((dir / "out/bin/pip3").c_str(), &c) == 0);
  CHECK(a.st_ino == b.st_ino);
  CHECK(a.st_ino == c.st_ino);
  CHECK(a.st_nlink == 3);
  // Dangling and absolute symlinks come back verbatim (never followed).
  CHECK(link_target(dir / "out/share/dangling") == "does/not/exist");
  CHECK(link_target(dir / "out/share/abs-dangling") == "/nonexistent/hpak-test/target");
  CHECK(link_target(dir / "out/bin/activate-abs") == src + "/bin/activate");
}

TEST_CASE("materialize: options") {
  fx::TempDir dir("mat");
  std::string src = dir / "src";
  fx::TreeSpec spec;
  spec.files = 60;
  fx::make_tree(src, spec);
  pack_to_file(src, dir / "env.hpak", popts());
  SUBCASE("single thread, no digest check") {
    MaterializeOptions mo;
    mo.threads = 1;
    mo.verify = false;
    unpack(dir / "env.hpak", dir / "out", mo);
    auto diffs = fx::compare_trees(src, dir / "out");
    CHECK_MESSAGE(diffs.empty(), fx::join_lines(diffs));
  }
  SUBCASE("many threads") {
    MaterializeOptions mo;
    mo.threads = 16;
    unpack(dir / "env.hpak", dir / "out", mo);
    auto diffs = fx::compare_trees(src, dir / "out");
    CHECK_MESSAGE(diffs.empty(), fx::join_lines(diffs));
  }
  SUBCASE("no mtimes") {
    MaterializeOptions mo;
    mo.restore_mtime = false;
    unpack(dir / "env.hpak", dir / "out", mo);
    fx::CompareOptions co;
    co.mtimes = false;
    auto diffs = fx::compare_trees(src, dir / "out", co);
    CHECK_MESSAGE(diffs.empty(), fx::join_lines(diffs));
    struct stat st;
    REQUIRE(stat((dir / "out/bin/secret").c_str(), &st) == 0);
    CHECK(st.st_mtim.tv_sec > 1700000000); // now, not the packed 2020 mtime
  }
  SUBCASE("the umask does not leak into modes") {
    mode_t old = umask(077);
    unpack(dir / "env.hpak", dir / "out");
    umask(old);
    auto diffs = fx::compare_trees(src, dir / "out");
    CHECK_MESSAGE(diffs.empty(), fx::join_lines(diffs));
  }
}

TEST_CASE("materialize: relocation into a longer and a shorter path") {
  fx::TempDir dir("reloc");
  std::string src = dir / "src";
  fx::TreeSpec spec;
  spec.files = 30;
  fx::TreeInfo info = fx::make_tree(src, spec);
  // The root at the very start, at the very end, twice in a row, and as a prefix of a longer word.
  fx::write_file(src + "/share/root-only", src);
  fx::write_file(src + "/share/root-twice", src + src);
  fx::write_file(src + "/share/root-prefix", "x" + src + "suffix/" + src + "/");
  fx::symlink_to(src, src + "/share/link-to-root");
  fx::symlink_to(src + "/share/../bin", src + "/share/link-through-root");
  PackFileResult pr = pack_to_file(src, dir / "env.hpak", popts());
  CHECK(pr.stats.relocated_files == info.self_path_files.size() + 3);
  Catalog cat = PackReader(dir / "env.hpak").load_catalog();

  std::vector<std::string> relocated = info.self_path_files;
  relocated.insert(relocated.end(), {"share/root-only", "share/root-twice", "share/root-prefix"});
  for (std::string target : {dir / "a-considerably-longer-restore-location/with/more/levels", dir / "r"}) {
    CAPTURE(target);
    fx::mkdirs(target);
    MaterializeOptions mo;
    mo.relocate_to.path = target;
    unpack(dir / "env.hpak", target, mo);
    for (auto& rel : relocated) {
      CAPTURE(rel);
      std::string want = fx::replace_all(slurp(src + "/" + rel), src, target);
      CHECK(slurp(target + "/" + rel) == want);
      CHECK(slurp(target + "/" + rel).find(src) == std::string::npos);
      for (auto& n : cat.nodes)
        if (n.path == rel) CHECK(relocated_size(n, cat.roots, target) == want.size());
    }
    CHECK(link_target(target + "/bin/activate-abs") == target + "/bin/activate");
    CHECK(link_target(target + "/share/link-to-root") == target);
    CHECK(link_target(target + "/share/link-through-root") == target + "/share/../bin");
    CHECK(link_target(target + "/bin/python") == "python3.11"); // relative: untouched
    // Everything that does not hold the root is byte-identical.
    fx::CompareOptions co;
    auto diffs = fx::compare_trees(src, target, co);
    for (auto& d : diffs) {
      bool expected = false;
      for (auto& rel : relocated) expected |= d == "content differs: " + rel;
      for (auto* l : {"bin/activate-abs", "share/link-to-root", "share/link-through-root"})
        expected |= d == std::string("symlink target differs: ") + l;
      CHECK_MESSAGE(expected, d);
    }
  }
  // Without relocate_to the bytes are written as packed.
  MaterializeStats st = unpack(dir / "env.hpak", dir / "plain");
  auto diffs = fx::compare_trees(src, dir / "plain");
  CHECK_MESSAGE(diffs.empty(), fx::join_lines(diffs));
  CHECK(st.failures.empty());
}

TEST_CASE("materialize: relocation of streamed (large) objects, by kind") {
  fx::TempDir dir("reloc");
  std::string src = dir / "src";
  fx::mkdirs(src);
  // The root at a few places of three 3 MiB files: text (spliced), an
  // ELF-like binary whose occurrences end NUL-terminated strings (patched in
  // place), and random bytes (an unknown binary: left as packed).
  auto with_root = [&](Bytes b, bool nul_after) {
    for (size_t at : {size_t(1000), size_t(1 << 20) - 3, b.size() - src.size() - 1}) {
      std::copy(src.begin(), src.end(), b.begin() + long(at));
      if (nul_after) b[at + src.size()] = 0;
    }
    return b;
  };
  Bytes text(3 << 20, 'a');
  for (size_t i = 0; i < text.size(); i += 61) text[i] = '\n';
  fx::write_file(src + "/big.txt", with_root(text, false));
  fx::write_big_file(src + "/big.so", 3 << 20, 5);
  Bytes elf = fx::read_file(src + "/big.so");
  std::copy_n("\x7f" "ELF", 4, elf.begin());
  fx::write_file(src + "/big.so", with_root(elf, true));
  fx::write_big_file(src + "/big.bin", 3 << 20, 6);
  fx::write_file(src + "/big.bin", with_root(fx::read_file(src + "/big.bin"), false));
  PackOptions o = popts();
  o.large_threshold = 1 << 20;
  pack_to_file(src, dir / "env.hpak", o);
  std::string target = dir / "r";
  REQUIRE(target.size() < src.size());
  MaterializeOptions mo;
  mo.relocate_to.path = target;
  unpack(dir / "env.hpak", target, mo);
  CHECK(slurp(target + "/big.txt") == fx::replace_all(slurp(src + "/big.txt"), src, target));
  std::string padded_root = target + std::string(src.size() - target.size(), '\0');
  CHECK(slurp(target + "/big.so") == fx::replace_all(slurp(src + "/big.so"), src, padded_root));
  CHECK(slurp(target + "/big.bin") == slurp(src + "/big.bin"));
}

TEST_CASE("materialize: a non-empty target is refused, or replaced with force") {
  fx::TempDir dir("force");
  std::string src = dir / "src";
  fx::TreeSpec spec;
  spec.files = 20;
  fx::make_tree(src, spec);
  pack_to_file(src, dir / "env.hpak", popts());
  std::string out = dir / "out";
  fx::mkdirs(dir / "canary");
  fx::write_file(dir / "canary/keep", "canary");
  fx::mkdirs(out);
  // Things in the way: a file where a dir goes, a dir where a file goes, a
  // symlink to the outside where a dir goes, a symlink where a file goes.
  fx::write_file(out + "/bin", "not a dir");
  fx::mkdirs(out + "/lib64/sub");
  fx::symlink_to(dir / "canary", out + "/share");
  fx::mkdirs(out + "/deep");
  fx::symlink_to(dir / "canary/keep", out + "/deep/unrelated-symlink");
  fx::write_file(out + "/extra-file", "stays");
  {
    PackReader pack(dir / "env.hpak");
    Catalog cat = pack.load_catalog();
    try {
      open_unpack_target(out, cat, false);
      FAIL_CHECK("a non-empty target was accepted");
    } catch (const Error& e) {
      std::string msg = e.what();
      CHECK(msg.find("not empty") != std::string::npos);
      CHECK(msg.find("'bin'") != std::string::npos);
      CHECK(msg.find("'share'") != std::string::npos);
      CHECK(msg.find("--force") != std::string::npos);
    }
    // materialize itself refuses to replace anything without force.
    Fd fd = open_unpack_target(out, cat, true);
    PackSource s(pack);
    MaterializeOptions mo;
    CHECK_THROWS_AS(materialize(cat, s, fd.get(), out, mo), Error);
  }
  CHECK(slurp(dir / "canary/keep") == "canary");
  fx::remove_tree(out);
  fx::mkdirs(out);
  fx::write_file(out + "/bin", "not a dir");
  fx::mkdirs(out + "/lib64/sub");
  fx::symlink_to(dir / "canary", out + "/share");
  fx::write_file(out + "/extra-file", "stays");
  MaterializeOptions mo;
  unpack(dir / "env.hpak", out, mo, /*force=*/true);
  CHECK(slurp(dir / "canary/keep") == "canary");
  CHECK(fx::read_file(dir / "canary/keep").size() == 6);
  size_t canary_entries = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir / "canary")) canary_entries++;
  CHECK(canary_entries == 1);
  CHECK(slurp(out + "/extra-file") == "stays");
  std::remove((out + "/extra-file").c_str());
  auto diffs = fx::compare_trees(src, out);
  CHECK_MESSAGE(diffs.empty(), fx::join_lines(diffs));
  // Unpacking again over an identical tree with force works too.
  unpack(dir / "env.hpak", out, mo, true);
  diffs = fx::compare_trees(src, out);
  CHECK_MESSAGE(diffs.empty(), fx::join_lines(diffs));
}

TEST_CASE("target: files and symlinks as targets") {
  fx::TempDir dir("target");
  Catalog cat;
  fx::write_file(dir / "file", "x");
  CHECK_THROWS_AS(open_unpack_target(dir / "file", cat, false), Error);
  CHECK_THROWS_AS(open_unpack_target(dir / "file", cat, true), Error);
  fx::symlink_to(dir / "file", dir / "link-to-file");
  CHECK_THROWS_AS(open_unpack_target(dir / "link-to-file", cat, true), Error);
  fx::symlink_to(dir / "nowhere", dir / "dangling");
  CHECK_THROWS_AS(open_unpack_target(dir / "dangling", cat, true), Error);
  // A symlink, even to a directory, is refused (opened with O_NOFOLLOW).
  fx::mkdirs(dir / "real");
  fx::symlink_to(dir / "real", dir / "link-to-dir");
  CHECK_THROWS_AS(open_unpack_target(dir / "link-to-dir", cat, true), Error);
  // Missing parents are made like mkdir -p, but never through a symlink.
  CHECK(open_unpack_target(dir / "no/parent", cat, false).get() >= 0);
  struct stat pst;
  CHECK((stat((dir / "no/parent").c_str(), &pst) == 0 && S_ISDIR(pst.st_mode)));
  CHECK_THROWS_AS(open_unpack_target(dir / "dangling/below", cat, false), Error);
  CHECK(lstat((dir / "nowhere").c_str(), &pst) != 0);
  Fd fd = open_unpack_target(dir / "fresh", cat, false);
  CHECK(fd.get() >= 0);
  struct stat st;
  CHECK(stat((dir / "fresh").c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
}

TEST_CASE("materialize: damaged objects never leave a file behind") {
  fx::TempDir dir("partial");
  std::string src = dir / "src";
  fx::TreeSpec spec;
  spec.files = 40;
  spec.specials = true;
  fx::make_tree(src, spec);
  PackOptions v1 = popts();
  v1.pack_version = 1; // one damaged object, not a block of them
  PackFileResult pr = pack_to_file(src, dir / "env.hpak", v1);
  Catalog cat = PackReader(dir / "env.hpak").load_catalog();
  // Damage the object of bin/pip (a File node; pip3 and pip3.11 are hardlinks to it).
  Digest victim{};
  for (auto& n : cat.nodes) {
    if (n.path == "bin/pip") {
      CHECK(n.type == NodeType::File);
      victim = n.digest;
    }
    if (n.path == "bin/pip3.11") CHECK(n.type == NodeType::Hardlink);
  }
  REQUIRE(victim != Digest{});
  Bytes b = fx::read_file(dir / "env.hpak");
  for (auto& r : pr.pack.records)
    if (r.digest == victim) b[r.offset + kEntryHeaderSize + r.stored_len / 2] ^= 0x55;
  fx::write_file(dir / "env.hpak", b);

  SUBCASE("without --partial: an error, and no file for the bad object") {
    CHECK_THROWS_AS(unpack(dir / "env.hpak", dir / "out"), Error);
    CHECK_FALSE(path_exists(dir / "out/bin/pip"));
  }
  SUBCASE("with --partial: every other file is written") {
    MaterializeOptions mo;
    mo.partial = true;
    MaterializeStats st = unpack(dir / "env.hpak", dir / "out", mo);
    std::vector<std::string> failed;
    for (auto& f : st.failures) failed.push_back(f.path);
    std::sort(failed.begin(), failed.end());
    CHECK(failed == std::vector<std::string>{"bin/pip", "bin/pip3", "bin/pip3.11"});
    for (auto& f : st.failures)
      if (f.path == "bin/pip") CHECK(f.digest == to_hex(victim));
    CHECK_FALSE(path_exists(dir / "out/bin/pip3.11"));
    CHECK_FALSE(path_exists(dir / "out/bin/pip"));
    auto diffs = fx::compare_trees(src, dir / "out");
    for (auto& d : diffs) CHECK_MESSAGE(d.find("only in " + src + ": bin/pip") == 0, d);
    CHECK(diffs.size() == 3);
  }
  SUBCASE("without the digest check the stored checksum still catches it") {
    MaterializeOptions mo;
    mo.verify = false;
    CHECK_THROWS_AS(unpack(dir / "env.hpak", dir / "out", mo), Error);
    CHECK_FALSE(path_exists(dir / "out/bin/pip"));
  }
}

TEST_CASE("write_file_content: size mismatch between catalog and object") {
  fx::TempDir dir("wfc");
  fx::mkdirs(dir / "src");
  fx::write_file(dir / "src/a", "hello world");
  pack_to_file(dir / "src", dir / "p.hpak", popts());
  PackReader pack(dir / "p.hpak");
  Catalog cat = pack.load_catalog();
  Node n = cat.nodes.at(0);
  n.size += 1;
  PackSource s(pack);
  Bytes scratch;
  CHECK_THROWS_AS(write_file_content(n, cat, s, -1, "a", RelocTo{}, ReadChecks{true}, scratch), Corrupt);
  n = cat.nodes.at(0);
  n.digest[0] ^= 1;
  CHECK_THROWS_AS(write_file_content(n, cat, s, -1, "a", RelocTo{}, ReadChecks{true}, scratch), Error);
}

TEST_CASE("work_units: a unit never ends between two members of one block, and covers every file once") {
  fx::TempDir dir("units");
  std::string src = dir / "src";
  fx::TreeSpec spec;
  spec.files = 600; // small files: format 2 packs them into several blocks
  fx::make_tree(src, spec);
  pack_to_file(src, dir / "env.hpak", popts());
  PackReader pack(dir / "env.hpak");
  Catalog cat = pack.load_catalog();
  std::vector<size_t> files;
  for (size_t i = 0; i < cat.nodes.size(); i++)
    if (cat.nodes[i].type == NodeType::File) files.push_back(i);
  PackSource psrc(pack);
  auto refs = locate_all(cat, files, psrc, 2);
  REQUIRE(refs.size() == files.size());
  size_t members = 0;
  for (auto& r : refs) {
    REQUIRE(r);
    members += r->rec.member != kNoMember;
  }
  CHECK(members > files.size() / 2);
  WorkUnits units = work_units(refs);
  REQUIRE(units.count() >= 2);
  CHECK(units.starts.front() == 0);
  CHECK(units.starts.back() == refs.size());
  std::vector<size_t> sorted = units.order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 0; k < sorted.size(); k++) REQUIRE(sorted[k] == k); // every file once
  std::map<uint64_t, size_t> unit_of_block;
  size_t multi_member_blocks = 0;
  for (size_t u = 0; u < units.count(); u++) {
    CHECK(units.starts[u] < units.starts[u + 1]);
    uint64_t unit_bytes = 0;
    for (size_t i = units.starts[u]; i < units.starts[u + 1]; i++) unit_bytes += refs[units.order[i]]->rec.raw_len;
    CHECK((units.starts[u + 1] - units.starts[u] >= 8 || unit_bytes >= (1u << 20) || u + 1 == units.count()));
    for (size_t i = units.starts[u]; i < units.starts[u + 1]; i++) {
      const auto& r = refs[units.order[i]];
      if (r->rec.member == kNoMember) continue;
      auto [it, fresh] = unit_of_block.emplace(r->rec.offset, u);
      if (!fresh && it->second == u) {
        multi_member_blocks++;
        const auto& prev = refs[units.order[i - 1]];
        CHECK(prev->rec.offset == r->rec.offset); // members of a block one after another
        CHECK(prev->rec.member <= r->rec.member); // in table order: one decode of the block
      }
      CHECK(it->second == u); // a block read in one unit: one thread decodes it
    }
  }
  CHECK(unit_of_block.size() >= 2);
  CHECK(multi_member_blocks > 0);
  CHECK(work_units({}).count() == 0);
}

TEST_CASE("work_units: two large files go to two units (two threads)") {
  fx::TempDir dir("units2");
  std::string src = dir / "src";
  fx::Rng rng(3);
  REQUIRE(::mkdir(src.c_str(), 0755) == 0);
  fx::write_file(src + "/a.bin", fx::make_content(rng, 3 << 20, false));
  fx::write_file(src + "/b.txt", fx::make_content(rng, 2 << 20, true));
  pack_to_file(src, dir / "env.hpak", popts());
  PackReader pack(dir / "env.hpak");
  Catalog cat = pack.load_catalog();
  std::vector<size_t> files;
  for (size_t i = 0; i < cat.nodes.size(); i++)
    if (cat.nodes[i].type == NodeType::File) files.push_back(i);
  REQUIRE(files.size() == 2);
  PackSource psrc(pack);
  CHECK(work_units(locate_all(cat, files, psrc, 2)).count() == 2);
}
