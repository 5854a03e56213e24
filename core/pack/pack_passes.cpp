#include "core/pack/pack_passes.hpp"

#include <unordered_map>

#include "base/os/sys.hpp"
#include "core/pack/relocation.hpp"
#include "base/compress_rule.hpp"
#include "base/os/file.hpp"
#include "base/parallel.hpp"
#include "base/zstd_codec.hpp"

namespace hpak {

using namespace formats;

// ---- walk ----

WalkedTree walk_tree(const std::string& src, const PackOptions& opts) {
  WalkedTree w;
  w.root = real_path(src);
  w.rootfd = Fd(os::open_path(w.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!w.rootfd) throw_errno("unable to open directory '" + w.root + "'");
  w.tree = scan_tree(w.rootfd.get(), w.root, ScanOptions{opts.skip_special, opts.record_mtime, opts.exclude});
  w.catalog.name = opts.name;
  w.catalog.version = opts.catalog_version;
  if (opts.relocate) {
    w.catalog.roots.push_back(w.root);
    // On Windows the root reads "C:/Users/me/env"; files hold it as Windows programs write it, with '\\'.
    if (std::string back = backslash_root(w.root); !back.empty()) w.catalog.roots.push_back(back);
    for (auto& r : opts.extra_roots)
      if (!r.empty() && r != w.root) w.catalog.roots.push_back(r);
    if (w.catalog.roots.size() > kMaxRoots) throw Error("too many --relocate paths (at most 15)");
  }
  return w;
}

// ---- hash ----

namespace {

// Reads a whole regular file relative to `rootfd`.
Bytes read_member(int rootfd, const char* rel, const std::string& shown) {
  int fd = os::open_at(rootfd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw_errno("unable to open '" + shown + "'");
  Fd guard(fd);
  os::FileStat st;
  if (os::fstat(fd, st) != 0) throw_errno("unable to stat '" + shown + "'");
  Bytes data(size_t(st.st_size));
  size_t got = 0;
  while (got < data.size()) {
    long n = os::read(fd, data.data() + got, data.size() - got);
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

} // namespace

HashedFile hash_file(int rootfd, const char* rel, const std::string& shown, const std::vector<std::string>& roots) {
  HashedFile h;
  h.raw = read_member(rootfd, rel, shown);
  h.digest = sha256(h.raw);
  if (!roots.empty()) h.relocs = find_relocations(h.raw, roots);
  if (!h.relocs.empty()) h.reloc_kind = classify_relocated(h.raw, h.relocs, roots);
  return h;
}

ByteSpan LargeFile::read_at(uint64_t at, size_t len, Bytes& buf) const {
  const long n = pread_full(fd, std::span<uint8_t>(buf.data(), len), at);
  if (n < 0) throw_errno("unable to read '" + shown + "'");
  if (size_t(n) < len) throw Error("'" + shown + "' shrank while being packed");
  return ByteSpan(buf.data(), len);
}

void LargeFile::for_each_window(const std::function<void(ByteSpan, size_t, uint64_t)>& f, size_t extra) const {
  Bytes buf(std::min<uint64_t>(kWindow + extra, size));
  for (uint64_t pos = 0; pos < size; pos += kWindow) {
    size_t own = size_t(std::min<uint64_t>(kWindow, size - pos));
    f(read_at(pos, size_t(std::min<uint64_t>(own + extra, size - pos)), buf), own, pos);
  }
}

HashedFile hash_large_file(const LargeFile& f, const std::vector<std::string>& roots) {
  HashedFile h;
  auto digest = [&] {
    Sha256 sha;
    Xxh3Stream xxh;
    f.for_each_window([&](ByteSpan bytes, size_t, uint64_t) {
      sha.update(bytes);
      xxh.update(bytes);
    });
    h.digest = sha.finish();
    h.raw_xxh = xxh.digest();
  };
  auto relocations = [&] {
    RelocationScanner scan(roots);
    f.for_each_window([&](ByteSpan bytes, size_t own, uint64_t pos) { scan.feed(bytes, own, pos); }, scan.lookahead());
    h.relocs = scan.finish();
  };
  parallel_for(roots.empty() ? 1 : 2, 2, 1, [&](size_t task, unsigned) { task == 0 ? digest() : relocations(); });
  if (!h.relocs.empty()) {
    RelocClassifier kind(h.relocs, roots);
    f.for_each_window([&](ByteSpan bytes, size_t, uint64_t) { kind.feed(bytes); });
    h.reloc_kind = kind.finish();
  }
  return h;
}

// ---- compress ----

StoredForm compress_object(ByteSpan raw, int level, const ZstdDict* dict) {
  StoredForm f;
  if (dict && level > 0 && raw.size() < kEntryDictMax) {
    zstd_compress(raw, level, dict, f.stored);
    if (f.stored.size() < raw.size()) f.codec = Codec::ZstdDict;
    else f.stored = Bytes();
    return f;
  }
  if (compress_if_smaller(raw, level, f.stored)) f.codec = Codec::Zstd;
  else f.stored = Bytes(); // no capacity held while the object waits to be written
  return f;
}

// Judged on 4 samples spread evenly over the file, each twice the level's
// window (at least 4 MiB: repeats as far apart as the level can see are
// inside a sample), compressed at level 1 with that window: below 3% saved
// (already compressed bytes: model weights, archives, media) the file is
// stored raw, and restores by copy_file_range (a reflink where the file
// system shares blocks) instead of decompression.
bool worth_compressing(const LargeFile& f, int level) {
  if (level <= 0) return false;
  constexpr size_t kSamples = 4;
  const unsigned window_log = zstd_window_log(level, f.size);
  const size_t sample = std::max<size_t>(4u << 20, size_t(2) << window_log);
  const bool whole = f.size <= kSamples * sample; // small (a low threshold): judged whole
  const size_t len = whole ? size_t(f.size) : sample, count = whole ? 1 : kSamples;
  ZstdSampler zstd(1, window_log, len, f.shown);
  Bytes in(len);
  uint64_t raw = 0, packed = 0;
  for (size_t k = 0; k < count; k++) {
    ByteSpan bytes = f.read_at(whole ? 0 : (f.size - sample) / (kSamples - 1) * k, len, in);
    raw += bytes.size();
    packed += std::min(zstd.compressed_size(bytes), bytes.size());
  }
  return packed * 100 < raw * 97;
}

void stream_stored(const LargeFile& f, Codec codec, int level, unsigned workers, const ByteSink& sink) {
  if (codec == Codec::Raw) {
    f.for_each_window([&](ByteSpan piece, size_t, uint64_t) { sink(piece); });
    return;
  }
  ZstdStreamCompressor zstd(level, f.size, workers, f.shown);
  f.for_each_window([&](ByteSpan piece, size_t, uint64_t) { zstd.feed(piece, sink); });
  zstd.finish(sink);
}

// ---- write ----

// True the first time a digest is met if neither this pack nor the library
// holds it (counted as present when the library does).
bool WritePass::needs_writing(const Digest& d) {
  if (!seen_.insert(d).second) return false;
  stats_.unique_objects++;
  if (writer_.contains(d)) return false;
  if (opts_.have && opts_.have(d)) {
    stats_.objects_present++;
    return false;
  }
  return true;
}

void WritePass::write_small(const Digest& d, ByteSpan raw, std::optional<StoredForm> stored) {
  if (!needs_writing(d)) return;
  stats_.objects_written++;
  stats_.raw_written += raw.size();
  if (writer_.is_small(raw.size())) {
    writer_.append_small(d, raw); // compressed with its block
    return;
  }
  if (!stored) stored = compress_object(raw, opts_.level, writer_.dictionary());
  ByteSpan bytes = stored->codec == Codec::Raw ? raw : ByteSpan(stored->stored);
  writer_.append(Kind::Blob, stored->codec, d, raw.size(), bytes);
  stats_.stored_written += bytes.size();
}

void WritePass::write_large(const HashedFile& h, const LargeFile& f) {
  const Digest& d = h.digest;
  if (!needs_writing(d)) return;
  Codec codec = worth_compressing(f, opts_.level) ? Codec::Zstd : Codec::Raw;
  auto produce = [&](const ByteSink& sink) { stream_stored(f, codec, opts_.level, threads_, sink); };
  const IndexRecord& rec = codec == Codec::Raw ? writer_.append_raw_stream(Kind::Blob, d, f.size, h.raw_xxh, f.shown, produce)
                                               : writer_.append_stream(Kind::Blob, codec, d, f.size, produce);
  stats_.objects_written++;
  stats_.raw_written += f.size;
  stats_.stored_written += rec.stored_len;
}

void finish_nodes(std::vector<Node>& nodes, const std::vector<std::string>& roots, PackStats& stats) {
  std::unordered_map<std::string_view, uint64_t> file_sizes;
  for (Node& node : nodes) {
    switch (node.type) {
    case NodeType::Dir: stats.dirs++; break;
    case NodeType::File:
      stats.files++;
      file_sizes.emplace(node.path, node.size);
      break;
    case NodeType::Symlink:
      stats.symlinks++;
      if (!roots.empty())
        node.relocs = find_relocations(ByteSpan(reinterpret_cast<const uint8_t*>(node.target.data()), node.target.size()), roots);
      break;
    case NodeType::Hardlink:
      stats.hardlinks++;
      node.size = file_sizes.at(node.target); // the first link's size, which may have changed while read
      break;
    }
  }
}

} // namespace hpak
