// The os seam's measuring calls (base/os/machine.hpp) on Windows (issue 30).
#include "base/os/windows/win.hpp"

#include <psapi.h>

#include <cerrno>
#include <chrono>
#include <cmath>

#include "base/os/machine.hpp"

namespace hpak::os {

namespace {

// An inheritable handle on `path` ("" = NUL) for the child's stdin (read) or stdout/stderr (write, truncated).
HANDLE std_handle(const std::string& path, bool write) {
  SECURITY_ATTRIBUTES sa{};
  sa.nLength = sizeof sa;
  sa.bInheritHandle = TRUE;
  std::wstring p = path.empty() ? std::wstring(L"NUL") : win::widen(path);
  return CreateFileW(p.c_str(), write ? GENERIC_WRITE : GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, &sa,
                     write ? (path.empty() ? OPEN_EXISTING : CREATE_ALWAYS) : OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
}

double seconds_of(const FILETIME& f) { // 100 ns ticks
  return double((uint64_t(f.dwHighDateTime) << 32) | f.dwLowDateTime) * 1e-7;
}

bool under_wine() {
  HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
  return ntdll && GetProcAddress(ntdll, "wine_get_version");
}

double mono() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

} // namespace

// posix_spawnp + wait4: CreateProcessW with the three standard handles (NUL and
// the two capture files, inheritable) in STARTUPINFO, WaitForSingleObject, the exit
// code, GetProcessTimes (its user and kernel time; Windows does not add the
// children's, as wait4 does) and GetProcessMemoryInfo (its peak working set).
bool run_measured(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path,
                  const std::string& cwd, ChildUsage& u) {
  u = ChildUsage{};
  if (argv.empty()) return win::fail(EINVAL), false;
  std::wstring cmd = win::command_line(argv);
  HANDLE in = std_handle("", false), out = std_handle(out_path, true), err = std_handle(err_path, true);
  auto close_std = [&] {
    for (HANDLE h : {in, out, err})
      if (h != INVALID_HANDLE_VALUE) CloseHandle(h);
  };
  if (in == INVALID_HANDLE_VALUE || out == INVALID_HANDLE_VALUE || err == INVALID_HANDLE_VALUE) {
    int e = win::errno_of(GetLastError());
    close_std();
    return win::fail(e), false;
  }
  STARTUPINFOW si{};
  si.cb = sizeof si;
  si.dwFlags = STARTF_USESTDHANDLES;
  si.hStdInput = in;
  si.hStdOutput = out;
  si.hStdError = err;
  PROCESS_INFORMATION pi{};
  std::wstring wcwd = win::widen(cwd);
  double t0 = mono();
  BOOL ok = CreateProcessW(nullptr, cmd.data(), nullptr, nullptr, TRUE, 0, nullptr, cwd.empty() ? nullptr : wcwd.c_str(), &si, &pi);
  DWORD create_err = GetLastError();
  close_std();
  if (!ok) return win::fail(win::errno_of(create_err)), false;
  CloseHandle(pi.hThread);
  WaitForSingleObject(pi.hProcess, INFINITE);
  u.wall_s = mono() - t0;
  DWORD code = 255;
  GetExitCodeProcess(pi.hProcess, &code);
  u.status = int(code);
  FILETIME created, exited, kernel, user;
  if (under_wine()) {
    // Wine 8 answers GetProcessTimes of another process with the caller's own
    // times (measured: every child of one bench run got the same, growing
    // figures): unknown, not wrong.
    u.user_s = u.sys_s = std::nan("");
  } else if (GetProcessTimes(pi.hProcess, &created, &exited, &kernel, &user)) {
    u.user_s = seconds_of(user);
    u.sys_s = seconds_of(kernel);
  }
  PROCESS_MEMORY_COUNTERS pmc{};
  pmc.cb = sizeof pmc;
  if (GetProcessMemoryInfo(pi.hProcess, &pmc, sizeof pmc)) u.peak_memory_bytes = pmc.PeakWorkingSetSize;
  CloseHandle(pi.hProcess);
  return true;
}

std::string self_exe() {
  std::wstring buf(32768, L'\0');
  DWORD n = GetModuleFileNameW(nullptr, buf.data(), DWORD(buf.size()));
  if (n == 0 || n >= buf.size()) return "";
  buf.resize(n);
  return win::narrow(buf);
}

bool is_executable(const std::string& path) {
  DWORD a = GetFileAttributesW(win::widen(path).c_str());
  return a != INVALID_FILE_ATTRIBUTES && !(a & FILE_ATTRIBUTE_DIRECTORY);
}

std::vector<std::string> program_names(const std::string& name) {
  if (name.size() > 4 && _stricmp(name.c_str() + name.size() - 4, ".exe") == 0) return {name};
  return {name + ".exe", name};
}

char path_list_separator() { return ';'; }

// ---- the machine

std::string cpu_model() {
  wchar_t buf[256];
  DWORD size = sizeof buf;
  if (RegGetValueW(HKEY_LOCAL_MACHINE, L"HARDWARE\\DESCRIPTION\\System\\CentralProcessor\\0", L"ProcessorNameString", RRF_RT_REG_SZ,
                   nullptr, buf, &size) != ERROR_SUCCESS)
    return "unknown";
  std::string s = win::narrow(buf);
  s.erase(0, s.find_first_not_of(' '));
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s.empty() ? "unknown" : s;
}

unsigned online_cpus() {
  SYSTEM_INFO si{};
  GetSystemInfo(&si);
  return si.dwNumberOfProcessors ? unsigned(si.dwNumberOfProcessors) : 1;
}

unsigned usable_cpus() {
  DWORD_PTR mine = 0, sys = 0;
  if (!GetProcessAffinityMask(GetCurrentProcess(), &mine, &sys) || !mine) return online_cpus();
  unsigned n = 0;
  for (; mine; mine &= mine - 1) n++;
  return n;
}

std::string system_release() {
  HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
  std::string s = "Windows";
  using RtlGetVersionFn = LONG(WINAPI*)(OSVERSIONINFOW*);
  auto get_version = ntdll ? reinterpret_cast<RtlGetVersionFn>(reinterpret_cast<void*>(GetProcAddress(ntdll, "RtlGetVersion"))) : nullptr;
  OSVERSIONINFOW v{};
  v.dwOSVersionInfoSize = sizeof v;
  if (get_version && get_version(&v) == 0) {
    s += ' ';
    s += std::to_string(v.dwMajorVersion) + "." + std::to_string(v.dwMinorVersion) + "." + std::to_string(v.dwBuildNumber);
  }
  SYSTEM_INFO si{};
  GetNativeSystemInfo(&si);
  s += si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_AMD64 ? " x86_64"
       : si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_ARM64 ? " aarch64"
                                                                   : "";
  // Under Wine, ntdll has wine_get_version: say so (its figures are not Windows').
  using WineVersionFn = const char*(CDECL*)();
  auto wine = ntdll ? reinterpret_cast<WineVersionFn>(reinterpret_cast<void*>(GetProcAddress(ntdll, "wine_get_version"))) : nullptr;
  if (wine) {
    s += ", Wine ";
    s += wine();
  }
  return s;
}

std::vector<double> loadavg() { return std::vector<double>(3, std::nan("")); }

uint64_t mem_total_bytes() {
  MEMORYSTATUSEX m{};
  m.dwLength = sizeof m;
  return GlobalMemoryStatusEx(&m) ? uint64_t(m.ullTotalPhys) : 0;
}

Volume volume_of(const std::string& path) {
  Volume v;
  std::wstring wp = win::widen(path);
  wchar_t mount[MAX_PATH + 1] = {};
  if (!GetVolumePathNameW(wp.c_str(), mount, MAX_PATH)) return v;
  v.mount_point = win::narrow(mount);
  wchar_t fstype[MAX_PATH + 1] = {}, label[MAX_PATH + 1] = {};
  DWORD serial = 0, maxlen = 0, flags = 0;
  if (GetVolumeInformationW(mount, label, MAX_PATH, &serial, &maxlen, &flags, fstype, MAX_PATH)) {
    v.fstype = win::narrow(fstype);
    char sn[16];
    snprintf(sn, sizeof sn, "%04lX-%04lX", (unsigned long)(serial >> 16), (unsigned long)(serial & 0xffff));
    v.options = std::string("serial ") + sn + ((flags & 0x08000000) ? ", block cloning" : ""); // FILE_SUPPORTS_BLOCK_REFCOUNTING
  }
  wchar_t guid[MAX_PATH + 1] = {};
  if (GetVolumeNameForVolumeMountPointW(mount, guid, MAX_PATH)) v.device = win::narrow(guid);
  else v.device = v.mount_point;
  return v;
}

void sync_all() {}

} // namespace hpak::os
