#include "core/materialize.hpp"

#include <algorithm>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <thread>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <unordered_map>

#include "core/fs_ops.hpp"
#include "core/large_copy.hpp"
#include "core/relocation.hpp"
#include "core/util/file.hpp"
#include "core/util/hash.hpp"
#include "core/util/parallel.hpp"

namespace hpak {

using namespace formats;

namespace {

// Objects above this are decoded as a stream through reused buffers, never whole.
constexpr uint64_t kStreamThreshold = kLargeChunk;

struct UmaskGuard {
  mode_t old;
  UmaskGuard() : old(umask(0)) {}
  ~UmaskGuard() { umask(old); }
};

// Relocates an object streamed in chunks: offsets (ascending, not
// overlapping, checked by the catalog decoder) are absolute in the object, so
// a root may straddle two chunks; its bytes are skipped wherever they fall.
class ChunkRelocator {
public:
  ChunkRelocator(const std::vector<uint64_t>& relocs, const std::vector<std::string>& roots, std::string_view target)
      : relocs_(relocs), roots_(roots), target_(reinterpret_cast<const uint8_t*>(target.data()), target.size()) {}
  template <class Sink> void feed(ByteSpan chunk, Sink&& out) {
    const uint64_t start = pos_, end = pos_ + chunk.size();
    uint64_t p = start;
    while (p < end) {
      if (p < skip_until_) {
        p = std::min(end, skip_until_);
        continue;
      }
      if (next_ < relocs_.size() && reloc_offset(relocs_[next_]) < end) {
        uint64_t off = std::max(p, reloc_offset(relocs_[next_]));
        out(chunk.subspan(p - start, off - p));
        out(target_);
        skip_until_ = off + roots_[reloc_root(relocs_[next_])].size();
        next_++;
        p = off;
        continue;
      }
      out(chunk.subspan(p - start, end - p));
      p = end;
    }
    pos_ = end;
  }

private:
  const std::vector<uint64_t>& relocs_;
  const std::vector<std::string>& roots_;
  ByteSpan target_;
  size_t next_ = 0;
  uint64_t pos_ = 0, skip_until_ = 0;
};

} // namespace

timespec to_timespec(int64_t ns) {
  timespec t;
  t.tv_sec = ns / 1000000000;
  t.tv_nsec = ns % 1000000000;
  if (t.tv_nsec < 0) {
    t.tv_nsec += 1000000000;
    t.tv_sec -= 1;
  }
  return t;
}

std::string human_size(uint64_t n) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (n < 1024) return std::to_string(n) + " bytes";
  double v = double(n) / 1024;
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    u++;
  }
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

SpaceNeed space_for_catalog(const Catalog& cat, bool relocate, size_t relocate_len) {
  SpaceNeed need;
  for (auto& n : cat.nodes) {
    if (n.type == NodeType::File) need.add_file(relocate ? relocated_size(n, cat.roots, relocate_len) : n.size);
    else if (n.type != NodeType::Hardlink) need.entries++;
  }
  return need;
}

void check_free_space(int fd, const std::string& shown, const SpaceNeed& need, uint64_t freed) {
  struct statvfs vfs;
  if (fstatvfs(fd, &vfs) != 0) return; // nothing to compare with: the writes report ENOSPC
  const uint64_t block = vfs.f_frsize ? vfs.f_frsize : 4096;
  auto sat_add = [](uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; };
  uint64_t per_entry = need.entries > UINT64_MAX / block ? UINT64_MAX : need.entries * block;
  uint64_t needed = sat_add(need.bytes, per_entry);
  uint64_t has = vfs.f_bavail > UINT64_MAX / block ? UINT64_MAX : uint64_t(vfs.f_bavail) * block;
  has = sat_add(has, freed);
  if (needed > has)
    throw Error("not enough space in '" + shown + "': needs " + human_size(needed) + ", has " + human_size(has) + " (" +
                std::to_string(need.entries) + " entries, " + human_size(need.bytes) + " of file content)");
  if (vfs.f_files != 0 && need.entries > vfs.f_favail) // f_files 0: the file system does not count inodes
    throw Error("not enough inodes in '" + shown + "': needs " + std::to_string(need.entries) + ", has " + std::to_string(vfs.f_favail));
}

