// core/verify: an intact pack verifies; every kind of damage is reported.
//
// THE BYTE-FLIP TEST: for every byte of a small pack, flip it and check that
// verify reports it, that at most one object is lost (catalogs have a mirror,
// so never), and that every object verify does not report can still be read,
// with the .hidx and with a scan, and equals the original. The same for every
// byte of the .hidx (an index problem, nothing lost, the pack still readable
// by scan), and for every truncation of the pack.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/restore/materialize.hpp"
#include "core/pack/pack_reader.hpp"
#include "core/pack/pack_writer.hpp"
#include "core/pack/packer.hpp"
#include "core/restore/target.hpp"
#include "core/verify/verify.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

VerifyOptions vopts() {
  VerifyOptions o;
  o.threads = 2;
  return o;
}

// A small pack: compressed and raw files, a duplicate, an empty file, a
// symlink, a hardlink, and its catalog (stored twice).
struct SmallPack {
  fx::TempDir dir{"verify"};
  std::string src, pack, index;
  Bytes pack_bytes, index_bytes;
  DigestMap<Bytes> objects; // every object (blobs and the catalog) by digest
  Digest catalog_digest{};
  std::vector<IndexRecord> records;

  SmallPack() {
    src = dir / "src";
    fx::mkdirs(src + "/dir");
    fx::Rng rng(42);
    Bytes text = fx::make_content(rng, 600, true);
    fx::write_file(src + "/a.txt", text);
    fx::write_file(src + "/c-dup.txt", text);
    fx::write_file(src + "/b.bin", fx::make_content(rng, 150, false), 0755);
    fx::write_file(src + "/dir/d.txt", fx::make_content(rng, 900, true));
    fx::write_file(src + "/dir/empty", "");
    fx::symlink_to("../a.txt", src + "/dir/link");
    fx::hardlink(src + "/b.bin", src + "/dir/hard");
    PackOptions o;
    o.threads = 1;
    o.name = "env";
    o.pack_version = 1; // one damaged byte costs one object here (format 2's blocks: test_core_pack_v2.cpp)
    PackFileResult r = pack_to_file(src, dir / "p.hpak", o);
    pack = dir / "p.hpak";
    index = index_path_for(pack);
    pack_bytes = fx::read_file(pack);
    index_bytes = fx::read_file(index);
    catalog_digest = r.catalog_digest;
    records = r.pack.records;
    PackReader reader(pack);
    for (auto& rec : records) objects[rec.digest] = reader.read(rec);
  }
  // Paths of the damaged copy under test.
  std::string dpack() const { return dir / "d.hpak"; }
  std::string dindex() const { return dir / "d.hidx"; }
  void write_damaged(const Bytes& p, const Bytes& i) const {
    fx::replace_file(dpack(), p);
    fx::replace_file(dindex(), i);
  }
};

// Every object of `sp` whose digest is not in `bad` reads back intact from
// the damaged pack, through its .hidx and through a scan.
void check_survivors(const SmallPack& sp, const DigestSet& bad) {
  for (bool use_index : {true, false}) {
    CAPTURE(use_index);
    PackReader r(sp.dpack(), use_index);
    for (auto& [digest, raw] : sp.objects) {
      if (bad.count(digest)) continue;
      CAPTURE(to_hex(digest));
      auto rec = r.find(digest);
      REQUIRE_MESSAGE(rec.has_value(), "an unreported object is missing");
      Bytes got;
      bool read_ok = false;
      // A digest may have two entries (catalog mirror): one intact copy must read.
      auto idx = r.index().find(digest);
      for (uint64_t i = *idx; i < r.index().count() && r.index().digest_at(i) == digest && !read_ok; i++) {
        try {
          got = r.read(r.index().record_at(i));
          read_ok = true;
        } catch (const Error&) {
        }
      }
      CHECK_MESSAGE(read_ok, "an unreported object is unreadable");
      if (read_ok) CHECK(got == raw);
    }
    CHECK_NOTHROW(r.load_catalog());
  }
}

} // namespace

