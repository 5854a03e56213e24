// The os seam's measuring calls (issue 30): what `hpak bench` (bench/measure.cpp)
// needs of the system beyond files, for one platform each: a child process run
// and timed with the CPU and memory it used, the running executable, and what
// the machine is. Not on hot paths (out of line); base/os/linux/machine.cpp and
// base/os/windows/machine.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hpak::os {

// What a measured child used.
struct ChildUsage {
  int status = -1;        // exit status; 128+N when killed by signal N (Linux); -1 could not start
  double wall_s = 0;      // monotonic clock, just before the start to just after it was reaped
  // Its CPU seconds (Linux: and its reaped children's, wait4; Windows: its own, GetProcessTimes;
  // NaN under Wine, whose GetProcessTimes of another process gives the caller's).
  double user_s = 0, sys_s = 0;
  uint64_t peak_memory_bytes = 0; // Linux: ru_maxrss; Windows: PeakWorkingSetSize (GetProcessMemoryInfo)
};

// Runs argv[0] (looked up in PATH) with argv and this process's environment, stdin
// the null device, stdout and stderr into the files `out_path` and `err_path`
// (created or truncated; "" = the null device), in `cwd` ("" = this process's),
// and waits for it. Linux: posix_spawnp + wait4. Windows: CreateProcessW (the
// handles inherited through STARTUPINFO), WaitForSingleObject, GetExitCodeProcess,
// GetProcessTimes and GetProcessMemoryInfo. False with errno when it could not
// be started (usage.status -1).
bool run_measured(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path,
                  const std::string& cwd, ChildUsage& usage);

// The running executable's full path (Linux: /proc/self/exe; Windows:
// GetModuleFileNameW), "" when unknown.
std::string self_exe();
// Whether `path` is a file this user may run (Linux: access X_OK; Windows: it exists).
bool is_executable(const std::string& path);
// The names a program `name` may have on disk, in the order tried ("name"; Windows: "name.exe", "name").
std::vector<std::string> program_names(const std::string& name);
// The separator of the PATH variable's entries (':'; Windows ';').
char path_list_separator();

// ---- the machine
std::string cpu_model();     // Linux: /proc/cpuinfo "model name"; Windows: the registry's ProcessorNameString
unsigned online_cpus();      // sysconf(_SC_NPROCESSORS_ONLN); Windows: GetSystemInfo
unsigned usable_cpus();      // sched_getaffinity (what nproc counts); Windows: GetProcessAffinityMask
std::string system_release(); // "Linux 6.1.0 x86_64" (uname); "Windows 10.0.19045 x86_64" (RtlGetVersion), ", Wine 8.0" under Wine
// The load average over 1, 5 and 15 minutes; NaNs where the system has none (Windows).
std::vector<double> loadavg();
uint64_t mem_total_bytes(); // /proc/meminfo MemTotal; Windows: GlobalMemoryStatusEx
// The file system `path` is on: its mount point, type, device and options
// (Linux: the longest mount-point prefix of its real path in /proc/mounts;
// Windows: GetVolumePathNameW, GetVolumeInformationW and the volume's GUID name).
struct Volume {
  std::string mount_point, fstype, device, options;
};
Volume volume_of(const std::string& path);
// Flushes every file system's dirty data (sync(2)); Windows: nothing (flushing a
// volume needs an administrator's handle to it).
void sync_all();

} // namespace hpak::os
