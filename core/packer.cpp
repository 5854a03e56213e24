#include "core/packer.hpp"

#include <condition_variable>
#include <fcntl.h>
#include <future>
#include <mutex>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include "core/pack_reader.hpp"
#include "core/util/compress_rule.hpp"
#include "core/relocation.hpp"
#include "core/tree_scan.hpp"
#include "core/util/file.hpp"
#include "core/util/parallel.hpp"
#include "core/util/zstd_codec.hpp"

namespace hpak {

using namespace formats;

namespace {

struct Slot {
  bool ready = false;
  bool large = false;
  bool compressed = false; // `stored` holds the chosen stored form
  Codec codec = Codec::Raw;
  Digest digest{};
  uint64_t cost = 0;
  Bytes raw;
  Bytes stored;
  std::vector<uint64_t> relocs;
};

void compress_slot(Slot& s, int level) {
  if (level > 0) zstd_compress(s.raw, level, nullptr, s.stored);
  if (level <= 0 || s.stored.size() >= s.raw.size()) {
    s.codec = Codec::Raw;
    s.stored.clear();
    s.stored.shrink_to_fit();
  } else {
    s.codec = Codec::Zstd;
  }
  s.compressed = true;
}

// Reads a whole regular file relative to `rootfd`.
Bytes read_member(int rootfd, const std::string& rel, const std::string& shown) {
  int fd = openat(rootfd, rel.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw_errno("unable to open '" + shown + "'");
  Fd guard(fd);
  struct stat st;
  if (fstat(fd, &st) != 0) throw_errno("unable to stat '" + shown + "'");
  Bytes data(size_t(st.st_size));
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = read(fd, data.data() + got, data.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("unable to read '" + shown + "'");
    }
    if (n == 0) break;
    got += size_t(n);
  }
  if (got != data.size()) throw Error("'" + shown + "' shrank while being packed");
  return data;
}

// A large file is read in windows of this size through reused buffers
// (pread; no mapping, so no page faults and no resident pages): memory stays
// bounded whatever the size, and each pass reads at page-cache speed.
constexpr size_t kWindow = 8u << 20;

struct LargeFile {
  int fd;
  uint64_t size;
  const std::string& shown;

