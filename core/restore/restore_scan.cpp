// The scan pass of the dirty restore (see core/restore/restore_plan.hpp).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

#include "base/os/sys.hpp"
#include "base/os/fs_ops.hpp"
#include "base/progress.hpp"
#include "core/pack/relocation.hpp"
#include "core/restore/restore_plan.hpp"
#include "base/parallel.hpp"

namespace hpak {

using namespace formats;

CatalogShape::CatalogShape(const Catalog& cat) : slots(dir_slots(cat)) {
  // Siblings come in name order (path_less): each slot's children are sorted
  // by name, for binary search.
  const size_t n = cat.nodes.size();
  child_begin.assign(slot_count() + 1, 0);
  child_node.resize(n);
  for (size_t i = 0; i < n; i++) child_begin[slots.parent[i] + 1]++;
  for (size_t s = 1; s < child_begin.size(); s++) child_begin[s] += child_begin[s - 1];
  std::vector<uint32_t> fill(child_begin.begin(), child_begin.end() - 1);
  for (size_t i = 0; i < n; i++) child_node[fill[slots.parent[i]]++] = uint32_t(i);
  // A child's leaf follows its directory's path and a '/' (decode checked
  // every parent is the directory before it): no search for the last '/'.
  child_leaf.resize(n);
  for (size_t k = 0; k < n; k++) {
    std::string_view path = cat.nodes[child_node[k]].path;
    const uint32_t slot = slots.parent[child_node[k]];
    child_leaf[k] = std::string_view(path).substr(slot == 0 ? 0 : cat.nodes[slots.dir_nodes[slot]].path.size() + 1);
  }
  links.assign(n, 1);
  for (size_t i = 0; i < n; i++) {
    const NodeType type = cat.nodes[i].type;
    if (type != NodeType::Symlink && type != NodeType::Hardlink) continue;
    link_nodes.push_back(uint32_t(i));
    link_target.push_back(0);
    if (type != NodeType::Hardlink) continue;
    link_target.back() = uint32_t(*find_path(cat, cat.nodes[i].target)); // decode checked it exists
    links[link_target.back()]++;
  }
}

std::optional<size_t> CatalogShape::find_child(const Catalog&, size_t slot, std::string_view name) const {
  auto first = child_leaf.begin() + child_begin[slot], last = child_leaf.begin() + child_begin[slot + 1];
  auto it = std::lower_bound(first, last, name);
  if (it == last || *it != name) return std::nullopt;
  return child_node[size_t(it - child_leaf.begin())];
}

TargetScan::~TargetScan() { close_fds(dir_fd); }

std::string expected_symlink(const Node& n, const Catalog& cat, const std::string& real_target) {
  return relocated_link(n, cat.roots, real_target);
}

[[noreturn]] void refuse_unopenable_dir(int tfd, const std::string& target, const std::string& rel, int err) {
  if (err == EXDEV) {
    for (size_t at = rel.find('/'); at != std::string::npos; at = rel.find('/', at + 1)) {
      int fd = open_dir_beneath(tfd, rel.substr(0, at));
      if (fd >= 0) {
        os::close(fd);
      } else if (errno == EXDEV) {
        refuse_mount_point(target + "/" + rel.substr(0, at));
      }
    }
    refuse_mount_point(target + "/" + rel);
  }
  throw Error("directory '" + target + "/" + rel + "' exists but cannot be opened (" + std::strerror(err) +
              "): fix its permissions or remove it, then restore again");
}

namespace {

int64_t ctime_ns(const os::FileStat& st) { return int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec; }

EntryKind kind_of(os::Mode m) {
  if (S_ISDIR(m)) return EntryKind::Dir;
  if (S_ISREG(m)) return EntryKind::File;
  if (S_ISLNK(m)) return EntryKind::Symlink;
  return EntryKind::Other;
}

// Each slot's directory as the scan threads open it: kPending until its pass
// runs, then its fd or kAbsent. A pass opens its directory beneath the
// nearest ancestor already open, so most opens resolve one component, not
// the whole path from the target (a tree 8 directories deep on average).
class OpenDirs {
public:
  static constexpr int kPending = -2, kAbsent = -1;
  explicit OpenDirs(size_t slots) : state_(new std::atomic<int>[slots]) {
    for (size_t s = 0; s < slots; s++) state_[s].store(kPending, std::memory_order_relaxed);
  }
  void publish(size_t slot, int fd) { state_[slot].store(fd < 0 ? kAbsent : fd, std::memory_order_release); }
  int state(size_t slot) const { return state_[slot].load(std::memory_order_acquire); }

private:
  std::unique_ptr<std::atomic<int>[]> state_;
};

// One catalog directory: opened beneath the target (through the nearest
// ancestor already open), its mode and mtime read, each entry matched with
// the catalog and examined.
class DirScanner {
public:
  DirScanner(const DirtyContext& cx, TargetScan& sc, OpenDirs& open, size_t slot, std::vector<char>& buf)
      : cx_(cx), sc_(sc), open_(open), slot_(slot), buf_(buf),
        rel_(slot == 0 ? std::string() : cx.cat.nodes[cx.shape.slots.dir_nodes[slot]].path.str()) {}

