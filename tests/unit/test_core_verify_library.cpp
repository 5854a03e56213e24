// core/verify_library: the problems it reports are typed (ProblemKind), at the
// library level (a pack that cannot be read) and in each pack's report (an
// index problem, damage to the pack itself), with the messages hpak verify
// prints. (Bad objects, catalogs and copies elsewhere: test_core_library.cpp.)
#include <doctest/doctest.h>
#include <string>

#include "core/library/library.hpp"
#include "core/pack/pack_reader.hpp"
#include "core/verify/verify_library.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

struct SmallLibrary {
  fx::TempDir dir{"vlibkind"};
  std::string root = dir / "lib";
  std::string pack;

  SmallLibrary() {
    fx::mkdirs(dir / "src");
    for (int i = 0; i < 4; i++) fx::write_file(dir / ("src/f" + std::to_string(i)), std::string(300, char('k' + i)) + std::to_string(i));
    Library::init(root);
    PackOptions o;
    o.threads = 1;
    o.pack_version = 1; // one damaged byte costs one object
    pack = root + "/packs/" + Library(root).add_tree(dir / "src", "env", o).pack_name;
  }

  LibraryVerifyReport verify() const {
    VerifyOptions vo;
    vo.threads = 2;
    return verify_library(root, vo);
  }
};

bool has_kind(const std::vector<Problem>& ps, ProblemKind k) {
  for (auto& p : ps)
    if (p.kind == k) return true;
  return false;
}

} // namespace

TEST_CASE("verify_library: an intact library has no problems of any kind") {
  SmallLibrary L;
  LibraryVerifyReport r = L.verify();
  CHECK(r.ok());
  CHECK(r.problems.empty());
  REQUIRE(r.packs.size() == 1);
  CHECK(r.packs[0].problems.empty());
}

TEST_CASE("verify_library: a pack that cannot be read is a PackUnreadable problem") {
  SmallLibrary L;
  std::string junk = "pack-" + std::string(64, 'e') + ".hpak";
  fx::write_file(L.root + "/packs/" + junk, "not a pack at all");
  LibraryVerifyReport r = L.verify();
  CHECK_FALSE(r.ok());
  REQUIRE(r.problems.size() == 1);
  CHECK(r.problems[0].kind == ProblemKind::PackUnreadable);
  CHECK(r.problems[0].message.rfind("pack '" + junk + "' cannot be read: ", 0) == 0);
  CHECK(r.packs.size() == 1); // the real pack is still verified
}

TEST_CASE("verify_library: a damaged index gives index problems only") {
  SmallLibrary L;
  Bytes idx = fx::read_file(index_path_for(L.pack));
  idx[idx.size() / 2] ^= 0x20;
  fx::replace_file(index_path_for(L.pack), idx);
  LibraryVerifyReport r = L.verify();
  CHECK_FALSE(r.ok());
  CHECK(r.problems.empty());
  REQUIRE(r.packs.size() == 1);
  REQUIRE_FALSE(r.packs[0].problems.empty());
  for (auto& p : r.packs[0].problems) {
    CHECK_MESSAGE(is_index_problem(p.kind), p.message);
    CHECK(p.message.rfind("index", 0) == 0);
  }
  CHECK(r.bad_objects.empty());
}

TEST_CASE("verify_library: a damaged object is a bad object and a pack problem") {
  SmallLibrary L;
  Digest d = sha256(fx::read_file(L.dir / "src/f2"));
  IndexRecord rec;
  {
    PackReader p(L.pack);
    auto found = p.find(d);
    REQUIRE(found.has_value());
    rec = *found;
  }
  Bytes b = fx::read_file(L.pack);
  b[rec.offset + kEntryHeaderSize + rec.stored_len / 2] ^= 0x01;
  fx::replace_file(L.pack, b);
  LibraryVerifyReport r = L.verify();
  CHECK_FALSE(r.ok());
  REQUIRE(r.packs.size() == 1);
  CHECK(has_kind(r.packs[0].problems, ProblemKind::TrailerMismatch));
  for (auto& p : r.packs[0].problems) CHECK_FALSE(is_index_problem(p.kind));
  REQUIRE(r.bad_objects.size() == 1);
  CHECK(r.bad_objects[0].digest == to_hex(d));
  CHECK(messages_of(r.packs[0].problems) ==
        std::vector<std::string>{"pack checksum (trailer) mismatch: the pack has been modified or damaged"});
}