  // Reads [at, at + len) (len <= buf.size()) into `buf`.
  ByteSpan read_at(uint64_t at, size_t len, Bytes& buf) const {
    size_t got = 0;
    while (got < len) {
      ssize_t n = pread(fd, buf.data() + got, len - got, off_t(at + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw_errno("unable to read '" + shown + "'");
      if (n == 0) throw Error("'" + shown + "' shrank while being packed");
      got += size_t(n);
    }
    return ByteSpan(buf.data(), len);
  }
  // Calls f(window bytes, own, offset) for each window: the bytes run
  // `extra` past the window's own `own` bytes where the file does.
  template <class F> void for_each_window(F&& f, size_t extra = 0) const {
    Bytes buf(std::min<uint64_t>(kWindow + extra, size));
    for (uint64_t pos = 0; pos < size; pos += kWindow) {
      size_t own = size_t(std::min<uint64_t>(kWindow, size - pos));
      f(read_at(pos, size_t(std::min<uint64_t>(own + extra, size - pos)), buf), own, pos);
    }
  }
};

struct LargeScan {
  Digest digest{};
  std::vector<uint64_t> relocs;
};

// The SHA-256 of a large file and its relocations, on two threads (each
// reads the file on its own: both cores busy, the file read from the page
// cache twice rather than faulted in once).
LargeScan scan_large(const LargeFile& f, const std::vector<std::string>& roots) {
  LargeScan out;
  std::future<std::vector<uint64_t>> relocs;
  if (!roots.empty())
    relocs = std::async(std::launch::async, [&] {
      RelocationScanner scan(roots);
      f.for_each_window([&](ByteSpan bytes, size_t own, uint64_t pos) { scan.feed(bytes, own, pos); }, scan.lookahead());
      return scan.finish();
    });
  Sha256 sha;
  f.for_each_window([&](ByteSpan bytes, size_t, uint64_t) { sha.update(bytes); });
  out.digest = sha.finish();
  if (relocs.valid()) out.relocs = relocs.get();
  return out;
}

// Whether compressing a large file at `level` is worth it, judged
// deterministically (from the bytes and the level alone) on 4 samples spread
// evenly over it, each twice the level's window (at least 4 MiB: repeats as
// far apart as the level can see are inside a sample), compressed at level 1
// with that window: below 3% saved (already compressed bytes: model weights,
// archives, media) the file is stored raw, and restores by copy_file_range (a
// reflink where the file system shares blocks) instead of decompression.
bool worth_compressing(const LargeFile& f, int level) {
  constexpr size_t kSamples = 4;
  const ZSTD_compressionParameters cp = ZSTD_getCParams(level, f.size, 0);
  const size_t sample = std::max<size_t>(4u << 20, size_t(2) << cp.windowLog);
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> c(ZSTD_createCCtx(), ZSTD_freeCCtx);
  if (!c) throw std::bad_alloc();
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_windowLog, int(cp.windowLog));
  const bool whole = f.size <= kSamples * sample; // small (a low threshold): judged whole
  const size_t len = whole ? size_t(f.size) : sample, count = whole ? 1 : kSamples;
  Bytes in(len), out(ZSTD_compressBound(len));
  uint64_t raw = 0, packed = 0;
  for (size_t k = 0; k < count; k++) {
    ByteSpan bytes = f.read_at(whole ? 0 : (f.size - sample) / (kSamples - 1) * k, len, in);
    size_t n = ZSTD_compress2(c.get(), out.data(), out.size(), bytes.data(), bytes.size());
    if (ZSTD_isError(n)) throw Error("zstd compression failed for '" + f.shown + "': " + ZSTD_getErrorName(n));
    raw += bytes.size();
    packed += std::min(n, bytes.size());
  }
  return packed * 100 < raw * 97;
}

// Compresses a large file as one standard zstd frame with zstd's own worker
// threads (nbWorkers >= 1: the frame's bytes do not depend on how many),
// streaming its output to `sink` through a reused buffer.
void compress_large(const LargeFile& f, int level, unsigned workers, const std::function<void(ByteSpan)>& sink) {
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> c(ZSTD_createCCtx(), ZSTD_freeCCtx);
  if (!c) throw std::bad_alloc();
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_nbWorkers, int(std::max(1u, workers))); // fails (0 stays) without libzstd MT
  ZSTD_CCtx_setPledgedSrcSize(c.get(), f.size);
  Bytes out(4u << 20);
  auto check = [&](size_t rem) {
    if (ZSTD_isError(rem)) throw Error("zstd compression failed for '" + f.shown + "': " + ZSTD_getErrorName(rem));
    return rem;
  };
  auto feed = [&](ByteSpan piece, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{piece.data(), piece.size(), 0};
    size_t rem;
    do {
      ZSTD_outBuffer ob{out.data(), out.size(), 0};
      rem = check(ZSTD_compressStream2(c.get(), &ob, &in, mode));
      if (ob.pos) sink(ByteSpan(out.data(), ob.pos));
    } while (mode == ZSTD_e_end ? rem != 0 : in.pos < in.size);
  };
  f.for_each_window([&](ByteSpan piece, size_t, uint64_t) { feed(piece, ZSTD_e_continue); });
  feed(ByteSpan(), ZSTD_e_end);
}

} // namespace

Digest append_catalog(PackWriter& writer, const Catalog& c, int level) {
  Bytes raw = encode_catalog(c);
  Digest d = sha256(raw);
  Bytes stored;
  Codec codec = compress_if_smaller(raw, level, stored) ? Codec::Zstd : Codec::Raw;
  if (codec == Codec::Raw) stored = raw;
  if (writer.contains(d)) return d; // identical catalog already in this pack
  writer.append(Kind::Catalog, codec, d, raw.size(), stored);
  writer.append(Kind::Catalog, codec, d, raw.size(), stored, /*eflags mirror*/ 1, /*allow_duplicate*/ true);
  return d;
}

PackedTree pack_tree(const std::string& src, PackWriter& writer, const PackOptions& opts, PackStats& stats) {
  std::string root = real_path(src);
  const uint64_t block_bytes_before = writer.block_bytes();
  ScannedTree tree = scan_tree(root, ScanOptions{opts.skip_special, opts.record_mtime, opts.exclude});
  stats.skipped = tree.skipped;
  Catalog cat;
  cat.name = opts.name;
  if (opts.relocate) {
    cat.roots.push_back(root);
    for (auto& r : opts.extra_roots)
      if (!r.empty() && r != root) cat.roots.push_back(r);
    if (cat.roots.size() > kMaxRoots) throw Error("too many --relocate paths (at most 15)");
  }
  int rootfd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) throw_errno("unable to open directory '" + root + "'");
  Fd rootguard(rootfd);