ContentMatch compare_file_content(const Node& n, const Catalog& cat, const ObjectSource& src, int fd, const std::string& relocate_to,
                                  Bytes& buf, std::string* why) {
  auto ref = src.locate(n.digest);
  if (!ref || ref->rec.raw_len != n.size) return ContentMatch::Unreadable; // the write pass says why
  buf.resize(1u << 20);
  size_t have = 0, used = 0;
  bool same = true;
  auto against_file = [&](ByteSpan piece) {
    while (same && !piece.empty()) {
      if (used == have) {
        ssize_t got = read(fd, buf.data(), buf.size());
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          same = false; // shorter than the object (or unreadable): rewrite
          break;
        }
        have = size_t(got);
        used = 0;
      }
      size_t k = std::min(piece.size(), have - used);
      if (std::memcmp(piece.data(), buf.data() + used, k) != 0) same = false;
      used += k;
      piece = piece.subspan(k);
    }
  };
  const bool relocate = !relocate_to.empty() && !n.relocs.empty();
  ChunkRelocator reloc(n.relocs, cat.roots, relocate_to);
  Sha256 sha;
  try {
    ref->pack->read_stream(ref->rec, [&](ByteSpan chunk) {
      sha.update(chunk); // to the end, even after a difference
      if (!same) return;
      if (relocate) reloc.feed(chunk, against_file);
      else against_file(chunk);
    }, /*verify_digest=*/false);
  } catch (const Error&) {
    return ContentMatch::Unreadable; // damaged: the write pass reports it
  }
  if (sha.finish() != n.digest) {
    if (why) *why = Corrupt(ref->pack->path(), ref->rec.offset, "content of " + to_hex(n.digest) + " does not match its name").what();
    return ContentMatch::Forged;
  }
  if (same && used == have) {
    char extra;
    ssize_t got;
    while ((got = read(fd, &extra, 1)) < 0 && errno == EINTR) {
    }
    same = got == 0; // and not longer either
  } else if (used != have) {
    same = false;
  }
  return same ? ContentMatch::Same : ContentMatch::Differs;
}

bool fix_file_meta(int dirfd, const std::string& name, ino_t ino, nlink_t max_links, int mode, const timespec* mtime,
                   const std::string& shown) {
  int fd = openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return false;
  Fd guard(fd);
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != ino || st.st_nlink > max_links) return false;
  if (mode >= 0 && (st.st_mode & 07777) != unsigned(mode) && fchmod(fd, mode_t(mode)) != 0)
    throw_errno("unable to set the mode of '" + shown + "'");
  if (mtime) {
    timespec ts[2] = {*mtime, *mtime};
    if (futimens(fd, ts) != 0) throw_errno("unable to set the mtime of '" + shown + "'");
  }
  return true;
}

std::vector<std::optional<ObjectRef>> locate_all(const Catalog& cat, const std::vector<size_t>& files, const ObjectSource& src,
                                                 unsigned threads) {
  std::vector<std::optional<ObjectRef>> refs(files.size());
  parallel_for(files.size(), threads, 256, [&](size_t k, unsigned) { refs[k] = src.locate(cat.nodes[files[k]].digest); });
  return refs;
}

