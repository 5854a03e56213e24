// Garbage collection of a library, safe while others add and restore.
//
// Protocol (the argument is written out in man/hpak-gc.1, "SAFETY"):
//  1. Lock: flock(LIB/locks/gc.lock) — one gc or repair at a time; the kernel
//     drops it if gc dies, so a lock is never stale on a local filesystem.
//     The holder is named from /proc/locks (and the host/pid it recorded).
//  2. Recover: packs and indexes left `*.condemned` by a killed gc are
//     renamed back first.
//  3. Roots: every catalog name (after dropping --unused ones) -> its catalog
//     -> every digest it names. An unreadable catalog aborts the gc: its
//     objects are unknown, so nothing may be swept.
//  4. Grace: packs whose index is younger than the grace period (default
//     1 hour) are not rewritten or deleted: fewer objects for writers to
//     write twice (correctness does not depend on it, see 6). Leftovers (temp
//     files, packs without an index) go only when older than the grace period
//     and than kLeftoverMinAge: an add in progress may own them.
//  5. Rewrite: live objects of old packs that carry garbage, plus the small
//     packs that a geometric roll-up merges (each kept pack at least twice the
//     sum of the smaller ones), are copied verbatim (entry checksum checked,
//     no recompression; out of another member's pack of a shared library,
//     a private copy whose SHA-256 is checked first: core/pack_trust.hpp)
//     into a new pack, published pack-then-index.
//  6. Re-mark and condemn under the exclusive LIB/locks/publish.lock: read
//     the names again and mark; a superseded pack holding the only copy of an
//     object so marked is kept; the others are condemned: index, then pack,
//     renamed to `*.condemned` (readers stop seeing them). After the lock is
//     released the condemned files are deleted — gc deletes no other name, so
//     a writer that re-publishes an identical pack (same SHA-256 name) keeps
//     its new file. A writer (core/library_add.cpp) holds the lock shared from
//     checking that every object of its catalog is visible (writing missing
//     ones again) until its name is set. So each name is set either before
//     gc's re-mark (which sees it and keeps its objects) or after gc's
//     condemn (and its check sees the condemned objects gone): whenever a
//     name exists, every object it needs is in a visible pack.
//  7. The midx is rebuilt over the packs that remain.
//  8. Sweep: old temp files go; old orphan packs (no index: a writer killed
//     between link and index) are condemned like superseded packs, under
//     the exclusive publish lock, re-checked (an identical re-add may have
//     published their index meanwhile: then they are renamed back), and
//     deleted after it is released.
// Locks need flock(2): where it fails with ENOLCK, EOPNOTSUPP or ENOSYS, or
// where its locks are local to the host (NFS with nolock or local_lock, unless
// HPAK_SINGLE_HOST=1; core/store/lock_scope.hpp), gc, repair and adds refuse
// to run (restores need no lock).
// gc() runs the steps as passes of core/gc.cpp, each named for its step:
// GcLock (1), recover_interrupted (2), roots (3: drop_unused, mark),
// describe_packs then plan_gc (4 and 5's choice: a pure function of the
// packs' description, core/gc_plan.hpp), repack (5), condemn (6: re-mark and
// condemn), delete_condemned, rebuild_midx (7), sweep_leftovers (8). A dry
// run, or a plan with nothing to do, stops after plan_gc (predict_after).
// A kill -9 at any point leaves only extra packs (duplicates) or condemned
// files, both recovered by the next gc; no referenced object is lost, and a
// killed writer leaves no name whose objects are missing.
#pragma once

#include <string>
#include <vector>

#include "core/gc_plan.hpp"
#include "core/library.hpp"

namespace hpak {

struct GcOptions {
  bool dry_run = false;
  int64_t grace_seconds = 3600;
  int64_t unused_seconds = -1; // drop catalogs not used for this long (-1: keep all)
  unsigned min_garbage_pct = 0; // rewrite a pack only if at least this much of it is garbage
  bool upgrade = false; // also rewrite every (old enough) pack of format version 1 as version 2
  unsigned threads = 0;
  Progress progress;
  // Test hook: called with a step name ("published", "condemned", "deleted",
  // "sweep", "orphan-condemned"; cmd/gc.cpp).
  std::function<void(const char*)> on_step;
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

} // namespace hpak
