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

void check_target(const Library& lib, const Catalog& cat, const std::string& real_target) {
  std::string lib_root = real_path(lib.root());
  auto inside = [](const std::string& a, const std::string& b) { return a == b || a.rfind(b + "/", 0) == 0; };
  if (inside(real_target, lib_root)) throw Error("target '" + real_target + "' is inside the library '" + lib_root + "'");
  if (inside(lib_root, real_target)) throw Error("target '" + real_target + "' contains the library '" + lib_root + "'");
  size_t longest = 0;
  for (auto& n : cat.nodes) {
    longest = std::max(longest, n.path.size());
    if (n.path == kStateName || n.path.rfind(std::string(".tmp") + kStateName, 0) == 0)
      throw Error("catalog uses the reserved name '" + n.path + "'");
  }
  if (real_target.size() + 1 + longest >= PATH_MAX)
    throw Error("target path '" + real_target + "' is too long: its deepest file would need " +
                std::to_string(real_target.size() + 1 + longest) + " bytes (the platform allows " + std::to_string(PATH_MAX - 1) + ")");
}

// The target's absolute path as it will be once created (its parent must
// exist), so it can be checked before anything is created.
std::string resolved_target(std::string t) {
  while (t.size() > 1 && t.back() == '/') t.pop_back();
  struct stat st;
  std::string leaf = base_name(t);
  if (lstat(t.c_str(), &st) == 0 || leaf == "." || leaf == "..") return real_path(t);
  std::string parent = real_path(dir_name(t));
  return (parent == "/" ? "" : parent) + "/" + leaf;
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

  struct stat tst;
  if (lstat(target.c_str(), &tst) == 0 && !S_ISDIR(tst.st_mode)) throw Error("target '" + target + "' exists and is not a directory");
  check_target(lib, cat, resolved_target(target)); // before creating it
  Fd tfd = open_or_create_dir(target);
  std::string real_target = real_path(target);
  check_target(lib, cat, real_target);
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
    mo.restore_mtime = false;
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
      fence = old->fence_ns;
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
    std::vector<ino_t> ino(cat.nodes.size(), 0);
    std::vector<uint32_t> disk_mode(dir_node.size(), 0);
    std::mutex mu;
    std::vector<std::pair<uint32_t, std::string>> removals;
    std::vector<size_t> compare;
    unsigned threads = opts.threads ? opts.threads : default_threads();

    struct DirBuf {
      std::vector<char> buf = std::vector<char>(32768);
    };
    std::vector<DirBuf> dirbufs(threads);
    parallel_for(dir_node.size(), threads, 4, [&](size_t slot, unsigned tid) {
      const std::string no_rel;
      const std::string& rel = slot == 0 ? no_rel : cat.nodes[dir_node[slot]].path;
      int fd = open_dir_beneath(tfd.get(), rel);
      if (fd < 0) return; // missing or not a directory: its parent's pass handles it
      dir_fd[slot] = fd;
      struct stat dst;
      if (fstat(fd, &dst) == 0) disk_mode[slot] = dst.st_mode & 07777;
      // slot 0's fd is a dup of the target's: its offset is shared.
      if (slot == 0 && lseek(fd, 0, SEEK_SET) != 0) throw_errno("unable to read '" + target + "'");
      std::vector<std::pair<uint32_t, std::string>> my_removals;
      std::vector<size_t> my_compare;
      auto shown = [&](std::string_view name) { return target + "/" + (rel.empty() ? "" : rel + "/") + std::string(name); };
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
            my_removals.emplace_back(uint32_t(slot), std::string(name));
            continue;
          }
          auto found = find_child(slot, name);
          if (!found) {
            my_removals.emplace_back(uint32_t(slot), std::string(name));
            continue;
          }
          size_t j = *found;
          const Node& n = cat.nodes[j];
          if (n.type == NodeType::Dir && e->d_type == DT_DIR) {
            present[j] = 1; // its own pass opens it (no symlink followed) and reads its mode
            continue;
          }
          struct stat s;
          if (fstatat(fd, e->d_name, &s, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) continue;
            throw_errno("unable to stat '" + shown(name) + "'");
          }
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
            if (uint64_t(s.st_size) != want) {
              rewrite[j] = 1;
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
            if ((s.st_mode & 07777) != n.mode) mode_fix[j] = 1;
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
            if (len >= 0 && size_t(len) == want.size() && have.compare(0, want.size(), want) == 0) present[j] = 1;
            else my_removals.emplace_back(uint32_t(slot), std::string(name));
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

    // Same-size files that cannot be trusted: compare bytes, rewrite if different.
    std::vector<Bytes> scratch(threads), disk(threads);
    parallel_for(compare.size(), threads, 4, [&](size_t k, unsigned tid) {
      size_t j = compare[k];
      const Node& n = cat.nodes[j];
      int pfd = dir_fd[parent_slot[j]];
      std::string name(leaf_of(n.path));
      int fd = openat(pfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) {
        rewrite[j] = 1;
        return;
      }
      Fd guard(fd);
      disk[tid] = read_fd(fd, target + "/" + n.path);
      auto ref = lib.locate(n.digest);
      if (!ref) {
        rewrite[j] = 1; // the write pass reports the missing object
        return;
      }
      if (ref->rec.raw_len != n.size) {
        rewrite[j] = 1; // the write pass reports the mismatch (and allocates nothing for a lie)
        return;
      }
      try {
        scratch[tid].resize(ref->rec.raw_len);
        ref->pack->read_into(ref->rec, scratch[tid]);
      } catch (const Error&) {
        rewrite[j] = 1;
        return;
      }
      bool same;
      if (n.relocs.empty()) same = disk[tid] == scratch[tid];
      else same = disk[tid] == relocate_bytes(scratch[tid], n.relocs, cat.roots, real_target);
      if (!same) rewrite[j] = 1;
    });
    stats.files_compared = compare.size();

    // Hardlinks are right only if they share the inode of a kept file.
    for (size_t i = 0; i < cat.nodes.size(); i++) {
      const Node& n = cat.nodes[i];
      if (n.type != NodeType::Hardlink || !present[i]) continue;
      size_t t = *find_path(cat, n.target); // decode checked it exists
      if (!present[t] || rewrite[t] || ino[i] != ino[t]) {
        removals.emplace_back(parent_slot[i], std::string(leaf_of(n.path)));
        present[i] = 0;
      }
    }

    bool changed = !removals.empty();
    for (size_t i = 0; i < cat.nodes.size() && !changed; i++)
      changed = !present[i] || rewrite[i] || mode_fix[i];
    for (size_t s = 1; s < dir_node.size() && !changed; s++)
      changed = dir_fd[s] >= 0 && disk_mode[s] != cat.nodes[dir_node[s]].mode;
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
    write_state(tfd.get(), target, incomplete);

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
        if (mkdirat(pfd, name.c_str(), n.mode | 0700) != 0 && errno != EEXIST) throw_errno("unable to create directory '" + target + "/" + n.path + "'");
        if (dir_fd[s] >= 0) close(dir_fd[s]);
        dir_fd[s] = openat(pfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir_fd[s] < 0) throw_errno("unable to open directory '" + target + "/" + n.path + "'");
        disk_mode[s] = n.mode | 0700;
        stats.dirs_created++;
      }

      std::vector<size_t> to_write;
      for (size_t i = 0; i < cat.nodes.size(); i++)
        if (cat.nodes[i].type == NodeType::File && (!present[i] || rewrite[i])) to_write.push_back(i);
      std::atomic<uint64_t> bytes{0};
      parallel_for(to_write.size(), threads, 8, [&](size_t k, unsigned tid) {
        size_t j = to_write[k];
        const Node& n = cat.nodes[j];
        int pfd = dir_fd[parent_slot[j]];
        std::string name(leaf_of(n.path));
        std::string shown = target + "/" + n.path;
        if (present[j]) unlinkat(pfd, name.c_str(), 0);
        int fd = openat(pfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, n.mode);
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
        if (close(guard.release()) != 0) throw_errno("unable to write '" + shown + "'");
        bytes += relocated_size(n, cat.roots, real_target.size());
        mode_fix[j] = 0;
      });
      stats.files_written = to_write.size() - stats.failures.size();
      stats.bytes_written = bytes;
      stats.files_kept = stats.files - to_write.size();

      for (size_t i = 0; i < cat.nodes.size(); i++) {
        const Node& n = cat.nodes[i];
        int pfd = dir_fd[parent_slot[i]];
        std::string name(leaf_of(n.path));
        if (n.type == NodeType::File && mode_fix[i]) {
          chmod_nofollow(pfd, name, n.mode, target + "/" + n.path); // never through a swapped-in symlink
          stats.modes_fixed++;
        } else if (n.type == NodeType::Hardlink && !present[i]) {
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
        }
      }
      for (size_t s = dir_node.size() - 1; s >= 1; s--) {
        const Node& n = cat.nodes[dir_node[s]];
        if (disk_mode[s] != n.mode) {
          if (fchmod(dir_fd[s], n.mode) != 0) throw_errno("unable to set the mode of '" + target + "/" + n.path + "'");
          stats.modes_fixed++;
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
