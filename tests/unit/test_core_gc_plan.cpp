// core/gc_plan: gc's plan from synthetic libraries, no file touched. Each
// case describes packs (objects, the bytes of each, age, format version),
// a live set and options, and asserts the action and reason per pack, which
// packs are sources of the new pack, and which objects it must hold.
#include <doctest/doctest.h>
#include <algorithm>

#include "core/gc/gc_plan.hpp"

using namespace hpak;

namespace {

constexpr int64_t kNow = 1'000'000;
constexpr int64_t kOld = kNow - 24 * 3600; // a day old: past the default grace

Digest dg(int n) {
  Digest d{};
  d[0] = uint8_t(n);
  d[1] = uint8_t(n >> 8);
  d[31] = 0x5a;
  return d;
}

// A pack of the objects `ids`, each `bytes` large (to copy, and as its share
// of the pack); pack_bytes and size are their sum (the index is left out of size).
GcPackInput pack(const std::string& name, std::vector<int> ids, uint64_t bytes = 100, int64_t mtime = kOld) {
  GcPackInput p;
  p.name = name;
  p.mtime = mtime;
  for (int id : ids) p.objects.push_back({dg(id), bytes, bytes});
  p.pack_bytes = p.size = bytes * ids.size();
  return p;
}

FlatDigestSet live_set(std::vector<int> ids) {
  FlatDigestSet s;
  for (int id : ids) s.insert(dg(id));
  return s;
}

GcPlanOptions opts(unsigned min_garbage = 0, bool upgrade = false) {
  GcPlanOptions o;
  o.min_garbage_pct = min_garbage;
  o.upgrade = upgrade;
  return o;
}

std::string action(const GcPlan& plan, size_t i) { return to_string(plan.packs.at(i).action); }

std::vector<std::string> source_names(const GcPlan& plan) {
  std::vector<std::string> out;
  for (size_t i : plan.sources) out.push_back(plan.packs.at(i).pack);
  return out;
}

} // namespace

TEST_CASE("gc plan: the action words of the CLI's output") {
  CHECK(std::string(to_string(GcAction::Keep)) == "keep");
  CHECK(std::string(to_string(GcAction::Rewrite)) == "rewrite");
  CHECK(std::string(to_string(GcAction::Merge)) == "merge");
  CHECK(std::string(to_string(GcAction::Upgrade)) == "upgrade");
  CHECK(std::string(to_string(GcAction::Delete)) == "delete");
  CHECK(std::string(to_string(GcAction::Young)) == "young");
}

TEST_CASE("gc plan: an old pack whose objects are all live is kept, and nothing is done") {
  std::vector<GcPackInput> packs = {pack("a.hpak", {1, 2, 3})};
  GcPlan plan = plan_gc(packs, live_set({1, 2, 3}), opts(), kNow);
  REQUIRE(plan.packs.size() == 1);
  CHECK(plan.packs[0].pack == "a.hpak");
  CHECK(plan.packs[0].action == GcAction::Keep);
  CHECK(plan.packs[0].why == "all objects referenced");
  CHECK(plan.packs[0].objects == 3);
  CHECK(plan.packs[0].live_objects == 3);
  CHECK(plan.packs[0].live_bytes == 300);
  CHECK(plan.sources.empty());
  CHECK(plan.objects_kept == 3);
  CHECK(plan.objects_dropped == 0);
}

