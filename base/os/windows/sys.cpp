// The Windows os seam (issue 30): what each call of base/os/sys.hpp becomes in
// Win32 terms. Every call sets errno when it fails (win.hpp: errno_of maps
// GetLastError), so callers report through throw_errno as on Linux.
//
// Descriptors: an int names a HANDLE in a process-wide table (table.hpp),
// with the full path it was opened by. open_at, stat_at, mkdir_at,
// set_times_at and readlink_at open a plain relative path (no `.` or `..`
// component) relative to the directory's handle, as openat(2) does:
// NtCreateFile with ObjectAttributes.RootDirectory (open_relative). The other
// *_at calls (unlink, rename, link, symlink), and paths with `.` or `..`,
// resolve the path by name against the directory fd's recorded path (`.` and
// `..` by name too). Opens never follow a reparse point
// (symbolic link, junction) in the last component when asked not to
// (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW: FILE_FLAG_OPEN_REPARSE_POINT; ELOOP as on
// Linux); a reparse point in an earlier component is followed by Windows, so
// the beneath-the-target walks (fs_ops.cpp) open one component at a time.
// Every handle shares read, write and delete (FILE_SHARE_*), so that files
// open in hpak can be renamed and removed as on POSIX.
#include "base/os/windows/win.hpp"

#include <winternl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "base/os/windows/table.hpp"

