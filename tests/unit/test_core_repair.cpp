// core/repair: what repair does with a pack is decided from the kinds of
// verify's problems, never from their messages (pack_repair_for); a library
// whose only fault is an index gets the index rebuilt and its pack untouched;
// a damaged pack is rewritten with its intact objects and moved to damaged/,
// and what it alone held is reported lost with the catalog paths it breaks.
#include <doctest/doctest.h>
#include <algorithm>
#include <filesystem>

#include "core/library/library.hpp"
#include "core/pack/pack_reader.hpp"
#include "core/gc/repair.hpp"
#include "core/verify/verify_library.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

VerifyReport report_with(std::vector<Problem> problems) {
  VerifyReport r;
  r.pack = "p.hpak";
  r.problems = std::move(problems);
  return r;
}

// A library with one format-1 pack (one damaged byte costs one object) of
// `files` files with contents of their own, named "env".
struct OnePackLibrary {
  fx::TempDir dir{"repair"};
  std::string root = dir / "lib";
  std::string pack, index;
  Digest victim{};          // the object of d/f3
  std::string victim_path = "d/f3";

  OnePackLibrary() {
    fx::mkdirs(dir / "src/d");
    for (int i = 0; i < 8; i++)
      fx::write_file(dir / ("src/d/f" + std::to_string(i)), "file " + std::to_string(i) + " " + std::string(200 + 37 * size_t(i), char('a' + i)) + "\n");
    victim = sha256(fx::read_file(dir / "src/d/f3"));
    Library::init(root);
    PackOptions o;
    o.threads = 2;
    o.pack_version = 1;
    Library::AddResult a = Library(root).add_tree(dir / "src", "env", o);
    pack = root + "/packs/" + a.pack_name;
    index = index_path_for(pack);
  }

  // Flips a byte in the middle of the victim's stored bytes.
  void damage_victim() const {
    IndexRecord rec;
    {
      PackReader p(pack);
      auto r = p.find(victim);
      REQUIRE(r.has_value());
      rec = *r;
    }
    Bytes b = fx::read_file(pack);
    b[rec.offset + kEntryHeaderSize + rec.stored_len / 2] ^= 0x5a;
    fx::replace_file(pack, b);
  }

  size_t pack_files() const {
    size_t n = 0;
    for (auto& e : std::filesystem::directory_iterator(root + "/packs")) n += e.path().extension() == ".hpak";
    return n;
  }
};

RepairResult run_repair(const std::string& root, bool dry_run = false) {
  Library lib(root);
  RepairOptions ro;
  ro.threads = 2;
  ro.dry_run = dry_run;
  return repair(lib, ro);
}

} // namespace

TEST_CASE("repair: the decision comes from the problem kinds") {
  CHECK(pack_repair_for(report_with({})) == PackRepair::None);
  for (ProblemKind k : {ProblemKind::IndexForeign, ProblemKind::IndexStale, ProblemKind::IndexUnreadable}) {
    CAPTURE(int(k));
    CHECK(is_index_problem(k));
    CHECK(pack_repair_for(report_with({{k, "index: whatever"}})) == PackRepair::RebuildIndex);
  }
  for (ProblemKind k : {ProblemKind::EntryDamage, ProblemKind::FooterCount, ProblemKind::TrailerMismatch, ProblemKind::CatalogInvalid,
                        ProblemKind::CatalogSizeMismatch, ProblemKind::NoCatalog}) {
    CAPTURE(int(k));
    CHECK_FALSE(is_index_problem(k));
    CHECK(pack_repair_for(report_with({{k, "offset 80: bad"}})) == PackRepair::Rewrite);
    // With an index problem beside it, the pack is still rewritten (which writes a new index too).
    CHECK(pack_repair_for(report_with({{ProblemKind::IndexStale, "index: stale"}, {k, "x"}})) == PackRepair::Rewrite);
  }
  VerifyReport bad_object = report_with({{ProblemKind::IndexUnreadable, "index: unreadable"}});
  bad_object.bad_objects.push_back(BadObject{});
  CHECK(pack_repair_for(bad_object) == PackRepair::Rewrite);
}

TEST_CASE("repair: messages are not read, only kinds") {
  // A pack problem whose message happens to start with "index" is a pack problem...
  CHECK(pack_repair_for(report_with({{ProblemKind::EntryDamage, "index-like text: a damaged entry header"}})) == PackRepair::Rewrite);
  CHECK(pack_repair_for(report_with({{ProblemKind::CatalogInvalid, "index: not really"}})) == PackRepair::Rewrite);
  // ...and an index problem whose message does not is an index problem.
  CHECK(pack_repair_for(report_with({{ProblemKind::IndexStale, "offset 12: the entries differ"}})) == PackRepair::RebuildIndex);
  CHECK(pack_repair_for(report_with({{ProblemKind::IndexForeign, ""}})) == PackRepair::RebuildIndex);
}

