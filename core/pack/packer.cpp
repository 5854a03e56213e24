#include "core/pack/packer.hpp"

#include <chrono>
#include <mutex>
#include <optional>

#include "base/os/sys.hpp"
#include "core/pack/pack_dictionary.hpp"
#include "core/pack/pack_passes.hpp"
#include "core/pack/pack_reader.hpp"
#include "base/compress_rule.hpp"
#include "base/os/file.hpp"
#include "base/parallel.hpp"
#include "base/zstd_codec.hpp"

namespace hpak {

using namespace formats;

namespace {

// One file between the hash pass (on a worker) and the write pass.
struct Slot {
  HashedFile hashed;
  std::optional<StoredForm> stored; // made on the worker for a first, non-block object
};

// The state of the hash -> compress -> write pipeline over a walked tree.
struct FilePipeline {
  WalkedTree& walked;
  int rootfd;
  PackWriter& writer;
  const PackOptions& opts;
  WritePass write;
  std::vector<Slot> slots;
  std::mutex claim_mu;
  DigestSet claimed; // digests a worker has met: only the first compresses

  Node& node(size_t i) { return walked.tree.nodes[walked.tree.files[i]]; }
  std::string shown(const Node& n) const { return walked.root + "/" + n.path; }
  const std::vector<std::string>& roots() const { return walked.catalog.roots; }

  // Memory a file holds from its hash to its write (large files hold none).
  uint64_t cost(size_t i) { return is_large(node(i).size, opts) ? 0 : node(i).size * 2 + 4096; }

  // Worker: hash a small file and, for the first of its contents to need a
  // stored form of its own, compress it.
  void hash_and_compress(size_t i) {
    const Node& n = node(i);
    if (is_large(n.size, opts)) return; // hashed by the write pass, in its turn
    Slot& s = slots[i];
    s.hashed = hash_file(rootfd, n.path.c_str(), shown(n), roots());
    const Bytes& raw = s.hashed.raw;
    bool first;
    {
      std::lock_guard lk(claim_mu);
      first = claimed.insert(s.hashed.digest).second;
    }
    if (first && !writer.is_small(raw.size()) && !(opts.have && opts.have(s.hashed.digest)))
      s.stored = compress_object(raw, opts.level, writer.dictionary());
  }

  // Calling thread, in catalog order: write file i's object and fill its node.
  void write_file(size_t i, PackStats& stats) {
    Node& n = node(i);
    if (is_large(n.size, opts)) {
      write_large_file(n);
    } else {
      Slot& s = slots[i];
      n.size = s.hashed.raw.size();
      n.digest = s.hashed.digest;
      n.relocs = std::move(s.hashed.relocs);
      n.reloc_kind = s.hashed.reloc_kind;
      write.write_small(n.digest, s.hashed.raw, std::move(s.stored));
      s = Slot(); // its memory goes now
    }
    if (!n.relocs.empty()) stats.relocated_files++;
    stats.relocated.add(n, roots());
    stats.file_bytes += n.size;
  }

