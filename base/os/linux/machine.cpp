// The os seam's measuring calls (base/os/machine.hpp), Linux.
#include "base/os/machine.hpp"

#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace hpak::os {

namespace {
double mono() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}
} // namespace

bool run_measured(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path,
                  const std::string& cwd, ChildUsage& u) {
  u = ChildUsage{};
  if (argv.empty()) {
    errno = EINVAL;
    return false;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.empty() ? "/dev/null" : out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.empty() ? "/dev/null" : err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid;
  double t0 = mono();
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    errno = rc;
    return false;
  }
  int wstatus = 0;
  rusage ru{};
  while (wait4(pid, &wstatus, 0, &ru) < 0 && errno == EINTR) {
  }
  u.wall_s = mono() - t0;
  u.user_s = double(ru.ru_utime.tv_sec) + double(ru.ru_utime.tv_usec) * 1e-6;
  u.sys_s = double(ru.ru_stime.tv_sec) + double(ru.ru_stime.tv_usec) * 1e-6;
  u.peak_memory_bytes = uint64_t(ru.ru_maxrss) * 1024;
  u.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  return true;
}

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  return std::string(buf, size_t(n));
}

bool is_executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::vector<std::string> program_names(const std::string& name) { return {name}; }

char path_list_separator() { return ':'; }

// ---- the machine

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto c = line.find(':');
      if (c != std::string::npos) {
        std::string v = line.substr(c + 1);
        v.erase(0, v.find_first_not_of(' '));
        return v;
      }
    }
  }
  return "unknown";
}

unsigned online_cpus() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? unsigned(n) : 1;
}

unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return online_cpus();
  int n = CPU_COUNT(&set);
  return n > 0 ? unsigned(n) : online_cpus();
}

std::string system_release() {
  utsname u{};
  if (uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

std::vector<double> loadavg() {
  std::vector<double> v(3, 0.0);
  std::ifstream in("/proc/loadavg");
  in >> v[0] >> v[1] >> v[2];
  return v;
}

uint64_t mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  for (std::string key; in >> key;) {
    uint64_t kb = 0;
    in >> kb;
    if (key == "MemTotal:") return kb * 1024;
    in.ignore(1 << 10, '\n');
  }
  return 0;
}

namespace {
// /proc/mounts escapes spaces etc. as \040.
std::string unescape_mount(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      o += char(std::strtol(s.substr(i + 1, 3).c_str(), nullptr, 8));
      i += 3;
    } else {
      o += s[i];
    }
  }
  return o;
}
} // namespace

Volume volume_of(const std::string& path) {
  Volume best;
  std::error_code ec;
  auto canon = std::filesystem::canonical(path, ec);
  std::string rp = ec ? path : canon.string();
  std::ifstream in("/proc/mounts");
  size_t best_len = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string dev, mp, type, opts;
    if (!(ls >> dev >> mp >> type >> opts)) continue;
    mp = unescape_mount(mp);
    bool prefix = rp == mp || mp == "/" || (rp.size() > mp.size() && rp.compare(0, mp.size(), mp) == 0 && rp[mp.size()] == '/');
    if (prefix && mp.size() >= best_len) {
      best_len = mp.size();
      best.mount_point = mp;
      best.fstype = type;
      best.device = dev;
      best.options = opts;
    }
  }
  return best;
}

void sync_all() { sync(); }

} // namespace hpak::os
