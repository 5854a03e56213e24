#include "core/restore/restore.hpp"

#include <atomic>
#include <climits>
#include <cstring>
#include <mutex>
#include <optional>
#include <algorithm>

#include "base/os/sys.hpp"
#include "base/diag.hpp"
#include "core/store/dir_stream.hpp"
#include "base/os/fs_ops.hpp"
#include "core/restore/restore_plan.hpp"
#include "core/restore/restore_state.hpp"
#include "core/restore/target.hpp"
#include "core/restore/windows_names.hpp"
#include "base/parallel.hpp"

namespace hpak {

using namespace formats;

namespace {

// (st_dev, st_ino) of directory `fd` and of each of its ancestors up to the
// root (whose ".." is itself), nearest first. Identities, not path strings:
// a bind mount or a symlinked path to the same directory compares equal.
using Inode = std::pair<os::Dev, os::Ino>;
std::vector<Inode> lineage(int fd, const std::string& shown) {
  std::vector<Inode> out;
  Fd held;
  int cur = fd;
  for (;;) {
    os::FileStat st;
    if (os::fstat(cur, st) != 0) throw_errno("unable to examine '" + shown + "' or its parents");
    Inode id{st.st_dev, st.st_ino};
    if (!out.empty() && id == out.back()) break;
    out.push_back(id);
    if (out.size() > os::max_path()) throw Error("'" + shown + "' has too many parents");
    held = Fd(os::open_at(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!held) throw_errno("unable to examine the parents of '" + shown + "'");
    cur = held.get();
  }
  return out;
}

struct LibraryIds {
  std::string root;        // as named
  std::vector<Inode> ids;  // the library's directory, then its ancestors
};

LibraryIds library_ids(const Library& lib) {
  Fd fd(os::open_path(lib.root().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("unable to open library '" + lib.root() + "'");
  return {lib.root(), lineage(fd.get(), lib.root())};
}

// Refuses a directory (the target or, before it is created, its deepest
// existing parent) that is the library or lies inside it.
void refuse_inside_library(const LibraryIds& lib, int fd, const std::string& target) {
  std::vector<Inode> up = lineage(fd, target);
  if (std::find(up.begin(), up.end(), lib.ids.front()) != up.end())
    throw Error("target '" + target + "' is inside the library '" + lib.root + "'");
}

// Refuses a target that is, or contains, the library (the restore would
// delete it), by identity: "/", a parent of the library, the library through
// a bind mount or a symlinked path.
void refuse_library_in_target(const LibraryIds& lib, int tfd, const std::string& target) {
  os::FileStat st;
  if (os::fstat(tfd, st) != 0) throw_errno("unable to examine target '" + target + "'");
  auto it = std::find(lib.ids.begin(), lib.ids.end(), Inode{st.st_dev, st.st_ino});
  if (it == lib.ids.begin()) throw Error("target '" + target + "' is the library '" + lib.root + "'");
  if (it != lib.ids.end()) throw Error("target '" + target + "' contains the library '" + lib.root + "'; a restore there would delete it");
}

void check_catalog_names(const Catalog& cat, bool windows_names) {
  if (windows_names) refuse_windows_names(cat);
  const std::string temp_prefix = std::string(".tmp") + kStateName;
  for (auto& n : cat.nodes)
    if (n.path == kStateName || n.path.starts_with(temp_prefix))
      throw Error("catalog uses the reserved name '" + n.path + "'");
}

void check_path_length(const Catalog& cat, const std::string& real_target) {
  size_t longest = 0;
  for (auto& n : cat.nodes) longest = std::max(longest, n.path.size());
  if (real_target.size() + 1 + longest >= os::max_path())
    throw Error("target path '" + real_target + "' is too long: its deepest file would need " +
                std::to_string(real_target.size() + 1 + longest) + " bytes (the platform allows " + std::to_string(os::max_path() - 1) + ")");
}

// Every check that depends on the target's real path alone: not too long,
// and no binary file that cannot take it (unless --keep-unrelocated).
RelocationPlan check_target_path(const Catalog& cat, const std::string& real_target, const std::string& target, bool keep_blocked) {
  check_path_length(cat, real_target);
  return check_relocation(cat, RelocTo{real_target, keep_blocked}, target);
}

// Opens the target once (O_NOFOLLOW | O_DIRECTORY, missing parents made like
// mkdir -p) and runs every check on that descriptor: not inside the library,
// not containing it, not too long, relocatable. Nothing is created when a
// check fails that can be made before (all but the library's identity when
// the target exists).
Fd open_checked_target(const Library& lib, const Catalog& cat, const std::string& target, const RestoreOptions& opts,
                       std::string& real_target, RelocationPlan& reloc) {
  const bool keep_blocked = opts.keep_unrelocated;
  check_catalog_names(cat, opts.windows_names);
  LibraryIds ids = library_ids(lib);
  Fd tfd = open_target_dir(target, 0755, [&](int parent, const std::string& parent_shown, const std::string& rest) {
    refuse_inside_library(ids, parent, target);
    std::string base = target_path(parent, parent_shown);
    check_target_path(cat, (base == "/" ? "" : base) + "/" + rest, target, keep_blocked);
  });
  refuse_library_in_target(ids, tfd.get(), target);
  refuse_inside_library(ids, tfd.get(), target);
  real_target = target_path(tfd.get(), target);
  reloc = check_target_path(cat, real_target, target, keep_blocked);
  return tfd;
}

// Whether the target holds anything but hpak's own state (and, unless
// `count_temp_states`, the temp states a killed restore left).
bool holds_entries(int tfd, const std::string& target, bool count_temp_states) {
  // A fresh open file description: a dup would share (and advance) tfd's
  // directory offset, and the dirty scan would then miss entries.
  store::DirStream d = store::DirStream::reopen(tfd, target);
  while (auto n = d.next()) {
    if (*n == kStateName) continue;
    if (!count_temp_states && n->rfind(std::string(".tmp") + kStateName, 0) == 0) continue;
    return true;
  }
  return false;
}

// A non-empty target is restored over only if its state file is its own: a
// valid state (magic, version, checksum) that hpak wrote for this very
// directory (the state's recorded target equals the target's real path). A
// state copied from another space names that space, so a copy or a moved
// space needs --force once.
void refuse_foreign_target(const std::optional<RestoreState>& old, const std::string& target) {
  std::string why = !old ? "holds no valid restore state (" + std::string(kStateName) + ")"
                         : "holds a restore state written for '" + old->target + "', not for this directory";
  throw Error("target '" + target + "' is not empty and " + why +
              ": a restore would delete everything there the catalog does not name; use --force to restore over it");
}

// One restore per target at a time: a second waits, or fails with `wait = false`.
void lock_target(int tfd, const std::string& target, bool wait) {
  if (os::flock(tfd, LOCK_EX | LOCK_NB) == 0) return;
  if (errno != EWOULDBLOCK) throw_errno("unable to lock target '" + target + "'");
  if (!wait) throw Error("target '" + target + "' is being restored by another process (retry, or drop --no-wait to wait for it)");
  diag_debug([&] { return "target '" + target + "' is being restored by another process: waiting for it"; });
  if (os::flock(tfd, LOCK_EX) != 0) throw_errno("unable to lock target '" + target + "'");
}

// The state a complete restore leaves (complete and fence_ns set last).
RestoreState new_state(const Library& lib, const std::string& catalog_name, const Catalog& cat, const Digest& digest,
                       Library::StoredCatalog& stored_cat, const std::string& real_target) {
  RestoreState st;
  st.target = real_target;
  st.library = real_path(lib.root());
  st.name = catalog_name;
  st.catalog_digest = digest;
  // The state keeps the catalog as the library stores it (no re-encoding),
  // unless that needs more than itself to read: a dictionary or a base.
  if (stored_cat.codec == Codec::ZstdDict || stored_cat.codec == Codec::ZstdBase) st.set_catalog_raw(encode_catalog(cat, cat.version));
  else st.set_catalog_stored(stored_cat.codec, stored_cat.raw_len, std::move(stored_cat.bytes));
  stored_cat.bytes = Bytes();
  return st;
}

// Fresh (empty target): core/materialize writes the whole tree.
void restore_fresh(const Library& lib, const Catalog& cat, int tfd, const std::string& target, const std::string& real_target,
                   const RestoreState& st, const RestoreOptions& opts, RestoreStats& stats) {
  stats.fresh = true;
  // Before anything is written (the state file included): will it fit?
  check_free_space(tfd, target, space_for_catalog(cat, real_target));
  // Nothing is trusted after a crash here (fence 0), so the state needs no
  // catalog yet.
  write_state(tfd, target, st, StateMark{false, 0, /*with_catalog=*/false});
  MaterializeOptions mo;
  mo.threads = opts.threads;
  mo.restore_mtime = true;
  mo.preserve_setid = opts.preserve_setid;
  mo.check_space = false; // checked above
  mo.relocate_to = RelocTo{real_target, opts.keep_unrelocated};
  mo.verify = opts.verify;
  mo.trust_large_raw = opts.trust_large_raw;
  mo.partial = opts.partial;
  mo.progress = opts.progress;
  MaterializeStats ms = materialize(cat, lib, tfd, target, mo);
  stats.files_written = ms.files;
  stats.dirs_created = ms.dirs;
  stats.links_written = ms.symlinks + ms.hardlinks;
  stats.bytes_written = ms.bytes;
  stats.failures = std::move(ms.failures);
}

// The state written, marked incomplete, before the first change of a dirty
// restore: the old one (its trust basis kept) when it is this target's and
// its catalog readable, else the new one trusting nothing (fence 0). When the
// old state names this very catalog it is written without it: after a crash,
// a restore of the same catalog needs only the digest, and one of another
// catalog, finding none to say what each path held, compares every file.
IncompleteState incomplete_state(const std::optional<RestoreState>& old, const TrustBasis& trust, const Catalog& cat,
                                 const RestoreState& st) {
  if (trust.state_ours && trust.same_catalog) return {*old, StateMark{false, old->fence_ns, /*with_catalog=*/false}};
  if (trust.state_ours && trust.prev(cat)) return {*old, StateMark{false, old->fence_ns}};
  return {st, StateMark{false, 0}};
}

// What a restore frees after its fence is taken, while the wait for the
// coarse clock (one to two of its ticks: it lags the precise clock by up to
// one) passes: the directories the scan opened (closed one by one) and the
// catalog's nodes and their paths. Neither changes the tree.
void release_during_wait(std::optional<TargetScan>& scan, Catalog& cat) {
  scan.reset();
  std::vector<Node>().swap(cat.nodes);
  cat.paths = PathStore();
}

// Dirty (restored before, maybe changed since): scan, plan, apply (see
// core/restore/restore_plan.hpp). Returns false when the target was already right:
// nothing written, the state left as it is. The scan (its directories' open
// descriptors) is left in `scan` for the caller to close.
bool restore_dirty(const Library& lib, const Catalog& cat, const Digest& digest, int tfd, const std::string& target,
                   const std::string& real_target, const std::optional<RestoreState>& old, const RestoreState& st,
                   const RestoreOptions& opts, std::optional<TargetScan>& scan, RestoreStats& stats) {
  TrustBasis trust = trust_basis(old, real_target, digest, target);
  CatalogShape shape(cat);
  const RelocTo reloc{real_target, opts.keep_unrelocated};
  DirtyContext cx{lib, cat, shape, tfd, target, real_target, reloc, trust, opts, opts.threads ? opts.threads : default_threads()};
  scan.emplace(scan_target(cx));
  DirtyPlan plan = plan_dirty(cx, *scan);
  stats.files_compared = plan.compared;
  if (!plan.changes() && old && old->complete && trust.state_ours && old->catalog_digest == digest) {
    stats.files_kept = stats.files;
    return false;
  }
  stats.failures = plan.failures;
  apply_dirty_plan(cx, *scan, plan, incomplete_state(old, trust, cat, st), stats);
  return true;
}

} // namespace

RestoreStats restore(const Library& lib, const std::string& catalog_name, const std::string& target, const RestoreOptions& opts) {
  Digest digest;
  Library::StoredCatalog stored_cat;
  Catalog cat = lib.load_catalog(catalog_name, &digest, &stored_cat, opts.verify);
  if (opts.expect_catalog && digest != *opts.expect_catalog)
    throw Error("catalog '" + catalog_name + "' changed after its signature was checked; restore it again");
  classify_old_catalog(cat, lib);

  std::string real_target;
  RelocationPlan reloc;
  Fd tfd = open_checked_target(lib, cat, target, opts, real_target, reloc);
  lock_target(tfd.get(), target, opts.wait);
  std::optional<RestoreState> old = read_state(tfd.get());
  RestoreStats stats;
  for (auto& n : cat.nodes) stats.files += n.type == NodeType::File;
  stats.relocated = reloc.spliced + reloc.padded;
  stats.kept_unrelocated = reloc.kept;

  bool empty = !holds_entries(tfd.get(), target, true);
  if (!empty && !opts.force && !(old && old->target == real_target) && holds_entries(tfd.get(), target, false))
    refuse_foreign_target(old, target);

  RestoreState st = new_state(lib, catalog_name, cat, digest, stored_cat, real_target);
  std::optional<TargetScan> scan;
  if (empty) {
    restore_fresh(lib, cat, tfd.get(), target, real_target, st, opts, stats);
  } else if (!restore_dirty(lib, cat, digest, tfd.get(), target, real_target, old, st, opts, scan, stats)) {
    lib.touch_used(catalog_name);
    return stats; // nothing to do: no write at all, state stays valid
  }

  if (!stats.failures.empty()) return stats; // state stays incomplete: the next restore repairs
  // The fence is taken after the last change to the tree; writing the state
  // (which changes only the target's root, always read), touching the
  // catalog and release_during_wait overlap its wait, which ends before the
  // restore returns (or throws) and unlocks the target: every change made
  // after that has a ctime at or above it.
  const CtimeFence fence = take_ctime_fence();
  struct WaitFence {
    const CtimeFence& f;
    ~WaitFence() { wait_ctime_fence(f); }
  } wait_fence{fence};
  st.complete = true;
  st.fence_ns = fence.value;
  write_state(tfd.get(), target, st);
  lib.touch_used(catalog_name);
  release_during_wait(scan, cat);
  return stats;
}

} // namespace hpak