TEST_CASE("gc plan: a pack with garbage is rewritten from --min-garbage up, kept below it") {
  // 10 objects of 100 bytes, 8 live: 200 of 1000 bytes (20%) are garbage.
  std::vector<GcPackInput> packs = {pack("a.hpak", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10})};
  FlatDigestSet live = live_set({1, 2, 3, 4, 5, 6, 7, 8});

  for (unsigned pct : {0u, 1u, 20u}) {
    CAPTURE(pct);
    GcPlan plan = plan_gc(packs, live, opts(pct), kNow);
    CHECK(plan.packs[0].action == GcAction::Rewrite);
    CHECK(plan.packs[0].why == "2 unreferenced objects");
    CHECK(plan.packs[0].live_bytes == 800);
    CHECK(source_names(plan) == std::vector<std::string>{"a.hpak"});
    CHECK(plan.objects_kept == 8);
    CHECK(plan.objects_dropped == 2);
    CHECK(plan.to_copy(dg(1), live));
    CHECK(plan.to_copy(dg(8), live));
    CHECK_FALSE(plan.to_copy(dg(9), live)); // dead
  }
  for (unsigned pct : {21u, 50u, 100u}) {
    CAPTURE(pct);
    GcPlan plan = plan_gc(packs, live, opts(pct), kNow);
    CHECK(plan.packs[0].action == GcAction::Keep);
    CHECK(plan.packs[0].why == "garbage below threshold (20.0% of its bytes dead, --min-garbage " + std::to_string(pct) + ")");
    CHECK(plan.packs[0].dead_bytes == 200);
    CHECK(plan.sources.empty());
    CHECK(plan.objects_dropped == 0);
  }
}

TEST_CASE("gc plan: --min-garbage weighs the dead objects' share of the pack, not their count") {
  // One dead object out of four, but it takes 700 of the pack's 1000 bytes.
  GcPackInput p = pack("a.hpak", {1, 2, 3, 4}, 100);
  p.objects[3].share = 700;
  p.pack_bytes = p.size = 1000;
  GcPlan plan = plan_gc({p}, live_set({1, 2, 3}), opts(70), kNow);
  CHECK(plan.packs[0].action == GcAction::Rewrite);
  CHECK(plan.packs[0].dead_bytes == 700);
  plan = plan_gc({p}, live_set({1, 2, 3}), opts(71), kNow);
  CHECK(plan.packs[0].action == GcAction::Keep);
  CHECK(plan.packs[0].why == "garbage below threshold (70.0% of its bytes dead, --min-garbage 71)");

  // The pack's own bytes (headers, index) are not garbage: three live objects
  // of 100 bytes and a dead one of 100 in a 1000-byte file is 10% dead.
  GcPackInput q = pack("b.hpak", {1, 2, 3, 4}, 100);
  q.pack_bytes = q.size = 1000;
  plan = plan_gc({q}, live_set({1, 2, 3}), opts(11), kNow);
  CHECK(plan.packs[0].action == GcAction::Keep);
  CHECK(plan.packs[0].why == "garbage below threshold (10.0% of its bytes dead, --min-garbage 11)");
  plan = plan_gc({q}, live_set({1, 2, 3}), opts(10), kNow);
  CHECK(plan.packs[0].action == GcAction::Rewrite);

  // A dead object's share counts even when its copy size was not measured.
  GcPackInput r = pack("c.hpak", {1, 2}, 100);
  r.objects[1].bytes = 0;
  plan = plan_gc({r}, live_set({1}), opts(50), kNow);
  CHECK(plan.packs[0].action == GcAction::Rewrite);
}

TEST_CASE("gc plan: the default policy rewrites a pack only from 10% of its bytes dead") {
  GcPlanOptions o; // what `hpak gc` uses without --min-garbage or --full
  CHECK(o.min_garbage_pct == 10);
  CHECK(kDefaultMinGarbagePct == 10);
  CHECK_FALSE(o.full);
  // 100 objects of 100 bytes: 9 dead is 9%, 10 dead is 10%.
  std::vector<int> ids;
  for (int i = 1; i <= 100; i++) ids.push_back(i);
  std::vector<GcPackInput> packs = {pack("a.hpak", ids)};
  std::vector<int> live91(ids.begin(), ids.begin() + 91), live90(ids.begin(), ids.begin() + 90);
  GcPlan plan = plan_gc(packs, live_set(live91), o, kNow);
  CHECK(plan.packs[0].action == GcAction::Keep);
  CHECK(plan.packs[0].why == "garbage below threshold (9.0% of its bytes dead, --min-garbage 10)");
  CHECK(plan.sources.empty());
  CHECK(plan.objects_dropped == 0);
  plan = plan_gc(packs, live_set(live90), o, kNow);
  CHECK(plan.packs[0].action == GcAction::Rewrite);
  CHECK(plan.packs[0].why == "10 unreferenced objects");
  CHECK(source_names(plan) == std::vector<std::string>{"a.hpak"});
}