TEST_CASE("verify: an intact pack") {
  SmallPack sp;
  VerifyReport rep = verify_pack(sp.pack, vopts());
  CHECK(rep.ok());
  CHECK(rep.problems.empty());
  CHECK(rep.bad_objects.empty());
  CHECK(rep.notes.empty());
  CHECK(rep.objects == sp.objects.size() - 1); // distinct blobs
  CHECK(rep.catalogs == 1);
  CHECK(rep.catalog_digests == std::vector<std::string>{to_hex(sp.catalog_digest)});
  CHECK(rep.lost_objects() == 0);
  uint64_t raw = 0;
  for (auto& r : sp.records) raw += r.raw_len;
  CHECK(rep.raw_bytes == raw);
  CHECK(rep.pack == sp.pack);
  // Without its index the pack is still fine; verify notes it.
  ::unlink(sp.index.c_str());
  rep = verify_pack(sp.pack, vopts());
  CHECK(rep.ok());
  REQUIRE(rep.notes.size() == 1);
  CHECK(rep.notes[0].find("no index file") != std::string::npos);
}

TEST_CASE("verify: bad objects are named with the catalog paths they break") {
  SmallPack sp;
  Digest dup = sha256(fx::read_file(sp.src + "/a.txt"));
  for (auto& r : sp.records) {
    if (r.digest != dup) continue;
    Bytes p = sp.pack_bytes;
    p[r.offset + kEntryHeaderSize + 3] ^= 0xff;
    sp.write_damaged(p, sp.index_bytes);
  }
  VerifyReport rep = verify_pack(sp.dpack(), vopts());
  CHECK_FALSE(rep.ok());
  REQUIRE(rep.bad_objects.size() == 1);
  const BadObject& b = rep.bad_objects[0];
  CHECK(b.digest == to_hex(dup));
  CHECK(b.kind == "blob");
  CHECK(b.lost);
  std::vector<std::string> paths = b.paths;
  std::sort(paths.begin(), paths.end());
  CHECK(paths == std::vector<std::string>{"env:a.txt", "env:c-dup.txt"});
  CHECK(rep.lost_objects() == 1);
  bool trailer = false;
  for (auto& p : rep.problems) trailer |= p.kind == ProblemKind::TrailerMismatch && p.message.find("trailer") != std::string::npos;
  CHECK(trailer);
}

TEST_CASE("verify: a damaged catalog copy is not a loss") {
  SmallPack sp;
  int copy = 0;
  for (auto& r : sp.records) {
    if (r.kind != Kind::Catalog) continue;
    CAPTURE(copy);
    Bytes p = sp.pack_bytes;
    p[r.offset + kEntryHeaderSize + r.stored_len / 2] ^= 0x10;
    sp.write_damaged(p, sp.index_bytes);
    VerifyReport rep = verify_pack(sp.dpack(), vopts());
    CHECK_FALSE(rep.ok());
    REQUIRE(rep.bad_objects.size() == 1);
    CHECK(rep.bad_objects[0].kind == "catalog");
    CHECK_FALSE(rep.bad_objects[0].lost);
    CHECK(rep.lost_objects() == 0);
    CHECK(rep.catalogs == 1);
    CHECK(PackReader(sp.dpack()).load_catalog().nodes.size() == 8);
    copy++;
  }
  CHECK(copy == 2);
}

