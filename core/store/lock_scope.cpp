#include "core/store/lock_scope.hpp"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/os/file.hpp"
#include "base/os/sys.hpp"
#include "base/error.hpp"

namespace hpak::store {

namespace {

std::vector<std::string_view> split_spaces(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(' ', i);
    if (j == std::string_view::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// mountinfo escapes space, tab, newline and backslash as \ooo (octal).
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    auto octal = [&](size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '7'; };
    if (s[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out.push_back(char((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool parse_number(std::string_view s, uint64_t& v) {
  if (s.empty()) return false;
  v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  return true;
}

bool has_option(std::string_view options, std::string_view opt) {
  for (size_t i = 0; i <= options.size();) {
    size_t j = options.find(',', i);
    if (j == std::string_view::npos) j = options.size();
    if (options.substr(i, j - i) == opt) return true;
    i = j + 1;
  }
  return false;
}

// The mount id of `fd` (statx STATX_MNT_ID, Linux 5.8+), or 0.
uint64_t mount_id_of(int fd) { return os::mount_id(fd); }

} // namespace

std::optional<MountInfo> parse_mountinfo_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  auto f = split_spaces(line);
  size_t dash = 6; // optional fields (zero or more) end with "-"
  while (dash < f.size() && f[dash] != "-") dash++;
  if (dash + 3 > f.size()) return std::nullopt;
  MountInfo m;
  uint64_t parent = 0, major = 0, minor = 0;
  auto colon = f[2].find(':');
  if (!parse_number(f[0], m.mount_id) || !parse_number(f[1], parent) || colon == std::string_view::npos ||
      !parse_number(f[2].substr(0, colon), major) || !parse_number(f[2].substr(colon + 1), minor))
    return std::nullopt;
  m.major = unsigned(major);
  m.minor = unsigned(minor);
  m.mount_point = unescape(f[4]);
  m.fs_type = unescape(f[dash + 1]);
  m.source = unescape(f[dash + 2]);
  m.super_options = dash + 3 < f.size() ? std::string(f[dash + 3]) : std::string();
  return m;
}

bool locks_host_local(uint64_t fs_type, std::string_view super_options) {
  if (fs_type != kNfsSuperMagic) return false;
  return has_option(super_options, "local_lock=flock") || has_option(super_options, "local_lock=all");
}

std::optional<MountInfo> mount_of(int fd) {
  os::FileStat st;
  if (os::fstat(fd, st) != 0) return std::nullopt;
  const uint64_t id = mount_id_of(fd);
  Fd f(os::open_path("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
  if (!f) return std::nullopt;
  Bytes all;
  try {
    all = read_fd(f.get(), "/proc/self/mountinfo");
  } catch (const Error&) {
    return std::nullopt;
  }
  std::string_view text(reinterpret_cast<const char*>(all.data()), all.size());
  std::optional<MountInfo> found;
  while (!found && !text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl == std::string_view::npos ? text.size() : nl + 1);
    text.remove_prefix(line.size());
    auto m = parse_mountinfo_line(line);
    if (!m) continue;
    // The super options belong to the file system, so any mount of the same
    // device will do when the mount id is unknown.
    bool same = id ? m->mount_id == id : (m->major == os::dev_major(st.st_dev) && m->minor == os::dev_minor(st.st_dev));
    if (same) found = std::move(m);
  }
  return found;
}

void refuse_host_local_locks(int lock_fd, const std::string& library) {
  uint64_t fs_type = 0;
  if (!os::fs_type(lock_fd, fs_type) || fs_type != kNfsSuperMagic) return;
  const char* single = getenv("HPAK_SINGLE_HOST");
  if (single && std::string(single) == "1") return;
  auto m = mount_of(lock_fd);
  if (!m || !locks_host_local(fs_type, m->super_options)) return;
  const char* option = has_option(m->super_options, "local_lock=all") ? "local_lock=all" : "local_lock=flock";
  throw Error("refusing to add to, gc or repair library '" + library + "': NFS mount '" + m->mount_point + "' (" +
              m->source + ") has " + option + " (or nolock): locks there are local to this host, so a gc on " +
              "another host could delete what this one adds; set HPAK_SINGLE_HOST=1 if only this host uses the library");
}

} // namespace hpak::store