TEST_CASE("gc plan: one large pack and a small removed catalog: only the small pack goes, nothing is copied") {
  // big.hpak: 10,000 objects of 1000 bytes (10 MB), 20 of them dead (0.2%,
  // a name removed whose objects were merged long ago); small.hpak: the 50
  // objects only the other removed name used, all dead.
  std::vector<int> big_ids, small_ids, live;
  for (int i = 1; i <= 10000; i++) big_ids.push_back(i);
  for (int i = 20001; i <= 20050; i++) small_ids.push_back(i);
  for (int i = 21; i <= 10000; i++) live.push_back(i);
  std::vector<GcPackInput> packs = {pack("big.hpak", big_ids, 1000), pack("small.hpak", small_ids, 1000)};
  FlatDigestSet live_objects = live_set(live);
  GcPlan plan = plan_gc(packs, live_objects, GcPlanOptions{}, kNow);
  CHECK(action(plan, 0) == "keep");
  CHECK(plan.packs[0].why == "garbage below threshold (0.2% of its bytes dead, --min-garbage 10)");
  CHECK(action(plan, 1) == "delete");
  CHECK(source_names(plan) == std::vector<std::string>{"small.hpak"});
  CHECK(plan.objects_dropped == 50);
  for (int id : small_ids) CHECK_FALSE(plan.to_copy(dg(id), live_objects));
  for (int id : {21, 500, 10000}) CHECK_FALSE(plan.to_copy(dg(id), live_objects)); // the big pack stays as it is

  // --min-garbage 0 (any garbage) rewrites the big pack for its 20 dead objects.
  plan = plan_gc(packs, live_objects, opts(0), kNow);
  CHECK(action(plan, 0) == "rewrite");
  CHECK(plan.to_copy(dg(500), live_objects));
}

TEST_CASE("gc plan: --full repacks every old, usable pack into one, and leaves young ones") {
  // A large clean pack, a small clean one it would not roll up with, one
  // with a little garbage, a dead one, a young one and another member's.
  GcPackInput other = pack("other.hpak", {40});
  other.usable = false;
  std::vector<GcPackInput> packs = {pack("big.hpak", {1, 2, 3}, 10000),  pack("small.hpak", {10}, 100),
                                    pack("dirty.hpak", {20, 21}, 100000), pack("dead.hpak", {30}),
                                    pack("young.hpak", {35}, 100, kNow - 5), other};
  FlatDigestSet live = live_set({1, 2, 3, 10, 20, 35, 40});
  GcPlan normal = plan_gc(packs, live, GcPlanOptions{}, kNow);
  CHECK(action(normal, 0) == "keep");
  CHECK(action(normal, 1) == "keep");
  GcPlanOptions o;
  o.full = true;
  GcPlan plan = plan_gc(packs, live, o, kNow);
  CHECK(action(plan, 0) == "merge");
  CHECK(plan.packs[0].why == "repacked with every other old pack (--full)");
  CHECK(action(plan, 1) == "merge");
  CHECK(action(plan, 2) == "rewrite");
  CHECK(plan.packs[2].why == "1 unreferenced objects");
  CHECK(action(plan, 3) == "delete");
  CHECK(action(plan, 4) == "young");
  CHECK(action(plan, 5) == "young");
  CHECK(source_names(plan) == std::vector<std::string>{"big.hpak", "dead.hpak", "dirty.hpak", "small.hpak"});
  CHECK(plan.objects_dropped == 2);
  for (int id : {1, 2, 3, 10, 20}) CHECK(plan.to_copy(dg(id), live));
  CHECK_FALSE(plan.to_copy(dg(35), live));
  CHECK_FALSE(plan.to_copy(dg(40), live));

  // One clean old pack is one pack already: --full has nothing to do.
  plan = plan_gc({pack("big.hpak", {1, 2, 3}, 10000), pack("young.hpak", {35}, 100, kNow - 5)}, live, o, kNow);
  CHECK(action(plan, 0) == "keep");
  CHECK(plan.sources.empty());
  // With garbage, however little, it is rewritten.
  plan = plan_gc({pack("big.hpak", {1, 2, 3, 4}, 10000)}, live, o, kNow);
  CHECK(action(plan, 0) == "rewrite");
}

