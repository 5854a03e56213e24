// The Linux part of base/os/fs_ops.hpp (the rest, common to every platform,
// is base/os/fs_ops.cpp): openat2, getdents64, statx (mount points), the
// removal of a tree and the ctime fence.
#include "base/os/fs_ops.hpp"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <vector>

#include "base/diag.hpp"

namespace hpak {

int openat2_beneath(int dirfd, const char* rel, int flags, unsigned mode) {
  if (!have_openat2(dirfd)) {
    errno = ENOSYS;
    return -1;
  }
  struct open_how how;
  std::memset(&how, 0, sizeof how);
  how.flags = uint64_t(flags);
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  return int(syscall(SYS_openat2, dirfd, rel, &how, sizeof how));
}

long read_dirents(int fd, char* buf, size_t size) { return syscall(SYS_getdents64, fd, buf, size); }

bool have_openat2(int dirfd) {
  // Usable only if a probe succeeds: a kernel before 5.6 answers ENOSYS, a
  // seccomp profile may answer EPERM (or anything else); then every caller
  // takes the per-component walk.
  static const bool have = [dirfd] {
    struct open_how how;
    std::memset(&how, 0, sizeof how);
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    int fd = int(syscall(SYS_openat2, dirfd, ".", &how, sizeof how));
    if (fd < 0) {
      diag_debug([] { return std::string("openat2 unavailable (") + strerror(errno) + "): paths in targets resolved one component at a time"; });
      return false;
    }
    close(fd);
    return true;
  }();
  return have;
}

bool crosses_mount(int parent_fd, int fd) {
  struct statx sx, px;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &sx) == 0) {
    if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
    if (statx(parent_fd, "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &px) != 0) return true; // cannot tell: refuse
    if (sx.stx_dev_major != px.stx_dev_major || sx.stx_dev_minor != px.stx_dev_minor) return true;
    return (sx.stx_mask & px.stx_mask & STATX_MNT_ID) && sx.stx_mnt_id != px.stx_mnt_id;
  }
  struct stat a, b; // no statx (seccomp, old kernel): st_dev only
  if (fstat(fd, &a) != 0 || fstat(parent_fd, &b) != 0) return true;
  return a.st_dev != b.st_dev;
}

int stat_entry(int dirfd, const char* name, dev_t dir_dev, struct stat& st, bool& mount_root) {
  struct statx sx;
  if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &sx) == 0) {
    std::memset(&st, 0, sizeof st);
    st.st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    st.st_ino = sx.stx_ino;
    st.st_mode = sx.stx_mode;
    st.st_nlink = sx.stx_nlink;
    st.st_uid = sx.stx_uid;
    st.st_gid = sx.stx_gid;
    st.st_rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor);
    st.st_size = off_t(sx.stx_size);
    st.st_blksize = blksize_t(sx.stx_blksize);
    st.st_blocks = blkcnt_t(sx.stx_blocks);
    st.st_atim = {sx.stx_atime.tv_sec, long(sx.stx_atime.tv_nsec)};
    st.st_mtim = {sx.stx_mtime.tv_sec, long(sx.stx_mtime.tv_nsec)};
    st.st_ctim = {sx.stx_ctime.tv_sec, long(sx.stx_ctime.tv_nsec)};
    mount_root = (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ? (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0 : st.st_dev != dir_dev;
    return 0;
  }
  if (errno != ENOSYS && errno != EPERM) return -1;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return -1;
  mount_root = st.st_dev != dir_dev;
  return 0;
}

namespace {

// Which mount a directory is on: st_dev, and where the kernel tells (statx
// STATX_MNT_ID, Linux 5.8+) the mount id, since a bind mount of a directory
// of the same file system has the same st_dev.
struct Where {
  dev_t dev = 0;
  ino_t ino = 0;
  uint64_t mnt = 0;
  bool has_mnt = false;
};

bool where_is(int fd, Where& w) {
  struct statx sx;
  if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_MNT_ID, &sx) == 0) {
    w.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    w.ino = sx.stx_ino;
    w.has_mnt = (sx.stx_mask & STATX_MNT_ID) != 0;
    w.mnt = sx.stx_mnt_id;
    return true;
  }
  struct stat st; // no statx (seccomp, old kernel): st_dev only
  if (fstat(fd, &st) != 0) return false;
  w.dev = st.st_dev;
  w.ino = st.st_ino;
  return true;
}

bool same_mount(const Where& a, const Where& b) {
  if (a.dev != b.dev) return false;
  return !(a.has_mnt && b.has_mnt) || a.mnt == b.mnt;
}

// One directory of a tree being removed: its fd (-1 while closed to bound
// the fds held; reopened through its child's ".." and checked by (dev, ino)),
// its name in its parent, and the subdirectories still to remove.
struct Level {
  int fd = -1;
  Where id;
  std::string name;
  std::vector<std::string> subdirs;
};

// Directories held open at once at most, whatever the depth.
constexpr size_t kHeldLevels = 32;

