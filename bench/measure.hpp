// bench/measure.hpp — the measuring primitives of `hpak bench` (library
// hpak_bench): run a command as a subprocess and time it, summarise samples,
// find the helper binaries, describe the machine, and small tree helpers.
//
// Every measured command — hpak itself included (the running executable) — is a
// subprocess started and timed the same way, through the os seam
// (os::run_measured, base/os/machine.hpp): the monotonic clock from just before
// the start to just after the child is reaped, so process start, dynamic
// loading and exit are inside every sample, for hpak and the baselines alike.
// Linux: posix_spawn and wait4(), which also gives the child's user and system
// CPU time; Windows: CreateProcessW, WaitForSingleObject and GetProcessTimes.
// stdin is the null device; stdout and stderr go to files (read back when
// asked), never to pipes, so a chatty child can never block on a full pipe.
// The machine's description comes through the seam too (os::cpu_model, ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hpak::bench {

// ---- samples ---------------------------------------------------------------
struct Stats {
  double median = 0, min = 0, max = 0;
  size_t n = 0;
};
Stats stats_of(std::vector<double> samples); // median of an even count = mean of the middle two

// ---- subprocesses ----------------------------------------------------------
struct ProcResult {
  int status = -1;     // exit status; 128+N when killed by signal N; -1 could not start
  double secs = 0;     // wall time, spawn to reaped
  double user = 0, sys = 0; // CPU seconds of the child (Linux: and its reaped children)
  uint64_t peak_memory = 0; // its peak resident set (Linux ru_maxrss; Windows PeakWorkingSetSize), bytes
  std::string out, err;     // captured stdout/stderr (when asked; first 1 MiB)
  bool ok() const { return status == 0; }
  std::string first_error_line() const; // for messages: last non-empty stderr line, or the status
};

struct RunOptions {
  std::string cwd;            // "" = inherit
  bool capture_out = true;    // false: stdout to /dev/null
  bool capture_err = true;    // false: stderr to /dev/null
  std::string scratch;        // directory for the capture files (default: $TMPDIR, else /tmp; Windows %TEMP%)
};

ProcResult run_proc(const std::vector<std::string>& argv, const RunOptions& opts = {});
// The argv as a shell would need it typed (single quotes where needed).
std::string shell_join(const std::vector<std::string>& argv);
std::string shell_quote(const std::string& s);

// ---- helper binaries -------------------------------------------------------
// The running executable (os::self_exe: /proc/self/exe; GetModuleFileNameW).
std::string self_exe();
// `name` next to self_exe(), in bench/ beside it, or on PATH; "" if none
// (Windows: name.exe first, PATH split at ';').
std::string find_tool(const std::string& name);

// ---- the machine -----------------------------------------------------------
struct MountInfo {
  std::string path, mount_point, fstype, device, options;
};
MountInfo mount_of(const std::string& path); // longest mount-point prefix of realpath(path)
std::string cpu_model();
unsigned online_cpus();
unsigned usable_cpus(); // the CPUs this process may run on (sched_getaffinity), as nproc counts them
std::string kernel_release(); // "Linux 6.1.0 x86_64"; "Windows 10.0.19045 x86_64[, Wine 8.0]"
std::vector<double> loadavg(); // 1, 5, 15 min; NaNs on Windows (it has none)
uint64_t mem_total_bytes();
std::string now_iso8601();

// ---- trees -----------------------------------------------------------------
struct TreeInfo {
  std::vector<std::string> files; // regular files, relative paths, sorted
  std::vector<uint64_t> sizes;    // parallel to files
  uint64_t dirs = 0, symlinks = 0, bytes = 0;
};
TreeInfo scan_tree(const std::string& root);
// rm -rf; makes directories writable first when needed. Throws on failure.
void remove_tree(const std::string& path);
std::string read_small_file(const std::string& path);
void write_file(const std::string& path, const std::string& data);
std::string make_temp_dir(const std::string& parent, const std::string& prefix);
uint64_t file_size(const std::string& path); // 0 when missing
std::string real_path_of(const std::string& p);
void sync_all();

// ---- tiny JSON reader for the --json lines of hpak subcommands --------------
// The value of a top-level numeric / string / boolean key of a one-object
// JSON text (no nesting is interpreted; enough for hpak's own summaries).
std::optional<double> json_number(const std::string& json, const std::string& key);
std::optional<std::string> json_string(const std::string& json, const std::string& key);

} // namespace hpak::bench
