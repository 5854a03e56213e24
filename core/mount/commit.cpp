#include "core/mount/commit.hpp"

#include <algorithm>
#include <atomic>
#include <unordered_map>
#include <vector>

#include "base/compress_rule.hpp"
#include "base/parallel.hpp"
#include "base/error.hpp"
#include "base/os/file.hpp"
#include "base/os/sys.hpp"
#include "core/pack/pack_passes.hpp"
#include "core/pack/relocation.hpp"
#include "core/restore/materialize.hpp"

namespace hpak {

using namespace formats;

namespace {

struct PathLess {
  bool operator()(const std::string& a, const std::string& b) const { return path_less(a, b); }
};
using NodeMap = std::map<std::string, Node, PathLess>;

// What the walk keeps about each upper entry beside its node.
struct UpperEntry {
  os::Dev dev = 0;
  os::Ino ino = 0;
  bool multi_linked = false;
};

class UpperWalk {
public:
  UpperWalk(const Catalog& base, const CommitOptions& opts, MergedView& out) : base_(base), opts_(opts), out_(out) {
    for (const Node& n : base.nodes) nodes_.emplace_hint(nodes_.end(), n.path, n); // already in catalog order
    roots_ = base.roots;
    if (std::find(roots_.begin(), roots_.end(), opts.view_dir) == roots_.end()) roots_.push_back(opts.view_dir);
    if (roots_.size() > kMaxRoots)
      throw Error("unable to commit '" + opts.shown + "': the base catalog has " + std::to_string(base.roots.size()) +
                  " roots, the view's path would be one too many (at most " + std::to_string(kMaxRoots) + ")");
    upper_fd_ = Fd(os::open_path(opts.upper.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!upper_fd_) throw_errno("unable to open the upper layer '" + opts.upper + "'");
  }

  void run() {
    walk_dir("");
    hash_pending();
    fix_base_hardlinks();
    link_upper_hardlinks();
    out_.catalog.roots = used_roots();
    for (auto& [path, n] : nodes_) {
      n.path = out_.catalog.keep(path); // (a base node's path is in the base catalog)
      out_.catalog.nodes.push_back(std::move(n));
    }
  }

private:
  std::string shown(std::string_view rel) const { return opts_.shown + "/" + std::string(rel); }
  std::string upper_path(std::string_view rel) const { return rel.empty() ? opts_.upper : opts_.upper + "/" + std::string(rel); }

  // The value of an overlay xattr of an upper entry ("" if it has none).
  std::string xattr(const std::string& rel, const char* name) const {
    char buf[256];
    long n = os::get_xattr_path(upper_path(rel).c_str(), name, buf, sizeof buf);
    if (n < 0) {
      if (errno == ENODATA || errno == ENOTSUP) return "";
      throw_errno("unable to read the overlay attributes of '" + upper_path(rel) + "'");
    }
    return std::string(buf, size_t(n));
  }

  bool has_xattr(const std::string& rel, const char* name) const {
    if (os::get_xattr_path(upper_path(rel).c_str(), name, nullptr, 0) >= 0) return true;
    if (errno == ENODATA || errno == ENOTSUP) return false;
    throw_errno("unable to read the overlay attributes of '" + upper_path(rel) + "'");
  }

  // Upper entries overlayfs made that this commit cannot read as whole files.
  void refuse_redirects(const std::string& rel) const {
    for (const char* x : {"trusted.overlay.redirect", "trusted.overlay.metacopy"})
      if (has_xattr(rel, x))
        throw Error("unable to commit '" + shown(rel) + "': its upper entry has " + x +
                    " (hpak mount --writable turns redirects and metacopy off; was the view mounted otherwise?)");
  }

  // Removes `rel`'s subtree (not `rel`); returns how many entries went.
  uint64_t erase_children(const std::string& rel) {
    if (rel.empty()) {
      uint64_t n = nodes_.size();
      nodes_.clear();
      return n;
    }
    const std::string prefix = rel + "/";
    uint64_t n = 0;
    for (auto it = nodes_.upper_bound(rel); it != nodes_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
      it = nodes_.erase(it);
      n++;
    }
    return n;
  }
  uint64_t erase_entry(const std::string& rel) {
    uint64_t n = erase_children(rel);
    return n + nodes_.erase(rel);
  }

  std::vector<std::string> sorted_names(const std::string& rel) const {
    os::Dir* d = os::dir_open(upper_path(rel).c_str());
    if (!d) throw_errno("unable to list '" + upper_path(rel) + "'");
    std::vector<std::string> names;
    errno = 0;
    while (const char* name = os::dir_next(d))
      if (std::string_view(name) != "." && std::string_view(name) != "..") names.emplace_back(name);
    int err = errno;
    os::dir_close(d);
    if (err) {
      errno = err;
      throw_errno("unable to list '" + upper_path(rel) + "'");
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  void walk_dir(const std::string& rel) {
    if (xattr(rel, "trusted.overlay.opaque") == "y") out_.counts.removed += erase_children(rel);
    for (const std::string& name : sorted_names(rel)) {
      const std::string child = rel.empty() ? name : rel + "/" + name;
      std::string why = check_path(child);
      if (!why.empty()) throw Error("unable to commit '" + shown(child) + "': " + why);
      os::FileStat st;
      if (os::lstat_path(upper_path(child).c_str(), st) != 0) throw_errno("unable to examine '" + upper_path(child) + "'");
      apply_entry(child, st);
    }
  }

  void apply_entry(const std::string& rel, const os::FileStat& st) {
    if (S_ISCHR(st.st_mode) && st.st_rdev == 0) {
      out_.counts.removed += erase_entry(rel); // a whiteout
      return;
    }
    refuse_redirects(rel);
    auto old = nodes_.find(rel);
    const bool existed = old != nodes_.end();
    const bool was_dir = existed && old->second.type == NodeType::Dir;
    Node n;
    n.path = paths_.keep(rel);
    n.mode = uint32_t(st.st_mode & 07777);
    n.mtime_ns = mtime_ns_of(st);
    if (S_ISDIR(st.st_mode)) {
      if (existed && !was_dir) nodes_.erase(old), out_.counts.changed++;
      else if (!existed) out_.counts.added++;
      n.type = NodeType::Dir;
      nodes_[rel] = std::move(n);
      walk_dir(rel);
      return;
    }
    if (was_dir) out_.counts.removed += erase_children(rel);
    existed ? out_.counts.changed++ : out_.counts.added++;
    if (S_ISREG(st.st_mode)) n.type = NodeType::File, pending_.push_back(rel); // hashed after the walk, in parallel
    else if (S_ISLNK(st.st_mode)) read_upper_link(n, st);
    else throw Error("unable to commit '" + shown(rel) + "': a FIFO, socket or device cannot be recorded in a catalog");
    from_upper_[rel] = UpperEntry{st.st_dev, st.st_ino, st.st_nlink > 1};
    nodes_[rel] = std::move(n);
  }

  // The upper files found by the walk, hashed on all cores (relocations found
  // and classified as pack does), their nodes filled in.
  void hash_pending() {
    struct Hashed {
      Digest digest{};
      uint64_t size = 0;
      std::vector<uint64_t> relocs;
      RelocKind kind = RelocKind::Unclassified;
    };
    std::vector<Hashed> hashed(pending_.size());
    std::vector<Bytes> kept(pending_.size()); // the bytes hashed, while they fit in keep_upper_bytes
    std::atomic<uint64_t> budget{opts_.keep_upper_bytes};
    PassProgress progress(opts_.progress, "hash", pending_.size());
    parallel_for(pending_.size(), default_threads(), 1, [&](size_t i, unsigned tid) {
      HashedFile h = hash_file(upper_fd_.get(), pending_[i].c_str(), shown(pending_[i]), roots_);
      hashed[i] = Hashed{h.digest, h.raw.size(), std::move(h.relocs), h.reloc_kind};
      uint64_t left = budget.load(std::memory_order_relaxed);
      while (left >= h.raw.size() && !budget.compare_exchange_weak(left, left - h.raw.size(), std::memory_order_relaxed)) {}
      if (left >= h.raw.size()) kept[i] = std::move(h.raw);
      progress.tick(tid);
    });
    progress.finish();
    for (size_t i = 0; i < pending_.size(); i++) {
      Node& n = nodes_.at(pending_[i]);
      n.size = hashed[i].size;
      n.digest = hashed[i].digest;
      n.relocs = std::move(hashed[i].relocs);
      n.reloc_kind = hashed[i].kind;
      out_.upper_objects.emplace(n.digest, n.path);
      if (hashed[i].size == 0 || !kept[i].empty()) out_.upper_bytes.emplace(n.digest, std::optional<Bytes>(std::move(kept[i])));
    }
    out_.counts.hashed = pending_.size();
  }

  void read_upper_link(Node& n, const os::FileStat& st) {
    std::string target(size_t(st.st_size) + 1, '\0');
    long len = os::readlink_path(upper_path(n.path).c_str(), target.data(), target.size());
    if (len < 0) throw_errno("unable to read symlink '" + upper_path(n.path) + "'");
    if (size_t(len) >= target.size()) throw Error("symlink '" + upper_path(n.path) + "' changed while being committed");
    target.resize(size_t(len));
    n.type = NodeType::Symlink;
    n.mode = 0777;
    n.size = target.size();
    n.target = std::move(target);
    n.relocs = find_relocations(ByteSpan(reinterpret_cast<const uint8_t*>(n.target.data()), n.target.size()), roots_);
  }

  // A base hardlink whose first link is gone or was replaced keeps the old
  // content: the first such link becomes a File node, later ones link to it.
  void fix_base_hardlinks() {
    std::unordered_map<std::string, std::string> moved; // old first link -> new first link
    for (auto& [path, n] : nodes_) {
      if (n.type != NodeType::Hardlink || from_upper_.count(path)) continue;
      auto t = nodes_.find(n.target);
      if (t != nodes_.end() && t->second.type == NodeType::File && !from_upper_.count(n.target)) continue;
      auto m = moved.find(n.target);
      if (m != moved.end()) {
        n.target = m->second;
        continue;
      }
      auto bi = find_path(base_, n.target);
      if (!bi) throw Error("internal error: hardlink target '" + n.target + "' is not in the base catalog");
      const Node& file = base_.nodes[*bi];
      moved.emplace(n.target, path);
      n.type = NodeType::File;
      n.digest = file.digest;
      n.relocs = file.relocs;
      n.reloc_kind = file.reloc_kind;
      n.target.clear();
    }
  }

  // Upper files linked several times: the first in catalog order is the File.
  void link_upper_hardlinks() {
    std::map<std::pair<os::Dev, os::Ino>, std::string> first;
    for (auto& [path, n] : nodes_) {
      auto u = from_upper_.find(path);
      if (u == from_upper_.end() || !u->second.multi_linked || n.type != NodeType::File) continue;
      auto [it, fresh] = first.emplace(std::make_pair(u->second.dev, u->second.ino), path);
      if (fresh) continue;
      n.type = NodeType::Hardlink;
      n.target = it->second;
      n.digest = Digest{};
      n.relocs.clear();
      n.reloc_kind = RelocKind::Unclassified;
    }
  }

  // The base's roots, plus the view's path when a new node holds it.
  std::vector<std::string> used_roots() const {
    if (roots_.size() == base_.roots.size()) return roots_;
    const unsigned view = unsigned(roots_.size() - 1);
    for (auto& [path, n] : nodes_)
      if (from_upper_.count(path))
        for (uint64_t r : n.relocs)
          if (reloc_root(r) == view) return roots_;
    return base_.roots;
  }

  const Catalog& base_;
  const CommitOptions& opts_;
  MergedView& out_;
  NodeMap nodes_;
  formats::PathStore paths_; // the paths of nodes the upper layer adds
  std::vector<std::string> roots_;
  std::map<std::string, UpperEntry> from_upper_;
  std::vector<std::string> pending_; // upper regular files, in walk order
  Fd upper_fd_;
};

// The bytes of a wanted object: those hashed, kept; else from the upper layer
// (hashed again) or the base library. Kept bytes are moved out: the digests
// of one call are distinct, so threads touch distinct entries of the map.
Bytes object_bytes(const Library& base_lib, MergedView& view, const Digest& d, const CommitOptions& opts) {
  if (auto kept = view.upper_bytes.find(d); kept != view.upper_bytes.end() && kept->second) {
    Bytes b = std::move(*kept->second);
    kept->second.reset();
    return b;
  }
  auto up = view.upper_objects.find(d);
  if (up != view.upper_objects.end()) {
    Fd fd(os::open_at(os::kCwd, (opts.upper + "/" + up->second).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) throw_errno("unable to open '" + opts.shown + "/" + up->second + "'");
    Bytes raw = read_fd(fd.get(), opts.upper + "/" + up->second);
    if (sha256(raw) != d) throw Error("'" + opts.shown + "/" + up->second + "' changed while being committed; commit again");
    return raw;
  }
  auto ref = base_lib.locate(d);
  if (!ref) throw Error("object " + to_hex(d) + " of the base catalog is missing from the library '" + base_lib.root() + "'");
  return ref->pack->read(ref->rec, /*verify_digest=*/true);
}

// A wanted object ready to append: raw (a block member, or stored raw) or zstd.
struct Prepared {
  Bytes bytes;
  uint64_t raw_len = 0;
  bool small = false, zstd = false;
};

// Objects are read and compressed on all cores, a batch at a time, and
// appended in the order wanted.
void write_objects(PackWriter& w, const std::vector<Digest>& want, const Library& base_lib, MergedView& view,
                   const CommitOptions& opts) {
  constexpr size_t kBatch = 256;
  for (size_t from = 0; from < want.size(); from += kBatch) {
    const size_t n = std::min(kBatch, want.size() - from);
    std::vector<Prepared> ready(n);
    parallel_for(n, default_threads(), 1, [&](size_t i, unsigned) {
      Prepared& p = ready[i];
      p.bytes = object_bytes(base_lib, view, want[from + i], opts);
      p.raw_len = p.bytes.size();
      p.small = w.is_small(p.raw_len);
      Bytes stored;
      if (!p.small && compress_if_smaller(p.bytes, opts.level, stored)) p.bytes = std::move(stored), p.zstd = true;
    });
    for (size_t i = 0; i < n; i++) {
      const Digest& d = want[from + i];
      Prepared& p = ready[i];
      if (p.small) w.append_small(d, p.bytes);
      else w.append(Kind::Blob, p.zstd ? Codec::Zstd : Codec::Raw, d, p.raw_len, p.bytes);
    }
  }
}

} // namespace

MergedView merge_upper(const Catalog& base, const std::string& name, const CommitOptions& opts) {
  MergedView out;
  out.catalog.name = name;
  UpperWalk(base, opts, out).run();
  return out;
}

CommitResult commit_view(const Library& base_lib, const Catalog& base, Library& into, const std::string& name,
                         const CommitOptions& opts) {
  MergedView view = merge_upper(base, name, opts);
  CommitResult res;
  res.counts = view.counts;
  std::vector<Library::NamedCatalog> cats{{name, std::move(view.catalog)}};
  res.added = into.add_set(
      cats, [&](PackWriter& w, const std::vector<Digest>& want) { write_objects(w, want, base_lib, view, opts); }, opts.level);
  res.digest = res.added.catalog_digests.at(0);
  return res;
}

} // namespace hpak
