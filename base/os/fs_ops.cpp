// base/os/fs_ops.hpp on every platform, written only through the os seam
// (base/os/sys.hpp): opening and creating beneath a target, by openat2 where
// the platform has it (openat2_beneath) and else one component at a time;
// reading a directory's entries.
// What differs by platform is in base/os/linux/fs_ops.cpp and
// base/os/windows/fs_ops.cpp: openat2 itself, reading directories, telling a
// mount point, removing a tree and the ctime fence.
#include "base/os/fs_ops.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace hpak {

namespace {

bool openat2_refused(int err) { return err == ENOSYS || err == EPERM; }

// A component no walk may take: empty, "." or "..", or one holding a
// separator of the platform's ('\' on Windows).
bool escapes(std::string_view comp) {
  return comp.empty() || comp == "." || comp == ".." || comp.find_first_of(os::kPathSeparators) != std::string_view::npos;
}

// The fallback where openat2 is missing (ENOSYS: Windows, Linux < 5.6) or
// refused (EPERM, a seccomp profile): one open per component, each O_NOFOLLOW
// relative to its parent's fd, refusing the components `escapes` names, so no
// symlink and no `..` is ever followed (the guarantees of RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS), nor a mount crossed (RESOLVE_NO_XDEV). Returns an
// O_DIRECTORY fd of `rel`'s directory `dir_count` components deep (all but the
// last when it names a file).
int walk_beneath(int dirfd, std::string_view rel, size_t dir_count) {
  int cur = os::dup(dirfd);
  size_t start = 0;
  for (size_t k = 0; k < dir_count && cur >= 0; k++) {
    size_t slash = rel.find('/', start);
    std::string comp(rel.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    start = slash == std::string_view::npos ? rel.size() : slash + 1;
    if (escapes(comp)) {
      os::close(cur);
      errno = EXDEV; // what RESOLVE_BENEATH answers for an escape
      return -1;
    }
    int next = os::open_at(cur, comp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    if (next >= 0 && crosses_mount(cur, next)) { // what RESOLVE_NO_XDEV answers
      os::close(next);
      next = -1;
      err = EXDEV;
    }
    os::close(cur);
    errno = err;
    cur = next;
  }
  return cur;
}

size_t components(std::string_view rel) { return size_t(std::count(rel.begin(), rel.end(), '/')) + 1; }

} // namespace

int open_dir_beneath(int target_fd, const std::string& rel) {
  if (rel.empty()) return os::dup(target_fd);
  int fd = openat2_beneath(target_fd, rel.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd >= 0 || !openat2_refused(errno)) return fd;
  return walk_beneath(target_fd, rel, components(rel));
}

int create_beneath(int dirfd, const char* rel, int flags, unsigned mode) {
  int fd = openat2_beneath(dirfd, rel, flags, mode);
  if (fd >= 0 || !openat2_refused(errno)) return fd;
  std::string_view r(rel);
  auto slash = r.rfind('/');
  std::string leaf(slash == std::string_view::npos ? r : r.substr(slash + 1));
  if (escapes(leaf)) {
    errno = EXDEV;
    return -1;
  }
  int parent = slash == std::string_view::npos ? os::dup(dirfd) : walk_beneath(dirfd, r.substr(0, slash), components(r.substr(0, slash)));
  if (parent < 0) return -1;
  fd = os::open_at(parent, leaf.c_str(), flags | O_NOFOLLOW, os::Mode(mode));
  int err = errno;
  if (fd >= 0 && crosses_mount(parent, fd)) { // a mounted file: never written
    os::close(fd);
    fd = -1;
    err = EXDEV;
  }
  os::close(parent);
  errno = err;
  return fd;
}

void unlink_beneath(int dirfd, const char* rel) {
  std::string_view r(rel);
  auto slash = r.rfind('/');
  if (slash == std::string_view::npos) {
    os::unlink_at(dirfd, rel, 0);
    return;
  }
  int d = open_dir_beneath(dirfd, std::string(r.substr(0, slash)));
  if (d < 0) return;
  os::unlink_at(d, rel + slash + 1, 0);
  os::close(d);
}

void each_entry(int fd, const std::string& shown, const std::function<void(const char* name, unsigned char type)>& take) {
  std::vector<char> buf(32768);
  for (;;) {
    long got = read_dirents(fd, buf.data(), buf.size());
    if (got < 0) throw_errno("unable to read '" + shown + "'");
    if (got == 0) return;
    for (long off = 0; off < got;) {
      auto* e = reinterpret_cast<const RawDirent*>(buf.data() + off);
      off += e->d_reclen;
      if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
      take(e->d_name, e->d_type);
    }
  }
}

void refuse_mount_point(const std::string& shown) {
  throw Error("'" + shown + "' is a mount point: nothing in another mount is removed or written (unmount it, or restore elsewhere)");
}

void chmod_nofollow(int dirfd, const std::string& name, unsigned mode, const std::string& shown) {
  if (os::chmod_at(dirfd, name.c_str(), os::Mode(mode), AT_SYMLINK_NOFOLLOW) == 0) return;
  // glibc answers EOPNOTSUPP for a symlink, and also where it cannot change
  // the mode through an O_PATH descriptor (no /proc), as Windows always does:
  // then open the file itself, still without following a symlink, and fchmod that.
  if (errno != EOPNOTSUPP && errno != ENOTSUP) throw_errno("unable to set the mode of '" + shown + "'");
  int fd = os::open_at(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) throw Error("'" + shown + "' was replaced by a symlink during the restore (not followed)");
    throw_errno("unable to set the mode of '" + shown + "'");
  }
  Fd guard(fd);
  if (os::fchmod(fd, os::Mode(mode)) != 0) throw_errno("unable to set the mode of '" + shown + "'");
}

} // namespace hpak
