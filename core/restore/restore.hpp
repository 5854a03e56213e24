// Restore: materialise a library catalog into a target directory (a
// "holotree space"), relocated to the target's path, fresh or dirty.
//
// Fresh (empty target): core/materialize — openat with the final mode, write,
// close; ~3 syscalls per file, no temp files, renames or chmods.
// Dirty (restored before, maybe changed since, maybe another environment):
// three passes, scan -> plan -> apply (core/restore/restore_plan.hpp): one parallel
// pass of readdir + fstatat over the catalog's directories, compared with the
// state file (core/restore/restore_state.hpp), gives a plan value that is then
// executed. A file is kept when its ctime is below the last restore's fence,
// its size and mode match, and the previous catalog had the same object and
// relocations at that path; otherwise it is compared (same size) or
// rewritten; entries not in the catalog are removed; modes and symlinks are
// fixed. An unchanged space costs about one fstatat per file and no writes at
// all.
//
// Safety: one restore per target at a time (flock on the target directory; a
// second waits, or fails with `wait = false`); no machine-wide lock. Every
// path is resolved beneath the target without following symlinks. The target
// is opened once (O_NOFOLLOW, missing parents made like mkdir -p, see
// core/restore/target.hpp) and checked on that fd: refused if it is, contains or lies
// inside the library (by st_dev/st_ino of both and their parents), and, when
// not empty, unless its state file is its own (valid, recording this target's
// real path) or `force` is set. The state
// is marked incomplete before the first change and complete only after the
// last, so an interrupted restore (kill -9, ENOSPC) is repaired by the next
// one, and a restore never reports success on a partial tree.
#pragma once

#include <optional>

#include <string>
#include <vector>

#include "core/library/library.hpp"
#include "core/restore/materialize.hpp"
#include "base/os/sys.hpp"

namespace hpak {

struct RestoreOptions {
  unsigned threads = 0;
  bool verify_content = false; // compare every kept file's bytes too
  bool partial = false;        // restore what can be restored past bad objects
  bool wait = true;            // wait for another restore of the same target
  // Restore into a non-empty target that holds no state of its own (see
  // restore()): everything there the catalog does not name is deleted.
  bool force = false;
  bool preserve_setid = false; // keep set-uid/set-gid bits (dropped by default)
  // restore --keep-unrelocated: a binary file that cannot take the target's
  // path (an in-place file, a target longer than its root) is left as packed
  // instead of refusing the restore (core/pack/relocation.hpp).
  bool keep_unrelocated = false;
  // Refuse, before writing anything, a catalog with a name Windows cannot
  // hold (core/restore/windows_names.hpp): always on Windows, on request
  // elsewhere (restore --windows-names).
  bool windows_names = os::kWindowsNames;
  // Re-check each object's SHA-256 as it is read. Off by default: each read
  // checks the XXH3-64 of the stored bytes (and the decoded size), which
  // catches corruption; names are trusted only in packs this user (or root)
  // wrote, or verified once (shared libraries: core/pack/pack_trust.hpp).
  // `hpak verify LIB` re-checks every name.
  bool verify = false;
  // restore --trust-large-objects: raw objects of 1 MiB or more are copied
  // (or shared) without reading them for their checksum (ReadChecks,
  // core/pack/large_copy.hpp). Trusts the library's bytes: for libraries whose
  // packs `hpak verify` checks on a schedule.
  bool trust_large_raw = false;
  // Set by a signature policy (core/trust/signing.hpp): the digest the name must
  // still hold when the restore reads it, or the restore is refused.
  std::optional<Digest> expect_catalog;
  Progress progress;
};

struct RestoreStats {
  bool fresh = false;
  uint64_t files = 0;            // regular files in the catalog
  uint64_t files_written = 0, files_kept = 0, files_compared = 0;
  uint64_t removed = 0, dirs_created = 0, links_written = 0, modes_fixed = 0;
  uint64_t bytes_written = 0;
  // Catalog files holding a packed path: rewritten for the target (spliced
  // or patched in place), and left as packed (their format cannot take the
  // target's length: .pyc, zip, ...; see core/pack/relocation.hpp).
  uint64_t relocated = 0, kept_unrelocated = 0;
  std::vector<Failure> failures;
};

RestoreStats restore(const Library& lib, const std::string& catalog_name, const std::string& target,
                     const RestoreOptions& opts);

} // namespace hpak