  // The strays found (the caller merges them).
  std::vector<Stray> run() {
    if (!open_dir()) return {};
    if (listing_unchanged()) {
      examine_catalog_children();
      return {};
    }
    read_entries();
    return std::move(strays_);
  }

private:
  // Unchanged since the last restore of this catalog completed (see
  // TrustBasis::listings). The root is always read: the state is renamed
  // into it after the fence. --verify-content reads every directory.
  bool listing_unchanged() const {
    return slot_ != 0 && cx_.trust.listings && !cx_.opts.verify_content && ctime_ns(dst_) < cx_.trust.fence_ns;
  }

  // The entries are the catalog's: each non-directory child is examined by
  // name; a child directory is seen by its own pass (resolve_listed_dirs).
  void examine_catalog_children() {
    sc_.dir_listed[slot_] = 1;
    const auto& sh = cx_.shape;
    for (size_t k = sh.child_begin[slot_]; k < sh.child_begin[slot_ + 1]; k++) {
      size_t i = sh.child_node[k];
      const Node& n = cx_.cat.nodes[i];
      if (n.type == NodeType::Dir) continue;
      examine(i, n.path.c_str() + (n.path.size() - sh.child_leaf[k].size()));
    }
  }

  void read_entries() {
    for (;;) {
      long got = read_dirents(fd_, buf_.data(), buf_.size());
      if (got < 0) throw_errno("unable to read '" + cx_.target + (rel_.empty() ? "" : "/" + rel_) + "'");
      if (got == 0) break;
      for (long off = 0; off < got;) {
        auto* e = reinterpret_cast<const RawDirent*>(buf_.data() + off);
        off += e->d_reclen;
        entry(e);
      }
    }
  }

  bool open_dir() {
    fd_ = open_beneath_nearest_open_ancestor();
    open_.publish(slot_, fd_);
    if (fd_ < 0) {
      // Missing, a symlink or not a directory: its parent's pass sees what is there.
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return false;
      refuse_unopenable_dir(cx_.tfd, cx_.target, rel_, errno);
    }
    sc_.dir_fd[slot_] = fd_;
    if (os::fstat(fd_, dst_) != 0) throw_errno("unable to examine '" + cx_.target + (rel_.empty() ? "" : "/" + rel_) + "'");
    sc_.dir_mode[slot_] = dst_.st_mode & 07777;
    sc_.dir_mtime[slot_] = mtime_ns_of(dst_);
    // slot 0's fd is a dup of the target's: its offset is shared.
    if (slot_ == 0 && os::seek(fd_, 0, SEEK_SET) != 0) throw_errno("unable to read '" + cx_.target + "'");
    return true;
  }

  // The root's pass dups the target's fd. Another directory opens beneath the
  // nearest ancestor whose pass has opened it (the target if none has yet);
  // an ancestor found absent means this one is too (errno ENOENT). Either
  // way, no symlink is followed and nothing outside the target is reached.
  int open_beneath_nearest_open_ancestor() {
    if (slot_ == 0) return open_dir_beneath(cx_.tfd, rel_);
    const auto& slots = cx_.shape.slots;
    for (uint32_t a = slots.parent[slots.dir_nodes[slot_]]; a != 0; a = slots.parent[slots.dir_nodes[a]]) {
      int st = open_.state(a);
      if (st == OpenDirs::kPending) continue;
      if (st == OpenDirs::kAbsent) {
        errno = ENOENT;
        return -1;
      }
      return open_dir_beneath(st, rel_.substr(cx_.cat.nodes[slots.dir_nodes[a]].path.size() + 1));
    }
    return open_dir_beneath(cx_.tfd, rel_);
  }

  std::string shown(std::string_view name) const {
    return cx_.target + "/" + (rel_.empty() ? "" : rel_ + "/") + std::string(name);
  }

  // An entry to remove: never a mount point (refused before any change).
  void stray(const char* name, bool temp_state) {
    os::FileStat s;
    bool mount_root = false;
    if (stat_entry(fd_, name, dst_.st_dev, s, mount_root) == 0 && mount_root) refuse_mount_point(shown(name));
    strays_.push_back({uint32_t(slot_), std::string(name), temp_state});
  }

  void entry(const RawDirent* e) {
    std::string_view name(e->d_name);
    if (name == "." || name == "..") return;
    if (slot_ == 0 && name == kStateName) return;
    if (slot_ == 0 && name.rfind(std::string(".tmp") + kStateName, 0) == 0) {
      // A temp state left by a killed restore (we hold the lock: no one writes one now).
      stray(e->d_name, true);
      return;
    }
    auto found = cx_.shape.find_child(cx_.cat, slot_, name);
    if (!found) {
      stray(e->d_name, false);
      return;
    }
    if (cx_.cat.nodes[*found].type == NodeType::Dir && e->d_type == DT_DIR) {
      sc_.seen[*found].kind = EntryKind::Dir; // its own pass opens it (no symlink followed) and reads its mode
      return;
    }
    examine(*found, e->d_name);
  }