  void write_large_file(Node& n) {
    const std::string where = shown(n);
    int fd = os::open_at(rootfd, n.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) throw_errno("unable to open '" + where + "'");
    Fd guard(fd);
    os::FileStat st;
    if (os::fstat(fd, st) != 0) throw_errno("unable to stat '" + where + "'");
    os::advise_sequential(fd);
    LargeFile file{fd, uint64_t(st.st_size), where};
    HashedFile h = hash_large_file(file, roots());
    n.size = file.size;
    n.digest = h.digest;
    n.relocs = std::move(h.relocs);
    n.reloc_kind = h.reloc_kind;
    write.write_large(h, file);
  }
};

// The hash, compress and write passes over every regular file, pipelined:
// workers hash and compress, the calling thread writes strictly in catalog
// order (so the pack is byte-identical whatever the thread count), with at
// most 1024 files and opts.memory_budget bytes in flight.
void pack_files(WalkedTree& walked, PackWriter& writer, const PackOptions& opts, PackStats& stats) {
  const unsigned threads = opts.threads ? opts.threads : default_threads();
  const size_t n = walked.tree.files.size();
  FilePipeline p{walked, walked.rootfd.get(), writer, opts, WritePass(writer, opts, threads, stats), std::vector<Slot>(n), {}, {}};
  parallel_ordered(
      n, threads, InFlight{1024, opts.memory_budget}, [&](size_t i) { return p.cost(i); },
      [&](size_t i) { p.hash_and_compress(i); },
      [&](size_t i) {
        p.write_file(i, stats);
        if ((i & 255) == 0 || i + 1 == n) report(opts.progress, "pack", i + 1, n);
      });
}

// pack -o: the pack's trained dictionary, before the first block.
void use_dictionary_if_it_pays(const WalkedTree& walked, PackWriter& writer, int level, PackStats& stats) {
  if (writer.version() < kPackVersion2 || level <= 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  DictionaryChoice c = choose_dictionary(walked, writer, level);
  stats.dictionary_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stats.dictionary_small_bytes = c.small_bytes;
  stats.dictionary_gain = c.estimated_gain;
  if (c.dict.empty()) return;
  writer.use_dictionary(c.dict);
  stats.dictionary_bytes = c.dict.size();
}

} // namespace

namespace {
// `raw` stored against the best of `bases`, when that beats `alone` by a quarter.
// (Never against itself: re-adding a tree the library holds, objects lost
// since, writes its catalog again with the same digest.)
std::optional<std::pair<Digest, Bytes>> stored_against_base(const Bytes& raw, const Digest& self, int level,
                                                            const std::vector<CatalogBase>& bases, size_t alone) {
  std::optional<std::pair<Digest, Bytes>> best;
  for (const CatalogBase& b : bases) {
    if (level <= 0 || b.digest == self || b.raw.size() + raw.size() > kBaseCodedMax || sha256(b.raw) != b.digest) continue;
    Bytes frame;
    zstd_compress_against(raw, b.raw, level, frame);
    if (best && frame.size() + kBaseDigestSize >= best->second.size()) continue;
    Bytes stored(b.digest.begin(), b.digest.end());
    stored.insert(stored.end(), frame.begin(), frame.end());
    best.emplace(b.digest, std::move(stored));
  }
  if (best && best->second.size() * 4 > alone * 3) best.reset();
  return best;
}
} // namespace

Digest append_catalog(PackWriter& writer, const Catalog& c, int level, const std::vector<CatalogBase>& bases,
                      std::optional<Digest>* base_used) {
  Bytes raw = encode_catalog(c, c.version);
  Digest d = sha256(raw);
  if (writer.contains(d)) return d; // identical catalog already in this pack
  Bytes stored;
  Codec codec = compress_if_smaller(raw, level, stored) ? Codec::Zstd : Codec::Raw;
  if (codec == Codec::Raw) stored = raw;
  writer.append(Kind::Catalog, codec, d, raw.size(), stored);
  if (auto against = stored_against_base(raw, d, level, bases, stored.size())) {
    codec = Codec::ZstdBase;
    stored = std::move(against->second);
    if (base_used) *base_used = against->first;
  }
  writer.append(Kind::Catalog, codec, d, raw.size(), stored, /*eflags mirror*/ 1, /*allow_duplicate*/ true);
  return d;
}

PackedTree pack_tree(const std::string& src, PackWriter& writer, const PackOptions& opts, PackStats& stats) {
  writer.hash_in_background(); // the pack's SHA-256 on a helper thread, beside the writes
  writer.compress_in_background(opts.threads ? opts.threads : default_threads()); // blocks of small objects, beside the writes
  WalkedTree walked = walk_tree(src, opts);
  stats.skipped = walked.tree.skipped;
  if (opts.dictionary) use_dictionary_if_it_pays(walked, writer, opts.level, stats);
  const uint64_t block_bytes_before = writer.block_bytes();
  pack_files(walked, writer, opts, stats);
  Catalog& cat = walked.catalog;
  finish_nodes(walked.tree.nodes, cat.roots, stats);
  cat.nodes = std::move(walked.tree.nodes);
  cat.paths = std::move(walked.tree.paths);
  writer.close_block(); // v2: the last block of small objects, before the catalogs
  stats.stored_written += writer.block_bytes() - block_bytes_before;
  PackedTree out;
  std::vector<CatalogBase> bases;
  if (opts.catalog_bases) bases = opts.catalog_bases(cat);
  out.catalog_digest = append_catalog(writer, cat, opts.level, bases, &out.catalog_base);
  out.catalog = std::move(cat);
  out.source = std::move(walked.rootfd);
  out.source_root = std::move(walked.root);
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
    os::unlink_path(out_path.c_str()); // as promised: nothing under either name unless both complete
    throw;
  }
  return res;
}

} // namespace hpak
