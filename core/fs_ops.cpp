#include "core/fs_ops.hpp"

#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

namespace hpak {

int open_dir_beneath(int target_fd, const std::string& rel) {
  if (rel.empty()) return dup(target_fd);
  struct open_how how;
  std::memset(&how, 0, sizeof how);
  how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return int(syscall(SYS_openat2, target_fd, rel.c_str(), &how, sizeof how));
}

long read_dirents(int fd, char* buf, size_t size) { return syscall(SYS_getdents64, fd, buf, size); }

bool have_openat2(int dirfd) {
  static const bool have = [dirfd] {
    struct open_how how;
    std::memset(&how, 0, sizeof how);
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    int fd = int(syscall(SYS_openat2, dirfd, ".", &how, sizeof how));
    if (fd < 0) return errno != ENOSYS;
    close(fd);
    return true;
  }();
  return have;
}

int create_beneath(int dirfd, const char* rel, int flags, unsigned mode) {
  struct open_how how;
  std::memset(&how, 0, sizeof how);
  how.flags = uint64_t(flags);
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return int(syscall(SYS_openat2, dirfd, rel, &how, sizeof how));
}

void unlink_beneath(int dirfd, const char* rel) {
  std::string_view r(rel);
  auto slash = r.rfind('/');
  if (slash == std::string_view::npos) {
    unlinkat(dirfd, rel, 0);
    return;
  }
  int d = open_dir_beneath(dirfd, std::string(r.substr(0, slash)));
  if (d < 0) return;
  unlinkat(d, rel + slash + 1, 0);
  close(d);
}

void chmod_nofollow(int dirfd, const std::string& name, unsigned mode, const std::string& shown) {
  if (fchmodat(dirfd, name.c_str(), mode_t(mode), AT_SYMLINK_NOFOLLOW) == 0) return;
  // glibc answers EOPNOTSUPP for a symlink, and also where it cannot change
  // the mode through an O_PATH descriptor (no /proc): then open the file
  // itself, still without following a symlink, and fchmod that.
  if (errno != EOPNOTSUPP && errno != ENOTSUP) throw_errno("unable to set the mode of '" + shown + "'");
  int fd = openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) throw Error("'" + shown + "' was replaced by a symlink during the restore (not followed)");
    throw_errno("unable to set the mode of '" + shown + "'");
  }
  Fd guard(fd);
  if (fchmod(fd, mode_t(mode)) != 0) throw_errno("unable to set the mode of '" + shown + "'");
}

void remove_entry(int dirfd, const std::string& name, const std::string& shown) {
  if (unlinkat(dirfd, name.c_str(), 0) == 0 || errno == ENOENT) return;
  if (errno != EISDIR && errno != EPERM) throw_errno("unable to remove '" + shown + "'");
  int fd = openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw_errno("unable to open '" + shown + "'");
  {
    Fd guard(fd);
    int dup_fd = dup(fd);
    DIR* d = fdopendir(dup_fd);
    if (!d) {
      close(dup_fd);
      throw_errno("unable to read '" + shown + "'");
    }
    std::vector<std::string> names;
    while (auto* e = readdir(d))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) names.emplace_back(e->d_name);
    closedir(d);
    for (auto& n : names) remove_entry(fd, n, shown + "/" + n);
  }
  if (unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) throw_errno("unable to remove '" + shown + "'");
}

static int64_t clock_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t ctime_fence() {
  // A change's ctime is at most the precise time it was made (fine-grained
  // "multigrain" ctimes included), while the coarse clock lags the precise
  // one by up to a tick even right after it moves: so wait for the coarse
  // clock to pass the precise time now, not merely to move (measured: one
  // coarse step left a ctime 0.6 ms above the fence in 1 of 2,000 tries).
  const int64_t last = clock_ns(CLOCK_REALTIME);
  int64_t now;
  while ((now = clock_ns(CLOCK_REALTIME_COARSE)) <= last) {
    timespec pause{0, 500000};
    nanosleep(&pause, nullptr);
  }
  return now;
}

} // namespace hpak