TEST_CASE("gc plan: a pack whose objects are all dead is deleted, whatever --min-garbage says") {
  std::vector<GcPackInput> packs = {pack("a.hpak", {1, 2}), pack("b.hpak", {3, 4, 5}, 1000)};
  FlatDigestSet live = live_set({3, 4, 5});
  GcPlan plan = plan_gc(packs, live, opts(100), kNow);
  CHECK(plan.packs[0].action == GcAction::Delete);
  CHECK(plan.packs[0].why == "2 unreferenced objects");
  CHECK(plan.packs[0].live_objects == 0);
  CHECK(plan.packs[0].live_bytes == 0);
  CHECK(plan.packs[1].action == GcAction::Keep);
  CHECK(source_names(plan) == std::vector<std::string>{"a.hpak"});
  CHECK(plan.objects_dropped == 2);
  CHECK(plan.objects_kept == 3);
  // Nothing of it is copied; the kept pack's objects stay where they are.
  CHECK_FALSE(plan.to_copy(dg(1), live));
  CHECK(plan.kept_objects == live);
}

TEST_CASE("gc plan: young packs are left alone, whatever they hold") {
  std::vector<GcPackInput> packs = {pack("young.hpak", {1, 2}, 100, kNow - 10), pack("old.hpak", {3, 4})};
  FlatDigestSet live = live_set({4});
  GcPlan plan = plan_gc(packs, live, opts(), kNow);
  CHECK(plan.packs[0].action == GcAction::Young);
  CHECK(plan.packs[0].why == "younger than the grace period (10 s old)");
  CHECK(plan.packs[1].action == GcAction::Rewrite);
  CHECK(source_names(plan) == std::vector<std::string>{"old.hpak"});
  CHECK(plan.objects_dropped == 1); // the young pack's dead objects are not counted
  CHECK(plan.kept_objects.count(dg(1)));

  // The grace period is the boundary: a pack exactly that old is no longer young.
  GcPlanOptions o = opts();
  o.grace_seconds = 10;
  plan = plan_gc(packs, live, o, kNow);
  CHECK(plan.packs[0].action == GcAction::Delete);
  o.grace_seconds = 11;
  plan = plan_gc(packs, live, o, kNow);
  CHECK(plan.packs[0].action == GcAction::Young);
}

TEST_CASE("gc plan: a pack this user may not copy from is left alone like a young one") {
  GcPackInput other = pack("other.hpak", {1, 2});
  other.usable = false;
  GcPlan plan = plan_gc({other, pack("mine.hpak", {3})}, live_set({1, 3}), opts(), kNow);
  CHECK(plan.packs[0].action == GcAction::Young);
  CHECK(plan.packs[1].action == GcAction::Keep);
  CHECK(plan.sources.empty());
}

