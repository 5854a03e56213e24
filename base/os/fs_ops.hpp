// Filesystem helpers for writing inside a target directory safely.
//
// Every path below a target is resolved with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV), so neither `..` nor a symlink (even
// one swapped in by another process mid-restore) can lead a write outside the
// target, and no mount point inside it (a bind mount of someone else's data,
// another file system) is ever crossed: EXDEV instead.
// Where openat2 is missing (ENOSYS, Linux < 5.6) or refused (EPERM and the
// like, a seccomp profile), the same paths are walked one component at a
// time, each opened with openat(O_NOFOLLOW | O_DIRECTORY) relative to its
// parent's fd; `..`, `.` and empty components are refused, and so is a
// component that is the root of a mount (statx STATX_ATTR_MOUNT_ROOT, Linux
// 5.8+; before that a change of st_dev or of the statx mount id) (EXDEV).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/os/file.hpp"

namespace hpak {

// Opens directory `rel` ("" = the target itself) beneath `target_fd`;
// returns -1 with errno set if it is missing, not a directory, or reached
// only through a symlink (ELOOP) or across a mount point (EXDEV).
int open_dir_beneath(int target_fd, const std::string& rel);

// Whether openat2(2) works here (Linux 5.6+, not refused by a seccomp
// profile); probed once with `dirfd`. Without it, the functions below walk.
bool have_openat2(int dirfd);
// openat2(2) of `rel` beneath `dirfd` with `flags` (and `mode` with O_CREAT),
// resolved RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
// RESOLVE_NO_XDEV; -1 with errno set, ENOSYS where have_openat2 is false (and
// on Windows, which has none). The callers below walk on ENOSYS or EPERM.
int openat2_beneath(int dirfd, const char* rel, int flags, unsigned mode);
// Creates/opens `rel` ("dir/name") beneath `dirfd` with `flags` and `mode`,
// no component resolved through a symlink and none escaping dirfd
// (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS); -1 with errno set.
int create_beneath(int dirfd, const char* rel, int flags, unsigned mode);
// Removes the file `rel` ("name" or "dir/name") beneath `dirfd`, never
// through a symlink; errors are ignored (clean-up after a failure).
void unlink_beneath(int dirfd, const char* rel);

// Sets the mode of dirfd/name without following a symlink there (another
// process may have swapped one in since the caller looked: following it would
// change a file outside the target); throws if name is a symlink now.
void chmod_nofollow(int dirfd, const std::string& name, unsigned mode, const std::string& shown);

// Removes whatever is at dirfd/name: a file, a symlink, or a whole tree.
// A tree is removed iteratively, at any depth, holding at most 33 fds (the
// deepest levels; a level whose fd was closed is reopened through its
// child's ".." and must still have the (st_dev, st_ino) it had). Never
// follows a symlink (it is removed itself), and never enters another mount:
// a directory whose st_dev or mount id (statx STATX_MNT_ID) differs from
// dirfd's — a mount point, a bind mount included — stops the removal with an
// error, its contents untouched.
void remove_entry(int dirfd, const std::string& name, const std::string& shown);

// One record of getdents64(2) (the kernel's struct linux_dirent64).
struct RawDirent {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type; // DT_DIR, DT_REG, ... or DT_UNKNOWN
  char d_name[];
};
// Reads the next records of directory `fd` into buf (getdents64: no DIR*, no
// dup, no rewind); returns the bytes filled, 0 at the end, -1 with errno set.
long read_dirents(int fd, char* buf, size_t size);
// Every entry of directory `fd` but "." and ".." (read_dirents to the end), to
// `take(name, d_type)`; throws naming `shown` when the directory cannot be read.
void each_entry(int fd, const std::string& shown, const std::function<void(const char* name, unsigned char type)>& take);

// What fstatat(AT_SYMLINK_NOFOLLOW) tells of dirfd/name, and whether that
// entry is the root of a mount (a mount point: a bind-mounted file or
// directory, another file system) — from statx STATX_ATTR_MOUNT_ROOT where
// the kernel reports it, else from st_dev differing from dirfd's (`dir_dev`).
// Same cost as fstatat (one statx). Returns -1 with errno set on failure.
int stat_entry(int dirfd, const char* name, os::Dev dir_dev, os::FileStat& st, bool& mount_root);
// Whether the open file or directory `fd` is the root of a mount other than
// the one `parent_fd` is on (statx STATX_ATTR_MOUNT_ROOT, else mount id, else
// st_dev).
bool crosses_mount(int parent_fd, int fd);
// "'SHOWN' is a mount point: ..." — the one-line refusal for a mount point
// found inside a target (nothing in it is removed or written).
[[noreturn]] void refuse_mount_point(const std::string& shown);

// Last component of a '/'-separated path.
inline std::string_view leaf_of(std::string_view path) {
  auto s = path.rfind('/');
  return s == std::string_view::npos ? path : path.substr(s + 1);
}

// The ctime fence in two steps, so that work changing nothing the fence
// covers (a restore writes its state file) overlaps the wait:
//   take_ctime_fence()  after the last change: every file changed before the
//                       call has a ctime strictly below `value` (ns);
//   wait_ctime_fence()  returns once every change made after it will have a
//                       ctime at or above `value` (Linux: the coarse clock,
//                       which file timestamps never fall below, has passed
//                       `mark`; it lags the precise clock by up to a tick,
//                       so up to about two ticks after the take).
// Until the wait returns, a change made meanwhile may get a ctime below it.
struct CtimeFence {
  int64_t value = 0; // ns since the epoch
  int64_t mark = 0;  // the precise clock at the take (the platform's unit)
};
CtimeFence take_ctime_fence();
void wait_ctime_fence(const CtimeFence& f);
// Both steps at once; returns the value.
inline int64_t ctime_fence() {
  CtimeFence f = take_ctime_fence();
  wait_ctime_fence(f);
  return f.value;
}

} // namespace hpak
