// The Linux implementation of the os seam (base/os/sys.hpp): the types and the
// POSIX flag and mode names the interface uses, from the system's headers.
// Only base/os includes this file (through sys.hpp).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>

namespace hpak::os {

using FileStat = struct ::stat;
using TimeSpec = struct ::timespec;
using Mode = ::mode_t;
using Off = ::off_t;
using Dev = ::dev_t;
using Ino = ::ino_t;
using Nlink = ::nlink_t;
using Uid = ::uid_t;
using Pid = ::pid_t;
using Dir = ::DIR;
constexpr int kCwd = AT_FDCWD;
constexpr int kStdin = 0, kStdout = 1, kStderr = 2;
// Whether names follow Windows' rules (case folded, reserved device names...:
// core/restore/windows_names.hpp): not here.
constexpr bool kWindowsNames = false;
// The characters that separate a path's components.
constexpr char kPathSeparators[] = "/";

} // namespace hpak::os