TEST_CASE("verify: standalone packs need their catalog and objects") {
  fx::TempDir dir("verify");
  auto write = [&](const std::string& name, bool with_catalog, bool with_object) {
    std::string p = dir / name;
    int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    PackWriter pw(fd, p, 3, kPackVersion);
    Bytes content = fx::to_bytes("content");
    if (with_object) pw.append(Kind::Blob, Codec::Raw, sha256(content), content.size(), content);
    if (with_catalog) {
      Catalog c;
      c.name = "env";
      Node n;
      n.type = NodeType::File;
      n.path = "f";
      n.size = content.size();
      n.digest = sha256(content);
      c.nodes.push_back(n);
      append_catalog(pw, c, 3);
    }
    PackResult r = pw.finish();
    ::close(fd);
    fx::write_file(index_path_for(p), encode_index(r.records, r.size, r.pack_sum));
    return p;
  };
  VerifyOptions lib = vopts();
  lib.standalone = false;
  std::string no_obj = write("no-object.hpak", true, false);
  VerifyReport rep = verify_pack(no_obj, vopts());
  CHECK_FALSE(rep.ok());
  // The object a catalog names but the pack lacks is lost, with its path.
  REQUIRE(rep.bad_objects.size() == 1);
  CHECK(rep.bad_objects[0].digest == to_hex(sha256(fx::to_bytes("content"))));
  CHECK(rep.bad_objects[0].lost);
  CHECK(rep.bad_objects[0].paths == std::vector<std::string>{"env:f"});
  CHECK(rep.lost_objects() == 1);
  CHECK(verify_pack(no_obj, lib).ok());
  std::string no_cat = write("no-catalog.hpak", false, true);
  rep = verify_pack(no_cat, vopts());
  CHECK_FALSE(rep.ok());
  REQUIRE(rep.problems.size() == 1);
  CHECK(rep.problems[0].kind == ProblemKind::NoCatalog);
  CHECK(rep.problems[0].message.find("no readable catalog") != std::string::npos);
  CHECK(verify_pack(no_cat, lib).ok());
  CHECK(verify_pack(write("full.hpak", true, true), vopts()).ok());
}

TEST_CASE("verify: index problems") {
  SmallPack sp;
  SUBCASE("index of another pack") {
    fx::TempDir other("verify2");
    fx::mkdirs(other / "src");
    fx::write_file(other / "src/x", "x");
    PackOptions o;
    o.threads = 1;
    o.pack_version = 1;
    pack_to_file(other / "src", other / "o.hpak", o);
    sp.write_damaged(sp.pack_bytes, fx::read_file(other / "o.hidx"));
    VerifyReport rep = verify_pack(sp.dpack(), vopts());
    CHECK_FALSE(rep.ok());
    CHECK(rep.bad_objects.empty());
    REQUIRE(rep.problems.size() == 1);
    CHECK(rep.problems[0].kind == ProblemKind::IndexForeign);
    CHECK(rep.problems[0].message.find("does not belong to this pack") != std::string::npos);
  }
  SUBCASE("index that omits an entry (resealed)") {
    std::vector<IndexRecord> fewer(sp.records.begin() + 1, sp.records.end());
    Digest trailer;
    std::memcpy(trailer.data(), sp.pack_bytes.data() + sp.pack_bytes.size() - 32, 32);
    sp.write_damaged(sp.pack_bytes, encode_index(fewer, sp.pack_bytes.size(), trailer));
    VerifyReport rep = verify_pack(sp.dpack(), vopts());
    CHECK_FALSE(rep.ok());
    REQUIRE(rep.problems.size() == 1);
    CHECK(rep.problems[0].kind == ProblemKind::IndexStale);
    CHECK(rep.problems[0].message.find("does not list the entries") != std::string::npos);
  }
}

TEST_CASE("verify: files that are not packs at all") {
  fx::TempDir dir("verify");
  fx::write_file(dir / "empty.hpak", "");
  fx::write_file(dir / "text.hpak", std::string(500, 'x'));
  for (auto* name : {"empty.hpak", "text.hpak"}) {
    CAPTURE(name);
    CHECK_THROWS_AS(verify_pack(dir / name, vopts()), Error);
  }
  CHECK_THROWS_AS(verify_pack(dir / "missing.hpak", vopts()), Error);
  fx::mkdirs(dir / "a-dir.hpak");
  CHECK_THROWS_AS(verify_pack(dir / "a-dir.hpak", vopts()), Error);
}

