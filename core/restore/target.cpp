#include "core/restore/target.hpp"

#include "core/store/dir_stream.hpp"
#include "base/os/fs_ops.hpp"
#include "core/pack/relocation.hpp"

#include <climits>
#include <set>
#include "base/os/sys.hpp"
#include <vector>

namespace hpak {

namespace {

bool same_inode(const os::FileStat& a, const os::FileStat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// Splits "a//b/c/" into {"a", "b", "c"}.
std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// Creates `name` in `parent` (EEXIST is fine: whatever is there is checked
// by the O_NOFOLLOW open that follows).
void make_dir_at(int parent, const std::string& name, os::Mode mode, const std::string& shown) {
  if (os::mkdir_at(parent, name.c_str(), mode) != 0 && errno != EEXIST) throw_errno("unable to create directory '" + shown + "'");
}

// Why `parent/name` cannot be opened as a directory without following a symlink.
[[noreturn]] void refuse_target(int parent, const std::string& name, const std::string& shown, int err) {
  os::FileStat st;
  if (os::stat_at(parent, name.c_str(), st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode))
      throw Error("target '" + shown + "' is a symlink (not followed: name the directory itself)");
    if (!S_ISDIR(st.st_mode)) throw Error("target '" + shown + "' exists and is not a directory");
  }
  throw_errno("unable to open target directory '" + shown + "'", err);
}

} // namespace

Fd open_target_dir(const std::string& path, os::Mode mode, const BeforeCreate& before_create) {
  if (path.empty()) throw Error("target path is empty");
  std::vector<std::string> parts = split_path(path);
  const bool absolute = path[0] == '/';
  if (parts.empty()) { // "/" (or only slashes)
    int fd = os::open_path("/", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) throw_errno("unable to open target directory '/'");
    return Fd(fd);
  }
  // cur: the directory reached so far, named `cur_shown` as in `path`.
  std::string cur_shown = absolute ? "/" : ".";
  Fd cur(os::open_path(cur_shown.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cur) throw_errno("unable to open '" + cur_shown + "'");
  auto below = [&](const std::string& c) {
    return cur_shown == "/" ? "/" + c : (cur_shown == "." && !absolute ? c : cur_shown + "/" + c);
  };
  bool creating = false; // from the first missing component on, every one is made here
  auto start_creating = [&](size_t k) {
    if (creating) return;
    creating = true;
    std::string rest;
    for (size_t i = k; i < parts.size(); i++) rest += (i > k ? "/" : "") + parts[i];
    if (before_create) before_create(cur.get(), cur_shown, rest);
  };
  // The parents: an existing one is opened as the user named it (symlinks
  // followed, as by mkdir -p); a missing one is created and opened with
  // O_NOFOLLOW relative to its parent's fd.
  for (size_t k = 0; k + 1 < parts.size(); k++) {
    const std::string& c = parts[k];
    std::string shown = below(c);
    int fd = -1;
    if (!creating || c == "." || c == "..") {
      fd = os::open_at(cur.get(), c.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0 && errno != ENOENT) throw_errno("unable to open '" + shown + "'");
    }
    if (fd < 0) {
      start_creating(k);
      make_dir_at(cur.get(), c, mode, shown);
      fd = os::open_at(cur.get(), c.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) {
        if (errno == ELOOP || errno == ENOTDIR) throw Error("'" + shown + "' is not a directory (a symlink or a file appeared there; not followed)");
        throw_errno("unable to open '" + shown + "'");
      }
    }
    cur = Fd(fd);
    cur_shown = shown;
  }
  // The target itself: never a symlink, whether it existed or is made now.
  const std::string& leaf = parts.back();
  int fd = os::open_at(cur.get(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    start_creating(parts.size() - 1);
    make_dir_at(cur.get(), leaf, mode, path);
    fd = os::open_at(cur.get(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0) refuse_target(cur.get(), leaf, path, errno);
  return Fd(fd);
}

Fd open_or_create_dir(const std::string& path, os::Mode mode) { return open_target_dir(path, mode); }

std::string target_path(int fd, const std::string& shown) {
  os::FileStat have, st;
  if (os::fstat(fd, have) != 0) throw_errno("unable to examine target '" + shown + "'");
  char buf[PATH_MAX + 1];
  long n = os::readlink_path(("/proc/self/fd/" + std::to_string(fd)).c_str(), buf, PATH_MAX);
  if (n > 0 && buf[0] == '/') {
    std::string p(buf, size_t(n));
    if (os::stat_path(p.c_str(), st) == 0 && same_inode(st, have)) return p;
  }
  std::string p; // no /proc (a chroot): resolve the name, then check it is the same directory
  try {
    p = real_path(shown);
  } catch (const Error&) {
  }
  if (!p.empty() && os::stat_path(p.c_str(), st) == 0 && same_inode(st, have)) return p;
  throw Error("target '" + shown + "' was moved or replaced while it was being opened");
}

namespace {

// --force writes over the paths the catalog names: refuse (one line, before
// any change) when one of them is a mount point — a bind-mounted file or
// directory, another file system — whose contents would be overwritten or
// removed. Below a path that is not a directory (it is replaced), nothing is
// looked at.
void refuse_mounts_at_catalog_paths(int tfd, const std::string& path, const formats::Catalog& cat) {
  os::FileStat tst;
  if (os::fstat(tfd, tst) != 0) throw_errno("unable to examine target '" + path + "'");
  std::set<std::string, std::less<>> not_dirs;
  auto under_not_dir = [&](std::string_view p) {
    for (size_t at = p.find('/'); at != std::string::npos; at = p.find('/', at + 1))
      if (not_dirs.count(p.substr(0, at))) return true;
    return false;
  };
  for (auto& n : cat.nodes) {
    if (under_not_dir(n.path)) {
      if (n.type == formats::NodeType::Dir) not_dirs.insert(n.path.str());
      continue;
    }
    os::FileStat st;
    bool mount_root = false;
    if (stat_entry(tfd, n.path.c_str(), tst.st_dev, st, mount_root) != 0) {
      if (n.type == formats::NodeType::Dir) not_dirs.insert(n.path.str());
      continue;
    }
    if (mount_root) refuse_mount_point(path + "/" + n.path);
    if (n.type == formats::NodeType::Dir && !S_ISDIR(st.st_mode)) not_dirs.insert(n.path.str());
  }
}

} // namespace

Fd open_unpack_target(const std::string& path, const formats::Catalog& cat, bool force, RelocTo* relocate) {
  BeforeCreate check_new;
  if (relocate)
    check_new = [&](int parent, const std::string& parent_shown, const std::string& rest) {
      std::string base = target_path(parent, parent_shown);
      check_relocation(cat, RelocTo{(base == "/" ? "" : base) + "/" + rest, relocate->keep_blocked}, path);
    };
  Fd fd = open_target_dir(path, 0755, check_new);
  if (relocate) {
    relocate->path = target_path(fd.get(), path);
    check_relocation(cat, *relocate, path);
  }
  if (force) {
    refuse_mounts_at_catalog_paths(fd.get(), path, cat);
    return fd;
  }
  const size_t entries = store::list_dir_at(fd.get(), path).size();
  if (entries == 0) return fd;
  std::vector<std::string> clash;
  for (auto& n : cat.nodes) {
    if (n.path.find('/') != std::string::npos) continue;
    os::FileStat st;
    if (os::stat_at(fd.get(), n.path.c_str(), st, AT_SYMLINK_NOFOLLOW) == 0) clash.push_back(n.path.str());
  }
  std::string msg = "target directory '" + path + "' is not empty (" + std::to_string(entries) + " entries)";
  if (!clash.empty()) {
    msg += "; would overwrite ";
    for (size_t i = 0; i < clash.size() && i < 5; i++) msg += (i ? ", '" : "'") + clash[i] + "'";
    if (clash.size() > 5) msg += " and " + std::to_string(clash.size() - 5) + " more";
  }
  throw Error(msg + "; use --force to unpack anyway");
}

} // namespace hpak
