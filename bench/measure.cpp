// bench/measure.cpp — see measure.hpp.
#include "bench/measure.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace hpak::bench {

namespace fs = std::filesystem;

Stats stats_of(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return s;
}

// ---- subprocesses ------------------------------------------------------------

std::string ProcResult::first_error_line() const {
  std::string last;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) last = line;
  if (!last.empty()) return last;
  if (status < 0) return "could not start";
  if (status > 128) return "killed by signal " + std::to_string(status - 128);
  return "exit status " + std::to_string(status);
}

namespace {
double mono() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

std::string slurp_capped(const std::string& path, size_t cap) {
  std::string s;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t take = std::min(size_t(n), cap - std::min(cap, s.size()));
    s.append(buf, take);
    if (s.size() >= cap) break;
  }
  close(fd);
  return s;
}
} // namespace

ProcResult run_proc(const std::vector<std::string>& argv, const RunOptions& opts) {
  ProcResult r;
  if (argv.empty()) return r;
  std::string scratch = opts.scratch;
  if (scratch.empty()) scratch = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  static unsigned counter = 0;
  std::string base = scratch + "/.hpak-bench-proc-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  std::string out_path = opts.capture_out ? base + ".out" : "/dev/null";
  std::string err_path = opts.capture_err ? base + ".err" : "/dev/null";

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (!opts.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, opts.cwd.c_str());
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid;
  double t0 = mono();
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    r.status = -1;
    r.err = std::string("cannot run '") + argv[0] + "': " + std::strerror(rc);
    return r;
  }
  int wstatus = 0;
  rusage ru{};
  while (wait4(pid, &wstatus, 0, &ru) < 0 && errno == EINTR) {
  }
  r.secs = mono() - t0;
  r.user = double(ru.ru_utime.tv_sec) + double(ru.ru_utime.tv_usec) * 1e-6;
  r.sys = double(ru.ru_stime.tv_sec) + double(ru.ru_stime.tv_usec) * 1e-6;
  r.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  if (opts.capture_out) {
    r.out = slurp_capped(out_path, 1 << 20);
    unlink(out_path.c_str());
  }
  if (opts.capture_err) {
    r.err = slurp_capped(err_path, 1 << 20);
    unlink(err_path.c_str());
  }
  return r;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+%@") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string s;
  for (auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += shell_quote(a);
  }
  return s;
}

// ---- helper binaries ----------------------------------------------------------

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  return std::string(buf, size_t(n));
}

std::string find_tool(const std::string& name) {
  auto exe_ok = [](const std::string& p) { return access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p); };
  std::string self = self_exe();
  if (!self.empty()) {
    std::string dir = fs::path(self).parent_path().string();
    for (const std::string& c : {dir + "/" + name, dir + "/bench/" + name})
      if (exe_ok(c)) return c;
  }
  const char* path = getenv("PATH");
  if (!path) return "";
  std::istringstream in(path);
  for (std::string d; std::getline(in, d, ':');) {
    if (d.empty()) continue;
    std::string c = d + "/" + name;
    if (exe_ok(c)) return c;
  }
  return "";
}

// ---- the machine ------------------------------------------------------------

std::string real_path_of(const std::string& p) {
  std::error_code ec;
  auto r = fs::canonical(p, ec);
  return ec ? p : r.string();
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

MountInfo mount_of(const std::string& path) {
  MountInfo best;
  best.path = path;
  std::string rp = real_path_of(path);
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

std::string kernel_release() {
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

std::string now_iso8601() {
  time_t t = time(nullptr);
  tm g{};
  gmtime_r(&t, &g);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &g);
  return buf;
}

// ---- trees ----------------------------------------------------------------------

namespace {
void scan_rec(const std::string& root, const std::string& rel, TreeInfo& t) {
  std::string abs = rel.empty() ? root : root + "/" + rel;
  DIR* d = opendir(abs.c_str());
  if (!d) throw std::runtime_error("cannot read directory '" + abs + "': " + std::strerror(errno));
  std::vector<std::pair<std::string, unsigned char>> names;
  while (dirent* e = readdir(d)) {
    if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, "..")) continue;
    names.emplace_back(e->d_name, e->d_type);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (auto& [name, type] : names) {
    std::string r = rel.empty() ? name : rel + "/" + name;
    struct stat st;
    if (lstat((root + "/" + r).c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      t.dirs++;
      scan_rec(root, r, t);
    } else if (S_ISLNK(st.st_mode)) {
      t.symlinks++;
    } else if (S_ISREG(st.st_mode)) {
      t.files.push_back(r);
      t.sizes.push_back(uint64_t(st.st_size));
      t.bytes += uint64_t(st.st_size);
    }
  }
}
} // namespace

TreeInfo scan_tree(const std::string& root) {
  TreeInfo t;
  scan_rec(root, "", t);
  return t;
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return;
  fs::remove_all(path, ec);
  if (!ec) return;
  // Read-only directories (when not root): make them writable and retry.
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) chmod(it->path().c_str(), 0700);
  }
  chmod(path.c_str(), 0700);
  ec.clear();
  fs::remove_all(path, ec);
  if (ec) throw std::runtime_error("cannot remove '" + path + "': " + ec.message());
}

std::string read_small_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  if (!out) throw std::runtime_error("cannot write '" + path + "'");
}

std::string make_temp_dir(const std::string& parent, const std::string& prefix) {
  std::string tmpl = parent + "/" + prefix + "XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back(0);
  if (!mkdtemp(buf.data())) throw std::runtime_error("cannot create a directory in '" + parent + "': " + std::strerror(errno));
  return buf.data();
}

uint64_t file_size(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

void sync_all() { sync(); }

// ---- JSON -----------------------------------------------------------------------

namespace {
size_t json_value_pos(const std::string& json, const std::string& key) {
  std::string pat = "\"" + key + "\":";
  size_t p = json.find(pat);
  if (p == std::string::npos) return p;
  p += pat.size();
  while (p < json.size() && json[p] == ' ') p++;
  return p;
}
} // namespace

std::optional<double> json_number(const std::string& json, const std::string& key) {
  size_t p = json_value_pos(json, key);
  if (p == std::string::npos || p >= json.size()) return std::nullopt;
  if (json.compare(p, 4, "true") == 0) return 1.0;
  if (json.compare(p, 5, "false") == 0) return 0.0;
  char* end = nullptr;
  double v = std::strtod(json.c_str() + p, &end);
  if (end == json.c_str() + p) return std::nullopt;
  return v;
}

std::optional<std::string> json_string(const std::string& json, const std::string& key) {
  size_t p = json_value_pos(json, key);
  if (p == std::string::npos || p >= json.size() || json[p] != '"') return std::nullopt;
  std::string v;
  for (size_t i = p + 1; i < json.size(); i++) {
    if (json[i] == '\\' && i + 1 < json.size()) {
      v += json[++i];
    } else if (json[i] == '"') {
      return v;
    } else {
      v += json[i];
    }
  }
  return std::nullopt;
}

} // namespace hpak::bench