namespace hpak::os {

struct Dir {
  int fd = -1;
  HANDLE find = INVALID_HANDLE_VALUE;
  bool started = false, done = false;
  WIN32_FIND_DATAW data{};
  std::string name;
};

namespace win {

namespace {

constexpr DWORD kShareAll = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;

// The reparse data of a symbolic link or junction (ntifs.h's REPARSE_DATA_BUFFER, which mingw's user headers lack).
struct ReparseData {
  ULONG tag;
  USHORT length;
  USHORT reserved;
  USHORT substitute_offset, substitute_length, print_offset, print_length;
  union {
    struct {
      ULONG flags;
      WCHAR path[1];
    } symlink;
    struct {
      WCHAR path[1];
    } mount_point;
  };
};

DWORD reparse_tag(HANDLE h) {
  FILE_ATTRIBUTE_TAG_INFO ti{};
  if (!GetFileInformationByHandleEx(h, FileAttributeTagInfo, &ti, sizeof ti)) return 0;
  return ti.ReparseTag;
}

// A reparse point that names another file (symlink, junction): the ones never followed.
bool is_link_tag(DWORD tag) { return tag == IO_REPARSE_TAG_SYMLINK || tag == IO_REPARSE_TAG_MOUNT_POINT || (tag & 0x20000000u); }

// `attributes`: those of a file the call creates (FILE_ATTRIBUTE_NORMAL or
// FILE_ATTRIBUTE_READONLY); an existing file keeps its own.
HANDLE open_handle(const std::wstring& full, DWORD access, DWORD disposition, bool nofollow, DWORD attributes = FILE_ATTRIBUTE_NORMAL) {
  DWORD flags = FILE_FLAG_BACKUP_SEMANTICS | (nofollow ? FILE_FLAG_OPEN_REPARSE_POINT : 0);
  return CreateFileW(long_path(full).c_str(), access, kShareAll, nullptr, disposition, flags | attributes, nullptr);
}

// A path `rel` that NtCreateFile can open relative to a directory handle:
// relative, and without "." or ".." components (NT does not resolve them).
bool plain_relative(const char* rel) {
  std::string_view r(rel ? rel : "");
  if (r.empty() || r[0] == '/' || r[0] == '\\' || (r.size() >= 2 && r[1] == ':')) return false;
  size_t at = 0;
  while (at <= r.size()) {
    size_t next = r.find_first_of("/\\", at);
    if (next == std::string_view::npos) next = r.size();
    std::string_view c = r.substr(at, next - at);
    if (c.empty() || c == "." || c == "..") return false;
    at = next + 1;
  }
  return true;
}

// CreateFileW's dispositions as NtCreateFile's.
ULONG nt_disposition(DWORD d) { return d == CREATE_NEW ? FILE_CREATE : d == OPEN_ALWAYS ? FILE_OPEN_IF : FILE_OPEN; }

// openat(2)'s form: NtCreateFile of `rel` with the directory fd's handle as
// ObjectAttributes.RootDirectory when `rel` is plain_relative (so a directory
// renamed since it was opened is still the one used), else CreateFileW of the
// resolved `full` path. `created`: a new file was made, with `attributes`.
// INVALID_HANDLE_VALUE with errno set.
HANDLE open_relative(int dirfd, const char* rel, const std::wstring& full, DWORD access, DWORD disposition, bool nofollow,
                     ULONG extra_options = 0, bool* created = nullptr, DWORD attributes = FILE_ATTRIBUTE_NORMAL) {
  if (created) *created = false;
  HANDLE root = dirfd == kCwd ? INVALID_HANDLE_VALUE : handle_of(dirfd);
  if (root == INVALID_HANDLE_VALUE || !plain_relative(rel)) {
    HANDLE h = open_handle(full, access, disposition, nofollow, attributes);
    if (h == INVALID_HANDLE_VALUE) fail_last_error();
    else if (created) *created = disposition == CREATE_NEW || GetLastError() != ERROR_ALREADY_EXISTS;
    return h;
  }
  std::wstring name = widen(rel);
  for (auto& c : name)
    if (c == L'/') c = L'\\';
  UNICODE_STRING us;
  us.Buffer = name.data();
  us.Length = us.MaximumLength = USHORT(name.size() * sizeof(WCHAR));
  OBJECT_ATTRIBUTES oa;
  InitializeObjectAttributes(&oa, &us, OBJ_CASE_INSENSITIVE, root, nullptr);
  IO_STATUS_BLOCK io{};
  HANDLE h = INVALID_HANDLE_VALUE;
  ULONG options = FILE_SYNCHRONOUS_IO_NONALERT | FILE_OPEN_FOR_BACKUP_INTENT | (nofollow ? FILE_OPEN_REPARSE_POINT : 0) | extra_options;
  NTSTATUS st = NtCreateFile(&h, access | SYNCHRONIZE, &oa, &io, nullptr, attributes, kShareAll, nt_disposition(disposition), options,
                             nullptr, 0);
  if (st < 0) {
    fail(errno_of(RtlNtStatusToDosError(st)));
    return INVALID_HANDLE_VALUE;
  }
  if (created) *created = io.Information == FILE_CREATED;
  return h;
}

// open_relative asking for FILE_WRITE_ATTRIBUTES too, and without it where the ACL denies it.
HANDLE open_relative_attrs(int dirfd, const char* rel, const std::wstring& full, DWORD access, DWORD disposition, bool nofollow,
                           bool* created, DWORD attributes = FILE_ATTRIBUTE_NORMAL) {
  HANDLE h = open_relative(dirfd, rel, full, access | FILE_WRITE_ATTRIBUTES, disposition, nofollow, 0, created, attributes);
  if (h == INVALID_HANDLE_VALUE && errno == EACCES)
    h = open_relative(dirfd, rel, full, access, disposition, nofollow, 0, created, attributes);
  return h;
}

int set_end_of_file(HANDLE h, Off size) {
  FILE_END_OF_FILE_INFO eof{};
  eof.EndOfFile.QuadPart = size;
  return SetFileInformationByHandle(h, FileEndOfFileInfo, &eof, sizeof eof) ? 0 : fail_last_error();
}

int fill_stat(HANDLE h, FileStat& st) {
  st = FileStat{};
  DWORD type = GetFileType(h);
  if (type == FILE_TYPE_PIPE || type == FILE_TYPE_CHAR) {
    st.st_mode = (type == FILE_TYPE_PIPE ? S_IFIFO : S_IFCHR) | 0600;
    st.st_uid = st.st_gid = kUser;
    st.st_nlink = 1;
    return 0;
  }
  BY_HANDLE_FILE_INFORMATION bi;
  if (!GetFileInformationByHandle(h, &bi)) return fail_last_error();
  st.st_dev = bi.dwVolumeSerialNumber;
  st.st_ino = (uint64_t(bi.nFileIndexHigh) << 32) | bi.nFileIndexLow;
  st.st_nlink = bi.nNumberOfLinks;
  st.st_size = Off((uint64_t(bi.nFileSizeHigh) << 32) | bi.nFileSizeLow);
  // The mode from the attributes: a link (a reparse point naming another file), a
  // directory, or a regular file whose write bits are the read-only attribute's
  // opposite. No exec bit, no group or other bits of their own (ACLs are not read).
  if ((bi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) && is_link_tag(reparse_tag(h)))
    st.st_mode = S_IFLNK | 0777;
  else if (bi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
    st.st_mode = S_IFDIR | 0755;
  else
    st.st_mode = S_IFREG | ((bi.dwFileAttributes & FILE_ATTRIBUTE_READONLY) ? 0444 : 0644);
  st.st_uid = st.st_gid = kUser;
  st.st_blksize = 4096;
  st.st_blocks = (st.st_size + 511) / 512;
  auto ft = [](const FILETIME& f) { return int64_t((uint64_t(f.dwHighDateTime) << 32) | f.dwLowDateTime); };
  st.st_atim = timespec_of(ft(bi.ftLastAccessTime));
  st.st_mtim = timespec_of(ft(bi.ftLastWriteTime));
  // ctime: NTFS's ChangeTime (FILE_BASIC_INFO), which every change of data or attributes moves.
  FILE_BASIC_INFO basic{};
  st.st_ctim = GetFileInformationByHandleEx(h, FileBasicInfo, &basic, sizeof basic) ? timespec_of(basic.ChangeTime.QuadPart) : st.st_mtim;
  return 0;
}

// fchmod: only the owner's write bit has a Windows form, the read-only
// attribute (set when it is clear); a directory's mode is not changed.
int set_mode(HANDLE h, Mode mode) {
  FILE_BASIC_INFO b{};
  if (!GetFileInformationByHandleEx(h, FileBasicInfo, &b, sizeof b)) return fail_last_error();
  if (b.FileAttributes & FILE_ATTRIBUTE_DIRECTORY) return 0;
  DWORD want = (mode & 0200) ? (b.FileAttributes & ~DWORD(FILE_ATTRIBUTE_READONLY)) : (b.FileAttributes | FILE_ATTRIBUTE_READONLY);
  if (want == b.FileAttributes) return 0;
  FILE_BASIC_INFO set{};
  set.FileAttributes = want ? want : FILE_ATTRIBUTE_NORMAL; // 0: "no change"
  return SetFileInformationByHandle(h, FileBasicInfo, &set, sizeof set) ? 0 : fail_last_error();
}

// futimens: LastAccessTime and LastWriteTime through the handle (FILE_BASIC_INFO; nullptr: now).
int set_handle_times(HANDLE h, const TimeSpec times[2]) {
  FILE_BASIC_INFO set{};
  if (times) {
    set.LastAccessTime.QuadPart = filetime_of(times[0]);
    set.LastWriteTime.QuadPart = filetime_of(times[1]);
  } else {
    FILETIME now;
    GetSystemTimePreciseAsFileTime(&now);
    set.LastAccessTime.QuadPart = set.LastWriteTime.QuadPart = int64_t((uint64_t(now.dwHighDateTime) << 32) | now.dwLowDateTime);
  }
  return SetFileInformationByHandle(h, FileBasicInfo, &set, sizeof set) ? 0 : fail_last_error();
}

DWORD attributes_of(const std::wstring& full) { return GetFileAttributesW(long_path(full).c_str()); }

// A name that is a reparse point though the handle opened on it says it is a
// plain directory: Wine shows a Unix symbolic link to a directory so (the
// attribute by name, never by handle); on Windows the handle opened with
// FILE_OPEN_REPARSE_POINT says so itself. Such a name is a link: never followed.
bool named_reparse_point(const std::wstring& full) {
  DWORD a = attributes_of(full);
  return a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_REPARSE_POINT);
}

// POSIX removes and replaces a read-only file (the directory's permission
// decides); Windows refuses: the attribute is cleared first, and put back
// when the call still fails.
template <class Call>
BOOL despite_read_only(const std::wstring& full, Call call) {
  if (call()) return TRUE;
  DWORD err = GetLastError();
  DWORD a = attributes_of(full);
  if (err != ERROR_ACCESS_DENIED || a == INVALID_FILE_ATTRIBUTES || !(a & FILE_ATTRIBUTE_READONLY)) {
    SetLastError(err);
    return FALSE;
  }
  SetFileAttributesW(long_path(full).c_str(), a & ~DWORD(FILE_ATTRIBUTE_READONLY));
  if (call()) return TRUE;
  err = GetLastError();
  SetFileAttributesW(long_path(full).c_str(), a);
  SetLastError(err);
  return FALSE;
}

} // namespace

namespace {

// The access an open(2) with `flags` asks for.
DWORD access_of(int flags) {
  DWORD access = FILE_READ_ATTRIBUTES | SYNCHRONIZE;
  int acc = flags & O_ACCMODE;
  if (flags & O_PATH) return access;
  if (flags & O_DIRECTORY) return access | FILE_LIST_DIRECTORY | FILE_TRAVERSE;
  return access | (acc == O_WRONLY ? GENERIC_WRITE : acc == O_RDWR ? GENERIC_READ | GENERIC_WRITE : GENERIC_READ);
}

// The attributes a file created with `mode` gets: read-only without the
// owner's write bit (the handle that creates it still writes: the attribute
// binds later opens only).
DWORD new_file_attributes(Mode mode) { return (mode & 0200) ? FILE_ATTRIBUTE_NORMAL : FILE_ATTRIBUTE_READONLY; }

// An open handle `h` checked against open(2)'s `flags`: a link in the last
// component with O_NOFOLLOW is ELOOP (a reparse point that is the file
// itself is opened again, followed: its data); O_DIRECTORY wants a
// directory, a write no directory; O_TRUNC truncates. The handle to keep
// (`dir`: it is a directory), or INVALID_HANDLE_VALUE with errno set (`h` closed).
HANDLE checked_open(HANDLE h, int dirfd, const char* path, const std::wstring& full, int flags, bool& dir) {
  BY_HANDLE_FILE_INFORMATION bi;
  if (!GetFileInformationByHandle(h, &bi)) {
    int e = errno_of(GetLastError());
    CloseHandle(h);
    return fail(e), INVALID_HANDLE_VALUE;
  }
  const bool nofollow = (flags & O_NOFOLLOW) != 0;
  if (nofollow && (bi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) {
    bool link = is_link_tag(reparse_tag(h));
    if (link && !(flags & O_PATH)) {
      CloseHandle(h);
      return fail(ELOOP), INVALID_HANDLE_VALUE;
    }
    if (!link) {
      CloseHandle(h);
      h = open_relative_attrs(dirfd, path, full, access_of(flags), OPEN_EXISTING, false, nullptr);
      if (h == INVALID_HANDLE_VALUE) return h;
    }
  }
  dir = (bi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) && !(bi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT && nofollow);
  if (nofollow && dir && named_reparse_point(full)) {
    if (!(flags & O_PATH)) {
      CloseHandle(h);
      return fail(ELOOP), INVALID_HANDLE_VALUE;
    }
    dir = false;
  }
  const int acc = flags & O_ACCMODE;
  int err = 0;
  if ((flags & O_DIRECTORY) && !dir) err = ENOTDIR;
  else if (dir && !(flags & O_DIRECTORY) && acc != O_RDONLY) err = EISDIR;
  else if ((flags & O_TRUNC) && !dir && acc != O_RDONLY && set_end_of_file(h, 0) != 0) err = errno;
  if (err) {
    CloseHandle(h);
    return fail(err), INVALID_HANDLE_VALUE;
  }
  return h;
}

} // namespace

// open(2): NtCreateFile relative to the directory's handle, or CreateFileW on
// the \\?\ form of the resolved path (open_relative; read, write or both;
// O_PATH: attributes only; O_DIRECTORY: listing), directories opening too,
// FILE_OPEN_REPARSE_POINT for O_NOFOLLOW (a link there: ELOOP, unless O_PATH
// asks for the link itself). O_CREAT|O_EXCL is CREATE_NEW, O_CREAT
// OPEN_ALWAYS, O_TRUNC a truncation once the open is checked. A new file
// whose mode has no owner write bit is created read-only (the handle that
// created it still writes); no other bit of the mode applies.
// O_CREAT|O_EXCL (without O_DIRECTORY) that succeeds made a new regular file,
// never a link or a directory, empty: nothing to check, and the open is the
// one call (the restore's one create per file: hpak-library(7), "Windows").
int open_at(int dirfd, const char* path, int flags, Mode mode) {
  if ((flags & O_TMPFILE) == O_TMPFILE) return fail(EOPNOTSUPP);
  std::wstring full = resolve(dirfd, path);
  if (full.empty()) return -1;
  DWORD disposition = (flags & O_CREAT) ? ((flags & O_EXCL) ? CREATE_NEW : OPEN_ALWAYS) : OPEN_EXISTING;
  bool nofollow = (flags & O_NOFOLLOW) != 0;
  HANDLE h = open_relative_attrs(dirfd, path, full, access_of(flags), disposition, nofollow, nullptr, new_file_attributes(mode));
  if (h == INVALID_HANDLE_VALUE) return -1;
  bool dir = false;
  const bool new_file = disposition == CREATE_NEW && !(flags & O_DIRECTORY);
  if (!new_file) h = checked_open(h, dirfd, path, full, flags, dir);
  if (h == INVALID_HANDLE_VALUE) return -1;
  return add_handle(h, std::move(full), dir);
}

int close(int fd) {
  auto e = take_entry(fd);
  if (!e) return -1;
  if (e->find != INVALID_HANDLE_VALUE) FindClose(e->find);
  if (e->dir_lock) {
    ReleaseMutex(e->dir_lock);
    CloseHandle(e->dir_lock);
  }
  if (!CloseHandle(e->h)) return fail_last_error();
  return 0;
}

namespace {
constexpr DWORD kMaxIo = 1u << 30;
}

// read(2): ReadFile; a broken pipe or the end of the file is 0 bytes.
long read(int fd, void* buf, size_t n) {
  HANDLE h = handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return -1;
  DWORD got = 0;
  if (!ReadFile(h, buf, DWORD(std::min<size_t>(n, kMaxIo)), &got, nullptr)) {
    DWORD err = GetLastError();
    if (err == ERROR_BROKEN_PIPE || err == ERROR_HANDLE_EOF) return 0;
    return fail(errno_of(err));
  }
  return long(got);
}

// pread(2): ReadFile at an OVERLAPPED offset. Unlike pread, it moves the file
// position (Windows does so for a synchronous handle).
long pread(int fd, void* buf, size_t n, Off off) {
  HANDLE h = handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return -1;
  OVERLAPPED ov{};
  ov.Offset = DWORD(uint64_t(off));
  ov.OffsetHigh = DWORD(uint64_t(off) >> 32);
  DWORD got = 0;
  if (!ReadFile(h, buf, DWORD(std::min<size_t>(n, kMaxIo)), &got, &ov)) {
    DWORD err = GetLastError();
    if (err == ERROR_HANDLE_EOF) return 0;
    return fail(errno_of(err));
  }
  return long(got);
}

long write(int fd, const void* buf, size_t n) {
  HANDLE h = handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return -1;
  DWORD put = 0;
  if (!WriteFile(h, buf, DWORD(std::min<size_t>(n, kMaxIo)), &put, nullptr)) return fail_last_error();
  return long(put);
}

long pwrite(int fd, const void* buf, size_t n, Off off) {
  HANDLE h = handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return -1;
  OVERLAPPED ov{};
  ov.Offset = DWORD(uint64_t(off));
  ov.OffsetHigh = DWORD(uint64_t(off) >> 32);
  DWORD put = 0;
  if (!WriteFile(h, buf, DWORD(std::min<size_t>(n, kMaxIo)), &put, &ov)) return fail_last_error();
  return long(put);
}

// lseek(2): SetFilePointerEx (SEEK_SET/CUR/END are FILE_BEGIN/CURRENT/END).
Off seek(int fd, Off off, int whence) {
  HANDLE h = handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return -1;
  LARGE_INTEGER to, now;
  to.QuadPart = off;
  if (!SetFilePointerEx(h, to, &now, DWORD(whence))) return fail_last_error();
  return now.QuadPart;
}

// ftruncate(2): FileEndOfFileInfo (the file position does not move).
int truncate(int fd, Off size) {
  HANDLE h = handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return -1;
  return set_end_of_file(h, size);
}

bool is_terminal(int fd) {
  HANDLE h = handle_of(fd);
  DWORD mode;
  return h != INVALID_HANDLE_VALUE && GetFileType(h) == FILE_TYPE_CHAR && GetConsoleMode(h, &mode);
}

int fstat(int fd, FileStat& st) {
  HANDLE h = handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return -1;
  return fill_stat(h, st);
}

// fstatat(2): an open for attributes only (never following a link when
// AT_SYMLINK_NOFOLLOW), GetFileInformationByHandle, close.
int stat_at(int dirfd, const char* path, FileStat& st, int flags) {
  if ((flags & AT_EMPTY_PATH) && path && !*path) return win::fstat(dirfd, st);
  std::wstring full = resolve(dirfd, path);
  if (full.empty()) return -1;
  HANDLE h = open_relative(dirfd, path, full, FILE_READ_ATTRIBUTES, OPEN_EXISTING, (flags & AT_SYMLINK_NOFOLLOW) != 0);
  if (h == INVALID_HANDLE_VALUE) return -1;
  int r = fill_stat(h, st);
  int e = errno;
  CloseHandle(h);
  if (r == 0 && (flags & AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode) && named_reparse_point(full)) st.st_mode = S_IFLNK | 0777;
  errno = e;
  return r;
}

int fchmod(int fd, Mode mode) {
  HANDLE h = handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return -1;
  return set_mode(h, mode);
}

// chmod(2) by path (follows a link, as chmod does).
int chmod_at(int dirfd, const char* path, Mode mode) {
  std::wstring full = resolve(dirfd, path);
  if (full.empty()) return -1;
  HANDLE h = open_handle(full, FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES, OPEN_EXISTING, false);
  if (h == INVALID_HANDLE_VALUE) return fail_last_error();
  int r = set_mode(h, mode);
  int e = errno;
  CloseHandle(h);
  errno = e;
  return r;
}

int set_times(int fd, const TimeSpec times[2]) {
  HANDLE h = handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return -1;
  return set_handle_times(h, times);
}

int set_times_at(int dirfd, const char* path, const TimeSpec times[2], int flags) {
  std::wstring full = resolve(dirfd, path);
  if (full.empty()) return -1;
  HANDLE h = open_relative(dirfd, path, full, FILE_WRITE_ATTRIBUTES, OPEN_EXISTING, (flags & AT_SYMLINK_NOFOLLOW) != 0);
  if (h == INVALID_HANDLE_VALUE) return -1;
  int r = set_handle_times(h, times);
  int e = errno;
  CloseHandle(h);
  errno = e;
  return r;
}

// mkdir(2): NtCreateFile(FILE_CREATE, FILE_DIRECTORY_FILE) relative to the
// directory's handle, or CreateDirectoryW by name (the mode is not applied:
// the directory takes its parent's ACL).
int mkdir_at(int dirfd, const char* path, Mode) {
  std::wstring full = resolve(dirfd, path);
  if (full.empty()) return -1;
  if (dirfd == kCwd || !plain_relative(path)) return CreateDirectoryW(long_path(full).c_str(), nullptr) ? 0 : fail_last_error();
  HANDLE h = open_relative(dirfd, path, full, FILE_LIST_DIRECTORY, CREATE_NEW, true, FILE_DIRECTORY_FILE);
  if (h == INVALID_HANDLE_VALUE) return -1;
  CloseHandle(h);
  return 0;
}

// mkdir_open_at: NtCreateFile (FILE_CREATE, FILE_DIRECTORY_FILE, FILE_OPEN_REPARSE_POINT)
// relative to the directory's handle, the handle kept as the new directory's
// descriptor (with FILE_WRITE_ATTRIBUTES where the ACL allows: its times are set
// through it): one call where mkdir + open are two opens and a close. A path
// that cannot be opened relative to a handle: mkdir_at, then open_at.
int mkdir_open_at(int dirfd, const char* path, Mode mode) {
  std::wstring full = resolve(dirfd, path);
  if (full.empty()) return -1;
  if (dirfd == kCwd || !plain_relative(path)) {
    if (mkdir_at(dirfd, path, mode) != 0) return -1;
    return open_at(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
  }
  const DWORD access = access_of(O_RDONLY | O_DIRECTORY);
  HANDLE h = open_relative(dirfd, path, full, access | FILE_WRITE_ATTRIBUTES, CREATE_NEW, true, FILE_DIRECTORY_FILE);
  if (h == INVALID_HANDLE_VALUE && errno == EACCES)
    h = open_relative(dirfd, path, full, access, CREATE_NEW, true, FILE_DIRECTORY_FILE);
  if (h == INVALID_HANDLE_VALUE) return -1;
  return add_handle(h, std::move(full), true);
}

// unlink(2): DeleteFileW (a read-only file too: despite_read_only); a link to a
// directory is removed with RemoveDirectoryW, itself, never what it names; a
// directory is EISDIR. AT_REMOVEDIR: RemoveDirectoryW of a directory (ENOTEMPTY,
// ENOTDIR as rmdir(2)).
int unlink_at(int dirfd, const char* path, int flags) {
  std::wstring full = resolve(dirfd, path);
  if (full.empty()) return -1;
  DWORD a = attributes_of(full);
  if (a == INVALID_FILE_ATTRIBUTES) return fail_last_error();
  std::wstring lp = long_path(full);
  bool dir = a & FILE_ATTRIBUTE_DIRECTORY, link = a & FILE_ATTRIBUTE_REPARSE_POINT;
  if (flags & AT_REMOVEDIR) {
    if (!dir || link) return fail(ENOTDIR);
    return RemoveDirectoryW(lp.c_str()) ? 0 : fail_last_error();
  }
  if (dir && link) return RemoveDirectoryW(lp.c_str()) ? 0 : fail_last_error();
  if (dir) return fail(EISDIR);
  return despite_read_only(full, [&] { return DeleteFileW(lp.c_str()); }) ? 0 : fail_last_error();
}

namespace {
// SetFileInformationByHandle(FileRenameInfoEx) with FILE_RENAME_FLAG_REPLACE_IF_EXISTS
// | FILE_RENAME_FLAG_POSIX_SEMANTICS on the source opened itself (a link is
// renamed, not followed): the name is replaced even while another handle
// holds the old file open, as rename(2) does (Windows 10 1709+). FALSE with
// the error where the system does not have it.
BOOL rename_posix(const std::wstring& from, const std::wstring& to) {
  HANDLE h = open_handle(from, DELETE | SYNCHRONIZE, OPEN_EXISTING, true);
  if (h == INVALID_HANDLE_VALUE) return FALSE;
  std::wstring nt = L"\\??\\" + long_path(to).substr(4);
  struct Info { // FILE_RENAME_INFO with its Windows 10 Flags (mingw declares them for _WIN32_WINNT >= 10 only)
    DWORD flags;
    HANDLE root;
    DWORD length;
    WCHAR name[1];
  };
  std::vector<char> buf(sizeof(Info) + nt.size() * sizeof(WCHAR));
  auto* info = reinterpret_cast<Info*>(buf.data());
  info->flags = 0x1 /* REPLACE_IF_EXISTS */ | 0x2 /* POSIX_SEMANTICS */;
  info->root = nullptr;
  info->length = DWORD(nt.size() * sizeof(WCHAR));
  std::memcpy(info->name, nt.c_str(), (nt.size() + 1) * sizeof(WCHAR));
  BOOL ok = SetFileInformationByHandle(h, FILE_INFO_BY_HANDLE_CLASS(22) /* FileRenameInfoEx */, info, DWORD(buf.size()));
  DWORD err = GetLastError();
  CloseHandle(h);
  SetLastError(err);
  return ok;
}

bool lacks_posix_rename(DWORD err) {
  return err == ERROR_INVALID_PARAMETER || err == ERROR_INVALID_FUNCTION || err == ERROR_NOT_SUPPORTED;
}
} // namespace

// rename(2): rename_posix (replaces the name while the old file is open
// elsewhere); where the system lacks it, MoveFileExW(MOVEFILE_REPLACE_EXISTING),
// which fails (EACCES) when another process holds the old file open. A
// read-only file is replaced too.
int rename_at(int olddirfd, const char* oldpath, int newdirfd, const char* newpath) {
  std::wstring from = resolve(olddirfd, oldpath);
  if (from.empty()) return -1;
  std::wstring to = resolve(newdirfd, newpath);
  if (to.empty()) return -1;
  std::wstring lf = long_path(from), lt = long_path(to);
  return despite_read_only(to, [&] {
           if (rename_posix(from, to)) return TRUE;
           if (!lacks_posix_rename(GetLastError())) return FALSE;
           return MoveFileExW(lf.c_str(), lt.c_str(), MOVEFILE_REPLACE_EXISTING);
         })
             ? 0
             : fail_last_error();
}

// link(2): CreateHardLinkW.
int link_at(int olddirfd, const char* oldpath, int newdirfd, const char* newpath, int) {
  std::wstring from = resolve(olddirfd, oldpath);
  if (from.empty()) return -1;
  std::wstring to = resolve(newdirfd, newpath);
  if (to.empty()) return -1;
  return CreateHardLinkW(long_path(to).c_str(), long_path(from).c_str(), nullptr) ? 0 : fail_last_error();
}

// symlink(2): CreateSymbolicLinkW with SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE
// (developer mode), '/' in the target written as '\', the directory flag when
// the target is a directory now. Without the privilege: EPERM; where the
// call reports success but no link is there afterwards (Wine): EOPNOTSUPP.
int symlink_at(const char* target, int dirfd, const char* path) {
  std::wstring full = resolve(dirfd, path);
  if (full.empty()) return -1;
  std::wstring t = widen(target);
  for (auto& c : t)
    if (c == L'/') c = L'\\';
  bool absolute = !t.empty() && (t[0] == L'\\' || (t.size() >= 2 && t[1] == L':'));
  std::wstring seen = absolute ? t : full.substr(0, full.find_last_of(L'\\')) + L"\\" + t;
  DWORD a = GetFileAttributesW(seen.c_str());
  DWORD flags = 0x2 /* SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE */;
  if (a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY)) flags |= SYMBOLIC_LINK_FLAG_DIRECTORY;
  BOOL ok = CreateSymbolicLinkW(long_path(full).c_str(), t.c_str(), flags);
  DWORD err = GetLastError();
  if (!ok && err == ERROR_INVALID_PARAMETER) { // a Windows before the unprivileged flag
    ok = CreateSymbolicLinkW(long_path(full).c_str(), t.c_str(), flags & ~DWORD(0x2));
    err = GetLastError();
  }
  if (!ok) return fail(err == ERROR_PRIVILEGE_NOT_HELD ? EPERM : errno_of(err));
  // Wine (8.0) answers success and creates nothing: a link that is not there
  // now is EOPNOTSUPP, never a silent success.
  DWORD made = attributes_of(full);
  if (made == INVALID_FILE_ATTRIBUTES || !(made & FILE_ATTRIBUTE_REPARSE_POINT)) return fail(EOPNOTSUPP);
  return 0;
}

// readlink(2): FSCTL_GET_REPARSE_POINT of a symbolic link or junction, its
// print name with '\' given back as '/'; EINVAL for anything else.
long readlink_at(int dirfd, const char* path, char* buf, size_t size) {
  std::wstring full = resolve(dirfd, path);
  if (full.empty()) return -1;
  HANDLE h = open_relative(dirfd, path, full, FILE_READ_ATTRIBUTES, OPEN_EXISTING, true);
  if (h == INVALID_HANDLE_VALUE) return -1;
  std::vector<char> data(16 * 1024 + 64);
  DWORD got = 0;
  BOOL ok = DeviceIoControl(h, FSCTL_GET_REPARSE_POINT, nullptr, 0, data.data(), DWORD(data.size()), &got, nullptr);
  DWORD err = GetLastError();
  CloseHandle(h);
  if (!ok) return fail(err == ERROR_NOT_A_REPARSE_POINT ? EINVAL : errno_of(err));
  auto* r = reinterpret_cast<const ReparseData*>(data.data());
  const WCHAR* base;
  if (r->tag == IO_REPARSE_TAG_SYMLINK) base = r->symlink.path;
  else if (r->tag == IO_REPARSE_TAG_MOUNT_POINT) base = r->mount_point.path;
  else return fail(EINVAL);
  bool print = r->print_length > 0;
  std::wstring t(base + (print ? r->print_offset : r->substitute_offset) / 2, (print ? r->print_length : r->substitute_length) / 2);
  if (t.rfind(L"\\??\\", 0) == 0) t = t.substr(4);
  std::string s = narrow(t);
  for (auto& c : s)
    if (c == '\\') c = '/';
  size_t n = std::min(size, s.size());
  std::memcpy(buf, s.data(), n);
  return long(n);
}

// fsync(2): FlushFileBuffers. A directory has no such flush on Windows (NTFS
// journals its entries): 0. A handle opened read-only cannot flush: the file
// is opened again for writing to flush it (a read-only file then is not flushed: EACCES).
int fsync(int fd) {
  auto e = entry_of(fd);
  if (!e) return -1;
  if (e->dir) return 0;
  if (FlushFileBuffers(e->h)) return 0;
  if (GetLastError() != ERROR_ACCESS_DENIED || e->path.empty()) return fail_last_error();
  HANDLE w = open_handle(e->path, GENERIC_WRITE, OPEN_EXISTING, true);
  if (w == INVALID_HANDLE_VALUE) return fail_last_error();
  BOOL ok = FlushFileBuffers(w);
  DWORD err = GetLastError();
  CloseHandle(w);
  return ok ? 0 : fail(errno_of(err));
}

// flock(2): LockFileEx / UnlockFileEx of one byte at offset 2^62, past any
// data: Windows byte-range locks are mandatory for ReadFile and WriteFile, so
// the byte locked is one no read or write touches. A lock held by a handle
// is converted by unlocking first (as flock's conversion, not atomic).
// LOCK_NB: LOCKFILE_FAIL_IMMEDIATELY, EWOULDBLOCK when held elsewhere.
namespace {
// A directory cannot be byte-range locked: its flock is a named mutex,
// Local\hpak-dirlock-<volume serial>-<file index>, so it works between the
// processes of one session on one machine (not across a network share). The
// mutex belongs to the thread that took it: unlocked by that thread, or by
// the thread's or process's end (abandoned: the next waiter gets it).
// LOCK_SH is taken as LOCK_EX.
int flock_dir(Entry& e, int op) {
  if ((op & LOCK_UN) || !(op & (LOCK_SH | LOCK_EX))) {
    if (e.dir_lock) {
      ReleaseMutex(e.dir_lock);
      CloseHandle(e.dir_lock);
      e.dir_lock = nullptr;
    }
    return 0;
  }
  if (e.dir_lock) return 0;
  BY_HANDLE_FILE_INFORMATION bi;
  if (!GetFileInformationByHandle(e.h, &bi)) return fail_last_error();
  std::wstring name = L"Local\\hpak-dirlock-" + std::to_wstring(bi.dwVolumeSerialNumber) + L"-" +
                      std::to_wstring((uint64_t(bi.nFileIndexHigh) << 32) | bi.nFileIndexLow);
  HANDLE m = CreateMutexW(nullptr, FALSE, name.c_str());
  if (!m) return fail_last_error();
  DWORD w = WaitForSingleObject(m, (op & LOCK_NB) ? 0 : INFINITE);
  if (w != WAIT_OBJECT_0 && w != WAIT_ABANDONED) {
    CloseHandle(m);
    return fail(w == WAIT_TIMEOUT ? EWOULDBLOCK : EIO);
  }
  e.dir_lock = m;
  return 0;
}
} // namespace

int flock(int fd, int op) {
  auto e = entry_of(fd);
  if (!e) return -1;
  if (e->dir) return flock_dir(*e, op);
  OVERLAPPED ov{};
  ov.OffsetHigh = 0x40000000;
  int want = op & (LOCK_SH | LOCK_EX | LOCK_UN);
  if (e->lock && (want == LOCK_UN || want != e->lock)) {
    if (want == e->lock) return 0;
    UnlockFileEx(e->h, 0, 1, 0, &ov);
    e->lock = 0;
  }
  if (want == LOCK_UN) return 0;
  if (e->lock == want) return 0;
  DWORD flags = (want == LOCK_EX ? LOCKFILE_EXCLUSIVE_LOCK : 0) | ((op & LOCK_NB) ? LOCKFILE_FAIL_IMMEDIATELY : 0);
  if (!LockFileEx(e->h, flags, 0, 1, 0, &ov)) {
    DWORD err = GetLastError();
    return fail(err == ERROR_LOCK_VIOLATION || err == ERROR_IO_PENDING ? EWOULDBLOCK : errno_of(err));
  }
  e->lock = want;
  return 0;
}

// mmap(2) read-only: CreateFileMappingW(PAGE_READONLY) and MapViewOfFile; the
// mapping handle is closed at once (the view keeps the section).
void* map_read(int fd, size_t size) {
  HANDLE h = handle_of(fd);
  if (h == INVALID_HANDLE_VALUE) return nullptr;
  HANDLE m = CreateFileMappingW(h, nullptr, PAGE_READONLY, 0, 0, nullptr);
  if (!m) {
    fail_last_error();
    return nullptr;
  }
  void* p = MapViewOfFile(m, FILE_MAP_READ, 0, 0, size);
  DWORD err = GetLastError();
  CloseHandle(m);
  if (!p) fail(errno_of(err));
  return p;
}

int unmap(void* addr, size_t) { return UnmapViewOfFile(addr) ? 0 : fail_last_error(); }

size_t page_size() {
  SYSTEM_INFO si;
  GetSystemInfo(&si);
  return si.dwPageSize;
}

// memfd_create(2): a new file in the temp folder (GetTempPathW), created
// FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE: gone with its last handle.
int memfd(const char* name) {
  static std::atomic<unsigned> counter{0};
  wchar_t dir[MAX_PATH + 1];
  DWORD n = GetTempPathW(MAX_PATH + 1, dir);
  if (n == 0) return fail_last_error();
  std::wstring base(dir, n);
  if (!base.empty() && base.back() == L'\\') base.pop_back();
  for (int attempt = 0; attempt < 16; attempt++) {
    std::wstring full = base + L"\\hpak-" + widen(name ? name : "memfd") + L"-" + std::to_wstring(GetCurrentProcessId()) + L"-" +
                        std::to_wstring(counter++) + L"-" + std::to_wstring(GetTickCount64());
    HANDLE h = CreateFileW(long_path(full).c_str(), GENERIC_READ | GENERIC_WRITE, kShareAll, nullptr, CREATE_NEW,
                           FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE, nullptr);
    if (h != INVALID_HANDLE_VALUE) return add_handle(h, full, false);
    if (GetLastError() != ERROR_FILE_EXISTS) return fail_last_error();
  }
  return fail(EEXIST);
}

// copy_file_range(2) as block cloning (ReFS, Dev Drive): FSCTL_DUPLICATE_EXTENTS_TO_FILE of the
// cluster-aligned head of the range from in_fd at *in_off to out_fd at its position, the file
// extended to hold it first (a clone never extends a file); the cluster size is
// FSCTL_GET_INTEGRITY_INFORMATION's, which only a volume that can clone answers. Where the volume
// cannot clone (NTFS, FAT, SMB, Wine), the offsets are not cluster-aligned or less than a cluster is
// left: -1 with EOPNOTSUPP, and the caller copies the rest through a buffer (core/pack/large_copy.cpp).
namespace {
// Block cloning's control codes and structures (winioctl.h of Windows 10's SDK; mingw-w64 lacks them).
constexpr DWORD kFsctlGetIntegrityInformation = CTL_CODE(FILE_DEVICE_FILE_SYSTEM, 159, METHOD_BUFFERED, FILE_ANY_ACCESS);
constexpr DWORD kFsctlDuplicateExtentsToFile = CTL_CODE(FILE_DEVICE_FILE_SYSTEM, 209, METHOD_BUFFERED, FILE_WRITE_ACCESS);
constexpr DWORD kErrorBlockTooManyReferences = 347;
struct IntegrityInformation {
  WORD ChecksumAlgorithm, Reserved;
  DWORD Flags, ChecksumChunkSizeInBytes, ClusterSizeInBytes;
};
struct DuplicateExtentsData {
  HANDLE FileHandle;
  LARGE_INTEGER SourceFileOffset, TargetFileOffset, ByteCount;
};

uint64_t clone_cluster(HANDLE h) {
  IntegrityInformation info{};
  DWORD got = 0;
  if (!DeviceIoControl(h, kFsctlGetIntegrityInformation, nullptr, 0, &info, sizeof info, &got, nullptr)) return 0;
  return info.ClusterSizeInBytes;
}

bool duplicate_extents(HANDLE in, uint64_t in_off, HANDLE out, uint64_t out_off, uint64_t n) {
  DuplicateExtentsData dup{};
  dup.FileHandle = in;
  dup.SourceFileOffset.QuadPart = LONGLONG(in_off);
  dup.TargetFileOffset.QuadPart = LONGLONG(out_off);
  dup.ByteCount.QuadPart = LONGLONG(n);
  DWORD got = 0;
  return DeviceIoControl(out, kFsctlDuplicateExtentsToFile, &dup, sizeof dup, nullptr, 0, &got, nullptr);
}
} // namespace

long copy_range(int in_fd, Off* in_off, int out_fd, size_t len) {
  HANDLE in = handle_of(in_fd), out = handle_of(out_fd);
  if (in == INVALID_HANDLE_VALUE || out == INVALID_HANDLE_VALUE) return -1;
  const uint64_t cluster = clone_cluster(out);
  if (cluster == 0) return fail(EOPNOTSUPP);
  Off pos = win::seek(out_fd, 0, SEEK_CUR);
  if (pos < 0) return -1;
  const uint64_t n = std::min<uint64_t>(len, 1ull << 30) / cluster * cluster;
  if (n == 0 || uint64_t(*in_off) % cluster != 0 || uint64_t(pos) % cluster != 0) return fail(EOPNOTSUPP);
  FileStat st;
  if (win::fstat(out_fd, st) != 0) return -1;
  if (uint64_t(st.st_size) < uint64_t(pos) + n && set_end_of_file(out, Off(uint64_t(pos) + n)) != 0) return -1;
  if (!duplicate_extents(in, uint64_t(*in_off), out, uint64_t(pos), n)) {
    DWORD err = GetLastError();
    if (uint64_t(st.st_size) < uint64_t(pos) + n) set_end_of_file(out, st.st_size); // as it was
    if (err == ERROR_NOT_SUPPORTED || err == ERROR_INVALID_FUNCTION || err == ERROR_INVALID_PARAMETER ||
        err == ERROR_NOT_SAME_DEVICE || err == kErrorBlockTooManyReferences)
      return fail(EOPNOTSUPP);
    return fail(errno_of(err));
  }
  if (win::seek(out_fd, pos + Off(n), SEEK_SET) < 0) return -1;
  *in_off += Off(n);
  return long(n);
}

// statvfs(2): GetDiskFreeSpaceExW of the volume holding fd's path, in 4096-byte
// blocks (what the caller may take, and all that is free); no inode counts (files 0).
bool fs_free_space(int fd, FsSpace& space) {
  auto e = entry_of(fd);
  if (!e) return false;
  if (e->path.empty()) return fail(EINVAL), false;
  wchar_t root[MAX_PATH + 1];
  if (!GetVolumePathNameW(e->path.c_str(), root, MAX_PATH + 1)) return fail_last_error(), false;
  ULARGE_INTEGER avail, total, free;
  if (!GetDiskFreeSpaceExW(root, &avail, &total, &free)) return fail_last_error(), false;
  space.block_size = 4096;
  space.blocks_free = avail.QuadPart / 4096;
  space.blocks_free_root = free.QuadPart / 4096;
  space.files = space.files_free = 0;
  return true;
}

// opendir/readdir: FindFirstFileExW / FindNextFileW on the directory fd's path
// + "\*" (names in UTF-8, "." and ".." included as Windows lists them).
Dir* dir_from_fd(int fd) {
  auto e = entry_of(fd);
  if (!e) return nullptr;
  if (!e->dir) return fail(ENOTDIR), nullptr;
  Dir* d = new Dir;
  d->fd = fd;
  return d;
}

namespace {
// The next entry of a listing of `path` (find: its handle, started on the
// first call); false at the end (errno 0) or on failure.
bool find_next(const std::wstring& path, HANDLE& find, bool& started, bool& done, WIN32_FIND_DATAW& data) {
  if (done) return (errno = 0), false;
  if (!started) {
    started = true;
    find = FindFirstFileExW((long_path(path) + L"\\*").c_str(), FindExInfoBasic, &data, FindExSearchNameMatch, nullptr, 0);
    if (find == INVALID_HANDLE_VALUE) {
      done = true;
      DWORD err = GetLastError();
      errno = err == ERROR_FILE_NOT_FOUND || err == ERROR_NO_MORE_FILES ? 0 : errno_of(err);
      return false;
    }
    return true;
  }
  if (FindNextFileW(find, &data)) return true;
  done = true;
  DWORD err = GetLastError();
  errno = err == ERROR_NO_MORE_FILES ? 0 : errno_of(err);
  return false;
}
} // namespace

const char* dir_next(Dir* d) {
  std::wstring path = path_of(d->fd);
  if (!find_next(path, d->find, d->started, d->done, d->data)) return nullptr;
  d->name = narrow(d->data.cFileName);
  return d->name.c_str();
}

int dir_fd(Dir* d) { return d->fd; }

void dir_close(Dir* d) {
  if (d->find != INVALID_HANDLE_VALUE) FindClose(d->find);
  close(d->fd);
  delete d;
}

// getdents64(2) into RawDirent-shaped records (base/os/fs_ops.hpp): the same
// listing as dir_next, kept in the fd's entry; d_ino 0, d_type from the
// attributes (a reparse point: DT_UNKNOWN, for the caller to stat).
long read_dirents(int fd, char* buf, size_t size, size_t name_offset) {
  auto e = entry_of(fd);
  if (!e) return -1;
  if (!e->dir) return fail(ENOTDIR);
  size_t used = 0;
  for (;;) {
    if (!e->have_pending) {
      if (!find_next(e->path, e->find, e->find_started, e->find_done, e->pending)) {
        if (errno != 0 && used == 0) return -1;
        return long(used);
      }
      e->have_pending = true;
    }
    std::string name = narrow(e->pending.cFileName);
    size_t rec = (name_offset + name.size() + 1 + 7) & ~size_t(7);
    if (used + rec > size) {
      if (used == 0) return fail(EINVAL);
      return long(used);
    }
    char* p = buf + used;
    std::memset(p, 0, rec);
    uint64_t ino = 0;
    int64_t off = int64_t(used + rec);
    unsigned short reclen = (unsigned short)rec;
    DWORD a = e->pending.dwFileAttributes;
    unsigned char type = (a & FILE_ATTRIBUTE_REPARSE_POINT) ? DT_UNKNOWN : (a & FILE_ATTRIBUTE_DIRECTORY) ? DT_DIR : DT_REG;
    std::memcpy(p, &ino, 8);
    std::memcpy(p + 8, &off, 8);
    std::memcpy(p + 16, &reclen, 2);
    p[18] = char(type);
    std::memcpy(p + name_offset, name.c_str(), name.size() + 1);
    used += rec;
    e->have_pending = false;
  }
}

Pid pid() { return GetCurrentProcessId(); }

// gethostname(2): the DNS host name (GetComputerNameExA).
int host_name(char* buf, size_t size) {
  DWORD n = DWORD(size);
  if (!GetComputerNameExA(ComputerNameDnsHostname, buf, &n)) return fail_last_error();
  return 0;
}

} // namespace win
} // namespace hpak::os