WorkUnits work_units(const std::vector<std::optional<ObjectRef>>& refs) {
  constexpr size_t kMin = 8, kMax = 1024;
  constexpr uint64_t kUnitBytes = 1 << 20; // a large file is a unit of its own
  WorkUnits w;
  if (refs.empty()) return w;
  // Each file's key: its own position, or for a block member the position of
  // the block's first member; a stable sort by key (then member number)
  // gathers each block's members behind its first one, in the block's order,
  // and keeps every other file in place.
  auto block_of = [&](size_t k) -> std::optional<std::pair<const PackReader*, uint64_t>> {
    if (!refs[k] || refs[k]->rec.member == kNoMember) return std::nullopt;
    return std::make_pair(refs[k]->pack, refs[k]->rec.offset);
  };
  std::map<std::pair<const PackReader*, uint64_t>, size_t> first;
  std::vector<size_t> key(refs.size());
  for (size_t k = 0; k < refs.size(); k++) {
    auto b = block_of(k);
    key[k] = b ? first.emplace(*b, k).first->second : k;
  }
  w.order.resize(refs.size());
  for (size_t k = 0; k < refs.size(); k++) w.order[k] = k;
  auto member = [&](size_t k) { return refs[k] ? refs[k]->rec.member : 0; };
  std::stable_sort(w.order.begin(), w.order.end(), [&](size_t x, size_t y) {
    return key[x] != key[y] ? key[x] < key[y] : member(x) < member(y); // a block's members in table order
  });
  w.starts.push_back(0);
  uint64_t bytes = 0; // in the unit so far
  for (size_t i = 1; i < w.order.size(); i++) {
    size_t len = i - w.starts.back();
    const auto& prev = refs[w.order[i - 1]];
    bytes += prev ? prev->rec.raw_len : 0;
    bool same = key[w.order[i]] == key[w.order[i - 1]];
    if (((len >= kMin || bytes >= kUnitBytes) && !same) || len >= kMax) {
      w.starts.push_back(i);
      bytes = 0;
    }
  }
  w.starts.push_back(refs.size());
  return w;
}

void write_file_content(const Node& n, const Catalog& cat, const ObjectSource& src, int fd, const std::string& target_shown,
                        const std::string& relocate_to, bool verify, Bytes& scratch) {
  write_file_content(n, cat, src.locate(n.digest), fd, target_shown, relocate_to, verify, scratch);
}

void write_file_content(const Node& n, const Catalog& cat, const std::optional<ObjectRef>& ref, int fd,
                        const std::string& target_shown, const std::string& relocate_to, bool verify, Bytes& scratch) {
  auto shown = [&] { return target_shown + "/" + n.path; }; // for messages only
  auto put = [&](ByteSpan data) {
    if (!write_full(fd, data)) throw_errno("unable to write '" + shown() + "'");
  };
  if (!ref) throw Error("object " + to_hex(n.digest) + " for '" + shown() + "' is missing");
  const PackReader& pack = *ref->pack;
  const IndexRecord& rec = ref->rec;
  if (rec.raw_len != n.size)
    throw Corrupt(pack.path(), rec.offset, "object " + to_hex(n.digest) + " has " + std::to_string(rec.raw_len) + " bytes, catalog says " + std::to_string(n.size));
  bool relocate = !relocate_to.empty() && !n.relocs.empty();
  if (rec.codec == Codec::Raw && !relocate && rec.raw_len >= kKernelCopyThreshold) {
    write_raw_object(pack, rec, fd, verify, shown()); // copy_file_range, checked beside it
    return;
  }
  // A compressed object's declared size is trusted only as far as its stored
  // bytes could produce it (zstd cannot expand 1:2^17): a hostile pack must
  // not make the paths below allocate or write terabytes for a tiny entry.
  if (rec.codec != Codec::Raw && rec.raw_len / 131072 > rec.stored_len + 1)
    throw Corrupt(pack.path(), rec.offset, "declared size " + std::to_string(rec.raw_len) + " of " + to_hex(rec.digest) +
                                               " is impossible for " + std::to_string(rec.stored_len) + " stored bytes");
  if (rec.raw_len > kStreamThreshold) {
    advise_stored(pack, rec); // read ahead, not a fault per page
    if (!relocate) return pack.read_stream(rec, put, verify);
    ChunkRelocator reloc(n.relocs, cat.roots, relocate_to);
    return pack.read_stream(rec, [&](ByteSpan chunk) { reloc.feed(chunk, put); }, verify);
  }
  ByteSpan content;
  if (rec.codec == Codec::Raw && !relocate) {
    content = pack.checked_stored(rec);
    if (verify && sha256(content) != rec.digest)
      throw Corrupt(pack.path(), rec.offset, "content of " + to_hex(rec.digest) + " does not match its name");
  } else {
    scratch.resize(rec.raw_len);
    pack.read_into(rec, std::span<uint8_t>(scratch.data(), scratch.size()), verify);
    content = ByteSpan(scratch.data(), scratch.size());
  }
  if (relocate) {
    Bytes out = relocate_bytes(content, n.relocs, cat.roots, relocate_to);
    put(out);
  } else {
    put(content);
  }
}