TEST_CASE("repair: an intact library is left as it is") {
  OnePackLibrary L;
  Bytes pack_before = fx::read_file(L.pack), index_before = fx::read_file(L.index);
  RepairResult r = run_repair(L.root);
  CHECK(r.packs_checked == 1);
  CHECK(r.packs_rewritten == 0);
  CHECK(r.indexes_rebuilt == 0);
  CHECK(r.lost.empty());
  CHECK(r.notes.empty());
  CHECK(fx::read_file(L.pack) == pack_before);
  CHECK(fx::read_file(L.index) == index_before);
}

TEST_CASE("repair: a damaged index only: the index is rebuilt, the pack untouched") {
  OnePackLibrary L;
  Bytes pack_before = fx::read_file(L.pack), index_before = fx::read_file(L.index);
  SUBCASE("a flipped byte (unreadable index)") {
    Bytes idx = index_before;
    idx[idx.size() / 2] ^= 0xff;
    fx::replace_file(L.index, idx);
  }
  SUBCASE("an index that omits an entry (resealed: stale)") {
    PackReader p(L.pack);
    std::vector<IndexRecord> fewer;
    for (uint64_t i = 1; i < p.index().count(); i++) fewer.push_back(p.index().record_at(i));
    Bytes idx = encode_index(fewer, p.bytes().size(), p.stored_trailer(), p.index_version());
    fx::replace_file(L.index, idx);
  }
  VerifyOptions vo;
  vo.threads = 2;
  LibraryVerifyReport before = verify_library(L.root, vo);
  REQUIRE(before.packs.size() == 1);
  REQUIRE_FALSE(before.packs[0].problems.empty());
  for (auto& p : before.packs[0].problems) CHECK_MESSAGE(is_index_problem(p.kind), p.message);

  RepairResult dry = run_repair(L.root, /*dry_run=*/true);
  CHECK(dry.indexes_rebuilt == 1);
  CHECK(dry.packs_rewritten == 0);
  CHECK(fx::read_file(L.index) != index_before); // a dry run writes nothing

  RepairResult r = run_repair(L.root);
  CHECK(r.indexes_rebuilt == 1);
  CHECK(r.packs_rewritten == 0);
  CHECK(r.moved.empty());
  CHECK(r.lost.empty());
  CHECK(r.broken_catalogs.empty());
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0] == "rebuilt the index of '" + base_name(L.pack) + "'");
  CHECK(fx::read_file(L.pack) == pack_before);
  CHECK(fx::read_file(L.index) == index_before);
  CHECK(L.pack_files() == 1);
  CHECK_FALSE(std::filesystem::exists(L.root + "/damaged"));
  CHECK(verify_library(L.root, vo).ok());
}

TEST_CASE("repair: a damaged pack is rewritten, the damaged one moved aside") {
  OnePackLibrary L;
  L.damage_victim();
  VerifyOptions vo;
  vo.threads = 2;
  LibraryVerifyReport before = verify_library(L.root, vo);
  REQUIRE(before.packs.size() == 1);
  bool pack_problem = false;
  for (auto& p : before.packs[0].problems) pack_problem |= !is_index_problem(p.kind);
  CHECK((pack_problem || !before.packs[0].bad_objects.empty()));

  RepairResult r = run_repair(L.root);
  CHECK(r.packs_checked == 1);
  CHECK(r.packs_rewritten == 1);
  CHECK(r.indexes_rebuilt == 0);
  CHECK(r.objects_salvaged >= 8); // the other seven files' objects, the catalog (and its directory tree)
  REQUIRE(r.lost.size() == 1);
  CHECK(r.lost[0].digest == to_hex(L.victim));
  CHECK(r.lost[0].paths == std::vector<std::string>{"env:" + L.victim_path});
  CHECK(r.broken_catalogs == std::vector<std::string>{"env"});
  std::string moved = L.root + "/damaged/" + base_name(L.pack);
  CHECK(r.moved == std::vector<std::string>{moved});
  CHECK(std::filesystem::exists(moved));
  CHECK_FALSE(std::filesystem::exists(L.pack));
  CHECK_FALSE(std::filesystem::exists(L.index));
  CHECK(L.pack_files() == 1); // the new pack

  // The library now has no bad copy: only the lost object, named by its path.
  LibraryVerifyReport after = verify_library(L.root, vo);
  for (auto& p : after.packs) CHECK(p.ok());
  REQUIRE(after.bad_objects.size() == 1);
  CHECK(after.bad_objects[0].digest == to_hex(L.victim));
  CHECK(after.bad_objects[0].bad_copies.empty());
  CHECK(after.broken_catalogs() == std::vector<std::string>{"env"});
}
