// The apply pass of the dirty restore (see core/restore/restore_plan.hpp).
#include <atomic>
#include <mutex>

#include "base/os/sys.hpp"
#include "base/os/fs_ops.hpp"
#include "base/progress.hpp"
#include "core/restore/restore_plan.hpp"
#include "base/parallel.hpp"

namespace hpak {

using namespace formats;

namespace {

bool writes_file(const Node& n, const NodeStep& st) {
  return n.type == NodeType::File && (st.act == Act::Create || st.act == Act::Rewrite);
}

// What the writes add, less what the replaced files free first.
void check_plan_space(const DirtyContext& cx, const TargetScan& sc, const DirtyPlan& p) {
  SpaceNeed need;
  uint64_t freed = 0;
  for (size_t i = 0; i < cx.cat.nodes.size(); i++) {
    const Node& n = cx.cat.nodes[i];
    const NodeStep& st = p.nodes[i];
    if (writes_file(n, st)) {
      need.add_file(relocated_size(n, cx.cat.roots, cx.real_target));
      // Freed only where the scan saw the file's own blocks (one link, another size).
      bool frees = (st.why == Why::SizeDiffers || st.why == Why::SharedInode) && sc.seen[i].nlink == 1;
      uint64_t bytes = frees ? sc.seen[i].blocks_bytes : 0;
      freed = freed + bytes < freed ? freed : freed + bytes;
    } else if ((n.type == NodeType::Dir || n.type == NodeType::Symlink) && st.act == Act::Create) {
      need.entries++;
    }
  }
  check_free_space(cx.tfd, cx.target, need, freed);
}

// Kept files whose mode or mtime differ: fixed through a descriptor, after
// checking the inode is still the one seen and not shared beyond the
// catalog's own links; otherwise the file is replaced.
void fix_kept_meta(const DirtyContext& cx, const TargetScan& sc, DirtyPlan& p, RestoreStats& stats) {
  for (size_t i = 0; i < cx.cat.nodes.size(); i++) {
    const Node& n = cx.cat.nodes[i];
    NodeStep& st = p.nodes[i];
    if (n.type != NodeType::File || st.act != Act::Keep || !(st.chmod || st.retime)) continue;
    timespec mt = to_timespec(n.mtime_ns);
    if (fix_file_meta(sc.dir_fd[cx.shape.slots.parent[i]], std::string(leaf_of(n.path)), sc.seen[i].ino, cx.shape.links[i],
                      st.chmod ? int(wanted_mode(n, cx.opts.preserve_setid)) : -1, st.retime ? &mt : nullptr,
                      cx.target + "/" + n.path)) {
      stats.modes_fixed += st.chmod;
    } else {
      st.act = Act::Rewrite, st.why = Why::MetaRefused;
    }
    st.chmod = st.retime = false;
  }
}

// The directories whose entries the plan changes (removed, made or replaced).
std::vector<uint8_t> touched_dirs(const DirtyContext& cx, const DirtyPlan& p) {
  std::vector<uint8_t> touched(cx.shape.slot_count(), 0);
  for (auto& r : p.removals) touched[r.slot] = 1;
  for (size_t i = 0; i < cx.cat.nodes.size(); i++)
    if (p.nodes[i].act == Act::Create || p.nodes[i].act == Act::Rewrite) touched[cx.shape.slots.parent[i]] = 1;
  return touched;
}

// A directory we change must be writable by us (a read-only directory of the
// catalog, restored before, is not for a non-root user); its mode is set back
// by finish_dirs.
void make_touched_writable(const DirtyContext& cx, TargetScan& sc, const DirtyPlan& p) {
  std::vector<uint8_t> touched = touched_dirs(cx, p);
  for (size_t s = 1; s < touched.size(); s++) {
    if (!touched[s] || sc.dir_fd[s] < 0 || (sc.dir_mode[s] & 0300) == 0300) continue;
    if (os::fchmod(sc.dir_fd[s], sc.dir_mode[s] | 0700) != 0)
      throw_errno("unable to make '" + cx.target + "/" + cx.cat.nodes[cx.shape.slots.dir_nodes[s]].path + "' writable");
    sc.dir_mode[s] |= 0700;
  }
}

void remove_planned(const DirtyContext& cx, const TargetScan& sc, const DirtyPlan& p, RestoreStats& stats) {
  for (auto& r : p.removals) {
    remove_entry(sc.dir_fd[r.slot], r.name,
                 cx.target + "/" + (r.slot ? cx.cat.nodes[cx.shape.slots.dir_nodes[r.slot]].path + "/" : std::string()) + r.name);
    stats.removed++;
  }
}

// Directories that are missing (or were just removed), in catalog order;
// each opened beneath its parent: never through a symlink, never into a mount.
void make_dirs(const DirtyContext& cx, TargetScan& sc, const DirtyPlan& p, RestoreStats& stats) {
  for (size_t s = 1; s < cx.shape.slot_count(); s++) {
    if (!p.dirs[s].create) continue;
    size_t j = cx.shape.slots.dir_nodes[s];
    const Node& n = cx.cat.nodes[j];
    int pfd = sc.dir_fd[cx.shape.slots.parent[j]];
    std::string name(leaf_of(n.path));
    const unsigned mode = wanted_mode(n, cx.opts.preserve_setid) | 0700;
    if (os::mkdir_at(pfd, name.c_str(), mode) != 0 && errno != EEXIST) throw_errno("unable to create directory '" + cx.target + "/" + n.path + "'");
    if (sc.dir_fd[s] >= 0) os::close(sc.dir_fd[s]);
    sc.dir_fd[s] = open_dir_beneath(pfd, name);
    if (sc.dir_fd[s] < 0) refuse_unopenable_dir(cx.tfd, cx.target, n.path.str(), errno);
    sc.dir_mode[s] = mode;
    sc.dir_mtime[s] = INT64_MIN; // set last, by finish_dirs
    stats.dirs_created++;
  }
}

// Files missing or replaced: created with their final mode (O_EXCL, no
// symlink followed), written, given their mtime. A failed object unlinks its
// file again (with `partial` it is reported, else the restore stops).
void write_files(const DirtyContext& cx, const TargetScan& sc, const DirtyPlan& p, RestoreStats& stats) {
  std::vector<size_t> to_write;
  for (size_t i = 0; i < cx.cat.nodes.size(); i++)
    if (writes_file(cx.cat.nodes[i], p.nodes[i])) to_write.push_back(i);
  std::vector<Bytes> scratch(cx.threads);
  std::atomic<uint64_t> bytes{0};
  std::mutex mu;
  uint64_t failed = 0;
  PassProgress progress(cx.opts.progress, "write", to_write.size());
  const std::vector<std::optional<ObjectRef>> refs = locate_all(cx.cat, to_write, cx.lib, cx.threads);
  const WorkUnits units = work_units(refs);
  auto write_one = [&](size_t k, unsigned tid) {
    progress.tick(tid);
    size_t j = to_write[k];
    const Node& n = cx.cat.nodes[j];
    int pfd = sc.dir_fd[cx.shape.slots.parent[j]];
    std::string name(leaf_of(n.path));
    std::string shown = cx.target + "/" + n.path;
    if (p.nodes[j].act == Act::Rewrite) os::unlink_at(pfd, name.c_str(), 0);
    int fd = os::open_at(pfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, wanted_mode(n, cx.opts.preserve_setid));
    if (fd < 0) throw_errno("unable to create '" + shown + "'");
    Fd guard(fd);
    try {
      auto kept = p.fetched.find(j); // read and checked by the compare: not decoded again
      if (kept != p.fetched.end()) write_file_bytes(n, cx.cat, kept->second, fd, cx.target, cx.reloc);
      else write_file_content(n, cx.cat, refs[k], fd, cx.target, cx.reloc, ReadChecks{cx.opts.verify, cx.opts.trust_large_raw}, scratch[tid]);
    } catch (const Error& e) {
      guard.reset();
      os::unlink_at(pfd, name.c_str(), 0);
      if (!cx.opts.partial) throw Error("'" + shown + "' not restored: " + e.what());
      std::lock_guard lk(mu);
      stats.failures.push_back({n.path.str(), to_hex(n.digest), e.what()});
      failed++;
      return;
    }
    timespec ts[2] = {to_timespec(n.mtime_ns), to_timespec(n.mtime_ns)};
    if (os::set_times(fd, ts) != 0) throw_errno("unable to set the mtime of '" + shown + "'");
    if (os::close(guard.release()) != 0) throw_errno("unable to write '" + shown + "'");
    bytes += relocated_size(n, cx.cat.roots, cx.real_target);
  };
  parallel_for(units.count(), cx.threads, 1, [&](size_t u, unsigned tid) {
    for (size_t i = units.starts[u]; i < units.starts[u + 1]; i++) write_one(units.order[i], tid);
  });
  progress.finish();
  stats.files_written = to_write.size() - failed;
  stats.bytes_written = bytes;
  stats.files_kept = stats.files - to_write.size();
}

// Hardlinks and symlinks missing (or removed); symlinks' mtimes (never followed).
void make_links(const DirtyContext& cx, const TargetScan& sc, const DirtyPlan& p, RestoreStats& stats) {
  for (size_t k = 0; k < cx.shape.link_nodes.size(); k++) {
    const size_t i = cx.shape.link_nodes[k];
    const Node& n = cx.cat.nodes[i];
    const bool create = p.nodes[i].act == Act::Create;
    if (!create && !(n.type == NodeType::Symlink && p.nodes[i].retime)) continue;
    int pfd = sc.dir_fd[cx.shape.slots.parent[i]];
    std::string name(leaf_of(n.path));
    if (n.type == NodeType::Hardlink && create) {
      size_t t = cx.shape.link_target[k];
      if (os::link_at(sc.dir_fd[cx.shape.slots.parent[t]], std::string(leaf_of(n.target)).c_str(), pfd, name.c_str(), 0) != 0) {
        if (cx.opts.partial && errno == ENOENT) continue;
        throw_errno("unable to link '" + cx.target + "/" + n.path + "'");
      }
      stats.links_written++;
    } else if (n.type == NodeType::Symlink && create) {
      std::string want = expected_symlink(n, cx.cat, cx.real_target);
      if (os::symlink_at(want.c_str(), pfd, name.c_str()) != 0) throw_errno("unable to create symlink '" + cx.target + "/" + n.path + "'");
      stats.links_written++;
    }
    if (n.type == NodeType::Symlink && (create || p.nodes[i].retime)) {
      // Checked a symlink with one link by the scan; never followed.
      timespec ts[2] = {to_timespec(n.mtime_ns), to_timespec(n.mtime_ns)};
      if (os::set_times_at(pfd, name.c_str(), ts, AT_SYMLINK_NOFOLLOW) != 0) throw_errno("unable to set the mtime of '" + cx.target + "/" + n.path + "'");
    }
  }
}

// Directory modes and mtimes last, deepest first: every change inside a
// directory is made by now (creating, removing or replacing an entry changes
// its mtime; the mode or mtime of a child does not).
void finish_dirs(const DirtyContext& cx, const TargetScan& sc, const DirtyPlan& p, RestoreStats& stats) {
  std::vector<uint8_t> touched = touched_dirs(cx, p);
  for (size_t s = cx.shape.slot_count() - 1; s >= 1; s--) {
    const Node& n = cx.cat.nodes[cx.shape.slots.dir_nodes[s]];
    const unsigned mode = wanted_mode(n, cx.opts.preserve_setid);
    if (sc.dir_mode[s] != mode) {
      if (os::fchmod(sc.dir_fd[s], mode) != 0) throw_errno("unable to set the mode of '" + cx.target + "/" + n.path + "'");
      stats.modes_fixed++;
    }
    if (touched[s] || sc.dir_mtime[s] != n.mtime_ns) {
      timespec ts[2] = {to_timespec(n.mtime_ns), to_timespec(n.mtime_ns)};
      if (os::set_times(sc.dir_fd[s], ts) != 0) throw_errno("unable to set the mtime of '" + cx.target + "/" + n.path + "'");
    }
  }
}

} // namespace

void apply_dirty_plan(const DirtyContext& cx, TargetScan& sc, DirtyPlan& plan, const IncompleteState& incomplete,
                      RestoreStats& stats) {
  check_plan_space(cx, sc, plan);
  // Marked incomplete before the first change.
  write_state(cx.tfd, cx.target, incomplete.state, incomplete.mark);
  fix_kept_meta(cx, sc, plan, stats);
  drop_stale_hardlinks(cx, sc, plan);
  make_touched_writable(cx, sc, plan);
  remove_planned(cx, sc, plan, stats);
  struct UmaskGuard {
    os::Mode old = os::set_umask(0);
    ~UmaskGuard() { os::set_umask(old); }
  } ug;
  make_dirs(cx, sc, plan, stats);
  write_files(cx, sc, plan, stats);
  make_links(cx, sc, plan, stats);
  finish_dirs(cx, sc, plan, stats);
}

} // namespace hpak
