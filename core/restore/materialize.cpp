#include "core/restore/materialize.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "base/os/sys.hpp"
#include "base/os/fs_ops.hpp"
#include "core/pack/large_copy.hpp"
#include "core/pack/relocation.hpp"
#include "base/os/file.hpp"
#include "base/hash.hpp"
#include "base/parallel.hpp"

namespace hpak {

using namespace formats;

namespace {

// Whether a file's bytes are rewritten; Blocked was refused before any write
// (check_relocation), so meeting it here is a bug, not a file to splice.
bool rewrites(RelocAction a, const Node& n) {
  if (a == RelocAction::Blocked) throw Error("internal error: '" + n.path + "' cannot be relocated and was not refused");
  return a == RelocAction::Splice || a == RelocAction::Pad;
}

// Objects above this are decoded as a stream through reused buffers, never whole.
constexpr uint64_t kStreamThreshold = kLargeChunk;

struct UmaskGuard {
  os::Mode old;
  UmaskGuard() : old(os::set_umask(0)) {}
  ~UmaskGuard() { os::set_umask(old); }
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

SpaceNeed space_for_catalog(const Catalog& cat, std::string_view relocate_to) {
  SpaceNeed need;
  for (auto& n : cat.nodes) {
    if (n.type == NodeType::File) need.add_file(relocated_size(n, cat.roots, relocate_to));
    else if (n.type != NodeType::Hardlink) need.entries++;
  }
  return need;
}

void check_free_space(int fd, const std::string& shown, const SpaceNeed& need, uint64_t freed) {
  os::FsSpace vfs;
  if (!os::fs_free_space(fd, vfs)) return; // nothing to compare with: the writes report ENOSPC
  const uint64_t block = vfs.block_size ? vfs.block_size : 4096;
  auto sat_add = [](uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; };
  uint64_t per_entry = need.entries > UINT64_MAX / block ? UINT64_MAX : need.entries * block;
  uint64_t needed = sat_add(need.bytes, per_entry);
  uint64_t has = vfs.blocks_free > UINT64_MAX / block ? UINT64_MAX : vfs.blocks_free * block;
  has = sat_add(has, freed);
  std::string needs = human_size(needed), free = human_size(has);
  if (needs == free) { // "needs 2.7 MiB, has 2.7 MiB" says nothing: the exact figures
    needs += " (" + std::to_string(needed) + " bytes)";
    free += " (" + std::to_string(has) + " bytes)";
  }
  if (needed > has)
    throw Error("not enough space in '" + shown + "': needs " + needs + ", has " + free + " (" + std::to_string(need.entries) + " entries, " +
                human_size(need.bytes) + " of file content)");
  if (vfs.files != 0 && need.entries > vfs.files_free) // files 0: the file system does not count inodes
    throw Error("not enough inodes in '" + shown + "': needs " + std::to_string(need.entries) + ", has " + std::to_string(vfs.files_free));
}

ContentMatch compare_file_content(const Node& n, const Catalog& cat, const ObjectSource& src, int fd, const RelocTo& relocate_to,
                                  Bytes& buf, std::string* why, Bytes* keep) {
  auto ref = src.locate(n.digest);
  if (!ref || ref->rec.raw_len != n.size) return ContentMatch::Unreadable; // the write pass says why
  buf.resize(1u << 20);
  if (keep) keep->clear();
  size_t have = 0, used = 0;
  bool same = true;
  auto against_file = [&](ByteSpan piece) {
    while (same && !piece.empty()) {
      if (used == have) {
        long got = os::read(fd, buf.data(), buf.size());
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
  const RelocAction action = reloc_action(n, cat.roots, relocate_to);
  const bool relocate = rewrites(action, n);
  Relocator reloc(n.relocs, cat.roots, relocate_to.path, action);
  Sha256 sha;
  try {
    ref->pack->read_stream(ref->rec, [&](ByteSpan chunk) {
      sha.update(chunk); // to the end, even after a difference
      if (keep) keep->insert(keep->end(), chunk.begin(), chunk.end());
      if (!same) return;
      if (relocate) reloc.feed(chunk, against_file);
      else against_file(chunk);
    }, /*verify_digest=*/false);
  } catch (const Error&) {
    return ContentMatch::Unreadable; // damaged: the write pass reports it
  }
  if (relocate && same) reloc.finish(against_file);
  if (sha.finish() != n.digest) {
    if (why) *why = Corrupt(ref->pack->path(), ref->rec.offset, "content of " + to_hex(n.digest) + " does not match its name").what();
    return ContentMatch::Forged;
  }
  if (same && used == have) {
    char extra;
    long got;
    while ((got = os::read(fd, &extra, 1)) < 0 && errno == EINTR) {
    }
    same = got == 0; // and not longer either
  } else if (used != have) {
    same = false;
  }
  return same ? ContentMatch::Same : ContentMatch::Differs;
}

bool fix_file_meta(int dirfd, const std::string& name, os::Ino ino, os::Nlink max_links, int mode, const timespec* mtime,
                   const std::string& shown) {
  int fd = os::open_at(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return false;
  Fd guard(fd);
  os::FileStat st;
  if (os::fstat(fd, st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != ino || st.st_nlink > max_links) return false;
  if (mode >= 0 && (st.st_mode & 07777) != unsigned(mode) && os::fchmod(fd, os::Mode(mode)) != 0)
    throw_errno("unable to set the mode of '" + shown + "'");
  if (mtime) {
    timespec ts[2] = {*mtime, *mtime};
    if (os::set_times(fd, ts) != 0) throw_errno("unable to set the mtime of '" + shown + "'");
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
                        const RelocTo& relocate_to, const ReadChecks& checks, Bytes& scratch) {
  write_file_content(n, cat, src.locate(n.digest), fd, target_shown, relocate_to, checks, scratch);
}

void write_file_content(const Node& n, const Catalog& cat, const std::optional<ObjectRef>& ref, int fd,
                        const std::string& target_shown, const RelocTo& relocate_to, const ReadChecks& checks, Bytes& scratch) {
  const bool verify = checks.verify;
  auto shown = [&] { return target_shown + "/" + n.path; }; // for messages only
  auto put = [&](ByteSpan data) {
    if (!write_full(fd, data)) throw_errno("unable to write '" + shown() + "'");
  };
  if (!ref) throw Error("object " + to_hex(n.digest) + " for '" + shown() + "' is missing");
  const PackReader& pack = *ref->pack;
  const IndexRecord& rec = ref->rec;
  if (rec.raw_len != n.size)
    throw Corrupt(pack.path(), rec.offset, "object " + to_hex(n.digest) + " has " + std::to_string(rec.raw_len) + " bytes, catalog says " + std::to_string(n.size));
  const RelocAction action = reloc_action(n, cat.roots, relocate_to);
  const bool relocate = rewrites(action, n);
  if (rec.codec == Codec::Raw && !relocate && rec.raw_len >= kKernelCopyThreshold) {
    write_raw_object(pack, rec, fd, checks, shown()); // copy_file_range, checked beside it
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
    Relocator reloc(n.relocs, cat.roots, relocate_to.path, action);
    pack.read_stream(rec, [&](ByteSpan chunk) { reloc.feed(chunk, put); }, verify);
    return reloc.finish(put);
  }
  ByteSpan content;
  if (rec.codec == Codec::Raw && !relocate && !pack.checks_every_read()) { // else read_into: a private copy, checked
    content = pack.checked_stored(rec);
    if (verify && sha256(content) != rec.digest)
      throw Corrupt(pack.path(), rec.offset, "content of " + to_hex(rec.digest) + " does not match its name");
  } else {
    // Grown, never shrunk: a resize back up would zero the bytes again, file after file.
    if (scratch.size() < rec.raw_len) scratch.resize(rec.raw_len);
    pack.read_into(rec, std::span<uint8_t>(scratch.data(), size_t(rec.raw_len)), verify);
    content = ByteSpan(scratch.data(), size_t(rec.raw_len));
  }
  write_file_bytes(n, cat, content, fd, target_shown, relocate_to);
}

void write_file_bytes(const Node& n, const Catalog& cat, ByteSpan raw, int fd, const std::string& target_shown,
                      const RelocTo& relocate_to) {
  if (raw.size() != n.size) throw Error("internal error: object bytes of '" + target_shown + "/" + n.path + "' have the wrong size");
  const RelocAction action = reloc_action(n, cat.roots, relocate_to);
  Bytes relocated;
  if (rewrites(action, n)) relocated = relocate_bytes(raw, n.relocs, cat.roots, relocate_to.path, action), raw = relocated;
  if (!write_full(fd, raw)) throw_errno("unable to write '" + target_shown + "/" + n.path + "'");
}

void classify_old_catalog(Catalog& cat, const ObjectSource& src) {
  if (cat.version >= 2) return;
  classify_unclassified(cat, [&](const Node& n) {
    auto ref = src.locate(n.digest);
    if (!ref || ref->rec.raw_len != n.size) return RelocKind::SameLength;
    RelocClassifier c(n.relocs, cat.roots);
    try {
      ref->pack->read_stream(ref->rec, [&](ByteSpan chunk) { c.feed(chunk); }, /*verify_digest=*/false);
    } catch (const Error&) {
      return RelocKind::SameLength;
    }
    return c.finish();
  });
}

namespace {

// One unpack or fresh restore, as steps: sort the nodes, open the way for the
// directories, then directories (thread 0) and files (all threads) together,
// hardlinks, symlinks, and the directories' modes and mtimes last.
class Materializer {
public:
  Materializer(const Catalog& cat, const ObjectSource& src, int target_fd, const std::string& shown, const MaterializeOptions& opts)
      : cat_(cat), nodes_(cat.nodes), src_(src), shown_(shown), opts_(opts), slots_(dir_slots(cat)),
        dir_nodes_(slots_.dir_nodes), parent_(slots_.parent), dir_fds_(dir_nodes_.size(), -1), dir_existed_(dir_nodes_.size(), 0) {
    dir_fds_[0] = target_fd;
  }
  ~Materializer() {
    dir_fds_[0] = -1; // the caller's
    close_fds(dir_fds_);
  }

  MaterializeStats run() {
    sort_nodes();
    prepare_dirs();
    write_dirs_and_files();
    make_hardlinks();
    make_symlinks();
    finish_dirs();
    report(opts_.progress, "write", files_.size(), files_.size());
    return std::move(stats_);
  }

private:
  std::string shown(const Node& n) const { return shown_ + "/" + n.path; }
  static const char* leaf_name(const Node& n) { return n.path.c_str() + (n.path.size() - leaf_of(n.path).size()); }

  void sort_nodes() {
    for (size_t i = 0; i < nodes_.size(); i++) {
      if (nodes_[i].path.find('/') != std::string::npos && parent_[i] == 0)
        throw Error("internal error: catalog out of order at '" + nodes_[i].path + "'");
      switch (nodes_[i].type) {
      case NodeType::Dir: break;
      case NodeType::File: files_.push_back(i); break;
      case NodeType::Hardlink: links_.push_back(i); break;
      case NodeType::Symlink: symlinks_.push_back(i); break;
      }
    }
  }

  // A directory gets an fd of its own only if it has subdirectories (they are
  // made relative to it) or --force may have to replace entries in it; the
  // files of a leaf directory are created through its parent's fd with
  // openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) on "leaf/name": two
  // syscalls (openat, close) saved per leaf directory, no path followed
  // through a symlink either way.
  void prepare_dirs() {
    long fd_limit = raise_fd_limit();
    const size_t dir_count = dir_nodes_.size() - 1;
    if (long(dir_count) > fd_limit - 128)
      throw Error("tree has " + std::to_string(dir_count) + " directories, more than the open-file limit (" + std::to_string(fd_limit) + ") allows");
    needs_fd_.assign(dir_nodes_.size(), opts_.force || !have_openat2(dir_fds_[0]) ? 1 : 0);
    needs_fd_[0] = 1;
    for (size_t k = 1; k < dir_nodes_.size(); k++) needs_fd_[parent_[dir_nodes_[k]]] = 1;
    reserve_fds(dir_count + 64); // before the threads: see reserve_fds
    if (opts_.check_space)
      check_free_space(dir_fds_[0], shown_, space_for_catalog(cat_, opts_.relocate_to.path));
  }

  // Thread 0 creates the directories, in catalog order, while the other
  // workers already write files; a file whose directory is not made yet
  // waits for it (rarely: files come in the same order as their directories).
  void write_dirs_and_files() {
    threads_ = opts_.threads ? opts_.threads : default_threads();
    scratch_.resize(threads_);
    refs_ = locate_all(cat_, files_, src_, threads_);
    const WorkUnits units = work_units(refs_);
    parallel_for_lead(units.count(), threads_, 1, [&] { make_dirs(); }, [&](size_t u, unsigned tid) {
      for (size_t i = units.starts[u]; i < units.starts[u + 1]; i++) write_file(units.order[i], tid);
    });
    if (dirs_ready_.load() < dir_nodes_.size()) make_dirs(); // no files at all: parallel_for_lead ran nothing
    stats_.files = files_.size() - stats_.failures.size();
    stats_.bytes = bytes_;
  }

  void make_dirs() {
    try {
      for (size_t slot = 1; slot < dir_nodes_.size(); slot++) {
        make_dir(slot);
        dirs_ready_.store(slot + 1, std::memory_order_release);
        stats_.dirs++;
      }
    } catch (...) {
      dirs_failed_ = true;
      throw;
    }
  }

  void make_dir(size_t slot) {
    const Node& node = nodes_[dir_nodes_[slot]];
    const char* name = leaf_name(node);
    int pfd = dir_fds_[parent_[dir_nodes_[slot]]];
    os::Mode create_mode = wanted_mode(node, opts_.preserve_setid) | 0700;
    if (needs_fd_[slot]) { // made and opened at once (Windows: one create, its handle kept)
      int fd = os::mkdir_open_at(pfd, name, create_mode);
      if (fd >= 0) {
        dir_fds_[slot] = fd;
        return;
      }
      if (errno != EEXIST) throw_errno("unable to create directory '" + shown(node) + "'");
      take_existing_dir(slot, pfd, name, create_mode);
    } else if (os::mkdir_at(pfd, name, create_mode) != 0) {
      if (errno != EEXIST) throw_errno("unable to create directory '" + shown(node) + "'");
      take_existing_dir(slot, pfd, name, create_mode);
    }
    if (needs_fd_[slot]) {
      int fd = os::open_at(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) throw_errno("unable to open directory '" + shown(node) + "'");
      dir_fds_[slot] = fd;
    }
  }

  // `name` exists where directory `slot` goes: refused without --force; kept
  // if it is a directory, else removed and the directory made.
  void take_existing_dir(size_t slot, int pfd, const char* name, os::Mode create_mode) {
    const Node& node = nodes_[dir_nodes_[slot]];
    if (!opts_.force) throw Error("'" + shown(node) + "' already exists (use --force to overwrite)");
    os::FileStat st;
    if (os::stat_at(pfd, name, st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
      dir_existed_[slot] = 1;
    } else {
      remove_entry(pfd, name, shown(node));
      if (os::mkdir_at(pfd, name, create_mode) != 0) throw_errno("unable to create directory '" + shown(node) + "'");
    }
  }

  // Waits until the directory `slot` exists; false if making the directories failed.
  bool wait_for_dir(uint32_t slot) const {
    while (dirs_ready_.load(std::memory_order_acquire) <= slot) {
      if (dirs_failed_.load()) return false; // the directory error is what is reported
      std::this_thread::yield();
    }
    return true;
  }

  void fail(const Node& node, const std::string& why) {
    if (!opts_.partial) throw Error(why);
    std::lock_guard lk(mu_);
    stats_.failures.push_back({node.path.str(), to_hex(node.digest), why});
  }

  void write_file(size_t k, unsigned tid) {
    const Node& node = nodes_[files_[k]];
    uint32_t slot = parent_[files_[k]];
    if (!wait_for_dir(slot)) return;
    const char* name = leaf_name(node);
    int pfd = dir_fds_[slot];
    // In a leaf directory (no fd): "leaf/name" beneath the leaf's parent.
    const char* via_name = name;
    if (pfd < 0) {
      std::string_view dir = nodes_[dir_nodes_[slot]].path;
      via_name = node.path.c_str() + (dir.size() - leaf_of(dir).size());
      pfd = dir_fds_[parent_[dir_nodes_[slot]]];
    }
    // Read and check the object before creating the file.
    const std::optional<ObjectRef>& ref = refs_[k];
    if (!ref) return fail(node, "object " + to_hex(node.digest) + " for '" + shown(node) + "' is missing");
    Fd fd(create_file(node, pfd, name, via_name));
    try {
      write_file_content(node, cat_, ref, fd.get(), shown_, opts_.relocate_to, ReadChecks{opts_.verify, opts_.trust_large_raw}, scratch_[tid]);
    } catch (const Error& e) {
      fd.reset();
      unlink_beneath(pfd, via_name); // never leave a partial file behind
      if (!opts_.partial) throw Error("'" + shown(node) + "' not restored: " + e.what()); // name the path, not only the object
      return fail(node, e.what());
    }
    if (opts_.restore_mtime) {
      timespec ts[2] = {to_timespec(node.mtime_ns), to_timespec(node.mtime_ns)};
      os::set_times(fd.get(), ts);
    }
    if (os::close(fd.release()) != 0) throw_errno("unable to write '" + shown(node) + "'");
    bytes_.fetch_add(relocated_size(node, cat_.roots, opts_.relocate_to.path), std::memory_order_relaxed); // as written
    uint64_t d = done_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (tid == 0 && (d & 1023) == 0) report(opts_.progress, "write", d, files_.size());
  }

  int create_file(const Node& node, int pfd, const char* name, const char* via_name) {
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    const os::Mode mode = wanted_mode(node, opts_.preserve_setid);
    int fd = via_name == name ? os::open_at(pfd, name, flags, mode) : create_beneath(pfd, via_name, flags, mode);
    if (fd < 0 && errno == EEXIST && opts_.force) { // (with force every directory has an fd)
      remove_entry(pfd, name, shown(node));
      fd = os::open_at(pfd, name, flags, mode);
    }
    if (fd < 0) {
      if (errno == EEXIST) throw Error("'" + shown(node) + "' already exists (use --force to overwrite)");
      throw_errno("unable to create '" + shown(node) + "'");
    }
    return fd;
  }

  // After the files, one thread: a leaf directory that needs an fd now gets one.
  int fd_of(uint32_t slot) {
    if (dir_fds_[slot] >= 0) return dir_fds_[slot];
    const Node& d = nodes_[dir_nodes_[slot]];
    int fd = os::open_at(dir_fds_[parent_[dir_nodes_[slot]]], leaf_name(d), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) throw_errno("unable to open directory '" + shown(d) + "'");
    return dir_fds_[slot] = fd;
  }

  void make_hardlinks() {
    for (size_t i : links_) {
      const Node& node = nodes_[i];
      std::string name(leaf_of(node.path));
      auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node.target, [](const Node& a, const std::string& t) { return path_less(a.path, t); });
      if (it == nodes_.end() || it->path != node.target) throw Error("internal error: hardlink target '" + node.target + "' not in the catalog");
      uint32_t tp = parent_[size_t(it - nodes_.begin())];
      std::string tname(leaf_of(node.target));
      if (os::link_at(fd_of(tp), tname.c_str(), fd_of(parent_[i]), name.c_str(), 0) != 0) {
        if (errno == EEXIST && opts_.force) {
          remove_entry(dir_fds_[parent_[i]], name, shown(node));
          if (os::link_at(dir_fds_[tp], tname.c_str(), dir_fds_[parent_[i]], name.c_str(), 0) == 0) {
            stats_.hardlinks++;
            continue;
          }
        }
        if (errno == ENOENT && opts_.partial) {
          stats_.failures.push_back({node.path.str(), "", "hardlink target '" + node.target + "' was not restored"});
          continue;
        }
        throw_errno("unable to link '" + shown(node) + "'");
      }
      stats_.hardlinks++;
    }
  }

  void make_symlinks() {
    for (size_t i : symlinks_) {
      const Node& node = nodes_[i];
      std::string name(leaf_of(node.path));
      std::string target = relocated_link(node, cat_.roots, opts_.relocate_to.path);
      int pfd = fd_of(parent_[i]);
      if (os::symlink_at(target.c_str(), pfd, name.c_str()) != 0) {
        if (!(errno == EEXIST && opts_.force)) {
          if (errno == EEXIST) throw Error("'" + shown(node) + "' already exists (use --force to overwrite)");
          throw_errno("unable to create symlink '" + shown(node) + "'");
        }
        remove_entry(pfd, name, shown(node));
        if (os::symlink_at(target.c_str(), pfd, name.c_str()) != 0) throw_errno("unable to create symlink '" + shown(node) + "'");
      }
      if (opts_.restore_mtime) {
        timespec ts[2] = {to_timespec(node.mtime_ns), to_timespec(node.mtime_ns)};
        os::set_times_at(pfd, name.c_str(), ts, AT_SYMLINK_NOFOLLOW);
      }
      stats_.symlinks++;
    }
  }

  // Directory modes and mtimes last, deepest first (writing into a directory
  // changes its mtime; a read-only directory must be filled before it is locked).
  void finish_dirs() {
    for (size_t k = dir_fds_.size() - 1; k >= 1; k--) {
      const Node& node = nodes_[dir_nodes_[k]];
      const os::Mode mode = wanted_mode(node, opts_.preserve_setid);
      if (dir_existed_[k] || (mode | 0700) != mode || (mode & 07000)) {
        if (os::fchmod(fd_of(uint32_t(k)), mode) != 0) throw_errno("unable to set the mode of '" + shown(node) + "'");
      }
      if (opts_.restore_mtime) {
        timespec ts[2] = {to_timespec(node.mtime_ns), to_timespec(node.mtime_ns)};
        if (dir_fds_[k] >= 0) os::set_times(dir_fds_[k], ts);
        else os::set_times_at(dir_fds_[parent_[dir_nodes_[k]]], leaf_name(node), ts, AT_SYMLINK_NOFOLLOW);
      }
    }
  }

  const Catalog& cat_;
  const std::vector<Node>& nodes_;
  const ObjectSource& src_;
  const std::string& shown_;
  const MaterializeOptions& opts_;
  MaterializeStats stats_;
  DirSlots slots_;
  const std::vector<size_t>& dir_nodes_; // slot -> node index (slot 0: the target)
  const std::vector<uint32_t>& parent_;  // node index -> its parent's slot
  std::vector<int> dir_fds_;             // slot -> fd, -1 when none (closed by the destructor)
  std::vector<uint8_t> dir_existed_, needs_fd_;
  std::vector<size_t> files_, links_, symlinks_;
  std::vector<std::optional<ObjectRef>> refs_; // of files_
  std::vector<Bytes> scratch_;                 // per thread
  unsigned threads_ = 1;
  std::atomic<size_t> dirs_ready_{1}; // directory slots usable (slot 0, the target, always)
  std::atomic<bool> dirs_failed_{false};
  std::mutex mu_;
  std::atomic<uint64_t> bytes_{0}, done_{0};
};

} // namespace

MaterializeStats materialize(const Catalog& cat, const ObjectSource& src, int target_fd, const std::string& target_shown,
                             const MaterializeOptions& opts) {
  UmaskGuard umask_guard;
  return Materializer(cat, src, target_fd, target_shown, opts).run();
}

} // namespace hpak
