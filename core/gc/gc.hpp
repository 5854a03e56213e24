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
//     and than kLeftoverMinAge (an add in progress may own them), or when
//     their writer is known to be gone (8).
//  4b. Packs with no live object go first, through 6 (re-mark, condemn,
//     delete): nothing to copy, and on a full disk their space may be the
//     room the new pack needs. Then the sweep (8), for the same reason.
//  5. Rewrite: live objects of old packs whose dead objects take at least
//     --min-garbage (10%) of their bytes (all of them with --full), plus the small
//     packs that a geometric roll-up merges (each kept pack at least twice the
//     sum of the smaller ones), are copied verbatim (entry checksum checked,
//     no recompression; out of another member's pack of a shared library,
//     a private copy whose SHA-256 is checked first: core/pack/pack_trust.hpp)
//     into a new pack, published pack-then-index. Without
//     room for it (statvfs, or ENOSPC/EDQUOT while writing it: the temp file
//     goes), one new pack per source with garbage, the cheapest first, each
//     through 6 before the next; what still does not fit is left as it is and
//     reported (GcResult::left_for_space; `hpak gc` exits 1).
//  6. Re-mark and condemn under the exclusive LIB/locks/publish.lock: read
//     the names again and mark, then sync catalogs/ (a removal the marks saw
//     is durable before its objects go); a superseded pack holding the only copy of an
//     object so marked is kept; the others are condemned: index, then pack,
//     renamed to `*.condemned` (readers stop seeing them). After the lock is
//     released the condemned files are deleted — gc deletes no other pack name, so
//     a writer that re-publishes an identical pack (same SHA-256 name) keeps
//     its new file. A writer (core/library/library_add.cpp) holds the lock shared from
//     checking that every object of its catalog is visible (writing missing
//     ones again) until its name is set. So each name is set either before
//     gc's re-mark (which sees it and keeps its objects) or after gc's
//     condemn (and its check sees the condemned objects gone): whenever a
//     name exists, every object it needs is in a visible pack.
//  7. The midx is brought up to date as an add does it: one layer over the
//     packs no usable layer covers (the new packs, and what remains of each
//     layer that named a deleted pack), folding in the smallest layers; then
//     the stale layers are deleted, the others kept (formats/midx_format.hpp).
//  8. Sweep: old temp files go, and those whose writer is gone (the pid in
//     the name is of this host and dead, and the file's flock is free); old
//     orphan packs (no index: a writer killed between link and index), and
//     those whose flock is free (a writer holds it until its index is
//     published), are condemned like superseded packs, under
//     the exclusive publish lock, re-checked (an identical re-add may have
//     published their index meanwhile: then they are renamed back), and
//     deleted after it is released.
// Locks need flock(2): where it fails with ENOLCK, EOPNOTSUPP or ENOSYS, or
// where its locks are local to the host (NFS with nolock or local_lock, unless
// HPAK_SINGLE_HOST=1; core/store/lock_scope.hpp), gc, repair and adds refuse
// to run (restores need no lock).
// gc() runs the steps as passes of core/gc/gc.cpp, each named for its step:
// GcLock (1), recover_interrupted (2), roots (3: drop_unused, mark),
// describe_packs then plan_gc (4 and 5's choice: a pure function of the
// packs' description, core/gc/gc_plan.hpp), collect_dead (4b), sweep_leftovers
// (8), rewrite_rest (5 and 6: repack, condemn, delete_condemned; pack by
// pack without room), rebuild_midx (7). A plan with nothing to do only
// sweeps and deletes the midx layers readers ignore (stale ones). A dry run carries the plan out by the same copy into /dev/null
// (rehearse: the new pack's size, name and objects are the real run's),
// deletes nothing and only counts what the sweep would remove.
// A kill -9 at any point leaves only extra packs (duplicates) or condemned
// files, both recovered by the next gc; no referenced object is lost, and a
// killed writer leaves no name whose objects are missing.
#pragma once

#include <string>
#include <vector>

#include "core/gc/gc_plan.hpp"
#include "core/library/library.hpp"

namespace hpak {

struct GcOptions {
  bool dry_run = false;
  int64_t grace_seconds = 3600;
  int64_t unused_seconds = -1; // drop catalogs not used for this long (-1: keep all)
  unsigned min_garbage_pct = kDefaultMinGarbagePct; // rewrite a pack for its garbage only if at least this much of it is dead
  bool upgrade = false; // also rewrite every (old enough) pack of format version 1 as version 2
  bool full = false;    // every old, usable pack into one new pack (--full)
  unsigned threads = 0;
  Progress progress;
  // Test hook: called with a step name ("dead-condemned", "dead-deleted",
  // "published", "condemned", "deleted", "sweep", "orphan-condemned"; cmd/gc.cpp).
  std::function<void(const char*)> on_step;
};

struct GcResult {
  std::vector<GcPackPlan> packs;
  std::vector<std::string> dropped_catalogs;
  std::vector<std::string> warnings;
  uint64_t packs_before = 0, packs_after = 0;
  // Distinct objects: of those the packs held, still held after the run
  // (kept) or not (dropped); copied_objects are those the new pack got.
  uint64_t objects_kept = 0, objects_dropped = 0;
  uint64_t bytes_before = 0, bytes_after = 0;
  uint64_t copied_objects = 0, copied_bytes = 0;
  uint64_t tmp_removed = 0;
  double copy_seconds = 0;
  // Packs left as they were for lack of space (their live objects could not
  // be copied), and the last figures that decided it: what the new pack
  // needed, what the file system had.
  std::vector<std::string> left_for_space;
  uint64_t space_needed = 0, space_free = 0;
  std::string space_error; // the write that failed for lack of space, when one did ("" when statvfs decided)
};

GcResult gc(Library& lib, const GcOptions& opts);

} // namespace hpak
