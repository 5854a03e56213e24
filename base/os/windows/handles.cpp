// The Windows os seam's table of descriptors, UTF-8 <-> UTF-16, path
// resolution and errno mapping (base/os/windows/win.hpp).
#include "base/os/windows/win.hpp"

#include <cerrno>
#include <memory>
#include <mutex>
#include <vector>

#include "base/os/windows/table.hpp"

namespace hpak::os::win {

std::wstring widen(const std::string& s) {
  if (s.empty()) return {};
  int n = MultiByteToWideChar(CP_UTF8, 0, s.data(), int(s.size()), nullptr, 0);
  std::wstring w(size_t(n), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, s.data(), int(s.size()), w.data(), n);
  return w;
}

std::string narrow(const std::wstring& w) {
  if (w.empty()) return {};
  int n = WideCharToMultiByte(CP_UTF8, 0, w.data(), int(w.size()), nullptr, 0, nullptr, nullptr);
  std::string s(size_t(n), '\0');
  WideCharToMultiByte(CP_UTF8, 0, w.data(), int(w.size()), s.data(), n, nullptr, nullptr);
  return s;
}

int errno_of(DWORD err) {
  switch (err) {
  case ERROR_FILE_NOT_FOUND:
  case ERROR_PATH_NOT_FOUND:
  case ERROR_INVALID_DRIVE:
  case ERROR_BAD_NETPATH:
  case ERROR_BAD_NET_NAME:
  case ERROR_DELETE_PENDING: return ENOENT;
  case ERROR_FILE_EXISTS:
  case ERROR_ALREADY_EXISTS: return EEXIST;
  case ERROR_ACCESS_DENIED:
  case ERROR_SHARING_VIOLATION:
  case ERROR_WRITE_PROTECT:
  case ERROR_USER_MAPPED_FILE: return EACCES;
  case ERROR_LOCK_VIOLATION: return EWOULDBLOCK;
  case ERROR_PRIVILEGE_NOT_HELD: return EPERM;
  case ERROR_DIRECTORY: return ENOTDIR;
  case ERROR_DIR_NOT_EMPTY: return ENOTEMPTY;
  case ERROR_DISK_FULL:
  case ERROR_HANDLE_DISK_FULL: return ENOSPC;
  case ERROR_NOT_SAME_DEVICE: return EXDEV;
  case ERROR_INVALID_HANDLE: return EBADF;
  case ERROR_FILENAME_EXCED_RANGE: return ENAMETOOLONG;
  case ERROR_INVALID_NAME:
  case ERROR_BAD_PATHNAME:
  case ERROR_INVALID_PARAMETER:
  case ERROR_NEGATIVE_SEEK: return EINVAL;
  case ERROR_NOT_ENOUGH_MEMORY:
  case ERROR_OUTOFMEMORY: return ENOMEM;
  case ERROR_TOO_MANY_OPEN_FILES: return EMFILE;
  case ERROR_NOT_SUPPORTED:
  case ERROR_INVALID_FUNCTION: return EOPNOTSUPP;
  case ERROR_CANT_RESOLVE_FILENAME: return ELOOP;
  case ERROR_BROKEN_PIPE:
  case ERROR_NO_DATA: return EPIPE;
  case ERROR_NOT_READY: return EAGAIN;
  default: return EIO;
  }
}

int fail(int err) {
  errno = err;
  return -1;
}

int fail_last_error() { return fail(errno_of(GetLastError())); }

namespace {

std::mutex table_mu;
std::vector<std::shared_ptr<Entry>>& table() {
  static std::vector<std::shared_ptr<Entry>> t = [] {
    std::vector<std::shared_ptr<Entry>> v;
    for (DWORD id : {STD_INPUT_HANDLE, STD_OUTPUT_HANDLE, STD_ERROR_HANDLE}) {
      auto e = std::make_shared<Entry>();
      e->h = GetStdHandle(id);
      v.push_back(e);
    }
    return v;
  }();
  return t;
}

} // namespace

std::shared_ptr<Entry> entry_of(int fd) {
  std::lock_guard<std::mutex> g(table_mu);
  auto& t = table();
  if (fd < 0 || size_t(fd) >= t.size() || !t[size_t(fd)]) {
    errno = EBADF;
    return nullptr;
  }
  return t[size_t(fd)];
}

std::shared_ptr<Entry> take_entry(int fd) {
  std::lock_guard<std::mutex> g(table_mu);
  auto& t = table();
  if (fd < 0 || size_t(fd) >= t.size() || !t[size_t(fd)]) {
    errno = EBADF;
    return nullptr;
  }
  return std::move(t[size_t(fd)]);
}

HANDLE handle_of(int fd) {
  auto e = entry_of(fd);
  return e ? e->h : INVALID_HANDLE_VALUE;
}

std::wstring path_of(int fd) {
  auto e = entry_of(fd);
  return e ? e->path : std::wstring();
}

int add_entry(std::shared_ptr<Entry> e) {
  std::lock_guard<std::mutex> g(table_mu);
  auto& t = table();
  for (size_t i = 3; i < t.size(); i++)
    if (!t[i]) {
      t[i] = std::move(e);
      return int(i);
    }
  t.push_back(std::move(e));
  return int(t.size() - 1);
}

int add_handle(HANDLE h, std::wstring path, bool dir) {
  auto e = std::make_shared<Entry>();
  e->h = h;
  e->path = std::move(path);
  e->dir = dir;
  return add_entry(std::move(e));
}

int dup_fd(int fd) {
  auto e = entry_of(fd);
  if (!e) return -1;
  HANDLE h;
  if (!DuplicateHandle(GetCurrentProcess(), e->h, GetCurrentProcess(), &h, 0, FALSE, DUPLICATE_SAME_ACCESS)) return fail_last_error();
  return add_handle(h, e->path, e->dir);
}

namespace {

// The length of a full path's root: "C:" or "\\server\share".
size_t root_length(const std::wstring& p) {
  if (p.size() >= 2 && p[0] == L'\\' && p[1] == L'\\') {
    size_t server_end = p.find(L'\\', 2);
    if (server_end == std::wstring::npos) return p.size();
    size_t share_end = p.find(L'\\', server_end + 1);
    return share_end == std::wstring::npos ? p.size() : share_end;
  }
  return p.size() >= 2 && p[1] == L':' ? 2 : 0;
}

// `.` and `..` of a full path resolved by name (`..` of the root is the root).
std::wstring normalize(const std::wstring& p) {
  size_t root = root_length(p);
  std::vector<std::wstring> parts;
  size_t at = root;
  while (at <= p.size()) {
    size_t next = p.find(L'\\', at);
    if (next == std::wstring::npos) next = p.size();
    std::wstring c = p.substr(at, next - at);
    if (c == L"..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!c.empty() && c != L".") {
      parts.push_back(std::move(c));
    }
    at = next + 1;
  }
  std::wstring out = p.substr(0, root);
  for (auto& c : parts) out += L"\\" + c;
  if (parts.empty()) out += L"\\";
  return out;
}

} // namespace

std::wstring resolve(int dirfd, const char* path) {
  std::wstring p = widen(path ? path : "");
  for (auto& c : p)
    if (c == L'/') c = L'\\';
  if (p.empty()) {
    errno = ENOENT;
    return {};
  }
  if (p.rfind(L"\\\\?\\UNC\\", 0) == 0) return normalize(L"\\\\" + p.substr(8));
  if (p.rfind(L"\\\\?\\", 0) == 0) return normalize(p.substr(4));
  // "C:" alone is the drive's root, not Windows' current directory of that
  // drive: callers that split "C:/a/b" at '/' open "C:" first, then "a" in it.
  if (p.size() == 2 && p[1] == L':') p += L'\\';
  bool absolute = p[0] == L'\\' || (p.size() >= 2 && p[1] == L':');
  if (absolute || dirfd == kCwd) {
    DWORD n = GetFullPathNameW(p.c_str(), 0, nullptr, nullptr);
    if (n == 0) {
      fail_last_error();
      return {};
    }
    std::wstring full(n, L'\0');
    n = GetFullPathNameW(p.c_str(), n, full.data(), nullptr);
    full.resize(n);
    return normalize(full);
  }
  auto e = entry_of(dirfd);
  if (!e) return {};
  if (!e->dir) {
    errno = ENOTDIR;
    return {};
  }
  return normalize(e->path + L"\\" + p);
}

std::wstring long_path(const std::wstring& full) {
  if (full.rfind(L"\\\\", 0) == 0) return L"\\\\?\\UNC\\" + full.substr(2);
  return L"\\\\?\\" + full;
}

// 11644473600 s between 1601-01-01 and 1970-01-01.
constexpr int64_t kEpochDelta = 116444736000000000LL;

TimeSpec timespec_of(int64_t filetime) {
  int64_t t = filetime - kEpochDelta;
  int64_t sec = t / 10000000, rem = t % 10000000;
  if (rem < 0) {
    rem += 10000000;
    sec--;
  }
  TimeSpec ts{};
  ts.tv_sec = time_t(sec);
  ts.tv_nsec = long(rem * 100);
  return ts;
}

int64_t filetime_of(const TimeSpec& ts) { return int64_t(ts.tv_sec) * 10000000 + ts.tv_nsec / 100 + kEpochDelta; }

} // namespace hpak::os::win
