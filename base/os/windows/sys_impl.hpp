// The Windows implementation of the os seam's inline functions (base/os/sys.hpp
// documents each; issue 30). Each forwards to an out-of-line function of
// base/os/windows/sys.cpp, so that <windows.h> (its macros: min, max, ERROR,
// DELETE...) stays out of every file that includes the seam. What each call
// becomes in Win32 terms is said there, beside its code.
#pragma once

#include <cerrno>

namespace hpak::os {

namespace win {
int open_at(int dirfd, const char* path, int flags, Mode mode);
int close(int fd);
int dup_fd(int fd);
long read(int fd, void* buf, size_t n);
long pread(int fd, void* buf, size_t n, Off off);
long write(int fd, const void* buf, size_t n);
long pwrite(int fd, const void* buf, size_t n, Off off);
Off seek(int fd, Off off, int whence);
int truncate(int fd, Off size);
bool is_terminal(int fd);
int fstat(int fd, FileStat& st);
int stat_at(int dirfd, const char* path, FileStat& st, int flags);
int fchmod(int fd, Mode mode);
int chmod_at(int dirfd, const char* path, Mode mode);
int set_times(int fd, const TimeSpec times[2]);
int set_times_at(int dirfd, const char* path, const TimeSpec times[2], int flags);
int mkdir_at(int dirfd, const char* path, Mode mode);
int mkdir_open_at(int dirfd, const char* path, Mode mode);
int unlink_at(int dirfd, const char* path, int flags);
int rename_at(int olddirfd, const char* oldpath, int newdirfd, const char* newpath);
int link_at(int olddirfd, const char* oldpath, int newdirfd, const char* newpath, int flags);
int symlink_at(const char* target, int dirfd, const char* path);
long readlink_at(int dirfd, const char* path, char* buf, size_t size);
int fsync(int fd);
int flock(int fd, int op);
void* map_read(int fd, size_t size);
int unmap(void* addr, size_t size);
size_t page_size();
int memfd(const char* name);
long copy_range(int in_fd, Off* in_off, int out_fd, size_t len);
bool fs_free_space(int fd, FsSpace& space);
Dir* dir_from_fd(int fd);
const char* dir_next(Dir* d);
int dir_fd(Dir* d);
void dir_close(Dir* d);
Pid pid();
int host_name(char* buf, size_t size);
} // namespace win

inline int open_at(int dirfd, const char* path, int flags, Mode mode) { return win::open_at(dirfd, path, flags, mode); }
inline int open_path(const char* path, int flags, Mode mode) { return win::open_at(kCwd, path, flags, mode); }
inline int close(int fd) { return win::close(fd); }
inline int dup(int fd) { return win::dup_fd(fd); }
inline long read(int fd, void* buf, size_t n) { return win::read(fd, buf, n); }
inline long pread(int fd, void* buf, size_t n, Off off) { return win::pread(fd, buf, n, off); }
inline long write(int fd, const void* buf, size_t n) { return win::write(fd, buf, n); }
inline long pwrite(int fd, const void* buf, size_t n, Off off) { return win::pwrite(fd, buf, n, off); }
inline Off seek(int fd, Off off, int whence) { return win::seek(fd, off, whence); }
inline int truncate(int fd, Off size) { return win::truncate(fd, size); }
// No read-ahead hint on Windows (FILE_FLAG_SEQUENTIAL_SCAN is an open flag): nothing.
inline void advise_sequential(int, Off, Off) {}
inline bool is_terminal(int fd) { return win::is_terminal(fd); }

inline int fstat(int fd, FileStat& st) { return win::fstat(fd, st); }
inline int stat_at(int dirfd, const char* path, FileStat& st, int flags) { return win::stat_at(dirfd, path, st, flags); }
inline int stat_path(const char* path, FileStat& st) { return win::stat_at(kCwd, path, st, 0); }
inline int lstat_path(const char* path, FileStat& st) { return win::stat_at(kCwd, path, st, AT_SYMLINK_NOFOLLOW); }
inline int fchmod(int fd, Mode mode) { return win::fchmod(fd, mode); }
// A link's own mode cannot be set by name here: EOPNOTSUPP for AT_SYMLINK_NOFOLLOW (the caller opens the file itself).
inline int chmod_at(int dirfd, const char* path, Mode mode, int flags) {
  if (flags & AT_SYMLINK_NOFOLLOW) {
    errno = EOPNOTSUPP;
    return -1;
  }
  return win::chmod_at(dirfd, path, mode);
}
inline int set_times(int fd, const TimeSpec times[2]) { return win::set_times(fd, times); }
inline int set_times_at(int dirfd, const char* path, const TimeSpec times[2], int flags) {
  return win::set_times_at(dirfd, path, times, flags);
}
// The volume serial number's halves (no mountinfo on Windows: nothing matches them).
inline unsigned dev_major(Dev dev) { return unsigned(dev >> 32); }
inline unsigned dev_minor(Dev dev) { return unsigned(dev & 0xffffffffu); }
// No mount ids on Windows.
inline uint64_t mount_id(int) { return 0; }

inline size_t max_path() { return 32767; }
inline int mkdir_at(int dirfd, const char* path, Mode mode) { return win::mkdir_at(dirfd, path, mode); }
inline int mkdir_open_at(int dirfd, const char* path, Mode mode) { return win::mkdir_open_at(dirfd, path, mode); }
inline int unlink_at(int dirfd, const char* path, int flags) { return win::unlink_at(dirfd, path, flags); }
inline int rename_at(int olddirfd, const char* oldpath, int newdirfd, const char* newpath) {
  return win::rename_at(olddirfd, oldpath, newdirfd, newpath);
}
inline int link_at(int olddirfd, const char* oldpath, int newdirfd, const char* newpath, int flags) {
  return win::link_at(olddirfd, oldpath, newdirfd, newpath, flags);
}
inline int symlink_at(const char* target, int dirfd, const char* path) { return win::symlink_at(target, dirfd, path); }
inline long readlink_at(int dirfd, const char* path, char* buf, size_t size) { return win::readlink_at(dirfd, path, buf, size); }
inline int mkdir_path(const char* path, Mode mode) { return win::mkdir_at(kCwd, path, mode); }
inline int unlink_path(const char* path) { return win::unlink_at(kCwd, path, 0); }
inline int rmdir_path(const char* path) { return win::unlink_at(kCwd, path, AT_REMOVEDIR); }
inline int rename_path(const char* oldpath, const char* newpath) { return win::rename_at(kCwd, oldpath, kCwd, newpath); }
inline int link_path(const char* oldpath, const char* newpath) { return win::link_at(kCwd, oldpath, kCwd, newpath, 0); }
inline int chmod_path(const char* path, Mode mode) { return win::chmod_at(kCwd, path, mode); }
inline long readlink_path(const char* path, char* buf, size_t size) { return win::readlink_at(kCwd, path, buf, size); }
// Extended attributes (an overlayfs upper layer's marks) do not exist here: ENOTSUP, as on a
// Linux file system without them; only hpak commit (not built for Windows) asks.
inline long get_xattr_path(const char*, const char*, void*, size_t) {
  errno = ENOTSUP;
  return -1;
}

inline int fsync(int fd) { return win::fsync(fd); }
inline int flock(int fd, int op) { return win::flock(fd, op); }
// Windows has no creation mask (a new file's ACL comes from its directory): keeps none, reports 022.
inline Mode set_umask(Mode) { return 022; }

inline void* map_read(int fd, size_t size) { return win::map_read(fd, size); }
inline int unmap(void* addr, size_t size) { return win::unmap(addr, size); }
// No madvise on Windows: advice is accepted and has no effect.
inline int advise_memory(void*, size_t, int) { return 0; }
inline size_t page_size() { return win::page_size(); }
inline int memfd(const char* name) { return win::memfd(name); }

inline long copy_range(int in_fd, Off* in_off, int out_fd, size_t len) { return win::copy_range(in_fd, in_off, out_fd, len); }

inline bool fs_free_space(int fd, FsSpace& space) { return win::fs_free_space(fd, space); }
// No file system magic on Windows: one constant ("WIN\0"), never NFS's 0x6969.
inline bool fs_type(int, uint64_t& magic) {
  magic = 0x57494e00;
  return true;
}

inline Dir* dir_open(const char* path) {
  int fd = win::open_at(kCwd, path, O_RDONLY | O_DIRECTORY, 0);
  if (fd < 0) return nullptr;
  Dir* d = win::dir_from_fd(fd);
  if (!d) win::close(fd);
  return d;
}
inline Dir* dir_from_fd(int fd) { return win::dir_from_fd(fd); }
inline const char* dir_next(Dir* d) { return win::dir_next(d); }
inline int dir_fd(Dir* d) { return win::dir_fd(d); }
inline void dir_close(Dir* d) { win::dir_close(d); }

// No local sockets on Windows here (connect_local fails with ENOSYS): nothing to send on.
inline long send(int, const void*, size_t) {
  errno = ENOSYS;
  return -1;
}
inline long recv(int, void*, size_t) {
  errno = ENOSYS;
  return -1;
}

inline Uid uid() { return kUser; }
inline Uid euid() { return kUser; }
inline Pid pid() { return win::pid(); }
inline int host_name(char* buf, size_t size) { return win::host_name(buf, size); }

} // namespace hpak::os
