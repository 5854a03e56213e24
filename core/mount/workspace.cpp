#include "core/mount/workspace.hpp"

#include <sstream>
#include <vector>

#include "base/error.hpp"
#include "base/os/file.hpp"
#include "base/os/fs_ops.hpp"
#include "base/os/sys.hpp"
#include "core/store/workspace_roots.hpp"

namespace hpak {

namespace {

constexpr const char* kStateMagic = "hpak-workspace 1";
constexpr uint64_t kMaxStateBytes = 64 << 10;

// /proc/self/mountinfo escapes space, tab, newline and backslash as \ooo.
std::string as_text(const Bytes& b) { return std::string(b.begin(), b.end()); }

std::string unescape_field(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7') {
      out += char(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

struct MountLine {
  std::string at, type, super_opts;
};

// The mounts of /proc/self/mountinfo in mount order.
std::vector<MountLine> read_mountinfo() {
  std::vector<MountLine> out;
  std::istringstream in(as_text(read_file("/proc/self/mountinfo")));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::vector<std::string> w;
    for (std::string x; f >> x;) w.push_back(x);
    size_t dash = 0;
    while (dash < w.size() && w[dash] != "-") dash++;
    if (w.size() < 5 || dash + 3 >= w.size()) continue;
    MountLine m;
    m.at = unescape_field(w[4]);
    m.type = w[dash + 1];
    m.super_opts = unescape_field(w[dash + 3]);
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<MountLine> last_mount_at(const std::string& real) {
  std::optional<MountLine> found;
  for (MountLine& m : read_mountinfo())
    if (m.at == real) found = std::move(m);
  return found;
}

} // namespace

std::string default_workspace(const std::string& real_dir) {
  return dir_name(real_dir) + "/." + base_name(real_dir) + ".hpak-ws";
}

std::string encode_workspace_state(const WorkspaceState& s) {
  return std::string(kStateMagic) + "\nlibrary " + s.library + "\ncatalog " + s.catalog + "\ndigest " + to_hex(s.digest) +
         "\ndir " + s.dir + "\nmade " + (s.made ? "1" : "0") + "\n";
}

WorkspaceState decode_workspace_state(const std::string& text, const std::string& where) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kStateMagic) throw Error("'" + where + "' is not an hpak workspace state");
  WorkspaceState s;
  bool have_digest = false;
  while (std::getline(in, line)) {
    size_t sp = line.find(' ');
    std::string key = line.substr(0, sp), val = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "library") s.library = val;
    else if (key == "catalog") s.catalog = val;
    else if (key == "dir") s.dir = val;
    else if (key == "made") s.made = val == "1";
    else if (key == "digest") {
      auto d = digest_from_hex(val);
      if (!d) throw Error("'" + where + "': malformed digest '" + val + "'");
      s.digest = *d;
      have_digest = true;
    }
  }
  if (s.library.empty() || s.catalog.empty() || s.dir.empty() || !have_digest)
    throw Error("'" + where + "' is an incomplete hpak workspace state");
  return s;
}

std::optional<WorkspaceState> read_workspace_state(const std::string& ws) {
  const std::string p = workspace_state(ws);
  Fd fd = open_regular_if_exists(p, Follow::NoLinks, kMaxStateBytes);
  if (!fd) return std::nullopt;
  return decode_workspace_state(as_text(read_fd_bounded(fd.get(), p, kMaxStateBytes)), p);
}

void write_workspace_state(const std::string& ws, const WorkspaceState& s) {
  AtomicFile f(workspace_state(ws), 0600);
  const std::string text = encode_workspace_state(s);
  f.write(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  f.commit(/*durable=*/true);
}

namespace {

void make_dir(const std::string& path, unsigned mode) {
  if (os::mkdir_path(path.c_str(), os::Mode(mode)) != 0) throw_errno("unable to make '" + path + "'");
  if (os::chmod_path(path.c_str(), os::Mode(mode)) != 0) throw_errno("unable to set the mode of '" + path + "'");
}

bool empty_dir(const std::string& path) {
  os::Dir* d = os::dir_open(path.c_str());
  if (!d) throw_errno("unable to list '" + path + "'");
  bool empty = true;
  while (const char* name = os::dir_next(d))
    if (std::string_view(name) != "." && std::string_view(name) != "..") empty = false;
  os::dir_close(d);
  return empty;
}

} // namespace

void make_workspace(const std::string& ws, WorkspaceState s, unsigned root_mode) {
  s.made = os::mkdir_path(ws.c_str(), 0700) == 0;
  if (!s.made && errno != EEXIST) throw_errno("unable to make workspace '" + ws + "'");
  if (!s.made && !empty_dir(ws)) throw Error("workspace '" + ws + "' exists, is not empty and holds no hpak workspace state");
  if (s.made && os::chmod_path(ws.c_str(), 0700) != 0) throw_errno("unable to set the mode of '" + ws + "'");
  make_dir(workspace_lower(ws), 0700);
  make_dir(workspace_upper(ws), root_mode & 07777);
  make_dir(workspace_work(ws), 0700);
  write_workspace_state(ws, s);
}

void discard_workspace(const std::string& ws, const WorkspaceState& s) {
  Fd dir(os::open_path(ws.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) throw_errno("unable to open workspace '" + ws + "'");
  // The state first: a discard cut short leaves no workspace that looks whole.
  for (const char* name : {"state", "lower", "upper", "work"})
    if (os::FileStat st; os::stat_at(dir.get(), name, st, AT_SYMLINK_NOFOLLOW) == 0)
      remove_entry(dir.get(), name, ws + "/" + name);
  if (s.made && os::rmdir_path(ws.c_str()) != 0 && errno != ENOTEMPTY) throw_errno("unable to remove workspace '" + ws + "'");
  // Its gc root last (a gc also drops the root of a workspace gone). Best
  // effort: the library may be gone or not writable by this user.
  try {
    store::remove_workspace_root(store::Layout(s.library), ws);
  } catch (const Error&) {
  }
}

std::string mount_type_at(const std::string& real_path) {
  auto m = last_mount_at(real_path);
  return m ? m->type : "";
}

std::optional<OverlayMount> overlay_at(const std::string& real_dir) {
  auto m = last_mount_at(real_dir);
  if (!m || m->type != "overlay") return std::nullopt;
  OverlayMount o;
  std::istringstream in(m->super_opts);
  for (std::string opt; std::getline(in, opt, ',');) {
    size_t eq = opt.find('=');
    if (eq == std::string::npos) continue;
    std::string k = opt.substr(0, eq), v = opt.substr(eq + 1);
    if (k == "lowerdir") o.lowerdir = v;
    else if (k == "upperdir") o.upperdir = v;
    else if (k == "workdir") o.workdir = v;
  }
  return o;
}

std::optional<std::string> workspace_of_view(const std::string& real_dir) {
  auto o = overlay_at(real_dir);
  if (!o) return std::nullopt;
  const std::string suffix = "/upper";
  if (o->upperdir.size() <= suffix.size() || o->upperdir.compare(o->upperdir.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  std::string ws = o->upperdir.substr(0, o->upperdir.size() - suffix.size());
  if (o->lowerdir != workspace_lower(ws) || !read_workspace_state(ws)) return std::nullopt;
  return ws;
}

} // namespace hpak
