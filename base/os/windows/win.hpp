// The internals of the Windows os seam (issue 30), for base/os/windows/*.cpp
// only: the table of descriptors (an int fd names a HANDLE and the full path
// it was opened by), UTF-8 <-> UTF-16, path resolution and errno from
// GetLastError.
#pragma once

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#include <winioctl.h>

#include <string>
#include <vector>

#include "base/os/sys.hpp"

namespace hpak::os::win {

std::wstring widen(const std::string& s);
std::string narrow(const std::wstring& s);
// A CreateProcessW command line: each argument quoted as the C runtime's
// parser reads it back (CommandLineToArgvW's rules).
std::wstring command_line(const std::vector<std::string>& args);

// errno for the calling thread's GetLastError (ERROR_FILE_NOT_FOUND -> ENOENT,
// ERROR_ACCESS_DENIED -> EACCES, ...); sets it and returns -1.
int fail_last_error();
int errno_of(DWORD err);
int fail(int err); // errno = err; -1

// The handle and recorded full path (no \\?\ prefix, '\' separators) of `fd`;
// INVALID_HANDLE_VALUE with errno EBADF for an fd that is not open.
HANDLE handle_of(int fd);
std::wstring path_of(int fd);
// Enters a handle into the table: its new fd (the lowest free one from 3).
int add_handle(HANDLE h, std::wstring path, bool dir);
// A second fd of the same open file (DuplicateHandle: same file object, same
// locks), -1 with errno.
int dup_fd(int fd);

// The full path `path` names relative to `dirfd` (kCwd: the working
// directory): an absolute path as GetFullPathNameW makes it; a relative one
// joined to the directory fd's recorded path, `.` and `..` resolved by name
// (the directory fd's own path, not its handle: see sys.cpp). Empty with
// errno on failure.
std::wstring resolve(int dirfd, const char* path);
// `\\?\` + a full path (`\\?\UNC\` for \\server\share): no MAX_PATH, no name
// rewriting.
std::wstring long_path(const std::wstring& full);

// 100 ns ticks since 1601 <-> a POSIX time.
TimeSpec timespec_of(int64_t filetime);
int64_t filetime_of(const TimeSpec& ts);

} // namespace hpak::os::win

namespace hpak::os::win {
// getdents64 for base/os/windows/fs_ops.cpp: records shaped as RawDirent, the name at `name_offset`.
long read_dirents(int fd, char* buf, size_t size, size_t name_offset);
} // namespace hpak::os::win
