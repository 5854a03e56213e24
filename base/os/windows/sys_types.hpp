// The Windows implementation of the os seam (base/os/sys.hpp; issue 30): the
// types and the POSIX flag and mode names the interface uses. Windows has no
// such header, so the names are defined here: the ones the C runtime already
// has (O_RDONLY..O_EXCL in <fcntl.h>, S_IFMT..S_IFREG in <sys/stat.h>) keep
// its values, the others take bits of their own that no runtime flag uses.
// What each flag does on Windows is said in base/os/windows/sys.cpp.
// Only base/os includes this file (through sys.hpp); it does not include
// <windows.h> (base/os/windows/win.hpp does, for the .cpp files only).
#pragma once

#include <cstdint>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>

// ---- open flags: the runtime's O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_EXCL, O_APPEND, plus
#ifndef O_ACCMODE
#define O_ACCMODE 0x0003
#endif
#define O_NOFOLLOW 0x00010000  // a reparse point in the last component is not followed: ELOOP
#define O_DIRECTORY 0x00020000 // must be a directory: ENOTDIR
#define O_CLOEXEC 0x00040000   // every handle hpak opens is not inherited: no effect
#define O_NONBLOCK 0x00080000  // no FIFO can stand in a file's place: no effect
#define O_NOCTTY 0x00100000    // no effect
#define O_PATH 0x00200000      // attributes only (FILE_READ_ATTRIBUTES)
#define O_TMPFILE (0x00400000 | O_DIRECTORY) // refused (EOPNOTSUPP): callers fall back to a named file

// ---- *_at flags
#define AT_SYMLINK_NOFOLLOW 0x100
#define AT_REMOVEDIR 0x200
#define AT_SYMLINK_FOLLOW 0x400
#define AT_NO_AUTOMOUNT 0x800
#define AT_EMPTY_PATH 0x1000

// ---- file types and modes (the runtime has S_IFMT, S_IFDIR, S_IFCHR, S_IFIFO, S_IFREG and S_IRWXU..)
#ifndef S_IFBLK
#define S_IFBLK 0x6000
#endif
#ifndef S_IFLNK
#define S_IFLNK 0xA000
#endif
#ifndef S_IFSOCK
#define S_IFSOCK 0xC000
#endif
#ifndef S_ISLNK
#define S_ISLNK(m) (((m)&S_IFMT) == S_IFLNK)
#endif
#ifndef S_ISSOCK
#define S_ISSOCK(m) (((m)&S_IFMT) == S_IFSOCK)
#endif
#ifndef S_ISBLK
#define S_ISBLK(m) (((m)&S_IFMT) == S_IFBLK)
#endif
#ifndef S_IRWXG
#define S_IRWXG 0070
#define S_IRGRP 0040
#define S_IWGRP 0020
#define S_IXGRP 0010
#define S_IRWXO 0007
#define S_IROTH 0004
#define S_IWOTH 0002
#define S_IXOTH 0001
#endif
#ifndef S_ISUID
#define S_ISUID 04000
#define S_ISGID 02000
#define S_ISVTX 01000
#endif

// ---- flock, madvise, directory entry types
#define LOCK_SH 1
#define LOCK_EX 2
#define LOCK_NB 4
#define LOCK_UN 8
#define MADV_NORMAL 0
#define MADV_RANDOM 1
#define MADV_SEQUENTIAL 2
#define MADV_WILLNEED 3
#define MADV_DONTNEED 4
#define DT_UNKNOWN 0
#define DT_DIR 4
#define DT_REG 8
#define DT_LNK 10

namespace hpak::os {

using Mode = uint32_t;
using Off = int64_t;
using Dev = uint64_t;   // the volume serial number
using Ino = uint64_t;   // the NTFS file index (FileId)
using Nlink = uint64_t;
using Uid = uint32_t;   // Windows has no uids: every file reads as the running user's (kUser)
using Pid = uint32_t;
using TimeSpec = struct ::timespec;

// What fstat/stat_at report (base/os/windows/sys.cpp fills it from
// GetFileInformationByHandle and FILE_BASIC_INFO).
struct FileStat {
  Dev st_dev = 0;
  Ino st_ino = 0;
  Mode st_mode = 0;
  Nlink st_nlink = 0;
  Uid st_uid = 0;
  Uid st_gid = 0;
  Dev st_rdev = 0;
  Off st_size = 0;
  int64_t st_blksize = 0;
  int64_t st_blocks = 0;
  TimeSpec st_atim{};
  TimeSpec st_mtim{};
  TimeSpec st_ctim{};
};

struct Dir; // base/os/windows/sys.cpp
// The uid every file and the running user have on Windows (not 0: not root).
constexpr Uid kUser = 1000;
constexpr int kCwd = -100;
constexpr int kStdin = 0, kStdout = 1, kStderr = 2;
// Whether names follow Windows' rules (case folded, reserved device names...:
// core/restore/windows_names.hpp): here they do.
constexpr bool kWindowsNames = true;
// The characters that separate a path's components: Windows takes both.
constexpr char kPathSeparators[] = "/\\";

} // namespace hpak::os
