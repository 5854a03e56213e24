// The os seam's processes and local sockets (base/os/sys.hpp) on Windows (issue 30).
#include "base/os/windows/win.hpp"

#include <cerrno>
#include <random>

namespace hpak::os {

namespace {

// One argument quoted as the C runtime's command-line parser reads it back
// (CommandLineToArgvW rules: backslashes double only before a quote).
std::wstring quoted(const std::wstring& a) {
  if (!a.empty() && a.find_first_of(L" \t\n\v\"") == std::wstring::npos) return a;
  std::wstring q = L"\"";
  size_t slashes = 0;
  for (wchar_t c : a) {
    if (c == L'\\') {
      slashes++;
      continue;
    }
    q.append(c == L'"' ? slashes * 2 + 1 : slashes, L'\\');
    slashes = 0;
    q += c;
  }
  q.append(slashes * 2, L'\\');
  return q + L"\"";
}

} // namespace

std::wstring win::command_line(const std::vector<std::string>& args) {
  std::wstring cmd;
  for (auto& a : args) cmd += (cmd.empty() ? L"" : L" ") + quoted(win::widen(a));
  return cmd;
}

// posix_spawnp + waitpid: CreateProcessW (argv[0] looked up in PATH by
// Windows' rules), this process's environment and standard handles, and
// WaitForSingleObject; the exit code.
int run_program(const std::vector<std::string>& args) {
  if (args.empty()) return win::fail(EINVAL);
  std::wstring cmd = win::command_line(args);
  STARTUPINFOW si{};
  si.cb = sizeof si;
  PROCESS_INFORMATION pi{};
  if (!CreateProcessW(nullptr, cmd.data(), nullptr, nullptr, TRUE, 0, nullptr, nullptr, &si, &pi)) return win::fail_last_error();
  CloseHandle(pi.hThread);
  WaitForSingleObject(pi.hProcess, INFINITE);
  DWORD code = 255;
  GetExitCodeProcess(pi.hProcess, &code);
  CloseHandle(pi.hProcess);
  return int(code);
}

// mkdtemp(3): XXXXXX replaced by random letters and digits, CreateDirectoryW, again on EEXIST.
bool make_temp_dir(std::string& templ) {
  if (templ.size() < 6 || templ.compare(templ.size() - 6, 6, "XXXXXX") != 0) return win::fail(EINVAL), false;
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;
  for (int attempt = 0; attempt < 100; attempt++) {
    std::string t = templ;
    for (size_t i = t.size() - 6; i < t.size(); i++) t[i] = kChars[rd() % 36];
    if (mkdir_path(t.c_str(), 0700) == 0) {
      templ = t;
      return true;
    }
    if (errno != EEXIST) return false;
  }
  return false;
}

// mkostemp(3): XXXXXX replaced as by make_temp_dir, the file created new (O_EXCL).
int make_temp_file(std::string& templ) {
  if (templ.size() < 6 || templ.compare(templ.size() - 6, 6, "XXXXXX") != 0) return win::fail(EINVAL);
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;
  for (int attempt = 0; attempt < 100; attempt++) {
    std::string t = templ;
    for (size_t i = t.size() - 6; i < t.size(); i++) t[i] = kChars[rd() % 36];
    int fd = open_path(t.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      templ = t;
      return fd;
    }
    if (errno != EEXIST) return -1;
  }
  return -1;
}

// No Unix-domain sockets here (an ssh-agent on Windows listens on a named pipe): ENOSYS.
int connect_local(const std::string&, int) { return win::fail(ENOSYS); }

void keep_freed_memory() {}
void fault_in(void*, size_t) {}

} // namespace hpak::os
