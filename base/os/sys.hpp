// The operating system behind one seam (issue 29): every system call the engine
// makes goes through the functions below, and nothing outside base/os includes a
// POSIX header (<unistd.h>, <fcntl.h>, <sys/*.h>, <dirent.h>, <pwd.h>, <linux/*.h>;
// enforced by scripts/lint-posix.sh, ctest os_seam).
//
// The interface is POSIX-shaped on purpose: a descriptor is an `int`, a call that
// fails returns -1 (or nullptr, or false) with errno set, so callers keep reporting
// through throw_errno/SystemError (base/error.hpp). The types (`FileStat`, `Mode`,
// `Off`, `Dev`, `Ino`, `Nlink`, `Uid`, `Pid`, `Dir`, `TimeSpec`) and the flag and mode names (O_*, AT_*, S_*,
// LOCK_*, MADV_*, DT_*) are POSIX's spelling: the implementation header of the
// platform provides them: base/os/linux/sys_impl.hpp, whose functions are
// inline wrappers of the system calls (cost zero: no virtual call, no extra
// frame), or on Windows (issue 30) base/os/windows/sys_impl.hpp, whose inline
// functions forward to base/os/windows/sys.cpp (Win32 calls behind a table of
// descriptors), selected below by _WIN32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#if defined(_WIN32)
#include "base/os/windows/sys_types.hpp"
#else
#include "base/os/linux/sys_types.hpp"
#endif

