// core/restore_plan: the dirty restore's passes on their own. A small
// catalog is restored fresh into a temp dir, the target is changed by hand
// (or the state replaced by a synthetic one), and the plan is asserted step
// by step: kept, rewritten, created, removed, chmod'ed, with its reason;
// then applied by restore() and checked against a fresh restore. Mount points
// are refused by the scan, before any plan exists.
#include <doctest/doctest.h>
#include <filesystem>
#include <algorithm>
#include <cstring>
#include <memory>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/os/fs_ops.hpp"
#include "core/library/library.hpp"
#include "core/pack/pack_reader.hpp"
#include "core/pack/pack_writer.hpp"
#include "core/restore/restore.hpp"
#include "core/restore/restore_plan.hpp"
#include "core/restore/restore_state.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

RestoreOptions popts() {
  RestoreOptions o;
  o.threads = 2;
  return o;
}

// A small environment: every kind of entry, each file distinct.
struct PlanEnv {
  fx::TempDir dir{"restore-plan"};
  std::string lib_root = dir / "lib";
  std::string src = dir / "src";
  std::string t = dir / "t";
  PlanEnv() {
    fx::mkdirs(src + "/sub");
    fx::mkdirs(src + "/mnt");
    fx::write_file(src + "/same.txt", "same content");
    fx::write_file(src + "/size.txt", "size");
    fx::write_file(src + "/content.txt", "content-A");
    fx::write_file(src + "/mode.sh", "#!/bin/sh\n", 0755);
    fx::write_file(src + "/gone.txt", "gone");
    fx::write_file(src + "/kind.txt", "kind");
    fx::write_file(src + "/shared.txt", "shared");
    fx::write_file(src + "/linksrc.txt", "linked");
    fx::hardlink(src + "/linksrc.txt", src + "/hard.txt");
    fx::write_file(src + "/sub/inner.txt", "inner");
    fx::symlink_to("../same.txt", src + "/sub/link");
    fx::write_file(src + "/mnt/keep.txt", "keep");
    Library::init(lib_root);
    Library lib(lib_root);
    PackOptions po;
    po.pack_version = 1; // forge_object copies format-1 entries one by one
    po.threads = 2;
    lib.add_tree(src, "env", po);
    restore(lib, "env", t, popts());
  }
};

// The plan for target `t` against `state` (the target's own state file by
// default), and what is needed to read it.
struct PlanOf {
  Catalog cat;
  std::unique_ptr<CatalogShape> shape;
  DirtyPlan plan;

  const NodeStep& step(const std::string& path) const {
    auto i = find_path(cat, path);
    REQUIRE_MESSAGE(i, path);
    return plan.nodes[*i];
  }
  const DirStep& dir(const std::string& path) const {
    auto i = find_path(cat, path);
    REQUIRE_MESSAGE(i, path);
    for (size_t s = 1; s < shape->slot_count(); s++)
      if (shape->slots.dir_nodes[s] == *i) return plan.dirs[s];
    FAIL("no slot for " << path);
    return plan.dirs[0];
  }
  // The reason a removal of `name` (a leaf) is planned, if one is.
  std::optional<Why> removal(const std::string& name) const {
    for (auto& r : plan.removals)
      if (r.name == name) return r.why;
    return std::nullopt;
  }
};

