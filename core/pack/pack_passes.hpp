// The passes of pack_tree (core/pack/packer.hpp), each usable and testable alone:
//
//   walk      the tree in catalog order, no digests yet (walk_tree)
//   hash      a file's bytes, SHA-256 and relocations (hash_file, hash_large_file)
//   compress  an object's stored form (compress_object; worth_compressing and
//             stream_stored for files above the large threshold)
//   write     objects appended to the pack in catalog order (WritePass), then
//             the catalog's remaining fields (finish_nodes)
//
// pack_tree runs hash and compress of small files on worker threads and
// write on the calling thread, pipelined by parallel_ordered
// (base/parallel.hpp); large files are hashed, compressed and written by
// the calling thread in their turn, each using a few threads of its own.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/pack/pack_writer.hpp"
#include "core/pack/packer.hpp"
#include "core/pack/tree_scan.hpp"
#include "formats/catalog_format.hpp"

namespace hpak {

using ByteSink = std::function<void(ByteSpan)>;

// ---- walk ----

struct WalkedTree {
  std::string root;          // the real path of the source directory
  Fd rootfd;                 // that directory, opened once: the scan, the hashing and any re-read go through it
  ScannedTree tree;          // its nodes in catalog order, without digests
  formats::Catalog catalog;  // name and relocation roots; no nodes yet
};
// Walks `src`: its nodes, and the catalog's roots (the tree's own real path
// first, then opts.extra_roots not repeating it) unless !opts.relocate.
WalkedTree walk_tree(const std::string& src, const PackOptions& opts);

// Whether a file of `size` bytes takes the large-file path.
inline bool is_large(uint64_t size, const PackOptions& opts) { return size > opts.large_threshold; }

// ---- hash ----

struct HashedFile {
  Bytes raw; // the file's bytes (empty for a large file: not held in memory)
  Digest digest{};
  uint64_t raw_xxh = 0; // XXH3-64 of the bytes (large files: a raw entry's checksum, known before it is written)
  std::vector<uint64_t> relocs; // where the roots occur (formats::reloc_* values)
  formats::RelocKind reloc_kind = formats::RelocKind::Unclassified; // set when relocs is not empty
};
// Reads the regular file `rel` beneath `rootfd` (`shown` names it in errors).
HashedFile hash_file(int rootfd, const char* rel, const std::string& shown, const std::vector<std::string>& roots);

// An open large file, read in windows through reused buffers (pread; no
// mapping): memory stays bounded whatever its size.
struct LargeFile {
  static constexpr size_t kWindow = 8u << 20;
  int fd;
  uint64_t size;
  std::string shown; // its name in errors
  // Reads [at, at + len) (len <= buf.size()) into `buf`.
  ByteSpan read_at(uint64_t at, size_t len, Bytes& buf) const;
  // Calls f(window bytes, own, offset) for each window of kWindow bytes: the
  // bytes run `extra` past the window's own `own` bytes where the file does.
  void for_each_window(const std::function<void(ByteSpan, size_t own, uint64_t pos)>& f, size_t extra = 0) const;
};
// The SHA-256 and XXH3-64 of a large file and its relocations, on two threads
// (each reads the file on its own: both cores busy, the file read from the
// page cache twice); a file that holds a root is read once more to classify it.
HashedFile hash_large_file(const LargeFile& f, const std::vector<std::string>& roots);

// ---- compress ----

struct StoredForm {
  formats::Codec codec = formats::Codec::Raw;
  Bytes stored; // the zstd frame; empty when Raw (the raw bytes are stored)
};
// An object's stored form: a zstd frame at `level` when level > 0 and the
// frame is smaller, else raw (base/compress_rule). With the pack's dictionary
// `dict` (pack -o), an object below kEntryDictMax is compressed with it (codec
// zstd-dict): its first bytes find their matches in the dictionary. Above that
// the dictionary gains nothing and a large file loses by it (measured on the
// rcc profile: -3.5% stored below 256 KiB, +1.5% from 4 MiB).
constexpr uint64_t kEntryDictMax = 256 * 1024;
StoredForm compress_object(ByteSpan raw, int level, const ZstdDict* dict);

// Whether compressing a large file at `level` is worth it: level > 0 and 4
// samples (judged from the bytes and the level alone) save at least 3%.
bool worth_compressing(const LargeFile& f, int level);

// Streams a large file's stored form to `sink`: its bytes (Raw) or one zstd
// frame at `level` made by `workers` zstd threads (Zstd; the bytes do not
// depend on `workers`).
void stream_stored(const LargeFile& f, formats::Codec codec, int level, unsigned workers, const ByteSink& sink);

// ---- write ----

// Appends each distinct object met in catalog order to the pack, once, unless
// the pack or the library (opts.have) holds it already, and counts it in `stats`.
class WritePass {
public:
  WritePass(PackWriter& writer, const PackOptions& opts, unsigned threads, PackStats& stats)
      : writer_(writer), opts_(opts), threads_(threads), stats_(stats) {}
  // A file held in memory; `stored` is its stored form if a worker made it.
  void write_small(const Digest& d, ByteSpan raw, std::optional<StoredForm> stored);
  // A large file, hashed already: stored raw in one pass (its checksum is
  // `h.raw_xxh`), or streamed through zstd.
  void write_large(const HashedFile& h, const LargeFile& f);

private:
  bool needs_writing(const Digest& d);
  PackWriter& writer_;
  const PackOptions& opts_;
  unsigned threads_;
  PackStats& stats_;
  DigestSet seen_;
};

// Counts the nodes by type in `stats`, finds the relocations in symlink
// targets and gives each hardlink its first link's size.
void finish_nodes(std::vector<formats::Node>& nodes, const std::vector<std::string>& roots, PackStats& stats);

} // namespace hpak