  const size_t n = tree.files.size();
  std::vector<Slot> slots(n);
  const unsigned threads = opts.threads ? opts.threads : default_threads();
  const size_t window = 1024;
  std::mutex mu;
  std::condition_variable cv;
  size_t consumed = 0;
  uint64_t inflight = 0;
  bool failed = false;
  std::exception_ptr error;
  std::atomic<size_t> next{0};
  std::mutex claim_mu;
  DigestSet claimed;

  auto worker = [&]() {
    try {
      while (true) {
        size_t i = next.fetch_add(1);
        if (i >= n) return;
        Node& node = tree.nodes[tree.files[i]];
        Slot& s = slots[i];
        bool large = node.size > opts.large_threshold;
        uint64_t cost = large ? 0 : node.size * 2 + 4096;
        {
          std::unique_lock lk(mu);
          cv.wait(lk, [&] { return failed || (i < consumed + window && (i == consumed || inflight + cost <= opts.memory_budget)); });
          if (failed) return;
          inflight += cost;
        }
        s.cost = cost;
        if (!large) {
          std::string shown = root + "/" + node.path;
          s.raw = read_member(rootfd, node.path, shown);
          s.digest = sha256(s.raw);
          if (!cat.roots.empty()) s.relocs = find_relocations(s.raw, cat.roots);
          bool first;
          {
            std::lock_guard lk(claim_mu);
            first = claimed.insert(s.digest).second;
          }
          if (first && !writer.is_small(s.raw.size()) && !(opts.have && opts.have(s.digest))) compress_slot(s, opts.level);
        }
        s.large = large;
        {
          std::lock_guard lk(mu);
          s.ready = true;
        }
        cv.notify_all();
      }
    } catch (...) {
      {
        std::lock_guard lk(mu);
        if (!error) error = std::current_exception();
        failed = true;
      }
      cv.notify_all();
    }
  };

  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::min<size_t>(threads, std::max<size_t>(n, 1)); t++) pool.emplace_back(worker);
  auto stop_pool = [&] {
    {
      std::lock_guard lk(mu);
      failed = true;
    }
    cv.notify_all();
    for (auto& t : pool)
      if (t.joinable()) t.join();
  };

  DigestSet seen;
  try {
    for (size_t i = 0; i < n; i++) {
      Slot& s = slots[i];
      {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return s.ready || failed; });
        if (!s.ready && failed) break;
      }
      Node& node = tree.nodes[tree.files[i]];
      if (s.large) {
        std::string shown = root + "/" + node.path;
        int fd = openat(rootfd, node.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) throw_errno("unable to open '" + shown + "'");
        Fd guard(fd);
        struct stat st;
        if (fstat(fd, &st) != 0) throw_errno("unable to stat '" + shown + "'");
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        LargeFile file{fd, uint64_t(st.st_size), shown};
        node.size = file.size;
        LargeScan scanned = scan_large(file, cat.roots);
        s.digest = scanned.digest;
        s.relocs = std::move(scanned.relocs);
        node.digest = s.digest;
        node.relocs = s.relocs;
        bool fresh = seen.insert(s.digest).second;
        if (fresh) stats.unique_objects++;
        if (fresh && !writer.contains(s.digest) && !(opts.have && opts.have(s.digest))) {
          auto store_raw = [&](const std::function<void(ByteSpan)>& sink) {
            file.for_each_window([&](ByteSpan piece, size_t, uint64_t) { sink(piece); });
          };
          const IndexRecord& rec = opts.level <= 0 || !worth_compressing(file, opts.level)
                                       ? writer.append_stream(Kind::Blob, Codec::Raw, s.digest, file.size, store_raw)
                                       : writer.append_stream(Kind::Blob, Codec::Zstd, s.digest, file.size, [&](const std::function<void(ByteSpan)>& sink) {
                                           compress_large(file, opts.level, threads, sink);
                                         });
          stats.objects_written++;
          stats.raw_written += file.size;
          stats.stored_written += rec.stored_len;
        } else if (fresh && !writer.contains(s.digest)) {
          stats.objects_present++;
        }
      } else {
        node.size = s.raw.size();
        node.digest = s.digest;
        node.relocs = std::move(s.relocs);
        bool fresh = seen.insert(s.digest).second;
        if (fresh) stats.unique_objects++;
        if (fresh && !writer.contains(s.digest)) {
          if (opts.have && opts.have(s.digest)) {
            stats.objects_present++;
          } else {
            if (writer.is_small(s.raw.size())) {
              writer.append_small(s.digest, s.raw); // compressed with its block
              stats.objects_written++;
              stats.raw_written += s.raw.size();
            } else {
              if (!s.compressed) compress_slot(s, opts.level);
              ByteSpan stored = s.codec == Codec::Raw ? ByteSpan(s.raw) : ByteSpan(s.stored);
              writer.append(Kind::Blob, s.codec, s.digest, s.raw.size(), stored);
              stats.objects_written++;
              stats.raw_written += s.raw.size();
              stats.stored_written += stored.size();
            }
          }
        }
      }
      if (!node.relocs.empty()) stats.relocated_files++;
      stats.file_bytes += node.size;
      s.raw = Bytes();
      s.stored = Bytes();
      {
        std::lock_guard lk(mu);
        inflight -= s.cost;
        consumed = i + 1;
      }
      cv.notify_all();
      if ((i & 255) == 0 || i + 1 == n) report(opts.progress, "pack", i + 1, n);
    }
  } catch (...) {
    stop_pool();
    throw;
  }
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);

  for (Node& node : tree.nodes) {
    switch (node.type) {
    case NodeType::Dir: stats.dirs++; break;
    case NodeType::File: stats.files++; break;
    case NodeType::Symlink:
      stats.symlinks++;
      if (!cat.roots.empty())
        node.relocs = find_relocations(ByteSpan(reinterpret_cast<const uint8_t*>(node.target.data()), node.target.size()), cat.roots);
      break;
    case NodeType::Hardlink: stats.hardlinks++; break;
    }
  }
  // Hardlink sizes follow their first link (which may have changed size while read).
  {
    std::unordered_map<std::string_view, uint64_t> sizes;
    for (Node& node : tree.nodes) {
      if (node.type == NodeType::File) sizes.emplace(node.path, node.size);
      else if (node.type == NodeType::Hardlink) node.size = sizes.at(node.target);
    }
  }
  cat.nodes = std::move(tree.nodes);
  writer.close_block(); // v2: the last block of small objects, before the catalogs
  stats.stored_written += writer.block_bytes() - block_bytes_before;
  PackedTree out;
  out.catalog_digest = append_catalog(writer, cat, opts.level);
  out.catalog = std::move(cat);
  return out;
}

