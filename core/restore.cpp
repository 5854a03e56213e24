#include "core/restore.hpp"

#include <atomic>
#include <climits>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <optional>
#include <algorithm>

#include "core/fs_ops.hpp"
#include "core/relocation.hpp"
#include "core/restore_state.hpp"
#include "core/target.hpp"
#include "core/util/parallel.hpp"

namespace hpak {

using namespace formats;

namespace {

bool same_relocation(const Node& a, const Catalog& ca, const Node& b, const Catalog& cb) {
  if (a.relocs.size() != b.relocs.size()) return false;
  for (size_t i = 0; i < a.relocs.size(); i++) {
    if (reloc_offset(a.relocs[i]) != reloc_offset(b.relocs[i])) return false;
    if (ca.roots[reloc_root(a.relocs[i])] != cb.roots[reloc_root(b.relocs[i])]) return false;
  }
  return true;
}

int64_t ctime_ns(const struct stat& st) { return int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec; }

std::string expected_symlink(const Node& n, const Catalog& cat, const std::string& target) {
  if (n.relocs.empty()) return n.target;
  Bytes t = relocate_bytes(ByteSpan(reinterpret_cast<const uint8_t*>(n.target.data()), n.target.size()), n.relocs, cat.roots, target);
  return std::string(t.begin(), t.end());
}

// (st_dev, st_ino) of directory `fd` and of each of its ancestors up to the
// root (whose ".." is itself), nearest first. Identities, not path strings:
// a bind mount or a symlinked path to the same directory compares equal.
using Inode = std::pair<dev_t, ino_t>;
std::vector<Inode> lineage(int fd, const std::string& shown) {
  std::vector<Inode> out;
  Fd held;
  int cur = fd;
  for (;;) {
    struct stat st;
    if (fstat(cur, &st) != 0) throw_errno("unable to examine '" + shown + "' or its parents");
    Inode id{st.st_dev, st.st_ino};
    if (!out.empty() && id == out.back()) break;
    out.push_back(id);
    if (out.size() > PATH_MAX) throw Error("'" + shown + "' has too many parents");
    held = Fd(openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!held) throw_errno("unable to examine the parents of '" + shown + "'");
    cur = held.get();
  }
  return out;
}

struct LibraryIds {
  std::string root;        // as named
  std::vector<Inode> ids;  // the library's directory, then its ancestors
};

LibraryIds library_ids(const Library& lib) {
  Fd fd(open(lib.root().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("unable to open library '" + lib.root() + "'");
  return {lib.root(), lineage(fd.get(), lib.root())};
}

// Refuses a directory (the target or, before it is created, its deepest
// existing parent) that is the library or lies inside it.
void refuse_inside_library(const LibraryIds& lib, int fd, const std::string& target) {
  std::vector<Inode> up = lineage(fd, target);
  if (std::find(up.begin(), up.end(), lib.ids.front()) != up.end())
    throw Error("target '" + target + "' is inside the library '" + lib.root + "'");
}

// Refuses a target that is, or contains, the library (the restore would
// delete it), by identity: "/", a parent of the library, the library through
// a bind mount or a symlinked path.
void refuse_library_in_target(const LibraryIds& lib, int tfd, const std::string& target) {
  struct stat st;
  if (fstat(tfd, &st) != 0) throw_errno("unable to examine target '" + target + "'");
  auto it = std::find(lib.ids.begin(), lib.ids.end(), Inode{st.st_dev, st.st_ino});
  if (it == lib.ids.begin()) throw Error("target '" + target + "' is the library '" + lib.root + "'");
  if (it != lib.ids.end()) throw Error("target '" + target + "' contains the library '" + lib.root + "'; a restore there would delete it");
}

void check_catalog_names(const Catalog& cat) {
  for (auto& n : cat.nodes)
    if (n.path == kStateName || n.path.rfind(std::string(".tmp") + kStateName, 0) == 0)
      throw Error("catalog uses the reserved name '" + n.path + "'");
}

void check_path_length(const Catalog& cat, const std::string& real_target) {
  size_t longest = 0;
  for (auto& n : cat.nodes) longest = std::max(longest, n.path.size());
  if (real_target.size() + 1 + longest >= PATH_MAX)
    throw Error("target path '" + real_target + "' is too long: its deepest file would need " +
                std::to_string(real_target.size() + 1 + longest) + " bytes (the platform allows " + std::to_string(PATH_MAX - 1) + ")");
}

// Opens the target once (O_NOFOLLOW | O_DIRECTORY, missing parents made like
// mkdir -p) and runs every check on that descriptor: not inside the library,
// not containing it, not too long. Nothing is created when a check fails that
// can be made before (inside the library, too long).
Fd open_checked_target(const Library& lib, const Catalog& cat, const std::string& target, std::string& real_target) {
  check_catalog_names(cat);
  LibraryIds ids = library_ids(lib);
  Fd tfd = open_target_dir(target, 0755, [&](int parent, const std::string& parent_shown, const std::string& rest) {
    refuse_inside_library(ids, parent, target);
    std::string base = target_path(parent, parent_shown);
    check_path_length(cat, (base == "/" ? "" : base) + "/" + rest);
  });
  refuse_library_in_target(ids, tfd.get(), target);
  refuse_inside_library(ids, tfd.get(), target);
  real_target = target_path(tfd.get(), target);
  check_path_length(cat, real_target);
  return tfd;
}

// Whether the target holds anything but hpak's own state (and temp states a
// killed restore left).
bool holds_foreign_entries(int tfd, const std::string& target) {
  // A fresh open file description: a dup would share (and advance) tfd's
  // directory offset.
  int scan_fd = openat(tfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (scan_fd < 0) throw_errno("unable to read target '" + target + "'");
  DIR* d = fdopendir(scan_fd);
  if (!d) {
    int err = errno;
    close(scan_fd);
    throw_errno("unable to read target '" + target + "'", err);
  }
  bool foreign = false;
  while (auto* e = readdir(d)) {
    std::string_view n(e->d_name);
    if (n == "." || n == ".." || n == kStateName || n.rfind(std::string(".tmp") + kStateName, 0) == 0) continue;
    foreign = true;
    break;
  }
  closedir(d);
  return foreign;
}

// A non-empty target is restored over only if its state file is its own: a
// valid state (magic, version, checksum) that hpak wrote for this very
// directory (the state's recorded target equals the target's real path). A
// state copied from another space names that space, so a copy or a moved
// space needs --force once.
void refuse_foreign_target(const std::optional<RestoreState>& old, const std::string& target) {
  std::string why = !old ? "holds no valid restore state (" + std::string(kStateName) + ")"
                         : "holds a restore state written for '" + old->target + "', not for this directory";
  throw Error("target '" + target + "' is not empty and " + why +
              ": a restore would delete everything there the catalog does not name; use --force to restore over it");
}

// A directory of the catalog that is there but cannot be opened beneath the
// target: a mount point (EXDEV: it, or the shallowest mount on its path, is
// named) or unreadable. One line, before anything in it is touched.
[[noreturn]] void refuse_unopenable_dir(int tfd, const std::string& target, const std::string& rel, int err) {
  if (err == EXDEV) {
    for (size_t at = rel.find('/'); at != std::string::npos; at = rel.find('/', at + 1)) {
      int fd = open_dir_beneath(tfd, rel.substr(0, at));
      if (fd >= 0) {
        close(fd);
      } else if (errno == EXDEV) {
        refuse_mount_point(target + "/" + rel.substr(0, at));
      }
    }
    refuse_mount_point(target + "/" + rel);
  }
  throw Error("directory '" + target + "/" + rel + "' exists but cannot be opened (" + std::strerror(err) +
              "): fix its permissions or remove it, then restore again");
}

struct DirtyPlan {
  std::vector<std::pair<uint32_t, std::string>> removals; // (dir slot, name)
  std::vector<size_t> write_files, make_dirs, make_links, make_symlinks, fix_modes;
  std::vector<uint8_t> needs_unlink;
};

} // namespace

RestoreStats restore(const Library& lib, const std::string& catalog_name, const std::string& target, const RestoreOptions& opts) {
  RestoreStats stats;
  Digest digest;
  Library::StoredCatalog stored_cat;
  Catalog cat = lib.load_catalog(catalog_name, &digest, &stored_cat, opts.verify);
  if (opts.expect_catalog && digest != *opts.expect_catalog)
    throw Error("catalog '" + catalog_name + "' changed after its signature was checked; restore it again");

  std::string real_target;
  Fd tfd = open_checked_target(lib, cat, target, real_target);
  if (flock(tfd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) throw_errno("unable to lock target '" + target + "'");
    if (!opts.wait) throw Error("target '" + target + "' is being restored by another process (retry, or drop --no-wait to wait for it)");
    if (flock(tfd.get(), LOCK_EX) != 0) throw_errno("unable to lock target '" + target + "'");
  }

  std::optional<RestoreState> old = read_state(tfd.get());
  for (auto& n : cat.nodes) stats.files += n.type == NodeType::File;

  bool empty = true;
  {
    // A fresh open file description: a dup would share (and advance) tfd's
    // directory offset, and the scan below would then miss entries.
    int scan_fd = openat(tfd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (scan_fd < 0) throw_errno("unable to read target '" + target + "'");
    DIR* d = fdopendir(scan_fd);
    if (!d) {
      int err = errno;
      close(scan_fd);
      throw_errno("unable to read target '" + target + "'", err);
    }
    while (auto* e = readdir(d)) {
      std::string_view n(e->d_name);
      if (n == "." || n == ".." || n == kStateName) continue;
      empty = false;
      break;
    }
    closedir(d);
  }
  if (!empty && !opts.force && !(old && old->target == real_target) && holds_foreign_entries(tfd.get(), target))
    refuse_foreign_target(old, target);

  RestoreState st;
  st.target = real_target;
  st.library = real_path(lib.root());
  st.name = catalog_name;
  st.catalog_digest = digest;
  // The state keeps the catalog as the library stores it (no re-encoding).
  if (stored_cat.codec == Codec::ZstdDict) st.set_catalog_raw(encode_catalog(cat));
  else st.set_catalog_stored(stored_cat.codec, stored_cat.raw_len, stored_cat.bytes);
  stored_cat.bytes = Bytes();

  if (empty) {
    stats.fresh = true;
    // Before anything is written (the state file included): will it fit?
    check_free_space(tfd.get(), target, space_for_catalog(cat, true, real_target.size()));
    // Nothing is trusted after a crash here (fence 0), so the state needs no
    // catalog yet.
    RestoreState incomplete = st;
    incomplete.complete = false;
    incomplete.fence_ns = 0;
    incomplete.catalog_stored.clear();
    incomplete.catalog_raw_len = 0;
    write_state(tfd.get(), target, incomplete);
    MaterializeOptions mo;
    mo.threads = opts.threads;
    mo.restore_mtime = true;
    mo.preserve_setid = opts.preserve_setid;
    mo.check_space = false; // checked above
    mo.relocate_to = real_target;
    mo.verify = opts.verify;
    mo.partial = opts.partial;
    mo.progress = opts.progress;
    MaterializeStats ms = materialize(cat, lib, tfd.get(), target, mo);
    stats.files_written = ms.files;
    stats.dirs_created = ms.dirs;
    stats.links_written = ms.symlinks + ms.hardlinks;
    stats.bytes_written = ms.bytes;
    stats.failures = std::move(ms.failures);
  } else {
    // ---- dirty restore: compare, then fix only what differs ----
    Catalog old_cat;
    const Catalog* prev = nullptr;
    int64_t fence = 0;
    bool old_valid = old && old->target == real_target;
    if (old_valid) {
      fence = old->fence_trusted() ? old->fence_ns : 0; // after a reboot, compare content
      if (old->catalog_digest == digest) {
        prev = &cat;
      } else {
        try {
          old_cat = decode_catalog(old->catalog_raw(), target + "/" + kStateName);
          prev = &old_cat;
        } catch (const Error&) {
          fence = 0;
        }
      }
    }
    // Directory slots: 0 = target, then each catalog dir in catalog order.
    // Siblings come in name order (path_less), so children[] below is sorted
    // by name for binary search.
    DirSlots slots = dir_slots(cat);
    const std::vector<size_t>& dir_node = slots.dir_nodes;
    const std::vector<uint32_t>& parent_slot = slots.parent;
    // children of slot s: child_node[child_begin[s] .. child_begin[s + 1]), in name order.
    std::vector<uint32_t> child_begin(dir_node.size() + 1, 0), child_node(cat.nodes.size());
    for (size_t i = 0; i < cat.nodes.size(); i++) child_begin[parent_slot[i] + 1]++;
    for (size_t s2 = 1; s2 < child_begin.size(); s2++) child_begin[s2] += child_begin[s2 - 1];
    {
      std::vector<uint32_t> fill(child_begin.begin(), child_begin.end() - 1);
      for (size_t i = 0; i < cat.nodes.size(); i++) child_node[fill[parent_slot[i]]++] = uint32_t(i);
    }
    auto find_child = [&](size_t slot, std::string_view name) -> std::optional<size_t> {
      auto first = child_node.begin() + child_begin[slot], last = child_node.begin() + child_begin[slot + 1];
      auto it = std::lower_bound(first, last, name, [&](uint32_t i, std::string_view nm) { return leaf_of(cat.nodes[i].path) < nm; });
      if (it == last || leaf_of(cat.nodes[*it].path) != name) return std::nullopt;
      return *it;
    };
    std::vector<int> dir_fd(dir_node.size(), -1);
    struct Closer {
      std::vector<int>& fds;
      ~Closer() {
        for (int fd : fds)
          if (fd >= 0) close(fd);
      }
    } closer{dir_fd};
    long limit = raise_fd_limit();
    if (long(dir_node.size()) > limit - 128) throw Error("catalog has more directories than the open-file limit allows");
    reserve_fds(dir_node.size() + 64); // before the threads: see reserve_fds

    std::vector<uint8_t> present(cat.nodes.size(), 0), rewrite(cat.nodes.size(), 0), mode_fix(cat.nodes.size(), 0);
    std::vector<uint8_t> mtime_fix(cat.nodes.size(), 0);
    std::vector<ino_t> ino(cat.nodes.size(), 0);
    std::vector<uint64_t> disk_bytes(cat.nodes.size(), 0); // blocks of a file rewritten (freed first)
    std::vector<uint32_t> disk_mode(dir_node.size(), 0);
    std::vector<int64_t> disk_mtime(dir_node.size(), 0);
    // The links a catalog file may have: itself and its hardlinks. An inode
    // with more is shared with a file the catalog does not name (`ln
    // outside/f target/f`): it is replaced, never chmod'ed or utimens'ed.
    std::vector<uint32_t> links(cat.nodes.size(), 1);
    std::vector<size_t> link_target(cat.nodes.size(), 0);
    for (size_t i = 0; i < cat.nodes.size(); i++) {
      if (cat.nodes[i].type != NodeType::Hardlink) continue;
      link_target[i] = *find_path(cat, cat.nodes[i].target); // decode checked it exists
      links[link_target[i]]++;
    }
    std::mutex mu;
    std::vector<std::pair<uint32_t, std::string>> removals;
    std::vector<size_t> compare;
    unsigned threads = opts.threads ? opts.threads : default_threads();

    struct DirBuf {
      std::vector<char> buf = std::vector<char>(32768);
    };
    std::vector<DirBuf> dirbufs(threads);
    PassProgress scan_progress(opts.progress, "scan", dir_node.size());
    parallel_for(dir_node.size(), threads, 4, [&](size_t slot, unsigned tid) {
      scan_progress.tick(tid);
      const std::string no_rel;
      const std::string& rel = slot == 0 ? no_rel : cat.nodes[dir_node[slot]].path;
      int fd = open_dir_beneath(tfd.get(), rel);
      if (fd < 0) {
        // Missing, a symlink or not a directory: its parent's pass replaces it.
        if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return;
        refuse_unopenable_dir(tfd.get(), target, rel, errno);
      }
      dir_fd[slot] = fd;
      struct stat dst;
      if (fstat(fd, &dst) != 0) throw_errno("unable to examine '" + target + (rel.empty() ? "" : "/" + rel) + "'");
      disk_mode[slot] = dst.st_mode & 07777;
      disk_mtime[slot] = mtime_ns_of(dst);
      // slot 0's fd is a dup of the target's: its offset is shared.
      if (slot == 0 && lseek(fd, 0, SEEK_SET) != 0) throw_errno("unable to read '" + target + "'");
      std::vector<std::pair<uint32_t, std::string>> my_removals;
      std::vector<size_t> my_compare;
      auto shown = [&](std::string_view name) { return target + "/" + (rel.empty() ? "" : rel + "/") + std::string(name); };
      // An entry to remove: never a mount point (refused before any change).
      auto stray = [&](const char* name) {
        struct stat s;
        bool mount_root = false;
        if (stat_entry(fd, name, dst.st_dev, s, mount_root) == 0 && mount_root) refuse_mount_point(shown(name));
        my_removals.emplace_back(uint32_t(slot), std::string(name));
      };
      std::vector<char>& buf = dirbufs[tid].buf;
      for (;;) {
        long got = read_dirents(fd, buf.data(), buf.size());
        if (got < 0) throw_errno("unable to read '" + target + (rel.empty() ? "" : "/" + rel) + "'");
        if (got == 0) break;
        for (long off = 0; off < got;) {
          auto* e = reinterpret_cast<const RawDirent*>(buf.data() + off);
          off += e->d_reclen;
          std::string_view name(e->d_name);
          if (name == "." || name == "..") continue;
          if (slot == 0 && name == kStateName) continue;
          if (slot == 0 && name.rfind(std::string(".tmp") + kStateName, 0) == 0) {
            // A temp state left by a killed restore (we hold the lock: no one writes one now).
            stray(e->d_name);
            continue;
          }
          auto found = find_child(slot, name);
          if (!found) {
            stray(e->d_name);
            continue;
          }
          size_t j = *found;
          const Node& n = cat.nodes[j];
          if (n.type == NodeType::Dir && e->d_type == DT_DIR) {
            present[j] = 1; // its own pass opens it (no symlink followed) and reads its mode
            continue;
          }
          struct stat s;
          bool mount_root = false;
          if (stat_entry(fd, e->d_name, dst.st_dev, s, mount_root) != 0) {
            if (errno == ENOENT) continue;
            throw_errno("unable to stat '" + shown(name) + "'");
          }
          // A mounted file or directory at a catalog path: never compared,
          // rewritten, chmod'ed or removed; the restore stops before any change.
          if (mount_root) refuse_mount_point(shown(name));
          switch (n.type) {
          case NodeType::Dir:
            if (S_ISDIR(s.st_mode)) present[j] = 1;
            else my_removals.emplace_back(uint32_t(slot), std::string(name));
            break;
          case NodeType::File: {
            if (!S_ISREG(s.st_mode)) {
              my_removals.emplace_back(uint32_t(slot), std::string(name));
              break;
            }
            present[j] = 1;
            ino[j] = s.st_ino;
            uint64_t want = relocated_size(n, cat.roots, real_target.size());
            if (uint64_t(s.st_size) != want || s.st_nlink > links[j]) {
              rewrite[j] = 1;
              if (s.st_nlink == 1) disk_bytes[j] = uint64_t(s.st_blocks) * 512;
              break;
            }
            bool trusted = false;
            if (prev && ctime_ns(s) < fence) {
              const Node* o = nullptr;
              if (prev == &cat) o = &n;
              else if (auto pi = find_path(*prev, rel.empty() ? std::string(name) : rel + "/" + std::string(name))) o = &prev->nodes[*pi];
              trusted = o && o->type == NodeType::File && o->digest == n.digest && same_relocation(*o, *prev, n, cat);
            }
            if (!trusted || opts.verify_content) my_compare.push_back(j);
            if ((s.st_mode & 07777) != wanted_mode(n, opts.preserve_setid)) mode_fix[j] = 1;
            if (mtime_ns_of(s) != n.mtime_ns) mtime_fix[j] = 1;
            break;
          }
          case NodeType::Symlink: {
            if (!S_ISLNK(s.st_mode)) {
              my_removals.emplace_back(uint32_t(slot), std::string(name));
              break;
            }
            std::string want = expected_symlink(n, cat, real_target);
            std::string have(size_t(s.st_size) + 1, '\0');
            ssize_t len = readlinkat(fd, e->d_name, have.data(), have.size());
            if (len >= 0 && size_t(len) == want.size() && have.compare(0, want.size(), want) == 0 && s.st_nlink == 1) {
              present[j] = 1;
              if (mtime_ns_of(s) != n.mtime_ns) mtime_fix[j] = 1;
            } else {
              my_removals.emplace_back(uint32_t(slot), std::string(name));
            }
            break;
          }
          case NodeType::Hardlink:
            if (S_ISREG(s.st_mode)) {
              present[j] = 1;
              ino[j] = s.st_ino;
            } else {
              my_removals.emplace_back(uint32_t(slot), std::string(name));
            }
            break;
          }
        }
      }
      std::lock_guard lk(mu);
      removals.insert(removals.end(), my_removals.begin(), my_removals.end());
      compare.insert(compare.end(), my_compare.begin(), my_compare.end());
    });
    scan_progress.finish();

    // Same-size files that cannot be trusted: compare bytes, rewrite if
    // different; in bounded chunks (never a whole file or object in memory).
    // An object whose bytes do not match its name fails the restore (with
    // `partial`: that file is reported and left as it is), before any change.
    std::vector<Bytes> scratch(threads);
    std::vector<std::pair<size_t, std::string>> forged;
    PassProgress compare_progress(opts.progress, "compare", compare.size());
    parallel_for(compare.size(), threads, 4, [&](size_t k, unsigned tid) {
      compare_progress.tick(tid);
      size_t j = compare[k];
      const Node& n = cat.nodes[j];
      int fd = openat(dir_fd[parent_slot[j]], std::string(leaf_of(n.path)).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) {
        rewrite[j] = 1;
        return;
      }
      Fd guard(fd);
      std::string why;
      switch (compare_file_content(n, cat, lib, fd, real_target, scratch[tid], &why)) {
      case ContentMatch::Same: break;
      case ContentMatch::Differs:
      case ContentMatch::Unreadable: rewrite[j] = 1; break;
      case ContentMatch::Forged: {
        std::lock_guard lk(mu);
        forged.emplace_back(j, std::move(why));
        break;
      }
      }
    });
    std::sort(forged.begin(), forged.end());
    for (auto& [j, why] : forged) {
      if (!opts.partial) throw Error("'" + target + "/" + cat.nodes[j].path + "' cannot be checked: " + why);
      stats.failures.push_back({cat.nodes[j].path, to_hex(cat.nodes[j].digest), why});
      mode_fix[j] = mtime_fix[j] = 0; // left exactly as it is
    }
    if (!compare.empty()) compare_progress.finish();
    stats.files_compared = compare.size();

    // Hardlinks are right only if they share the inode of a kept file.
    auto drop_stale_hardlinks = [&] {
      for (size_t i = 0; i < cat.nodes.size(); i++) {
        const Node& n = cat.nodes[i];
        if (n.type != NodeType::Hardlink || !present[i]) continue;
        size_t t = link_target[i];
        if (!present[t] || rewrite[t] || ino[i] != ino[t]) {
          removals.emplace_back(parent_slot[i], std::string(leaf_of(n.path)));
          present[i] = 0;
        }
      }
    };
    drop_stale_hardlinks();

    bool changed = !removals.empty() || !stats.failures.empty();
    for (size_t i = 0; i < cat.nodes.size() && !changed; i++)
      changed = !present[i] || rewrite[i] || mode_fix[i] || mtime_fix[i];
    for (size_t s = 1; s < dir_node.size() && !changed; s++) {
      const Node& d = cat.nodes[dir_node[s]];
      changed = dir_fd[s] >= 0 && (disk_mode[s] != wanted_mode(d, opts.preserve_setid) || disk_mtime[s] != d.mtime_ns);
    }
    if (!changed && old && old->complete && old_valid && old->catalog_digest == digest) {
      for (auto& n : cat.nodes) stats.files_kept += n.type == NodeType::File;
      lib.touch_used(catalog_name);
      return stats; // nothing to do: no write at all, state stays valid
    }

    // Mark incomplete before the first change, keeping the old trust basis.
    RestoreState incomplete;
    if (old_valid && prev) {
      incomplete = *old;
      incomplete.complete = false;
    } else {
      incomplete = st;
      incomplete.complete = false;
      incomplete.fence_ns = 0;
    }
    {
      // What the writes below add, less what the replaced files free first.
      SpaceNeed need;
      uint64_t freed = 0;
      for (size_t i = 0; i < cat.nodes.size(); i++) {
        const Node& n = cat.nodes[i];
        if (n.type == NodeType::File && (!present[i] || rewrite[i])) {
          need.add_file(relocated_size(n, cat.roots, real_target.size()));
          freed = freed + disk_bytes[i] < freed ? freed : freed + disk_bytes[i];
        } else if ((n.type == NodeType::Dir || n.type == NodeType::Symlink) && !present[i]) {
          need.entries++;
        }
      }
      check_free_space(tfd.get(), target, need, freed);
    }
    write_state(tfd.get(), target, incomplete);

    // Kept files whose mode or mtime differ: fixed through a descriptor, after
    // checking the inode is still the one seen and not shared beyond the
    // catalog's own links; otherwise the file is replaced.
    for (size_t i = 0; i < cat.nodes.size(); i++) {
      const Node& n = cat.nodes[i];
      if (n.type != NodeType::File || !present[i] || rewrite[i] || !(mode_fix[i] || mtime_fix[i])) continue;
      timespec mt = to_timespec(n.mtime_ns);
      if (fix_file_meta(dir_fd[parent_slot[i]], std::string(leaf_of(n.path)), ino[i], links[i],
                        mode_fix[i] ? int(wanted_mode(n, opts.preserve_setid)) : -1, mtime_fix[i] ? &mt : nullptr, target + "/" + n.path)) {
        stats.modes_fixed += mode_fix[i];
      } else {
        rewrite[i] = 1;
      }
      mode_fix[i] = mtime_fix[i] = 0;
    }
    drop_stale_hardlinks();

    // A directory we change must be writable by us (a read-only directory of
    // the catalog, restored before, is not for a non-root user); its mode is
    // set back by the last pass below.
    {
      std::vector<uint8_t> touched(dir_node.size(), 0);
      for (auto& r : removals) touched[r.first] = 1;
      for (size_t i = 0; i < cat.nodes.size(); i++)
        if (!present[i] || rewrite[i]) touched[parent_slot[i]] = 1;
      for (size_t s = 1; s < dir_node.size(); s++) {
        if (!touched[s] || dir_fd[s] < 0 || (disk_mode[s] & 0300) == 0300) continue;
        if (fchmod(dir_fd[s], disk_mode[s] | 0700) != 0) throw_errno("unable to make '" + target + "/" + cat.nodes[dir_node[s]].path + "' writable");
        disk_mode[s] |= 0700;
      }
    }
    for (auto& [slot, name] : removals) {
      remove_entry(dir_fd[slot], name, target + "/" + (slot ? cat.nodes[dir_node[slot]].path + "/" : std::string()) + name);
      stats.removed++;
    }
    // Directories that are missing (or were just removed), in catalog order.
    {
      struct UmaskGuard {
        mode_t old = umask(0);
        ~UmaskGuard() { umask(old); }
      } ug;
      for (size_t s = 1; s < dir_node.size(); s++) {
        size_t j = dir_node[s];
        if (present[j] && dir_fd[s] >= 0) continue;
        const Node& n = cat.nodes[j];
        int pfd = dir_fd[parent_slot[j]];
        std::string name(leaf_of(n.path));
        if (mkdirat(pfd, name.c_str(), wanted_mode(n, opts.preserve_setid) | 0700) != 0 && errno != EEXIST) throw_errno("unable to create directory '" + target + "/" + n.path + "'");
        if (dir_fd[s] >= 0) close(dir_fd[s]);
        // Beneath its parent: never through a symlink, never into a mount.
        dir_fd[s] = open_dir_beneath(pfd, name);
        if (dir_fd[s] < 0) refuse_unopenable_dir(tfd.get(), target, n.path, errno);
        disk_mode[s] = wanted_mode(n, opts.preserve_setid) | 0700;
        disk_mtime[s] = INT64_MIN; // set last, below
        stats.dirs_created++;
      }

      std::vector<size_t> to_write;
      for (size_t i = 0; i < cat.nodes.size(); i++)
        if (cat.nodes[i].type == NodeType::File && (!present[i] || rewrite[i])) to_write.push_back(i);
      std::atomic<uint64_t> bytes{0};
      PassProgress write_progress(opts.progress, "write", to_write.size());
      parallel_for(to_write.size(), threads, 8, [&](size_t k, unsigned tid) {
        write_progress.tick(tid);
        size_t j = to_write[k];
        const Node& n = cat.nodes[j];
        int pfd = dir_fd[parent_slot[j]];
        std::string name(leaf_of(n.path));
        std::string shown = target + "/" + n.path;
        if (present[j]) unlinkat(pfd, name.c_str(), 0);
        int fd = openat(pfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, wanted_mode(n, opts.preserve_setid));
        if (fd < 0) throw_errno("unable to create '" + shown + "'");
        Fd guard(fd);
        try {
          write_file_content(n, cat, lib, fd, target, real_target, opts.verify, scratch[tid]);
        } catch (const Error& e) {
          guard.reset();
          unlinkat(pfd, name.c_str(), 0);
          if (!opts.partial) throw Error("'" + shown + "' not restored: " + e.what());
          mode_fix[j] = 0; // nothing left there to chmod
          std::lock_guard lk(mu);
          stats.failures.push_back({n.path, to_hex(n.digest), e.what()});
          return;
        }
        timespec ts[2] = {to_timespec(n.mtime_ns), to_timespec(n.mtime_ns)};
        if (futimens(fd, ts) != 0) throw_errno("unable to set the mtime of '" + shown + "'");
        if (close(guard.release()) != 0) throw_errno("unable to write '" + shown + "'");
        bytes += relocated_size(n, cat.roots, real_target.size());
        mode_fix[j] = 0;
      });
      write_progress.finish();
      stats.files_written = to_write.size() - (stats.failures.size() - forged.size());
      stats.bytes_written = bytes;
      stats.files_kept = stats.files - to_write.size();

      for (size_t i = 0; i < cat.nodes.size(); i++) {
        const Node& n = cat.nodes[i];
        int pfd = dir_fd[parent_slot[i]];
        std::string name(leaf_of(n.path));
        if (n.type == NodeType::Hardlink && !present[i]) {
          size_t t = *find_path(cat, n.target); // decode checked it exists
          if (linkat(dir_fd[parent_slot[t]], std::string(leaf_of(n.target)).c_str(), pfd, name.c_str(), 0) != 0) {
            if (opts.partial && errno == ENOENT) continue;
            throw_errno("unable to link '" + target + "/" + n.path + "'");
          }
          stats.links_written++;
        } else if (n.type == NodeType::Symlink && !present[i]) {
          std::string want = expected_symlink(n, cat, real_target);
          if (symlinkat(want.c_str(), pfd, name.c_str()) != 0) throw_errno("unable to create symlink '" + target + "/" + n.path + "'");
          stats.links_written++;
          mtime_fix[i] = 1;
        }
        if (n.type == NodeType::Symlink && mtime_fix[i]) {
          // Checked a symlink with one link by the scan; never followed.
          timespec ts[2] = {to_timespec(n.mtime_ns), to_timespec(n.mtime_ns)};
          if (utimensat(pfd, name.c_str(), ts, AT_SYMLINK_NOFOLLOW) != 0) throw_errno("unable to set the mtime of '" + target + "/" + n.path + "'");
        }
      }
      // Directory modes and mtimes last, deepest first: every change inside a
      // directory is made by now (creating, removing or replacing an entry
      // changes its mtime; the mode or mtime of a child does not).
      std::vector<uint8_t> touched(dir_node.size(), 0);
      for (auto& r : removals) touched[r.first] = 1;
      for (size_t i = 0; i < cat.nodes.size(); i++)
        if (!present[i] || rewrite[i]) touched[parent_slot[i]] = 1;
      for (size_t s = dir_node.size() - 1; s >= 1; s--) {
        const Node& n = cat.nodes[dir_node[s]];
        const unsigned mode = wanted_mode(n, opts.preserve_setid);
        if (disk_mode[s] != mode) {
          if (fchmod(dir_fd[s], mode) != 0) throw_errno("unable to set the mode of '" + target + "/" + n.path + "'");
          stats.modes_fixed++;
        }
        if (touched[s] || disk_mtime[s] != n.mtime_ns) {
          timespec ts[2] = {to_timespec(n.mtime_ns), to_timespec(n.mtime_ns)};
          if (futimens(dir_fd[s], ts) != 0) throw_errno("unable to set the mtime of '" + target + "/" + n.path + "'");
        }
      }
    }
  }

  if (!stats.failures.empty()) return stats; // state stays incomplete: the next restore repairs
  st.complete = true;
  st.fence_ns = ctime_fence();
  write_state(tfd.get(), target, st);
  lib.touch_used(catalog_name);
  return stats;
}

} // namespace hpak
