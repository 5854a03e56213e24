// The Windows part of base/os/fs_ops.hpp (issue 30; the rest, common to every
// platform, is base/os/fs_ops.cpp). There is no openat2: every path beneath a
// target is walked one component at a time, each opened with
// O_NOFOLLOW | O_DIRECTORY relative to its parent (base/os/windows/sys.cpp:
// FILE_FLAG_OPEN_REPARSE_POINT, so no symbolic link or junction is ever
// followed: ELOOP), refusing "..", "." and empty components (EXDEV), and a
// component on another volume (its volume serial number differs: EXDEV).
// Windows mount points inside a volume are junctions: reparse points,
// refused as links.
#include "base/os/fs_ops.hpp"

#include <cstddef>
#include <cstring>
#include <vector>

#include "base/os/windows/win.hpp"

namespace hpak {

// No openat2: every path beneath a target is walked (base/os/fs_ops.cpp).
int openat2_beneath(int, const char*, int, unsigned) {
  errno = ENOSYS;
  return -1;
}

long read_dirents(int fd, char* buf, size_t size) {
  static_assert(offsetof(RawDirent, d_off) == 8 && offsetof(RawDirent, d_reclen) == 16 && offsetof(RawDirent, d_type) == 18);
  return os::win::read_dirents(fd, buf, size, offsetof(RawDirent, d_name));
}

bool have_openat2(int) { return false; }

// Another volume (serial number); a mount inside a volume is a junction, never opened.
bool crosses_mount(int parent_fd, int fd) {
  os::FileStat a, b;
  if (os::fstat(fd, a) != 0 || os::fstat(parent_fd, b) != 0) return true;
  return a.st_dev != b.st_dev;
}

int stat_entry(int dirfd, const char* name, os::Dev dir_dev, os::FileStat& st, bool& mount_root) {
  if (os::stat_at(dirfd, name, st, AT_SYMLINK_NOFOLLOW) != 0) return -1;
  mount_root = st.st_dev != dir_dev;
  return 0;
}

namespace {

// A tree is removed depth first by name below the directory fd's path: every
// directory is opened with O_NOFOLLOW (a link is removed itself, never
// entered) and must be on the target's volume.
void remove_tree(int parent, const std::string& name, const std::string& shown, os::Dev dev) {
  int fd = os::open_at(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return;
    throw_errno("unable to open '" + shown + "'");
  }
  Fd guard(fd);
  os::FileStat st;
  if (os::fstat(fd, st) != 0) throw_errno("unable to examine '" + shown + "'");
  if (st.st_dev != dev) refuse_mount_point(shown);
  std::vector<std::string> subdirs;
  each_entry(fd, shown, [&](const char* entry, unsigned char type) {
    if (type != DT_DIR) {
      if (os::unlink_at(fd, entry, 0) == 0 || errno == ENOENT) return;
      if (errno != EISDIR) throw_errno("unable to remove '" + shown + "/" + entry + "'");
    }
    subdirs.emplace_back(entry);
  });
  for (auto& s : subdirs) remove_tree(fd, s, shown + "/" + s, dev);
  guard = Fd();
  if (os::unlink_at(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) throw_errno("unable to remove '" + shown + "'");
}

} // namespace

void remove_entry(int dirfd, const std::string& name, const std::string& shown) {
  if (os::unlink_at(dirfd, name.c_str(), 0) == 0 || errno == ENOENT) return;
  if (errno != EISDIR) throw_errno("unable to remove '" + shown + "'");
  os::FileStat top;
  if (os::fstat(dirfd, top) != 0) throw_errno("unable to examine the directory of '" + shown + "'");
  remove_tree(dirfd, name, shown, top.st_dev);
}

namespace {
int64_t now_100ns(bool precise) {
  FILETIME f;
  if (precise) GetSystemTimePreciseAsFileTime(&f);
  else GetSystemTimeAsFileTime(&f);
  return int64_t((uint64_t(f.dwHighDateTime) << 32) | f.dwLowDateTime);
}
} // namespace

// A file's ChangeTime is taken from a clock that may lag the precise one by a
// tick (Windows: up to 15.6 ms; under Wine, Linux's coarse clock): the fence is
// just above the precise time at the take, and the wait lasts until the precise
// clock is 20 ms past it, so every change after the wait has a ChangeTime at
// or above it.
CtimeFence take_ctime_fence() {
  const int64_t last = now_100ns(true);
  os::TimeSpec ts = os::win::timespec_of(last + 1);
  return {int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec, last};
}

void wait_ctime_fence(const CtimeFence& f) {
  while (now_100ns(true) <= f.mark + 200000) Sleep(1);
}

} // namespace hpak