TEST_CASE("gc plan: the smallest packs are rolled up until each pack left is twice the smaller ones") {
  SUBCASE("two small packs merge, the large ones stay") {
    // Live bytes 100, 150, 1000, 10000: 150 < 2*100 merges the first two;
    // 1000 >= 2*250 and 10000 >= 2*1250 stay.
    std::vector<GcPackInput> packs = {pack("d.hpak", {4}, 10000), pack("b.hpak", {2}, 150), pack("c.hpak", {3}, 1000),
                                      pack("a.hpak", {1}, 100)};
    GcPlan plan = plan_gc(packs, live_set({1, 2, 3, 4}), opts(), kNow);
    CHECK(action(plan, 0) == "keep");
    CHECK(action(plan, 1) == "merge");
    CHECK(plan.packs[1].why == "small pack rolled up with others");
    CHECK(action(plan, 2) == "keep");
    CHECK(action(plan, 3) == "merge");
    CHECK(source_names(plan) == std::vector<std::string>{"a.hpak", "b.hpak"}); // by name
    CHECK(plan.objects_dropped == 0);
    CHECK(plan.to_copy(dg(1), live_set({1, 2, 3, 4})));
    CHECK_FALSE(plan.to_copy(dg(3), live_set({1, 2, 3, 4})));
  }
  SUBCASE("a chain: each merge makes the next pack small enough to join") {
    // 100, 150 (< 200), 400 (< 2*250), 1000 (< 2*650): all four.
    std::vector<GcPackInput> packs = {pack("a.hpak", {1}, 100), pack("b.hpak", {2}, 150), pack("c.hpak", {3}, 400),
                                      pack("d.hpak", {4}, 1000)};
    GcPlan plan = plan_gc(packs, live_set({1, 2, 3, 4}), opts(), kNow);
    for (size_t i = 0; i < 4; i++) CHECK(action(plan, i) == "merge");
    CHECK(plan.sources.size() == 4);
    CHECK(plan.kept_objects.empty());
  }
  SUBCASE("geometric sizes already: nothing merges") {
    std::vector<GcPackInput> packs = {pack("a.hpak", {1}, 100), pack("b.hpak", {2}, 200), pack("c.hpak", {3}, 600)};
    GcPlan plan = plan_gc(packs, live_set({1, 2, 3}), opts(), kNow);
    for (size_t i = 0; i < 3; i++) CHECK(action(plan, i) == "keep");
    CHECK(plan.sources.empty());
  }
  SUBCASE("young packs take no part in the roll-up") {
    std::vector<GcPackInput> packs = {pack("a.hpak", {1}, 100), pack("b.hpak", {2}, 100, kNow - 5), pack("c.hpak", {3}, 1000)};
    GcPlan plan = plan_gc(packs, live_set({1, 2, 3}), opts(), kNow);
    CHECK(action(plan, 0) == "keep");
    CHECK(action(plan, 1) == "young");
    CHECK(action(plan, 2) == "keep");
  }
  SUBCASE("the roll-up weighs live bytes: a large pack of garbage counts as small") {
    // b is 10000 bytes but only 100 of them live: it rolls up with a, and
    // its garbage (kept by --min-garbage alone) goes with it.
    GcPackInput b = pack("b.hpak", {2, 20}, 100);
    b.pack_bytes = b.size = 10000;
    std::vector<GcPackInput> packs = {pack("a.hpak", {1}, 120), b, pack("c.hpak", {3}, 1000)};
    GcPlan plan = plan_gc(packs, live_set({1, 2, 3}), opts(100), kNow);
    CHECK(action(plan, 0) == "merge");
    CHECK(action(plan, 1) == "rewrite");
    CHECK(plan.packs[1].why == "1 unreferenced objects");
    CHECK(action(plan, 2) == "keep");
    CHECK(plan.objects_dropped == 1);
  }
}

