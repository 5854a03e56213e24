#include "core/gc/gc_plan.hpp"

#include <algorithm>

#include "formats/pack_format.hpp"

namespace hpak {

const char* to_string(GcAction a) {
  switch (a) {
  case GcAction::Keep: return "keep";
  case GcAction::Rewrite: return "rewrite";
  case GcAction::Merge: return "merge";
  case GcAction::Upgrade: return "upgrade";
  case GcAction::Delete: return "delete";
  case GcAction::Young: return "young";
  }
  return "?";
}

namespace {

// What the plan decides on, per pack.
struct Tally {
  uint64_t objects = 0, live = 0, live_bytes = 0, dead_bytes = 0;
  int64_t age = 0;
  bool young = false, merge = false, upgrade = false, full = false;
};

Tally tally(const GcPackInput& p, const FlatDigestSet& live, const GcPlanOptions& opts, int64_t now) {
  Tally t;
  t.objects = p.objects.size();
  for (const GcObject& o : p.objects) {
    if (!live.count(o.digest)) {
      t.dead_bytes += o.share;
      continue;
    }
    t.live++;
    t.live_bytes += o.bytes;
  }
  t.age = now - p.mtime;
  // Never copy another member's unverified bytes into a pack of ours (it
  // would then be trusted): a pack this user may not use is left alone.
  t.young = t.age < opts.grace_seconds || !p.usable;
  return t;
}

// Rewriting a pack costs copying its live bytes: do it when its dead objects
// take at least min_garbage_pct of its pack file (0: any dead object), or
// when nothing of it is live; smaller amounts wait.
bool enough_garbage(const GcPackInput& p, const Tally& t, unsigned min_garbage_pct) {
  return t.live == 0 || (t.live < t.objects && t.dead_bytes * 100 >= p.pack_bytes * uint64_t(min_garbage_pct));
}

// Geometric roll-up: sorted by live bytes, the smallest packs are merged
// until each pack that stays holds at least twice the live bytes of all
// smaller ones together (only when that merges two or more).
void roll_up(std::vector<Tally*> old) {
  std::sort(old.begin(), old.end(), [](const Tally* a, const Tally* b) { return a->live_bytes < b->live_bytes; });
  size_t roll = 0;
  uint64_t prefix = 0;
  for (size_t j = 0; j < old.size(); j++) {
    if (j > 0 && old[j]->live_bytes < 2 * prefix) roll = j + 1;
    prefix += old[j]->live_bytes;
  }
  if (roll >= 2)
    for (size_t j = 0; j < roll; j++) old[j]->merge = true;
}

// Marks the packs past the grace period to merge into the new pack; returns
// whether that is worth a new pack: it frees an object, merges two packs or
// upgrades one.
bool choose_merges(const std::vector<GcPackInput>& packs, std::vector<Tally>& tallies, const GcPlanOptions& opts) {
  std::vector<Tally*> old;
  for (size_t i = 0; i < packs.size(); i++) {
    Tally& t = tallies[i];
    if (t.young) continue;
    old.push_back(&t);
    t.merge = t.full = opts.full; // --full: every old pack goes into the new one
    t.merge |= enough_garbage(packs[i], t, opts.min_garbage_pct);
    if (opts.upgrade && packs[i].version < formats::kPackVersion2 && t.live > 0) t.merge = t.upgrade = true;
  }
  roll_up(old);
  size_t merging = 0;
  for (const Tally* t : old) merging += t->merge;
  bool worthwhile = false;
  for (const Tally* t : old) worthwhile |= t->merge && (t->live < t->objects || merging >= 2 || t->upgrade);
  return worthwhile;
}

// "3.2%": `part` of `whole`, to a tenth of a percent (rounded down).
std::string percent(uint64_t part, uint64_t whole) {
  const uint64_t per_mille = whole ? uint64_t((unsigned __int128)part * 1000 / whole) : 0;
  return std::to_string(per_mille / 10) + "." + std::to_string(per_mille % 10) + "%";
}

std::string why_merged(const Tally& t) {
  if (t.live < t.objects) return std::to_string(t.objects - t.live) + " unreferenced objects";
  if (t.upgrade) return "pack format version 1, rewritten as version 2 (--upgrade)";
  if (t.full) return "repacked with every other old pack (--full)";
  return "small pack rolled up with others";
}

std::string why_kept(const GcPackInput& p, const Tally& t, const GcPlanOptions& opts) {
  if (t.live == t.objects) return "all objects referenced";
  return "garbage below threshold (" + percent(t.dead_bytes, p.pack_bytes) + " of its bytes dead, --min-garbage " +
         std::to_string(opts.min_garbage_pct) + ")";
}

GcPackPlan explain(const GcPackInput& p, const Tally& t, bool merged, const GcPlanOptions& opts) {
  GcPackPlan plan;
  plan.pack = p.name;
  plan.size = p.size;
  plan.objects = t.objects;
  plan.live_objects = t.live;
  plan.live_bytes = t.live_bytes;
  plan.dead_bytes = t.dead_bytes;
  if (t.young) {
    plan.action = GcAction::Young;
    plan.why = "younger than the grace period (" + std::to_string(t.age) + " s old)";
  } else if (merged) {
    plan.action = t.live == 0          ? GcAction::Delete
                  : t.live < t.objects ? GcAction::Rewrite
                  : t.upgrade          ? GcAction::Upgrade
                                       : GcAction::Merge;
    plan.why = why_merged(t);
  } else {
    plan.action = GcAction::Keep;
    plan.why = why_kept(p, t, opts);
  }
  return plan;
}

} // namespace

GcPlan plan_gc(const std::vector<GcPackInput>& packs, const FlatDigestSet& live, const GcPlanOptions& opts, int64_t now) {
  std::vector<Tally> tallies;
  tallies.reserve(packs.size());
  for (const GcPackInput& p : packs) tallies.push_back(tally(p, live, opts, now));
  const bool worthwhile = choose_merges(packs, tallies, opts);

  GcPlan plan;
  for (size_t i = 0; i < packs.size(); i++) {
    const bool merged = worthwhile && tallies[i].merge;
    plan.packs.push_back(explain(packs[i], tallies[i], merged, opts));
    plan.objects_kept += tallies[i].live;
    if (merged) {
      plan.objects_dropped += tallies[i].objects - tallies[i].live;
      plan.sources.push_back(i);
    }
  }
  if (plan.sources.empty()) return plan;
  std::sort(plan.sources.begin(), plan.sources.end(), [&](size_t a, size_t b) { return packs[a].name < packs[b].name; });
  for (size_t i = 0; i < packs.size(); i++)
    if (!tallies[i].merge)
      for (const GcObject& o : packs[i].objects) plan.kept_objects.insert(o.digest);
  return plan;
}

} // namespace hpak
