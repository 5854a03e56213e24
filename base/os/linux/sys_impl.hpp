// The Linux implementation of the os seam's inline functions (base/os/sys.hpp
// documents each): thin wrappers of the system calls, no state of their own.
#pragma once

#include <cerrno>
#include <cstdio>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

namespace hpak::os {

inline int open_at(int dirfd, const char* path, int flags, Mode mode) { return ::openat(dirfd, path, flags, mode); }
inline int open_path(const char* path, int flags, Mode mode) { return ::openat(AT_FDCWD, path, flags, mode); }
inline int close(int fd) { return ::close(fd); }
inline int dup(int fd) { return ::fcntl(fd, F_DUPFD_CLOEXEC, 0); }
inline long read(int fd, void* buf, size_t n) { return ::read(fd, buf, n); }
inline long pread(int fd, void* buf, size_t n, Off off) { return ::pread(fd, buf, n, off); }
inline long write(int fd, const void* buf, size_t n) { return ::write(fd, buf, n); }
inline long pwrite(int fd, const void* buf, size_t n, Off off) { return ::pwrite(fd, buf, n, off); }
inline Off seek(int fd, Off off, int whence) { return ::lseek(fd, off, whence); }
inline int truncate(int fd, Off size) { return ::ftruncate(fd, size); }
inline void advise_sequential(int fd, Off off, Off len) { ::posix_fadvise(fd, off, len, POSIX_FADV_SEQUENTIAL); }
inline bool is_terminal(int fd) { return ::isatty(fd) == 1; }

inline int fstat(int fd, FileStat& st) { return ::fstat(fd, &st); }
inline int stat_at(int dirfd, const char* path, FileStat& st, int flags) { return ::fstatat(dirfd, path, &st, flags); }
inline int stat_path(const char* path, FileStat& st) { return ::stat(path, &st); }
inline int lstat_path(const char* path, FileStat& st) { return ::lstat(path, &st); }
inline int fchmod(int fd, Mode mode) { return ::fchmod(fd, mode); }
inline int chmod_at(int dirfd, const char* path, Mode mode, int flags) { return ::fchmodat(dirfd, path, mode, flags); }
inline int set_times(int fd, const TimeSpec times[2]) { return ::futimens(fd, times); }
inline int set_times_at(int dirfd, const char* path, const TimeSpec times[2], int flags) {
  return ::utimensat(dirfd, path, times, flags);
}
inline unsigned dev_major(Dev dev) { return major(dev); }
inline unsigned dev_minor(Dev dev) { return minor(dev); }
inline uint64_t mount_id(int fd) {
  struct statx sx;
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID)) return sx.stx_mnt_id;
  return 0;
}

inline size_t max_path() { return PATH_MAX; }
inline int mkdir_at(int dirfd, const char* path, Mode mode) { return ::mkdirat(dirfd, path, mode); }
inline int mkdir_open_at(int dirfd, const char* path, Mode mode) {
  if (::mkdirat(dirfd, path, mode) != 0) return -1;
  return ::openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}
inline int unlink_at(int dirfd, const char* path, int flags) { return ::unlinkat(dirfd, path, flags); }
inline int rename_at(int olddirfd, const char* oldpath, int newdirfd, const char* newpath) {
  return ::renameat(olddirfd, oldpath, newdirfd, newpath);
}
inline int link_at(int olddirfd, const char* oldpath, int newdirfd, const char* newpath, int flags) {
  return ::linkat(olddirfd, oldpath, newdirfd, newpath, flags);
}
inline int symlink_at(const char* target, int dirfd, const char* path) { return ::symlinkat(target, dirfd, path); }
inline long readlink_at(int dirfd, const char* path, char* buf, size_t size) {
  return ::readlinkat(dirfd, path, buf, size);
}
inline int mkdir_path(const char* path, Mode mode) { return ::mkdir(path, mode); }
inline int unlink_path(const char* path) { return ::unlink(path); }
inline int rmdir_path(const char* path) { return ::rmdir(path); }
inline int rename_path(const char* oldpath, const char* newpath) { return ::rename(oldpath, newpath); }
inline int link_path(const char* oldpath, const char* newpath) { return ::link(oldpath, newpath); }
inline int chmod_path(const char* path, Mode mode) { return ::chmod(path, mode); }
inline long readlink_path(const char* path, char* buf, size_t size) { return ::readlink(path, buf, size); }
inline long get_xattr_path(const char* path, const char* name, void* buf, size_t size) {
  return ::lgetxattr(path, name, buf, size);
}

inline int fsync(int fd) { return ::fsync(fd); }
inline int flock(int fd, int op) { return ::flock(fd, op); }
inline Mode set_umask(Mode mask) { return ::umask(mask); }

inline void* map_read(int fd, size_t size) {
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}
inline int unmap(void* addr, size_t size) { return ::munmap(addr, size); }
inline int advise_memory(void* addr, size_t size, int advice) { return ::madvise(addr, size, advice); }
inline size_t page_size() { return size_t(::sysconf(_SC_PAGESIZE)); }
inline int memfd(const char* name) { return ::memfd_create(name, MFD_CLOEXEC); }

inline long copy_range(int in_fd, Off* in_off, int out_fd, size_t len) {
  return ::copy_file_range(in_fd, in_off, out_fd, nullptr, len, 0);
}

inline bool fs_free_space(int fd, FsSpace& space) {
  struct statvfs v;
  if (::fstatvfs(fd, &v) != 0) return false;
  space.block_size = uint64_t(v.f_frsize);
  space.blocks_free = uint64_t(v.f_bavail);
  space.blocks_free_root = uint64_t(v.f_bfree);
  space.files = uint64_t(v.f_files);
  space.files_free = uint64_t(v.f_favail);
  return true;
}
inline bool fs_type(int fd, uint64_t& magic) {
  struct statfs f;
  if (::fstatfs(fd, &f) != 0) return false;
  magic = uint64_t(f.f_type);
  return true;
}

inline Dir* dir_open(const char* path) { return ::opendir(path); }
inline Dir* dir_from_fd(int fd) { return ::fdopendir(fd); }
inline const char* dir_next(Dir* d) {
  errno = 0;
  const struct dirent* e = ::readdir(d);
  return e ? e->d_name : nullptr;
}
inline int dir_fd(Dir* d) { return ::dirfd(d); }
inline void dir_close(Dir* d) { ::closedir(d); }

inline long send(int fd, const void* buf, size_t n) { return ::send(fd, buf, n, MSG_NOSIGNAL); }
inline long recv(int fd, void* buf, size_t n) { return ::recv(fd, buf, n, 0); }

inline Uid uid() { return ::getuid(); }
inline Uid euid() { return ::geteuid(); }
inline Pid pid() { return ::getpid(); }
inline int host_name(char* buf, size_t size) { return ::gethostname(buf, size); }

} // namespace hpak::os