class TreeRemover {
public:
  TreeRemover(int top_fd, std::string shown) : top_fd_(top_fd), shown_(std::move(shown)) {
    if (!where_is(top_fd, top_)) throw_errno("unable to examine the directory of '" + shown_ + "'");
  }
  ~TreeRemover() {
    for (auto& l : stack_)
      if (l.fd >= 0) close(l.fd);
  }
  void run(const std::string& name) {
    enter(top_fd_, name);
    while (!stack_.empty()) {
      if (!stack_.back().subdirs.empty()) {
        std::string sub = std::move(stack_.back().subdirs.back());
        stack_.back().subdirs.pop_back();
        enter(stack_.back().fd, sub);
      } else {
        leave();
      }
    }
  }

private:
  std::string path() const {
    std::string p = shown_;
    for (size_t i = 1; i < stack_.size(); i++) p += "/" + stack_[i].name;
    return p;
  }
  // Opens parent/name (never through a symlink, never into another mount),
  // removes every non-directory in it and remembers its subdirectories.
  void enter(int parent, const std::string& name) {
    std::string shown = stack_.empty() ? shown_ : path() + "/" + name;
    int fd = openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return;
      throw_errno("unable to open '" + shown + "'");
    }
    Level l;
    l.fd = fd;
    l.name = name;
    stack_.push_back(std::move(l)); // owns fd from here
    Level& cur = stack_.back();
    if (!where_is(fd, cur.id)) throw_errno("unable to examine '" + shown + "'");
    if (!same_mount(cur.id, top_)) refuse_mount_point(shown);
    each_entry(fd, shown, [&](const char* entry, unsigned char type) {
      if (type != DT_DIR) {
        if (unlinkat(fd, entry, 0) == 0 || errno == ENOENT) return;
        if (errno == EBUSY) refuse_mount_point(shown + "/" + entry);
        if (errno != EISDIR && errno != EPERM) throw_errno("unable to remove '" + shown + "/" + entry + "'");
      }
      cur.subdirs.emplace_back(entry);
    });
    if (stack_.size() > kHeldLevels) {
      Level& far = stack_[stack_.size() - 1 - kHeldLevels];
      close(far.fd);
      far.fd = -1;
    }
  }
  // Removes the (now empty) deepest directory, back in its parent.
  void leave() {
    Level& cur = stack_.back();
    int parent = top_fd_;
    if (stack_.size() > 1) {
      Level& up = stack_[stack_.size() - 2];
      if (up.fd < 0) {
        int fd = openat(cur.fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) throw_errno("unable to reopen the parent of '" + path() + "'");
        Where w;
        bool ok = where_is(fd, w) && w.dev == up.id.dev && w.ino == up.id.ino;
        if (!ok) {
          close(fd);
          throw Error("'" + path() + "' was moved while it was being removed: stopped");
        }
        up.fd = fd;
      }
      parent = up.fd;
    }
    std::string shown = path();
    close(cur.fd);
    cur.fd = -1;
    std::string name = std::move(cur.name);
    stack_.pop_back();
    if (unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) throw_errno("unable to remove '" + shown + "'");
  }

  int top_fd_;
  std::string shown_;
  Where top_;
  std::vector<Level> stack_;
};

} // namespace

void remove_entry(int dirfd, const std::string& name, const std::string& shown) {
  if (unlinkat(dirfd, name.c_str(), 0) == 0 || errno == ENOENT) return;
  if (errno == EBUSY) refuse_mount_point(shown); // a mounted file (or a busy mount)
  if (errno != EISDIR && errno != EPERM) throw_errno("unable to remove '" + shown + "'");
  // A directory: removed iteratively (any depth, at most kHeldLevels + 1 fds),
  // never following a symlink and never entering another mount.
  TreeRemover(dirfd, shown).run(name);
}

static int64_t clock_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A change's ctime is at most the precise time it was made (fine-grained
// "multigrain" ctimes included), so the fence is just above the precise time
// at the take. A later change's ctime is at least the coarse clock when it is
// made, which lags the precise clock by up to a tick: so the wait lasts until
// the coarse clock has passed the take's precise time (measured: waiting for
// one coarse step alone left a ctime 0.6 ms above the fence in 1 of 2,000
// tries when the coarse value was the fence).
CtimeFence take_ctime_fence() {
  const int64_t mark = clock_ns(CLOCK_REALTIME);
  return {mark + 1, mark};
}

void wait_ctime_fence(const CtimeFence& f) {
  static const int64_t tick = [] {
    timespec res{};
    clock_getres(CLOCK_REALTIME_COARSE, &res);
    int64_t ns = int64_t(res.tv_sec) * 1000000000 + res.tv_nsec;
    return ns > 0 && ns <= 100000000 ? ns : 4000000;
  }();
  int64_t coarse;
  while ((coarse = clock_ns(CLOCK_REALTIME_COARSE)) <= f.mark) {
    // Asleep until the coarse clock's next step is due (it steps by `tick`
    // from its value now), then in short steps: no 0.5 ms overshoot.
    int64_t left = coarse + tick - clock_ns(CLOCK_REALTIME);
    timespec pause{0, long(std::clamp<int64_t>(left, 50000, tick))};
    nanosleep(&pause, nullptr);
  }
}

} // namespace hpak