TEST_CASE("gc plan: --upgrade rewrites old v1 packs as v2, and only with it") {
  GcPackInput v1 = pack("v1.hpak", {1, 2}, 5000);
  v1.version = 1;
  GcPackInput v1_young = pack("v1young.hpak", {3}, 5000, kNow - 1);
  v1_young.version = 1;
  GcPackInput v1_dead = pack("v1dead.hpak", {4}, 100000);
  v1_dead.version = 1;
  std::vector<GcPackInput> packs = {v1, v1_young, pack("v2.hpak", {5}, 100000), v1_dead};
  FlatDigestSet live = live_set({1, 2, 3, 5});

  GcPlan plan = plan_gc(packs, live, opts(0, /*upgrade=*/true), kNow);
  CHECK(action(plan, 0) == "upgrade");
  CHECK(plan.packs[0].why == "pack format version 1, rewritten as version 2 (--upgrade)");
  CHECK(action(plan, 1) == "young");
  CHECK(action(plan, 2) == "keep");
  CHECK(action(plan, 3) == "delete"); // nothing live in it: nothing to upgrade
  CHECK(source_names(plan) == std::vector<std::string>{"v1.hpak", "v1dead.hpak"});
  CHECK(plan.to_copy(dg(1), live));

  // Alone, an upgrade is still worth a new pack.
  plan = plan_gc({v1, pack("v2.hpak", {5}, 100000)}, live, opts(0, true), kNow);
  CHECK(action(plan, 0) == "upgrade");
  CHECK(source_names(plan) == std::vector<std::string>{"v1.hpak"});

  // Without --upgrade the v1 pack is an ordinary one.
  plan = plan_gc({v1, pack("v2.hpak", {5}, 100000)}, live, opts(), kNow);
  CHECK(action(plan, 0) == "keep");
  CHECK(plan.sources.empty());

  // A v1 pack with garbage is a rewrite (which also upgrades it).
  GcPackInput v1_garbage = pack("v1g.hpak", {1, 9}, 5000);
  v1_garbage.version = 1;
  plan = plan_gc({v1_garbage}, live, opts(0, true), kNow);
  CHECK(action(plan, 0) == "rewrite");
}

TEST_CASE("gc plan: the new pack holds only live objects no pack that stays holds") {
  // a (rewritten) holds 1, 2, 3 (live) and 4 (dead). 2 also lives in b, an
  // old pack that stays; 3 also lives in y, a young one. Only 1 is the
  // rewritten pack's own copy of a live object: it alone is copied.
  std::vector<GcPackInput> packs = {pack("a.hpak", {1, 2, 3, 4}), pack("b.hpak", {2, 5}, 10000),
                                    pack("y.hpak", {3}, 100, kNow - 60)};
  FlatDigestSet live = live_set({1, 2, 3, 5});
  GcPlan plan = plan_gc(packs, live, opts(), kNow);
  CHECK(action(plan, 0) == "rewrite");
  CHECK(action(plan, 1) == "keep");
  CHECK(action(plan, 2) == "young");
  CHECK(plan.to_copy(dg(1), live));
  CHECK_FALSE(plan.to_copy(dg(2), live));
  CHECK_FALSE(plan.to_copy(dg(3), live));
  CHECK_FALSE(plan.to_copy(dg(4), live));
  CHECK(plan.kept_objects == live_set({2, 5, 3}));
  CHECK(plan.objects_kept == 6); // live objects counted per pack: 2 and 3 twice
}

TEST_CASE("gc plan: an empty old pack alone is not worth a new pack") {
  // No live object makes it a candidate, but deleting it frees no object
  // and merges nothing: the plan does nothing.
  std::vector<GcPackInput> packs = {pack("empty.hpak", {}), pack("b.hpak", {1}, 1000)};
  GcPlan plan = plan_gc(packs, live_set({1}), opts(), kNow);
  CHECK(action(plan, 0) == "keep");
  CHECK(plan.packs[0].why == "all objects referenced");
  CHECK(plan.sources.empty());
  CHECK(plan.kept_objects.empty()); // filled only when something is copied
}

TEST_CASE("gc plan: live bytes are what the objects occupy, not the pack's size") {
  GcPackInput p = pack("a.hpak", {1, 2, 3});
  p.objects[0].bytes = 7;
  p.objects[1].bytes = 11;
  p.objects[2].bytes = 13;
  p.size = 4096;
  GcPlan plan = plan_gc({p}, live_set({1, 3}), opts(), kNow);
  CHECK(plan.packs[0].size == 4096);
  CHECK(plan.packs[0].live_bytes == 20);
  CHECK(plan.packs[0].live_objects == 2);
  CHECK(plan.packs[0].objects == 3);
}