  // Catalog node `i`, named `name` in this directory: what is there.
  void examine(size_t i, const char* name) {
    const Node& n = cx_.cat.nodes[i];
    SeenEntry& seen = sc_.seen[i];
    os::FileStat s;
    bool mount_root = false;
    if (stat_entry(fd_, name, dst_.st_dev, s, mount_root) != 0) {
      if (errno == ENOENT) return;
      throw_errno("unable to stat '" + shown(name) + "'");
    }
    // A mounted file or directory at a catalog path: never compared,
    // rewritten, chmod'ed or removed; the restore stops before any change.
    if (mount_root) refuse_mount_point(shown(name));
    seen.kind = kind_of(s.st_mode);
    seen.mode = s.st_mode & 07777;
    seen.nlink = s.st_nlink;
    seen.size = uint64_t(s.st_size);
    seen.blocks_bytes = uint64_t(s.st_blocks) * 512;
    seen.ino = s.st_ino;
    seen.ctime_ns = ctime_ns(s);
    seen.mtime_ns = mtime_ns_of(s);
    if (n.type == NodeType::Symlink && seen.kind == EntryKind::Symlink) {
      std::string want = expected_symlink(n, cx_.cat, cx_.real_target);
      std::string have(size_t(s.st_size) + 1, '\0');
      long len = os::readlink_at(fd_, name, have.data(), have.size());
      seen.link_matches = len >= 0 && size_t(len) == want.size() && have.compare(0, want.size(), want) == 0;
    }
  }

  const DirtyContext& cx_;
  TargetScan& sc_;
  OpenDirs& open_;
  size_t slot_;
  std::vector<char>& buf_;
  std::string rel_;
  int fd_ = -1; // owned by sc_.dir_fd once open
  os::FileStat dst_ {};
  std::vector<Stray> strays_;
};

// A directory child of a directory whose listing came from the catalog: a
// directory if its own pass opened it, else whatever is at its name.
void resolve_listed_dirs(const DirtyContext& cx, TargetScan& sc) {
  const auto& slots = cx.shape.slots;
  for (size_t slot = 1; slot < slots.dir_nodes.size(); slot++) {
    size_t i = slots.dir_nodes[slot];
    uint32_t parent = slots.parent[i];
    if (!sc.dir_listed[parent]) continue;
    if (sc.dir_fd[slot] >= 0) {
      sc.seen[i].kind = EntryKind::Dir;
      continue;
    }
    // Rare: the directory changed although its parent's ctime says not.
    os::FileStat ps, s;
    bool mount_root = false;
    std::string leaf(leaf_of(cx.cat.nodes[i].path));
    if (os::fstat(sc.dir_fd[parent], ps) != 0) throw_errno("unable to examine '" + cx.target + "'");
    if (stat_entry(sc.dir_fd[parent], leaf.c_str(), ps.st_dev, s, mount_root) != 0) continue;
    if (mount_root) refuse_mount_point(cx.target + "/" + cx.cat.nodes[i].path);
    sc.seen[i].kind = kind_of(s.st_mode);
  }
}

} // namespace

TargetScan scan_target(const DirtyContext& cx) {
  const size_t slots = cx.shape.slot_count();
  TargetScan sc;
  sc.dir_fd.assign(slots, -1);
  long limit = raise_fd_limit();
  if (long(slots) > limit - 128) throw Error("catalog has more directories than the open-file limit allows");
  reserve_fds(slots + 64); // before the threads: see reserve_fds
  os::resize_faulted(sc.seen, cx.cat.nodes.size());
  sc.dir_mode.assign(slots, 0);
  sc.dir_mtime.assign(slots, 0);
  sc.dir_listed.assign(slots, 0);

  std::vector<std::vector<char>> bufs(cx.threads, std::vector<char>(32768));
  std::mutex mu;
  OpenDirs open(slots);
  PassProgress progress(cx.opts.progress, "scan", slots);
  parallel_for(slots, cx.threads, 4, [&](size_t slot, unsigned tid) {
    progress.tick(tid);
    std::vector<Stray> found = DirScanner(cx, sc, open, slot, bufs[tid]).run();
    if (found.empty()) return;
    std::lock_guard lk(mu);
    for (auto& s : found) sc.strays.push_back(std::move(s));
  });
  progress.finish();
  resolve_listed_dirs(cx, sc);
  std::sort(sc.strays.begin(), sc.strays.end(),
            [](const Stray& a, const Stray& b) { return a.slot != b.slot ? a.slot < b.slot : a.name < b.name; });
  return sc;
}

} // namespace hpak
