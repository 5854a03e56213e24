// gc's plan (protocol steps 4 and 5 of core/gc/gc.hpp): which packs to leave,
// rewrite, merge, upgrade or delete, and which objects the new pack needs.
// A pure function of a plain description of the library's packs, the live
// set, the options and the clock: it touches no file, so it can be computed
// (and tested) without a library. gc() describes the packs, plans, then
// carries the plan out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/hash.hpp"

namespace hpak {

enum class GcAction { Keep, Rewrite, Merge, Upgrade, Delete, Young };

// "keep", "rewrite", "merge", "upgrade", "delete", "young": the words of
// `hpak gc` output (text and --json) and of hpak-gc(1).
const char* to_string(GcAction a);

// What gc reports for one pack.
struct GcPackPlan {
  std::string pack; // file name
  uint64_t size = 0, objects = 0, live_objects = 0, live_bytes = 0;
  GcAction action = GcAction::Keep;
  std::string why;
};

// One distinct object of a pack.
struct GcObject {
  Digest digest{};
  // What it occupies in the pack (a v1 entry or a v2 entry: header and stored
  // bytes; a block member: its raw bytes and member record). Only the bytes
  // of live objects are read, so a description may leave the others at 0.
  uint64_t bytes = 0;
};

// One visible pack, as the plan sees it.
struct GcPackInput {
  std::string name;         // file name
  uint64_t size = 0;        // pack and index bytes (what deleting it frees)
  uint64_t pack_bytes = 0;  // the pack file alone (the base of --min-garbage)
  int64_t mtime = 0;        // of its index (its age is `now - mtime`)
  bool usable = true;       // this user may copy from it (Library::pack_usable)
  uint16_t version = 2;     // pack format version
  std::vector<GcObject> objects; // distinct digests, each once
};

struct GcPlanOptions {
  int64_t grace_seconds = 3600;
  unsigned min_garbage_pct = 0;
  bool upgrade = false;
};

struct GcPlan {
  std::vector<GcPackPlan> packs; // one per input pack, in input order
  // The packs whose live objects go into the new pack and which are then
  // removed (indexes into the input, sorted by name); empty: nothing to do.
  std::vector<size_t> sources;
  // Every object of a pack that is not a source: it stays where it is.
  DigestSet kept_objects;
  uint64_t objects_kept = 0;    // live objects, in all packs
  uint64_t objects_dropped = 0; // dead objects of the sources

  // An object the new pack must hold: live and in no pack that stays (asked
  // of the objects of the sources; kept as a rule rather than a second set of
  // digests as large as the live set).
  bool to_copy(const Digest& d, const DigestSet& live) const { return live.count(d) && !kept_objects.count(d); }
};

// Per pack: young (index younger than the grace period, or a pack this user
// may not copy from) packs are left alone; of the others, a pack with no live
// object is deleted, one with at least min_garbage_pct of its bytes garbage is
// rewritten, with `upgrade` a v1 pack is upgraded, and the smallest packs are
// merged by a geometric roll-up (each pack that stays at least twice the live
// bytes of all smaller ones together). Nothing is done unless it frees an
// object, merges two packs or upgrades one.
GcPlan plan_gc(const std::vector<GcPackInput>& packs, const DigestSet& live, const GcPlanOptions& opts, int64_t now);

} // namespace hpak
