#include "core/materialize.hpp"

#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

#include "core/fs_ops.hpp"
#include "core/relocation.hpp"
#include "core/util/file.hpp"
#include "core/util/parallel.hpp"

namespace hpak {

using namespace formats;

namespace {

constexpr uint64_t kStreamThreshold = 64ull << 20;

struct UmaskGuard {
  mode_t old;
  UmaskGuard() : old(umask(0)) {}
  ~UmaskGuard() { umask(old); }
};

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

} // namespace

void write_file_content(const Node& n, const Catalog& cat, const ObjectSource& src, int fd, const std::string& shown,
                        const std::string& relocate_to, bool verify, Bytes& scratch) {
  auto ref = src.locate(n.digest);
  if (!ref) throw Error("object " + to_hex(n.digest) + " for '" + shown + "' is missing");
  const PackReader& pack = *ref->pack;
  const IndexRecord& rec = ref->rec;
  if (rec.raw_len != n.size)
    throw Corrupt(pack.path(), rec.offset, "object " + to_hex(n.digest) + " has " + std::to_string(rec.raw_len) + " bytes, catalog says " + std::to_string(n.size));
  bool relocate = !relocate_to.empty() && !n.relocs.empty();
  if (rec.raw_len > kStreamThreshold && !relocate) {
    pack.read_stream(rec, [&](ByteSpan chunk) { write_all(fd, chunk, shown); }, verify);
    return;
  }
  // A compressed object's declared size is trusted only as far as its stored
  // bytes could produce it (zstd cannot expand 1:2^17): a hostile pack must
  // not make the relocating path below allocate terabytes for a tiny entry.
  if (rec.codec != Codec::Raw && rec.raw_len / 131072 > rec.stored_len + 1)
    throw Corrupt(pack.path(), rec.offset, "declared size " + std::to_string(rec.raw_len) + " of " + to_hex(rec.digest) +
                                               " is impossible for " + std::to_string(rec.stored_len) + " stored bytes");
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
    write_all(fd, out, shown);
  } else {
    write_all(fd, content, shown);
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
  std::vector<uint32_t> parent(n, 0);
  std::vector<int> dir_fds{target_fd};
  std::vector<size_t> dir_nodes{SIZE_MAX};
  std::vector<uint8_t> dir_existed{0};
  std::unordered_map<std::string_view, uint32_t> dir_index;
  size_t dir_count = 0;
  for (auto& node : nodes) dir_count += node.type == NodeType::Dir;
  if (long(dir_count) > fd_limit - 128)
    throw Error("tree has " + std::to_string(dir_count) + " directories, more than the open-file limit (" + std::to_string(fd_limit) + ") allows");
  struct FdCloser {
    std::vector<int>& fds;
    ~FdCloser() {
      for (size_t i = 1; i < fds.size(); i++) close(fds[i]);
    }
  } closer{dir_fds};

  std::vector<size_t> files, links, symlinks;
  for (size_t i = 0; i < n; i++) {
    const Node& node = nodes[i];
    auto slash = node.path.rfind('/');
    if (slash != std::string::npos) parent[i] = dir_index.at(std::string_view(node.path.data(), slash));
    std::string name(leaf_of(node.path));
    std::string shown = target_shown + "/" + node.path;
    int pfd = dir_fds[parent[i]];
    switch (node.type) {
    case NodeType::Dir: {
      mode_t create_mode = (node.mode & 07777) | 0700;
      bool existed = false;
      if (mkdirat(pfd, name.c_str(), create_mode) != 0) {
        if (errno != EEXIST) throw_errno("unable to create directory '" + shown + "'");
        struct stat st;
        if (fstatat(pfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
          if (!opts.force) throw Error("'" + shown + "' already exists (use --force to overwrite)");
          existed = true;
        } else {
          if (!opts.force) throw Error("'" + shown + "' already exists (use --force to overwrite)");
          remove_entry(pfd, name, shown);
          if (mkdirat(pfd, name.c_str(), create_mode) != 0) throw_errno("unable to create directory '" + shown + "'");
        }
      }
      int fd = openat(pfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) throw_errno("unable to open directory '" + shown + "'");
      dir_index.emplace(std::string_view(node.path), uint32_t(dir_fds.size()));
      dir_fds.push_back(fd);
      dir_nodes.push_back(i);
      dir_existed.push_back(existed);
      stats.dirs++;
      break;
    }
    case NodeType::File: files.push_back(i); break;
    case NodeType::Hardlink: links.push_back(i); break;
    case NodeType::Symlink: symlinks.push_back(i); break;
    }
  }

  std::mutex mu;
  std::atomic<uint64_t> bytes{0}, done{0};
  unsigned threads = opts.threads ? opts.threads : default_threads();
  struct Scratch {
    Bytes buf;
  };
  std::vector<Scratch> scratch(threads);
  parallel_for(files.size(), threads, 8, [&](size_t k, unsigned tid) {
    const Node& node = nodes[files[k]];
    std::string name(leaf_of(node.path));
    int pfd = dir_fds[parent[files[k]]];
    std::string shown = target_shown + "/" + node.path;
    auto fail = [&](const std::string& why) {
      if (!opts.partial) throw Error(why);
      std::lock_guard lk(mu);
      stats.failures.push_back({node.path, to_hex(node.digest), why});
    };
    // Read and check the object before creating the file.
    auto ref = src.locate(node.digest);
    if (!ref) return fail("object " + to_hex(node.digest) + " for '" + shown + "' is missing");
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    int fd = openat(pfd, name.c_str(), flags, node.mode);
    if (fd < 0 && errno == EEXIST && opts.force) {
      remove_entry(pfd, name, shown);
      fd = openat(pfd, name.c_str(), flags, node.mode);
    }
    if (fd < 0) {
      if (errno == EEXIST) throw Error("'" + shown + "' already exists (use --force to overwrite)");
      throw_errno("unable to create '" + shown + "'");
    }
    Fd guard(fd);
    try {
      write_file_content(node, cat, src, fd, shown, opts.relocate_to, opts.verify, scratch[tid].buf);
    } catch (const Error& e) {
      guard.reset();
      unlinkat(pfd, name.c_str(), 0); // never leave a partial file behind
      if (!opts.partial) throw Error("'" + shown + "' not restored: " + e.what()); // name the path, not only the object
      return fail(e.what());
    }
    if (opts.restore_mtime) {
      timespec ts[2] = {to_timespec(node.mtime_ns), to_timespec(node.mtime_ns)};
      futimens(fd, ts);
    }
    if (close(guard.release()) != 0) throw_errno("unable to write '" + shown + "'");
    bytes += opts.relocate_to.empty() ? node.size : relocated_size(node, cat.roots, opts.relocate_to.size()); // as written
    uint64_t d = ++done;
    if (tid == 0 && (d & 1023) == 0) report(opts.progress, "write", d, files.size());
  });
  stats.files = files.size() - stats.failures.size();
  stats.bytes = bytes;

  for (size_t i : links) {
    const Node& node = nodes[i];
    std::string name(leaf_of(node.path));
    auto slash = node.target.rfind('/');
    uint32_t tp = slash == std::string::npos ? 0 : dir_index.at(std::string_view(node.target.data(), slash));
    std::string tname(leaf_of(node.target));
    std::string shown = target_shown + "/" + node.path;
    if (linkat(dir_fds[tp], tname.c_str(), dir_fds[parent[i]], name.c_str(), 0) != 0) {
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
    int pfd = dir_fds[parent[i]];
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
    if (dir_existed[k] || (node.mode | 0700) != node.mode || (node.mode & 07000)) {
      if (fchmod(dir_fds[k], node.mode) != 0) throw_errno("unable to set the mode of '" + target_shown + "/" + node.path + "'");
    }
    if (opts.restore_mtime) {
      timespec ts[2] = {to_timespec(node.mtime_ns), to_timespec(node.mtime_ns)};
      futimens(dir_fds[k], ts);
    }
  }
  report(opts.progress, "write", files.size(), files.size());
  return stats;
}

} // namespace hpak