MaterializeStats materialize(const Catalog& cat, const ObjectSource& src, int target_fd, const std::string& target_shown,
                             const MaterializeOptions& opts) {
  UmaskGuard umask_guard;
  MaterializeStats stats;
  const auto& nodes = cat.nodes;
  const size_t n = nodes.size();
  long fd_limit = raise_fd_limit();

  // parent[i]: index into dir_fds of node i's parent (0 = target).
  DirSlots slots = dir_slots(cat);
  const std::vector<size_t>& dir_nodes = slots.dir_nodes;
  const std::vector<uint32_t>& parent = slots.parent;
  std::vector<size_t> files, links, symlinks;
  for (size_t i = 0; i < n; i++) {
    if (nodes[i].path.find('/') != std::string::npos && parent[i] == 0)
      throw Error("internal error: catalog out of order at '" + nodes[i].path + "'");
    switch (nodes[i].type) {
    case NodeType::Dir: break;
    case NodeType::File: files.push_back(i); break;
    case NodeType::Hardlink: links.push_back(i); break;
    case NodeType::Symlink: symlinks.push_back(i); break;
    }
  }
  const size_t dir_count = dir_nodes.size() - 1;
  if (long(dir_count) > fd_limit - 128)
    throw Error("tree has " + std::to_string(dir_count) + " directories, more than the open-file limit (" + std::to_string(fd_limit) + ") allows");
  // A directory gets an fd of its own only if it has subdirectories (they are
  // made relative to it) or --force may have to replace entries in it; the
  // files of a leaf directory are created through its parent's fd with
  // openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) on "leaf/name": two
  // syscalls (openat, close) saved per leaf directory, no path followed
  // through a symlink either way.
  std::vector<uint8_t> needs_fd(dir_nodes.size(), opts.force || !have_openat2(target_fd) ? 1 : 0);
  needs_fd[0] = 1;
  for (size_t k = 1; k < dir_nodes.size(); k++) needs_fd[parent[dir_nodes[k]]] = 1;
  std::vector<int> dir_fds(dir_nodes.size(), -1);
  dir_fds[0] = target_fd;
  std::vector<uint8_t> dir_existed(dir_nodes.size(), 0);
  struct FdCloser {
    std::vector<int>& fds;
    ~FdCloser() {
      for (size_t i = 1; i < fds.size(); i++)
        if (fds[i] >= 0) close(fds[i]);
    }
  } closer{dir_fds};
  reserve_fds(dir_count + 64); // before the threads: see reserve_fds
  if (opts.check_space)
    check_free_space(target_fd, target_shown, space_for_catalog(cat, !opts.relocate_to.empty(), opts.relocate_to.size()));

  // Thread 0 creates the directories, in catalog order, while the other
  // workers already write files; a file whose directory is not made yet
  // waits for it (rarely: files come in the same order as their directories).
  // dirs_ready = number of directory slots usable (slot 0, the target, always).
  std::atomic<size_t> dirs_ready{1};
  std::atomic<bool> dirs_failed{false};
  auto make_dirs = [&] {
    try {
      for (size_t slot = 1; slot < dir_nodes.size(); slot++) {
        const Node& node = nodes[dir_nodes[slot]];
        const char* name = node.path.c_str() + (node.path.size() - leaf_of(node.path).size());
        int pfd = dir_fds[parent[dir_nodes[slot]]];
        auto shown = [&] { return target_shown + "/" + node.path; };
        mode_t create_mode = wanted_mode(node, opts.preserve_setid) | 0700;
        if (mkdirat(pfd, name, create_mode) != 0) {
          if (errno != EEXIST) throw_errno("unable to create directory '" + shown() + "'");
          if (!opts.force) throw Error("'" + shown() + "' already exists (use --force to overwrite)");
          struct stat st;
          if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
            dir_existed[slot] = 1;
          } else {
            remove_entry(pfd, name, shown());
            if (mkdirat(pfd, name, create_mode) != 0) throw_errno("unable to create directory '" + shown() + "'");
          }
        }
        if (needs_fd[slot]) {
          int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (fd < 0) throw_errno("unable to open directory '" + shown() + "'");
          dir_fds[slot] = fd;
        }
        dirs_ready.store(slot + 1, std::memory_order_release);
        stats.dirs++;
      }
    } catch (...) {
      dirs_failed = true;
      throw;
    }
  };

  std::mutex mu;
  std::atomic<uint64_t> bytes{0}, done{0};
  unsigned threads = opts.threads ? opts.threads : default_threads();
  std::vector<Bytes> scratch(threads);
  const std::vector<std::optional<ObjectRef>> refs = locate_all(cat, files, src, threads);
  const WorkUnits units = work_units(refs);
  auto write_one = [&](size_t k, unsigned tid) {
    const Node& node = nodes[files[k]];
    uint32_t slot = parent[files[k]];
    while (dirs_ready.load(std::memory_order_acquire) <= slot) {
      if (dirs_failed.load()) return; // the directory error is what is reported
      std::this_thread::yield();
    }
    const char* name = node.path.c_str() + (node.path.size() - leaf_of(node.path).size());
    int pfd = dir_fds[slot];
    // In a leaf directory (no fd): "leaf/name" beneath the leaf's parent.
    const char* via_name = name;
    if (pfd < 0) {
      const std::string& dir = nodes[dir_nodes[slot]].path;
      via_name = node.path.c_str() + (dir.size() - leaf_of(dir).size());
      pfd = dir_fds[parent[dir_nodes[slot]]];
    }
    auto shown = [&] { return target_shown + "/" + node.path; };
    auto fail = [&](const std::string& why) {
      if (!opts.partial) throw Error(why);
      std::lock_guard lk(mu);
      stats.failures.push_back({node.path, to_hex(node.digest), why});
    };
    // Read and check the object before creating the file.
    const std::optional<ObjectRef>& ref = refs[k];
    if (!ref) return fail("object " + to_hex(node.digest) + " for '" + shown() + "' is missing");
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    const mode_t mode = wanted_mode(node, opts.preserve_setid);
    int fd = via_name == name ? openat(pfd, name, flags, mode) : create_beneath(pfd, via_name, flags, mode);
    if (fd < 0 && errno == EEXIST && opts.force) { // (with force every directory has an fd)
      remove_entry(pfd, name, shown());
      fd = openat(pfd, name, flags, mode);
    }
    if (fd < 0) {
      if (errno == EEXIST) throw Error("'" + shown() + "' already exists (use --force to overwrite)");
      throw_errno("unable to create '" + shown() + "'");
    }
    Fd guard(fd);
    try {
      write_file_content(node, cat, ref, fd, target_shown, opts.relocate_to, opts.verify, scratch[tid]);
    } catch (const Error& e) {
      guard.reset();
      unlink_beneath(pfd, via_name); // never leave a partial file behind
      if (!opts.partial) throw Error("'" + shown() + "' not restored: " + e.what()); // name the path, not only the object
      return fail(e.what());
    }
    if (opts.restore_mtime) {
      timespec ts[2] = {to_timespec(node.mtime_ns), to_timespec(node.mtime_ns)};
      futimens(fd, ts);
    }
    if (close(guard.release()) != 0) throw_errno("unable to write '" + shown() + "'");
    bytes.fetch_add(opts.relocate_to.empty() ? node.size : relocated_size(node, cat.roots, opts.relocate_to.size()),
                    std::memory_order_relaxed); // as written
    uint64_t d = done.fetch_add(1, std::memory_order_relaxed) + 1;
    if (tid == 0 && (d & 1023) == 0) report(opts.progress, "write", d, files.size());
  };
  parallel_for_lead(units.count(), threads, 1, make_dirs, [&](size_t u, unsigned tid) {
    for (size_t i = units.starts[u]; i < units.starts[u + 1]; i++) write_one(units.order[i], tid);
  });
  if (dirs_ready.load() < dir_nodes.size()) make_dirs(); // no files at all: parallel_for_lead ran nothing
  stats.files = files.size() - stats.failures.size();
  stats.bytes = bytes;

  // After the files, one thread: a leaf directory that needs an fd now gets one.
  auto fd_of = [&](uint32_t slot) {
    if (dir_fds[slot] >= 0) return dir_fds[slot];
    const Node& d = nodes[dir_nodes[slot]];
    int fd = openat(dir_fds[parent[dir_nodes[slot]]], std::string(leaf_of(d.path)).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) throw_errno("unable to open directory '" + target_shown + "/" + d.path + "'");
    return dir_fds[slot] = fd;
  };
  for (size_t i : links) {
    const Node& node = nodes[i];
    std::string name(leaf_of(node.path));
    auto it = std::lower_bound(nodes.begin(), nodes.end(), node.target, [](const Node& a, const std::string& t) { return path_less(a.path, t); });
    if (it == nodes.end() || it->path != node.target) throw Error("internal error: hardlink target '" + node.target + "' not in the catalog");
    uint32_t tp = parent[size_t(it - nodes.begin())];
    std::string tname(leaf_of(node.target));
    std::string shown = target_shown + "/" + node.path;
    if (linkat(fd_of(tp), tname.c_str(), fd_of(parent[i]), name.c_str(), 0) != 0) {
      if (errno == EEXIST && opts.force) {
        remove_entry(dir_fds[parent[i]], name, shown);
        if (linkat(dir_fds[tp], tname.c_str(), dir_fds[parent[i]], name.c_str(), 0) == 0) {
          stats.hardlinks++;
          continue;
        }
      }
      if (errno == ENOENT && opts.partial) {
        stats.failures.push_back({node.path, "", "hardlink target '" + node.target + "' was not restored"});
        continue;
      }
      throw_errno("unable to link '" + shown + "'");
    }
    stats.hardlinks++;
  }
  for (size_t i : symlinks) {
    const Node& node = nodes[i];
    std::string name(leaf_of(node.path));
    std::string shown = target_shown + "/" + node.path;
    std::string target = node.target;
    if (!opts.relocate_to.empty() && !node.relocs.empty()) {
      Bytes t = relocate_bytes(ByteSpan(reinterpret_cast<const uint8_t*>(target.data()), target.size()), node.relocs, cat.roots, opts.relocate_to);
      target.assign(t.begin(), t.end());
    }
    int pfd = fd_of(parent[i]);
    if (symlinkat(target.c_str(), pfd, name.c_str()) != 0) {
      if (!(errno == EEXIST && opts.force)) {
        if (errno == EEXIST) throw Error("'" + shown + "' already exists (use --force to overwrite)");
        throw_errno("unable to create symlink '" + shown + "'");
      }
      remove_entry(pfd, name, shown);
      if (symlinkat(target.c_str(), pfd, name.c_str()) != 0) throw_errno("unable to create symlink '" + shown + "'");
    }
    if (opts.restore_mtime) {
      timespec ts[2] = {to_timespec(node.mtime_ns), to_timespec(node.mtime_ns)};
      utimensat(pfd, name.c_str(), ts, AT_SYMLINK_NOFOLLOW);
    }
    stats.symlinks++;
  }
  // Directory modes and mtimes last, deepest first (writing into a directory
  // changes its mtime; a read-only directory must be filled before it is locked).
  for (size_t k = dir_fds.size() - 1; k >= 1; k--) {
    const Node& node = nodes[dir_nodes[k]];
    const mode_t mode = wanted_mode(node, opts.preserve_setid);
    if (dir_existed[k] || (mode | 0700) != mode || (mode & 07000)) {
      if (fchmod(fd_of(uint32_t(k)), mode) != 0) throw_errno("unable to set the mode of '" + target_shown + "/" + node.path + "'");
    }
    if (opts.restore_mtime) {
      timespec ts[2] = {to_timespec(node.mtime_ns), to_timespec(node.mtime_ns)};
      if (dir_fds[k] >= 0) futimens(dir_fds[k], ts);
      else utimensat(dir_fds[parent[dir_nodes[k]]], std::string(leaf_of(node.path)).c_str(), ts, AT_SYMLINK_NOFOLLOW);
    }
  }
  report(opts.progress, "write", files.size(), files.size());
  return stats;
}

} // namespace hpak