PlanOf plan_of(const std::string& lib_root, const std::string& t, std::optional<std::optional<RestoreState>> state = {},
               RestoreOptions opts = popts()) {
  Library lib(lib_root);
  PlanOf out;
  Digest digest;
  out.cat = lib.load_catalog("env", &digest);
  Fd tfd(open(t.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(tfd);
  std::optional<RestoreState> old = state ? *state : read_state(tfd.get());
  std::string real = real_path(t);
  TrustBasis trust = trust_basis(old, real, digest, t);
  out.shape = std::make_unique<CatalogShape>(out.cat);
  const RelocTo reloc{real, opts.keep_unrelocated};
  DirtyContext cx{lib, out.cat, *out.shape, tfd.get(), t, real, reloc, trust, opts, 2};
  TargetScan sc = scan_target(cx);
  out.plan = plan_dirty(cx, sc);
  return out;
}

size_t file_count(const Catalog& cat) {
  size_t n = 0;
  for (auto& node : cat.nodes) n += node.type == NodeType::File;
  return n;
}

std::vector<std::string> diffs_but_state(const std::string& a, const std::string& b) {
  auto d = fx::compare_trees(a, b);
  std::erase_if(d, [](const std::string& line) { return line.find(kStateName) != std::string::npos; });
  return d;
}

} // namespace

TEST_CASE("restore plan: an untouched space is kept whole, unread") {
  PlanEnv env;
  PlanOf p = plan_of(env.lib_root, env.t);
  CHECK_FALSE(p.plan.changes());
  CHECK(p.plan.compared == 0); // every file trusted by the fence
  CHECK(p.plan.removals.empty());
  for (auto& s : p.plan.nodes) {
    CHECK(s.act == Act::Keep);
    CHECK(s.why == Why::Same);
  }
}

TEST_CASE("restore plan: each difference gets its step and reason; applying it gives the fresh tree") {
  PlanEnv env;
  const std::string& t = env.t;
  std::string outside = env.dir / "outside";
  fx::write_file(t + "/size.txt", "size grown");   // same inode, longer
  fx::write_file(t + "/content.txt", "content-B"); // same size, other bytes
  chmod((t + "/mode.sh").c_str(), 0700);
  unlink((t + "/gone.txt").c_str());
  unlink((t + "/kind.txt").c_str());
  fx::symlink_to("same.txt", t + "/kind.txt");   // a file replaced by a symlink
  fx::hardlink(t + "/shared.txt", outside);      // shared with a file outside
  fx::write_file(t + "/linksrc.txt", "linked, longer"); // both names: same inode
  unlink((t + "/sub/link").c_str());
  fx::symlink_to("../size.txt", t + "/sub/link");
  chmod((t + "/sub").c_str(), 0700);
  fx::write_file(t + "/stray.txt", "not in the catalog");
  fx::mkdirs(t + "/sub/stray_dir");
  fx::write_file(t + "/sub/stray_dir/x", "x");
  std::string temp_state = std::string(".tmp") + kStateName + "123";
  fx::write_file(t + "/" + temp_state, "half a state");

  PlanOf p = plan_of(env.lib_root, t);
  CHECK(p.plan.changes());
  CHECK(p.step("same.txt").act == Act::Keep);
  CHECK_FALSE(p.step("same.txt").compared);
  CHECK_FALSE(p.step("same.txt").chmod);
  CHECK(p.step("size.txt").act == Act::Rewrite);
  CHECK(p.step("size.txt").why == Why::SizeDiffers);
  CHECK(p.step("content.txt").act == Act::Rewrite);
  CHECK(p.step("content.txt").why == Why::ContentDiffers);
  CHECK(p.step("content.txt").compared);
  CHECK(p.step("mode.sh").act == Act::Keep); // compared (its ctime moved), same bytes
  CHECK(p.step("mode.sh").compared);
  CHECK(p.step("mode.sh").chmod);
  // The compare keeps the object of a file it found different (for the
  // write), and only that: checked bytes, exactly the object's.
  REQUIRE(p.plan.fetched.count(*find_path(p.cat, "content.txt")) == 1);
  CHECK(fx::to_string(p.plan.fetched.at(*find_path(p.cat, "content.txt"))) == "content-A");
  CHECK(p.plan.fetched.size() == 1);
  CHECK(p.step("gone.txt").act == Act::Create);
  CHECK(p.step("gone.txt").why == Why::Missing);
  CHECK(p.step("kind.txt").act == Act::Create);
  CHECK(p.step("kind.txt").why == Why::WrongType);
  CHECK(p.removal("kind.txt") == Why::WrongType);
  CHECK(p.step("shared.txt").act == Act::Rewrite);
  CHECK(p.step("shared.txt").why == Why::SharedInode);
  // The catalog holds the pair as a file (the first path) and a hardlink to it.
  CHECK(p.cat.nodes[*find_path(p.cat, "hard.txt")].type == NodeType::File);
  CHECK(p.step("hard.txt").act == Act::Rewrite);
  CHECK(p.step("hard.txt").why == Why::SizeDiffers);
  CHECK(p.step("linksrc.txt").act == Act::Create);
  CHECK(p.step("linksrc.txt").why == Why::StaleHardlink);
  CHECK(p.removal("linksrc.txt") == Why::StaleHardlink);
  CHECK(p.step("sub/link").act == Act::Create);
  CHECK(p.step("sub/link").why == Why::SymlinkDiffers);
  CHECK(p.removal("link") == Why::SymlinkDiffers);
  CHECK(p.step("sub/inner.txt").act == Act::Keep);
  CHECK(p.dir("sub").chmod);
  CHECK_FALSE(p.dir("sub").create);
  CHECK_FALSE(p.dir("mnt").chmod);
  CHECK(p.removal("stray.txt") == Why::NotInCatalog);
  CHECK(p.removal("stray_dir") == Why::NotInCatalog);
  CHECK(p.removal(temp_state) == Why::TempState);
  CHECK_FALSE(p.removal("same.txt"));
  CHECK(p.plan.failures.empty());

  // Planning changed nothing.
  CHECK(fx::to_string(fx::read_file(t + "/size.txt")) == "size grown");
  CHECK(access((t + "/stray.txt").c_str(), F_OK) == 0);

  // Applied: the tree a fresh restore gives, the outside file untouched, and
  // the next plan has nothing to do.
  Library lib(env.lib_root);
  RestoreStats st = restore(lib, "env", t, popts());
  CHECK_FALSE(st.fresh);
  CHECK(st.failures.empty());
  CHECK(st.removed == p.plan.removals.size());
  std::string ref = env.dir / "ref";
  restore(lib, "env", ref, popts());
  CHECK(fx::join_lines(diffs_but_state(ref, t)) == "");
  CHECK(fx::to_string(fx::read_file(outside)) == "shared");
  PlanOf again = plan_of(env.lib_root, t);
  CHECK_FALSE(again.plan.changes());
  CHECK(again.plan.compared == 0);
}

TEST_CASE("restore plan: the trust basis comes from this target's own state, of this boot") {
  PlanEnv env;
  Fd tfd(open(env.t.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::optional<RestoreState> own = read_state(tfd.get());
  REQUIRE(own);
  REQUIRE(own->complete);
  Library lib(env.lib_root);
  Catalog cat = lib.load_catalog("env");
  const size_t files = file_count(cat);

  SUBCASE("no state: every file compared, all kept") {
    PlanOf p = plan_of(env.lib_root, env.t, std::optional<RestoreState>{});
    CHECK(p.plan.compared == files);
    CHECK_FALSE(p.plan.changes());
  }
  SUBCASE("a state written for another target is not trusted") {
    RestoreState s = *own;
    s.target = "/elsewhere";
    PlanOf p = plan_of(env.lib_root, env.t, s);
    CHECK(p.plan.compared == files);
  }
  SUBCASE("a fence from another boot is not trusted") {
    RestoreState s = *own;
    s.boot_id[0] ^= 0xff;
    PlanOf p = plan_of(env.lib_root, env.t, s);
    CHECK(p.plan.compared == files);
  }
  SUBCASE("a fence taken before the files were written trusts none") {
    RestoreState s = *own;
    s.fence_ns = 1;
    PlanOf p = plan_of(env.lib_root, env.t, s);
    CHECK(p.plan.compared == files);
  }
  SUBCASE("another catalog with the same objects at the same paths is trusted") {
    RestoreState s = *own;
    s.catalog_digest = Digest{};
    s.set_catalog_raw(encode_catalog(cat));
    PlanOf p = plan_of(env.lib_root, env.t, s);
    CHECK(p.plan.compared == 0);
  }
  SUBCASE("another catalog that holds another object at a path: that file is compared") {
    RestoreState s = *own;
    s.catalog_digest = Digest{};
    Catalog other = cat;
    for (auto& n : other.nodes)
      if (n.path == "same.txt") n.digest[0] ^= 1;
    s.set_catalog_raw(encode_catalog(other));
    PlanOf p = plan_of(env.lib_root, env.t, s);
    CHECK(p.plan.compared == 1);
    CHECK(p.step("same.txt").compared);
    CHECK(p.step("same.txt").act == Act::Keep);
  }
  SUBCASE("an unreadable previous catalog trusts nothing") {
    RestoreState s = *own;
    s.catalog_digest = Digest{};
    s.set_catalog_raw(fx::to_bytes("not a catalog"));
    PlanOf p = plan_of(env.lib_root, env.t, s);
    CHECK(p.plan.compared == files);
  }
  SUBCASE("verify_content compares even trusted files") {
    RestoreOptions o = popts();
    o.verify_content = true;
    PlanOf p = plan_of(env.lib_root, env.t, {}, o);
    CHECK(p.plan.compared == files);
  }
}

namespace {

// Unmounts (lazily) what a test mounted, whatever happens.
struct Mounted {
  std::string at;
  bool ok = false;
  Mounted(const std::string& source, const std::string& where, const char* type, unsigned long flags) : at(where) {
    ok = mount(source.c_str(), where.c_str(), type, flags, nullptr) == 0;
  }
  ~Mounted() {
    if (ok) umount2(at.c_str(), MNT_DETACH);
  }
};

} // namespace

TEST_CASE("restore plan: the scan refuses a mount point at a catalog path or a stray one, before any change") {
  PlanEnv env;
  const std::string& t = env.t;
  fx::write_file(t + "/stray.txt", "stray");
  std::string outside = env.dir / "outside";
  fx::write_file(outside, "someone else's");
  std::string where, what;
  SUBCASE("a file system mounted on a catalog directory") {
    where = t + "/mnt";
    what = "tmpfs";
  }
  SUBCASE("a file bind-mounted over a catalog file") {
    where = t + "/same.txt";
    what = outside;
  }
  SUBCASE("a directory bind-mounted at a stray name") {
    fx::mkdirs(t + "/stray_mnt");
    where = t + "/stray_mnt";
    what = env.dir / "lib";
  }
  Mounted m(what, where, what == "tmpfs" ? "tmpfs" : nullptr, what == "tmpfs" ? 0 : MS_BIND);
  if (!m.ok) {
    MESSAGE("mount not permitted here (" << std::strerror(errno) << "): skipped");
    return;
  }
  std::string err;
  try {
    plan_of(env.lib_root, t);
  } catch (const Error& e) {
    err = e.what();
  }
  CHECK(err.find("'" + where + "' is a mount point") != std::string::npos);
  // And restore() stops there too: nothing removed or rewritten.
  Library lib(env.lib_root);
  CHECK_THROWS_AS(restore(lib, "env", t, popts()), Error);
  CHECK(access((t + "/stray.txt").c_str(), F_OK) == 0);
  Fd tfd(open(t.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  CHECK(read_state(tfd.get())->complete);
}

namespace {

// Replaces the library's pack by one where `victim`'s bytes are X's under
// intact checksums (its SHA-256 no longer matches its name).
void forge_object(Library& lib, const Digest& victim) {
  auto packs = lib.packs();
  REQUIRE(packs.size() == 1);
  const PackReader& old = *packs[0];
  std::string old_path = old.path();
  std::optional<PackResult> res;
  AtomicFile tmp(lib.tmp_dir() + "/forged", 0644);
  {
    PackWriter w(tmp.fd(), tmp.temp_path(), old.level());
    std::vector<IndexRecord> recs;
    for (uint64_t i = 0; i < old.index().count(); i++) recs.push_back(old.index().record_at(i));
    std::sort(recs.begin(), recs.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
    for (auto& r : recs) {
      bool mirror = w.contains(r.digest);
      if (r.digest == victim) w.append(r.kind, Codec::Raw, r.digest, r.raw_len, Bytes(r.raw_len, uint8_t('X')));
      else w.append_copy(r, old.checked_stored(r), mirror);
    }
    res = w.finish();
  }
  tmp.commit_as(tmp.temp_path() + ".done");
  lib.publish_pack(tmp.final_path(), *res);
  std::string stem = old_path.substr(0, old_path.size() - 5);
  REQUIRE(unlink(old_path.c_str()) == 0);
  REQUIRE(unlink((stem + ".hidx").c_str()) == 0);
  for (auto& e : std::filesystem::directory_iterator(lib.packs_dir())) // the midx layers: stale now
    if (e.path().extension() == ".midx") std::filesystem::remove(e.path());
}

} // namespace

TEST_CASE("restore plan: a forged object stops the plan, or with partial its file is left and reported") {
  PlanEnv env;
  {
    Library lib(env.lib_root);
    Catalog cat = lib.load_catalog("env");
    forge_object(lib, cat.nodes[*find_path(cat, "content.txt")].digest);
  }
  fx::write_file(env.t + "/content.txt", "content-B"); // same size: compared
  std::string err;
  try {
    plan_of(env.lib_root, env.t);
  } catch (const Error& e) {
    err = e.what();
  }
  CHECK(err.find("'" + env.t + "/content.txt' cannot be checked") != std::string::npos);

  RestoreOptions o = popts();
  o.partial = true;
  PlanOf p = plan_of(env.lib_root, env.t, {}, o);
  CHECK(p.step("content.txt").act == Act::Leave);
  CHECK(p.step("content.txt").why == Why::Forged);
  REQUIRE(p.plan.failures.size() == 1);
  CHECK(p.plan.failures[0].path == "content.txt");
  CHECK(p.plan.changes());
  Library lib(env.lib_root);
  RestoreStats st = restore(lib, "env", env.t, o);
  CHECK(st.failures.size() == 1);
  CHECK(fx::to_string(fx::read_file(env.t + "/content.txt")) == "content-B"); // left as it is
  Fd tfd(open(env.t.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  CHECK_FALSE(read_state(tfd.get())->complete); // the next restore repairs
  CHECK(std::string(why_name(Why::Forged)) == "forged object");
}
