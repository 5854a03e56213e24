// Garbage collection of a library, safe while others add and restore.
//
// Protocol (the argument is written out in man/hpak-gc.1, "SAFETY"):
//  1. Lock: flock(LIB/locks/gc.lock) — one gc or repair at a time; the kernel
//     drops it if gc dies, so a lock is never stale on a local filesystem.
//     The file names the holder (host, pid) for the error message.
//  2. Recover: `*.hidx.condemned` left by a killed gc are renamed back first.
//  3. Roots: every catalog name (after dropping --unused ones) -> its catalog
//     -> every digest it names. An unreadable catalog aborts the gc: its
//     objects are unknown, so nothing may be swept.
//  4. Grace: packs whose index is younger than the grace period (default
//     1 hour) are never rewritten or deleted, so a writer's fresh pack whose
//     catalog name is not yet published survives. Temp files in tmp/ are
//     removed only when older than the grace period.
//  5. Rewrite: live objects of old packs that carry garbage, plus the small
//     packs that a geometric roll-up merges (each kept pack at least twice the
//     sum of the smaller ones), are copied verbatim (entry checksum checked,
//     no recompression) into a new pack, published pack-then-index.
//  6. Condemn, re-check, delete: the superseded packs' indexes are renamed to
//     `.condemned` (readers stop seeing them); the catalog names are read
//     again, and any pack holding the only copy of an object a new root needs
//     is un-condemned; the rest are deleted. A writer re-checks its objects
//     *after* publishing its name (core/library_add.cpp): either gc's re-check
//     sees the name, or the writer's check sees the object gone and re-adds it.
//  7. The midx is rebuilt over the packs that remain.
// A kill -9 at any point leaves only extra packs (duplicates) or condemned
// indexes, both recovered by the next gc; no referenced object is lost.
#pragma once

#include <string>
#include <vector>

#include "core/library.hpp"

namespace hpak {

struct GcOptions {
  bool dry_run = false;
  int64_t grace_seconds = 3600;
  int64_t unused_seconds = -1; // drop catalogs not used for this long (-1: keep all)
  unsigned min_garbage_pct = 0; // rewrite a pack only if at least this much of it is garbage
  unsigned threads = 0;
  Progress progress;
  // Test hook: called with a step name ("published", "condemned", "deleted").
  std::function<void(const char*)> on_step;
};

struct GcPackPlan {
  std::string pack;    // file name
  uint64_t size = 0, objects = 0, live_objects = 0, live_bytes = 0;
  std::string action;  // "keep", "rewrite", "merge", "delete", "young"
  std::string why;
};

struct GcResult {
  std::vector<GcPackPlan> packs;
  std::vector<std::string> dropped_catalogs;
  std::vector<std::string> warnings;
  uint64_t packs_before = 0, packs_after = 0;
  uint64_t objects_kept = 0, objects_dropped = 0;
  uint64_t bytes_before = 0, bytes_after = 0;
  uint64_t copied_objects = 0, copied_bytes = 0;
  uint64_t tmp_removed = 0;
  double copy_seconds = 0;
};

GcResult gc(Library& lib, const GcOptions& opts);

// Holds LIB/locks/gc.lock for the object's lifetime.
class GcLock {
public:
  explicit GcLock(const Library& lib);
  ~GcLock();
  GcLock(const GcLock&) = delete;
  GcLock& operator=(const GcLock&) = delete;

private:
  int fd_ = -1;
};

// Renames `.hidx.condemned` back to `.hidx` (recovery after a killed gc).
size_t recover_condemned(const Library& lib);

} // namespace hpak