TEST_CASE("THE BYTE-FLIP TEST: every byte of a pack") {
  SmallPack sp;
  const Bytes& good = sp.pack_bytes;
  MESSAGE("pack of " << good.size() << " bytes, " << sp.records.size() << " entries");
  size_t lost_one = 0;
  for (size_t i = 0; i < good.size(); i++) {
    CAPTURE(i);
    Bytes p = good;
    p[i] ^= 0xff;
    sp.write_damaged(p, sp.index_bytes);
    VerifyReport rep;
    try {
      rep = verify_pack(sp.dpack(), vopts());
    } catch (const Error& e) {
      FAIL_CHECK("verify could not examine a pack with one flipped byte: " << std::string(e.what()));
      continue;
    }
    CHECK_FALSE(rep.ok());
    CHECK(rep.lost_objects() <= 1);
    lost_one += rep.lost_objects();
    DigestSet bad;
    for (auto& b : rep.bad_objects) {
      if (b.kind == "catalog") CHECK_FALSE(b.lost);
      auto d = digest_from_hex(b.digest);
      REQUIRE(d.has_value());
      if (b.lost) bad.insert(*d);
    }
    check_survivors(sp, bad);
    if (fx::test_failed()) break; // one offset's failures are enough to read
  }
  CHECK(lost_one > 0); // flips in blob payloads do lose that blob
}

TEST_CASE("THE BYTE-FLIP TEST: every byte of the index") {
  SmallPack sp;
  const Bytes& good = sp.index_bytes;
  for (size_t i = 0; i < good.size(); i++) {
    CAPTURE(i);
    Bytes idx = good;
    idx[i] ^= 0xff;
    sp.write_damaged(sp.pack_bytes, idx);
    VerifyReport rep = verify_pack(sp.dpack(), vopts());
    CHECK_FALSE(rep.ok());
    CHECK(rep.bad_objects.empty());
    CHECK(rep.lost_objects() == 0);
    bool named = false;
    for (auto& p : rep.problems) {
      named |= p.message.find("index") != std::string::npos;
      // Only the index is wrong: nothing calls for more than rebuilding it.
      CHECK_MESSAGE(is_index_problem(p.kind), p.message);
    }
    CHECK_MESSAGE(named, "no index problem reported");
    PackReader r(sp.dpack());
    CHECK(r.index_source() == PackReader::IndexSource::Scan);
    CHECK_FALSE(r.index_problem().empty());
    check_survivors(sp, {});
    if (i % 16 == 0) {
      // Unpacking through the scan restores the tree.
      std::string out = sp.dir / "out";
      fx::remove_tree(out);
      Catalog cat = r.load_catalog();
      Fd fd = open_unpack_target(out, cat, false);
      PackSource src(r);
      MaterializeOptions mo;
      mo.threads = 1;
      MaterializeStats st = materialize(cat, src, fd.get(), out, mo);
      CHECK(st.failures.empty());
      auto diffs = fx::compare_trees(sp.src, out);
      CHECK_MESSAGE(diffs.empty(), fx::join_lines(diffs));
    }
    if (fx::test_failed()) break;
  }
}

TEST_CASE("THE BYTE-FLIP TEST: every truncation of a pack") {
  SmallPack sp;
  const Bytes& good = sp.pack_bytes;
  for (size_t len = 0; len < good.size(); len++) {
    CAPTURE(len);
    sp.write_damaged(Bytes(good.begin(), good.begin() + long(len)), sp.index_bytes);
    try {
      VerifyReport rep = verify_pack(sp.dpack(), vopts());
      CHECK_FALSE(rep.ok());
    } catch (const Error& e) {
      // Too little left to be recognised as a pack: refusing is detection too.
      CHECK_MESSAGE(len < kPackMinSize, "verify threw: " << std::string(e.what()));
    }
    // Reading what is left never crashes either.
    try {
      PackReader r(sp.dpack());
      for (uint64_t k = 0; k < r.index().count(); k++) {
        try {
          IndexRecord rec = r.index().record_at(k);
          Bytes got = r.read(rec);
          CHECK(got == sp.objects.at(rec.digest));
        } catch (const Error&) {
        }
      }
    } catch (const Error&) {
    }
    if (fx::test_failed()) break;
  }
}
