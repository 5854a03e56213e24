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

// A pack of the objects `ids`, each `bytes` large; pack_bytes and size are
// their sum (the index is left out of size).
GcPackInput pack(const std::string& name, std::vector<int> ids, uint64_t bytes = 100, int64_t mtime = kOld) {
  GcPackInput p;
  p.name = name;
  p.mtime = mtime;
  for (int id : ids) p.objects.push_back({dg(id), bytes});
  p.pack_bytes = p.size = bytes * ids.size();
  return p;
}

DigestSet live_set(std::vector<int> ids) {
  DigestSet s;
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
  DigestSet live = live_set({1, 2, 3, 4, 5, 6, 7, 8});

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
    CHECK(plan.packs[0].why == "garbage below threshold");
    CHECK(plan.sources.empty());
    CHECK(plan.objects_dropped == 0);
  }
}

TEST_CASE("gc plan: --min-garbage weighs bytes, not objects") {
  // One dead object out of four, but it is 70% of the pack's bytes.
  GcPackInput p = pack("a.hpak", {1, 2, 3, 4}, 100);
  p.pack_bytes = p.size = 1000;
  GcPlan plan = plan_gc({p}, live_set({1, 2, 3}), opts(70), kNow);
  CHECK(plan.packs[0].action == GcAction::Rewrite);
  plan = plan_gc({p}, live_set({1, 2, 3}), opts(71), kNow);
  CHECK(plan.packs[0].action == GcAction::Keep);
}

TEST_CASE("gc plan: a pack whose objects are all dead is deleted, whatever --min-garbage says") {
  std::vector<GcPackInput> packs = {pack("a.hpak", {1, 2}), pack("b.hpak", {3, 4, 5}, 1000)};
  DigestSet live = live_set({3, 4, 5});
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
  DigestSet live = live_set({4});
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
  DigestSet live = live_set({1, 2, 3, 5});

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
  DigestSet live = live_set({1, 2, 3, 5});
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
