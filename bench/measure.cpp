// bench/measure.cpp — see measure.hpp.
#include "bench/measure.hpp"

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

#include "base/os/fs_ops.hpp"
#include "base/os/machine.hpp"
#include "base/os/sys.hpp"

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
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back(); // a Windows child's CRLF
    if (!line.empty()) last = line;
  }
  if (!last.empty()) return last;
  if (status < 0) return "could not start";
  if (status > 128) return "killed by signal " + std::to_string(status - 128);
  return "exit status " + std::to_string(status);
}

namespace {
// Where capture files go when the caller names no directory and TMPDIR is unset.
std::string default_scratch() {
#if defined(_WIN32)
  const char* t = getenv("TEMP");
  return t ? t : ".";
#else
  return "/tmp";
#endif
}

std::string slurp_capped(const std::string& path, size_t cap) {
  std::string s;
  int fd = os::open_path(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[65536];
  for (;;) {
    long n = os::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t take = std::min(size_t(n), cap - std::min(cap, s.size()));
    s.append(buf, take);
    if (s.size() >= cap) break;
  }
  os::close(fd);
  return s;
}
} // namespace

ProcResult run_proc(const std::vector<std::string>& argv, const RunOptions& opts) {
  ProcResult r;
  if (argv.empty()) return r;
  std::string scratch = opts.scratch;
  if (scratch.empty()) scratch = getenv("TMPDIR") ? getenv("TMPDIR") : default_scratch();
  static unsigned counter = 0;
  std::string base = scratch + "/.hpak-bench-proc-" + std::to_string(os::pid()) + "-" + std::to_string(counter++);
  std::string out_path = opts.capture_out ? base + ".out" : "";
  std::string err_path = opts.capture_err ? base + ".err" : "";
  os::ChildUsage u;
  if (!os::run_measured(argv, out_path, err_path, opts.cwd, u)) {
    r.status = -1;
    r.err = std::string("cannot run '") + argv[0] + "': " + std::strerror(errno);
    return r;
  }
  r.secs = u.wall_s;
  r.user = u.user_s;
  r.sys = u.sys_s;
  r.peak_memory = u.peak_memory_bytes;
  r.status = u.status;
  if (opts.capture_out) {
    r.out = slurp_capped(out_path, 1 << 20);
    os::unlink_path(out_path.c_str());
  }
  if (opts.capture_err) {
    r.err = slurp_capped(err_path, 1 << 20);
    os::unlink_path(err_path.c_str());
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

std::string self_exe() { return os::self_exe(); }

std::string find_tool(const std::string& name) {
  auto exe_ok = [](const std::string& p) { return os::is_executable(p) && fs::is_regular_file(p); };
  auto in_dir = [&name, &exe_ok](const std::string& dir) -> std::string {
    for (const std::string& n : os::program_names(name))
      if (exe_ok(dir + "/" + n)) return dir + "/" + n;
    return "";
  };
  std::string self = self_exe();
  if (!self.empty()) {
    std::string dir = fs::path(self).parent_path().string();
    for (const std::string& d : {dir, dir + "/bench"})
      if (std::string c = in_dir(d); !c.empty()) return c;
  }
  const char* path = getenv("PATH");
  if (!path) return "";
  std::istringstream in(path);
  for (std::string d; std::getline(in, d, os::path_list_separator());) {
    if (d.empty()) continue;
    if (std::string c = in_dir(d); !c.empty()) return c;
  }
  return "";
}

// ---- the machine ------------------------------------------------------------

std::string real_path_of(const std::string& p) {
  std::error_code ec;
  auto r = fs::canonical(p, ec);
  return ec ? p : r.string();
}

MountInfo mount_of(const std::string& path) {
  MountInfo m;
  m.path = path;
  os::Volume v = os::volume_of(path);
  m.mount_point = v.mount_point;
  m.fstype = v.fstype;
  m.device = v.device;
  m.options = v.options;
  return m;
}

std::string cpu_model() { return os::cpu_model(); }
unsigned online_cpus() { return os::online_cpus(); }
unsigned usable_cpus() { return os::usable_cpus(); }
std::string kernel_release() { return os::system_release(); }
std::vector<double> loadavg() { return os::loadavg(); }
uint64_t mem_total_bytes() { return os::mem_total_bytes(); }

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
  os::Dir* d = os::dir_open(abs.c_str());
  if (!d) throw std::runtime_error("cannot read directory '" + abs + "': " + std::strerror(errno));
  std::vector<std::string> names;
  while (const char* e = os::dir_next(d)) {
    if (!std::strcmp(e, ".") || !std::strcmp(e, "..")) continue;
    names.emplace_back(e);
  }
  os::dir_close(d);
  std::sort(names.begin(), names.end());
  for (auto& name : names) {
    std::string r = rel.empty() ? name : rel + "/" + name;
    os::FileStat st;
    if (os::lstat_path((root + "/" + r).c_str(), st) != 0) continue;
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

#if defined(_WIN32)
// Windows: the os seam's removal (hpak restore's: handle-relative, a read-only
// attribute cleared first); libstdc++'s remove_all under mingw-w64 did not
// return on the bench's work directory under Wine.
void remove_tree(const std::string& path) {
  fs::path p(path);
  std::string parent = p.parent_path().string(), leaf = p.filename().string();
  int fd = os::open_path(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return;
    throw std::runtime_error("cannot remove '" + path + "': " + std::strerror(errno));
  }
  try {
    remove_entry(fd, leaf, path);
  } catch (const std::exception& e) {
    os::close(fd);
    throw std::runtime_error(std::string("cannot remove '") + path + "': " + e.what());
  }
  os::close(fd);
}
#else
void remove_tree(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return;
  fs::remove_all(path, ec);
  if (!ec) return;
  // Read-only directories (when not root): make them writable and retry.
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) os::chmod_path(it->path().string().c_str(), 0700);
  }
  os::chmod_path(path.c_str(), 0700);
  ec.clear();
  fs::remove_all(path, ec);
  if (ec) throw std::runtime_error("cannot remove '" + path + "': " + ec.message());
}
#endif

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
  if (!os::make_temp_dir(tmpl)) throw std::runtime_error("cannot create a directory in '" + parent + "': " + std::strerror(errno));
  return tmpl;
}

uint64_t file_size(const std::string& path) {
  os::FileStat st;
  return os::stat_path(path.c_str(), st) == 0 ? uint64_t(st.st_size) : 0;
}

void sync_all() { os::sync_all(); }

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
