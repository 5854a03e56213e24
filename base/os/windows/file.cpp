// The Windows part of base/os/file.hpp (issue 30; the rest, common to every
// platform, is base/os/file.cpp): whether a process is gone, the descriptor
// limit, realpath(3), and the guard of mappings (base/os/map_guard.hpp), which
// Windows does not need.
#include "base/os/file.hpp"

#include "base/os/map_guard.hpp"
#include "base/os/windows/win.hpp"

#include <cerrno>

namespace hpak {

// kill(pid, 0) == ESRCH: no process `pid` can be opened (ERROR_INVALID_PARAMETER), or it has exited.
bool process_gone(long pid) {
  if (pid <= 0) return false;
  HANDLE p = OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, DWORD(pid));
  if (!p) return GetLastError() == ERROR_INVALID_PARAMETER;
  bool exited = WaitForSingleObject(p, 0) == WAIT_OBJECT_0;
  CloseHandle(p);
  return exited;
}

// The table of descriptors (base/os/windows/handles.cpp) has no limit but memory's.
long raise_fd_limit() { return 1 << 20; }

void reserve_fds(size_t) {}
void close_fds(std::vector<int>& fds) {
  for (int& fd : fds) {
    if (fd >= 0) os::close(fd);
    fd = -1;
  }
}

// realpath(3): GetFinalPathNameByHandleW of the file opened (links followed),
// without its \\?\ prefix, with '/' separators ("C:/Users/me/lib").
std::string real_path(const std::string& path) {
  int fd = os::open_path(path.c_str(), O_PATH);
  if (fd < 0) throw_errno("unable to resolve '" + path + "'");
  Fd guard(fd);
  HANDLE h = os::win::handle_of(fd);
  std::wstring buf(32768, L'\0');
  DWORD n = GetFinalPathNameByHandleW(h, buf.data(), DWORD(buf.size()), FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
  if (n == 0 || n >= buf.size()) {
    errno = os::win::errno_of(GetLastError());
    throw_errno("unable to resolve '" + path + "'");
  }
  buf.resize(n);
  if (buf.rfind(L"\\\\?\\UNC\\", 0) == 0) buf = L"\\\\" + buf.substr(8);
  else if (buf.rfind(L"\\\\?\\", 0) == 0) buf = buf.substr(4);
  std::string s = os::win::narrow(buf);
  for (auto& c : s)
    if (c == '\\') c = '/';
  return s;
}

namespace os {

// Windows refuses to truncate a file while a view of it is mapped
// (ERROR_USER_MAPPED_FILE), so a mapping never loses pages: nothing to guard.
int guard_mapping(const void*, size_t) { return -1; }
void unguard_mapping(int) {}
bool mapping_faulted(int) { return false; }

} // namespace os

} // namespace hpak
