// The packer: turns a directory tree into objects + a catalog in a pack.
//
// Passes (core/pack/pack_passes.hpp): walk (scan_tree: one walk) -> hash -> compress
// -> write, one read per file. Workers read, hash (SHA-256), find relocations
// (and classify a file that has some: core/pack/relocation.hpp) and zstd-compress files in parallel; the calling thread appends results to
// the PackWriter strictly in catalog order (parallel_ordered,
// base/parallel.hpp). Order makes the pack byte-identical whatever the
// thread count; a bounded window (items and bytes in flight) keeps memory
// bounded for any tree size. Files above `large_threshold` are read by the
// writer thread in 8 MiB windows through reused buffers (SHA-256 and
// relocation scan on two threads), then stored raw when 4 samples show they
// do not compress, or compressed as one frame by zstd's own worker threads
// (bytes independent of their number). An object is written once per pack;
// objects for which `have()` is true (already in a library) are not written
// at all.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/pack/pack_writer.hpp"
#include "base/os/file.hpp"
#include "base/progress.hpp"
#include <optional>

#include "core/pack/relocation.hpp"
#include "formats/catalog_format.hpp"

namespace hpak {

// A catalog a new catalog may be stored against (formats::Codec::ZstdBase):
// its digest and raw bytes, already checked against that digest.
struct CatalogBase {
  Digest digest{};
  Bytes raw;
};

struct PackOptions {
  int level = 3; // zstd level; 0 stores objects uncompressed
  uint16_t pack_version = 2; // pack format written: 2 (blocks of small objects) or 1
  unsigned threads = 0; // 0 = all cores
  bool skip_special = false;
  bool record_mtime = true;
  bool relocate = true;                 // record occurrences of the roots
  std::vector<std::string> extra_roots; // --relocate PATH (besides the source dir)
  std::string name;                     // catalog name
  uint32_t catalog_version = formats::kCatalogVersion; // 1 only to make old libraries in tests
  uint64_t large_threshold = 64ull << 20;
  uint64_t memory_budget = 256ull << 20;
  bool dictionary = false; // train the pack's zstd dictionary when it pays (core/pack/pack_dictionary.hpp); pack -o only
  std::function<bool(const Digest&)> have; // thread-safe; may be empty
  std::function<bool(const std::string& rel)> exclude; // paths to leave out
  // pack --into: the library's catalogs the new one may be stored against
  // (append_catalog); may be empty.
  std::function<std::vector<CatalogBase>(const formats::Catalog&)> catalog_bases;
  Progress progress;
};

struct PackStats {
  uint64_t files = 0, dirs = 0, symlinks = 0, hardlinks = 0;
  uint64_t file_bytes = 0;        // sum of regular file sizes
  uint64_t unique_objects = 0;    // distinct contents in the tree
  uint64_t objects_written = 0;   // written to this pack
  uint64_t objects_present = 0;   // skipped: already in the library
  uint64_t raw_written = 0;       // uncompressed bytes of written objects
  uint64_t stored_written = 0;    // their stored (compressed) bytes
  uint64_t relocated_files = 0;
  uint64_t dictionary_bytes = 0;       // the pack's trained dictionary (0: none)
  uint64_t dictionary_small_bytes = 0; // what its choice saw: the small files' bytes
  int64_t dictionary_gain = 0;         // and the gain it estimated
  double dictionary_seconds = 0;       // choosing it: sampling, training, judging
  RelocCounts relocated;          // the relocated files by kind (core/pack/relocation.hpp)
  std::vector<std::string> skipped;
};

// Packs `src` into `writer`, a writer nothing was appended to: appends new
// objects, then the catalog (twice), hashing the pack on a helper thread.
// Returns the catalog and its digest.
struct PackedTree {
  formats::Catalog catalog;
  Digest catalog_digest{};
  std::optional<Digest> catalog_base; // the catalog it is stored against, if any
  Fd source;               // the source directory as packed (still open: an add re-reads missing objects through it)
  std::string source_root; // its real path
};
PackedTree pack_tree(const std::string& src, PackWriter& writer, const PackOptions& opts, PackStats& stats);

// Appends a catalog to `writer` twice (a mirror copy, so one bad byte cannot
// lose the tree) and returns its digest. The first copy is stored alone (it
// reads without any other object: readers take it first); the mirror is
// stored against the base of `bases` that compresses it best
// (Codec::ZstdBase) when that takes at most 3/4 of the first copy's bytes,
// and `base_used` then names that base.
Digest append_catalog(PackWriter& writer, const formats::Catalog& c, int level, const std::vector<CatalogBase>& bases = {},
                      std::optional<Digest>* base_used = nullptr);

struct PackFileResult {
  PackStats stats;
  PackResult pack;
  Digest catalog_digest{};
};
// The whole `hpak pack -o OUT` job: writes OUT and its index atomically (pack
// first, index last). Nothing appears under either name unless both complete.
PackFileResult pack_to_file(const std::string& src, const std::string& out_path, const PackOptions& opts);

} // namespace hpak
