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

#include "base/digest_set.hpp"
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
  uint64_t dead_bytes = 0; // the dead objects' share of the pack file (what --min-garbage weighs)
  GcAction action = GcAction::Keep;
  std::string why;
};

// One distinct object of a pack.
struct GcObject {
  Digest digest{};
  // What copying it takes (a v1 entry or a v2 entry: header and stored
  // bytes; a block member: its raw bytes and member record): the live bytes
  // of the roll-up and of the room check. Only the bytes of live objects are
  // read, so a description may leave the others at 0.
  uint64_t bytes = 0;
  // Its share of the pack file: an entry's header and stored bytes; a block
  // member's part of its block (header, table and stored payload shared in
  // proportion to raw sizes). What dropping it frees: --min-garbage weighs
  // the dead objects' shares against the pack file's size.
  uint64_t share = 0;
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

// The default of --min-garbage: a pack is rewritten for its garbage once at
// least this percentage of its bytes is dead (hpak-gc(1), POLICY).
constexpr unsigned kDefaultMinGarbagePct = 10;

struct GcPlanOptions {
  int64_t grace_seconds = 3600;
  unsigned min_garbage_pct = kDefaultMinGarbagePct;
  bool upgrade = false;
  bool full = false; // every old, usable pack goes into the new pack (--full)
};

struct GcPlan {
  std::vector<GcPackPlan> packs; // one per input pack, in input order
  // The packs whose live objects go into the new pack and which are then
  // removed (indexes into the input, sorted by name); empty: nothing to do.
  std::vector<size_t> sources;
  // Every object of a pack that is not a source: it stays where it is.
  FlatDigestSet kept_objects;
  // Per input pack: a pack to delete (no live object) that holds the base of
  // a mirror copy, deleted with the packs rewritten, not before (gc.cpp's
  // dead_first). Set by gc after planning.
  std::vector<bool> delete_last;
  uint64_t objects_kept = 0;    // live objects, in all packs
  uint64_t objects_dropped = 0; // dead objects of the sources

  // An object the new pack must hold: live and in no pack that stays (asked
  // of the objects of the sources; kept as a rule rather than a second set of
  // digests as large as the live set).
  bool to_copy(const Digest& d, const FlatDigestSet& live) const { return live.count(d) && !kept_objects.count(d); }
};

// Per pack: young (index younger than the grace period, or a pack this user
// may not copy from) packs are left alone; of the others, a pack with no live
// object is deleted, one whose dead objects' shares are at least
// min_garbage_pct of its pack file is rewritten (0: any dead object), with
// `upgrade` a v1 pack is upgraded, and the smallest packs are merged by a
// geometric roll-up (each pack that stays at least twice the live bytes of all
// smaller ones together); with `full`, every one of them goes into the new
// pack. Nothing is done unless it frees an object, merges two packs or
// upgrades one.
GcPlan plan_gc(const std::vector<GcPackInput>& packs, const FlatDigestSet& live, const GcPlanOptions& opts, int64_t now);

} // namespace hpak