namespace hpak::os {

// ---- descriptors (kStdin, kStdout, kStderr: the standard ones)
// openat(2): `path` relative to `dirfd` (kCwd: the working directory).
inline int open_at(int dirfd, const char* path, int flags, Mode mode = 0);
inline int open_path(const char* path, int flags, Mode mode = 0);
inline int close(int fd);
// A second descriptor of the open file `fd` (the same file description: offset
// and flock shared), close-on-exec (fcntl F_DUPFD_CLOEXEC).
inline int dup(int fd);
inline long read(int fd, void* buf, size_t n);
inline long pread(int fd, void* buf, size_t n, Off off);
inline long write(int fd, const void* buf, size_t n);
inline long pwrite(int fd, const void* buf, size_t n, Off off);
inline Off seek(int fd, Off off, int whence);
inline int truncate(int fd, Off size);
// Advise the kernel that `fd` (a range of it; len 0 = to the end) is read sequentially.
inline void advise_sequential(int fd, Off off = 0, Off len = 0);
// Whether `fd` is a terminal.
inline bool is_terminal(int fd);

// ---- metadata
inline int fstat(int fd, FileStat& st);
// fstatat(2); flags AT_SYMLINK_NOFOLLOW and the like.
inline int stat_at(int dirfd, const char* path, FileStat& st, int flags = 0);
inline int stat_path(const char* path, FileStat& st);  // follows a symlink
inline int lstat_path(const char* path, FileStat& st); // does not
inline int fchmod(int fd, Mode mode);
// fchmodat(2); with AT_SYMLINK_NOFOLLOW, where the mode cannot be set without
// following a link (glibc without /proc; Windows always), EOPNOTSUPP.
inline int chmod_at(int dirfd, const char* path, Mode mode, int flags = 0);
// Sets the access and modification times of `fd` / dirfd/path (nullptr: now).
inline int set_times(int fd, const TimeSpec times[2]);
inline int set_times_at(int dirfd, const char* path, const TimeSpec times[2], int flags);
// The device number's major / minor halves (mountinfo names a file system by them).
inline unsigned dev_major(Dev dev);
inline unsigned dev_minor(Dev dev);
// The mount id of the open `fd` (statx STATX_MNT_ID, Linux 5.8+), or 0 when unknown.
inline uint64_t mount_id(int fd);

// ---- names, fd-relative
// The longest path the platform opens, in bytes with its terminator: PATH_MAX on
// Linux; 32,767 on Windows (every path goes through the \\?\ form: no MAX_PATH).
inline size_t max_path();
inline int mkdir_at(int dirfd, const char* path, Mode mode);
// mkdirat(2), then the new directory opened O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC:
// its descriptor, or -1 with errno (EEXIST: the name exists, nothing made or opened; a
// failed open leaves the directory made). Windows: one NtCreateFile (FILE_CREATE,
// FILE_DIRECTORY_FILE) relative to dirfd's handle, whose handle is kept.
inline int mkdir_open_at(int dirfd, const char* path, Mode mode);
inline int unlink_at(int dirfd, const char* path, int flags = 0); // AT_REMOVEDIR for a directory
inline int rename_at(int olddirfd, const char* oldpath, int newdirfd, const char* newpath);
inline int link_at(int olddirfd, const char* oldpath, int newdirfd, const char* newpath, int flags = 0);
inline int symlink_at(const char* target, int dirfd, const char* path);
inline long readlink_at(int dirfd, const char* path, char* buf, size_t size);
// The same by path (relative to the working directory): for a library's own
// folders, which are opened by name (man/hpak-library.7).
inline int mkdir_path(const char* path, Mode mode);
inline int unlink_path(const char* path);
inline int rmdir_path(const char* path);
inline int rename_path(const char* oldpath, const char* newpath); // replaces newpath
inline int link_path(const char* oldpath, const char* newpath);
inline int chmod_path(const char* path, Mode mode);
inline long readlink_path(const char* path, char* buf, size_t size);
// lgetxattr(2): the value of extended attribute `name` of `path` (a symlink's own);
// its length, or -1 with errno (ENODATA: no such attribute).
inline long get_xattr_path(const char* path, const char* name, void* buf, size_t size);

// ---- durability and locks
inline int fsync(int fd);
// flock(2): LOCK_SH / LOCK_EX / LOCK_UN, | LOCK_NB.
inline int flock(int fd, int op);
// The process's file creation mask: sets `mask`, returns the one before.
inline Mode set_umask(Mode mask);

// ---- memory
// Maps `size` bytes of `fd` read-only (MAP_PRIVATE: no page is ever written, so
// what it reads is the file's); nullptr with errno on failure.
inline void* map_read(int fd, size_t size);
inline int unmap(void* addr, size_t size);
// madvise(2) of a mapped range with MADV_SEQUENTIAL, MADV_RANDOM, MADV_WILLNEED, MADV_DONTNEED...
inline int advise_memory(void* addr, size_t size, int advice);
inline size_t page_size();
// An anonymous file in memory (close-on-exec), named `name` for diagnostics.
inline int memfd(const char* name);

// ---- copies
// copy_file_range(2): up to `len` bytes from in_fd at *in_off (advanced) to out_fd's offset.
// Windows: block cloning (FSCTL_DUPLICATE_EXTENTS_TO_FILE, ReFS / Dev Drive) of whole clusters;
// -1 with EOPNOTSUPP where the volume cannot clone or the offsets are not cluster-aligned.
inline long copy_range(int in_fd, Off* in_off, int out_fd, size_t len);

// ---- file systems
// The space an unprivileged writer has on the file system of `fd` (statvfs f_frsize,
// f_bavail, f_files, f_favail; files 0: the file system does not count inodes);
// false with errno.
struct FsSpace {
  uint64_t block_size = 0;
  uint64_t blocks_free = 0;      // what this user may take
  uint64_t blocks_free_root = 0; // with the blocks reserved for root
  uint64_t files = 0;
  uint64_t files_free = 0;
};
inline bool fs_free_space(int fd, FsSpace& space);
// The file system type magic of `fd` (statfs f_type: 0x6969 is NFS); false with errno.
inline bool fs_type(int fd, uint64_t& magic);

// ---- directories (opendir/readdir): `Dir` is opaque
inline Dir* dir_open(const char* path);
inline Dir* dir_from_fd(int fd); // takes ownership of fd on success
// The next entry's name (including "." and ".."), nullptr at the end or on error
// (errno tells which: 0 at the end).
inline const char* dir_next(Dir* d);
inline int dir_fd(Dir* d);
inline void dir_close(Dir* d);

// ---- processes and local sockets (not on hot paths: out of line)
// Runs `argv[0]` (looked up in PATH) with `argv` and this process's environment and
// waits for it; its exit status (128 + the signal that killed it), or -1 with
// errno when it could not be started.
int run_program(const std::vector<std::string>& argv);
// A private new directory from `templ` ending in XXXXXX (mkdtemp); false with errno.
bool make_temp_dir(std::string& templ);
// A new file from `templ` ending in XXXXXX (mkostemp, close-on-exec), open for
// reading and writing; its descriptor, or -1 with errno.
int make_temp_file(std::string& templ);
// Connects a stream socket to the local (Unix-domain) socket at `path`, with
// send and receive timeouts of `timeout_s`; -1 with errno (ENAMETOOLONG: a path
// the address cannot hold).
int connect_local(const std::string& path, int timeout_s);
// send(2) without SIGPIPE / recv(2) on a connected socket; -1 with errno.
inline long send(int fd, const void* buf, size_t n);
inline long recv(int fd, void* buf, size_t n);
// For a process that runs one command and exits: a freed block of up to
// 32 MiB goes back to the heap for the next allocation instead of back to the
// kernel (glibc's malloc otherwise maps a block above 128 KiB afresh and
// unmaps it on free: every page of it faults again, until its sliding
// threshold has risen to these same values). Nothing on Windows.
void keep_freed_memory();
// Makes the whole pages inside [p, p + n) resident and writable in one call
// (madvise MADV_POPULATE_WRITE): about half what faulting them in one by one on
// first touch costs, for a large buffer about to be filled. Nothing below
// 128 KiB (memory the heap reuses is resident already, and there the call only
// costs), on a kernel without it (before 5.14), or on Windows.
void fault_in(void* p, size_t n);
// v.resize(n) (n >= v.size()), the new elements' pages faulted in first, in one call.
template <class V> void resize_faulted(V& v, size_t n) {
  v.reserve(n);
  fault_in(v.data() + v.size(), (n - v.size()) * sizeof(*v.data()));
  v.resize(n);
}

// ---- shared libraries loaded at run time (a dependency only some commands
// need, so the others do not pay for mapping it at every start; not on hot paths)
// The library `name` (e.g. "libcurl.so.4"), its symbols bound now; nullptr on
// failure, with library_error() saying why.
void* load_library(const char* name);
// The address of `symbol` in a library load_library returned; nullptr if absent.
void* library_symbol(void* library, const char* symbol);
std::string library_error();

// ---- identity
inline Uid uid();
inline Uid euid();
inline Pid pid();
// gethostname(2) into buf (size bytes, NUL-terminated when it fits).
inline int host_name(char* buf, size_t size);
// The login name and home directory of `uid` (passwd database); false when it has none.
bool user_of(Uid uid, std::string* name, std::string* home);
// Why someone other than this user (and root) could change the open file `fd`,
// in a few words ("it belongs to 'bob' (uid 1001)", "group or others may write
// it"), or "" when no one else can. Linux: its owner is not this user or root,
// or its mode has a bit of `others_bits` (022: no one else may write; 077: no
// one else may do anything). Windows (issue 30; base/os/windows/acl.cpp): its
// owner is not this user, Administrators or SYSTEM, it has no DACL (anyone may
// do anything), or an allow ACE of its DACL gives another SID a right to
// change it or what it holds (write, append, delete, delete a child, write its
// attributes or extended attributes, WRITE_DAC, WRITE_OWNER, GENERIC_WRITE,
// GENERIC_ALL); `others_bits`' read bits have no Windows form (never checked).
std::string not_private_why(int fd, Mode others_bits);

} // namespace hpak::os

#if defined(_WIN32)
#include "base/os/windows/sys_impl.hpp"
#else
#include "base/os/linux/sys_impl.hpp"
#endif