// Leaves the output pack, its index and their temp files out of the tree when
// the output lies inside the directory being packed.
static std::function<bool(const std::string&)> exclude_output(const std::string& src, const std::string& out_path,
                                                              std::function<bool(const std::string&)> also) {
  std::string root = real_path(src);
  std::string out_dir = real_path(dir_name(out_path));
  if (out_dir != root && out_dir.rfind(root + "/", 0) != 0) return also;
  std::string rel_dir = out_dir == root ? "" : out_dir.substr(root.size() + 1) + "/";
  std::vector<std::string> names = {base_name(out_path), base_name(index_path_for(out_path))};
  return [rel_dir, names, also](const std::string& rel) {
    if (also && also(rel)) return true;
    if (rel.compare(0, rel_dir.size(), rel_dir) != 0) return false;
    std::string leaf = rel.substr(rel_dir.size());
    for (auto& n : names)
      if (leaf == n || leaf.rfind(".tmp-" + n + "-", 0) == 0) return true;
    return false;
  };
}

PackFileResult pack_to_file(const std::string& src, const std::string& out_path, const PackOptions& in_opts) {
  PackFileResult res;
  PackOptions opts = in_opts;
  opts.exclude = exclude_output(src, out_path, in_opts.exclude);
  AtomicFile pack_file(out_path, 0644);
  PackWriter writer(pack_file.fd(), out_path, opts.level, opts.pack_version);
  PackedTree packed = pack_tree(src, writer, opts, res.stats);
  res.catalog_digest = packed.catalog_digest;
  res.pack = writer.finish();
  std::string idx_path = index_path_for(out_path);
  AtomicFile idx_file(idx_path, 0644);
  idx_file.write(encode_index(res.pack.records, res.pack.size, res.pack.pack_sum, res.pack.index_version()));
  pack_file.commit(/*durable=*/true); // the pack durable before its index appears
  try {
    idx_file.commit(/*durable=*/true);
  } catch (const Error&) {
    unlink(out_path.c_str()); // as promised: nothing under either name unless both complete
    throw;
  }
  return res;
}

} // namespace hpak
