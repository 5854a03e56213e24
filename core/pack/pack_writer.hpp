// PackWriter: appends entries to a new pack, hashing as it writes (git's
// csum-file shape), and finishes with footer + SHA-256 trailer.
//
// Entries are written in call order; the writer refuses a second entry with
// the same digest unless asked (catalog mirror copies). Small entries go through
// a 1 MiB buffer. Objects too large to hold in memory are streamed: a raw one
// whose checksum the caller knows (`append_raw_stream`) in one pass, header
// first; any other (`append_stream`) behind a placeholder header, patched with
// pwrite, after which the pack hash reads back that one entry (from the page
// cache) so that nothing else is read twice. Not thread-safe:
// one thread owns a writer (its helpers, for the hash and the blocks, are its
// own). It never publishes: the caller renames the file.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/async_sha256.hpp"
#include "base/hash.hpp"
#include "base/zstd_codec.hpp"
#include "core/pack/block_compressor.hpp"
#include "formats/index_format.hpp"
#include "formats/pack_format.hpp"

namespace hpak {

struct PackResult {
  Digest pack_sum{}; // the trailer: SHA-256 of all bytes before it
  Digest file_sum{}; // SHA-256 of the whole file (the pack's name in a library)
  uint64_t size = 0;
  std::vector<formats::IndexRecord> records;
  uint64_t raw_total = 0;
  uint16_t version = formats::kPackVersion;
  // The index format for this pack (2 for a v2 pack).
  uint32_t index_version() const { return version == formats::kPackVersion2 ? formats::kIndexVersion2 : formats::kIndexVersion; }
};

// The pack version new packs get (see formats/pack_format.hpp).
constexpr uint16_t kDefaultWriteVersion = formats::kPackVersion2;

class PackWriter {
public:
  // `version` 2 writes blocks of small objects (append_small) and aligns
  // large raw entries; 1 writes what v1 readers read.
  PackWriter(int fd, std::string where, int level, uint16_t version = kDefaultWriteVersion);
  ~PackWriter();
  PackWriter(const PackWriter&) = delete;
  PackWriter& operator=(const PackWriter&) = delete;

  bool contains(const Digest& d) const { return written_.count(d) != 0; }
  // Room for about n entries (no rehashing or regrowth while appending).
  void reserve(size_t n) {
    written_.reserve(n);
    result_.records.reserve(n);
  }
  // Hash on a helper thread (see AsyncSha256), beside the writes; call it
  // before any append. `spans_outlive_writer`: the caller promises that every
  // span it passes to append/append_copy/append_block_copy stays valid and
  // unchanged until finish() or wait_hashed() (gc: they point into mapped
  // source packs), so no span is copied or waited for: it may be written
  // (behind blocks being compressed) and hashed after the call returns.
  // Otherwise each large span is hashed before append returns, and one
  // queued behind blocks is copied.
  void hash_in_background(bool spans_outlive_writer = false);
  // Writes what waits and waits until every span passed so far is hashed: a
  // caller that promised spans_outlive_writer may then free or reuse the
  // last ones it passed (its own buffers: call it before they go).
  void wait_hashed() {
    write_pending(true);
    if (async_) async_->drain();
  }
  // v2: closed blocks are compressed on `helpers` threads (BlockCompressor).
  // Entries appended meanwhile wait behind them (their payload copied, unless
  // spans_outlive_writer), so everything is written in call order: the pack
  // is the same bytes as without it.
  void compress_in_background(unsigned helpers);
  // What waits is written first.
  uint64_t bytes_written() {
    write_pending(true);
    return offset_;
  }

  // Appends one entry whose payload is already in its stored form.
  void append(formats::Kind kind, formats::Codec codec, const Digest& digest, uint64_t raw_len, ByteSpan stored,
              uint16_t eflags = 0, bool allow_duplicate = false);
  // Appends an entry copied verbatim from another pack (stored bytes and their
  // checksum as recorded there; the caller has checked stored_xxh).
  // `allow_duplicate` is for a catalog's mirror copy.
  void append_copy(const formats::IndexRecord& rec, ByteSpan stored, bool allow_duplicate = false);
  // Streams a large object: `produce(sink)` must call sink with consecutive
  // stored chunks; returns the total stored length via the record.
  using Producer = std::function<void(const std::function<void(ByteSpan)>&)>;
  const formats::IndexRecord& append_stream(formats::Kind kind, formats::Codec codec, const Digest& digest,
                                            uint64_t raw_len, const Producer& produce);
  // Streams a large raw object whose XXH3-64 (`raw_xxh`) the caller computed
  // while hashing it: header first, one pass. Throws a one-line Error naming
  // `shown` if the bytes produced are not `raw_len` bytes with that checksum
  // (the file changed since it was hashed); the pack is then unusable.
  const formats::IndexRecord& append_raw_stream(formats::Kind kind, const Digest& digest, uint64_t raw_len, uint64_t raw_xxh,
                                                const std::string& shown, const Producer& produce);

  uint16_t version() const { return version_; }
  // v2: stored bytes of the blocks written so far (headers and tables included).
  uint64_t block_bytes() {
    write_pending(true);
    return block_bytes_;
  }
  // v2: true if an object of this size goes into a block (append_small).
  bool is_small(uint64_t raw_len) const { return version_ >= formats::kPackVersion2 && raw_len < block_target_ / 2; }
  // v2: queues a small blob (raw bytes) for the open block, which is written
  // when the next member would take it past the block target, or at finish().
  // `raw` is copied. Returns false (and writes nothing) if the digest is
  // already in this pack.
  bool append_small(const Digest& digest, ByteSpan raw);
  // v2: writes the open block now (gc uses it to keep a source's blocks apart).
  void close_block();
  // v2, before any block: appends `dict` (a zstd dictionary) as a kind=dict
  // entry and its mirror; every block closed after it is compressed with it
  // (codec zstd-dict, the dictionary's id in its header).
  void use_dictionary(ByteSpan dict);
  // The dictionary blocks are compressed with (null if none).
  const ZstdDict* dictionary() const { return dict_.get(); }
  // v2: copies a whole block verbatim from another pack (header, table and
  // payload, checked by the caller). Members already in this pack are
  // refused: the caller decides (gc copies only blocks without such members).
  // `members` carry their digests (for the index) whether or not the table
  // holds them: a lengths-only block's are named by the caller.
  void append_block_copy(const formats::BlockHeader& h, const std::vector<formats::BlockMember>& members, ByteSpan table, ByteSpan payload);

  PackResult finish();

private:
  void emit(ByteSpan data);
  void flush();
  void pad_for_aligned_entry(formats::Kind kind, formats::Codec codec, uint64_t raw_len, uint16_t& eflags);
  void push_block_records(const formats::BlockHeader& h, const std::vector<formats::BlockMember>& members, uint64_t at);
  void write_block(ClosedBlock b);
  // An entry, or a block copied whole, waiting for its place
  // (compress_in_background). Its payload (and table) are the caller's
  // spans, or point into `owned`.
  struct PendingEntry {
    formats::EntryHeader h; // an entry's header (the alignment flag set when written)
    formats::IndexRecord r; // and record (the offset set when written)
    formats::BlockHeader bh;                   // a block copied whole (members not empty)
    std::vector<formats::BlockMember> members;
    ByteSpan table, stored;
    Bytes owned;
  };
  struct Pending {
    PendingEntry entry;
    bool block = false; // else `entry`: the compressor's oldest block
  };
  void write_entry(PendingEntry& e);
  void write_or_queue(PendingEntry e);
  // Writes what waits, in call order: all of it (waiting for the helpers),
  // or up to the first block not compressed yet (unless too much waits).
  void write_pending(bool all);
  static constexpr uint64_t kMaxOwnedBytes = 8u << 20; // payload copies waiting
  static constexpr size_t kMaxPending = 4096;

  int fd_;
  std::string where_;
  std::unique_ptr<ZstdDict> dict_;
  std::unique_ptr<BlockCompressor> compressor_; // after dict_: stopped before it goes
  std::deque<Pending> pending_;
  uint64_t owned_bytes_ = 0;
  int level_ = 0;
  uint16_t version_ = formats::kPackVersion;
  uint32_t block_target_ = formats::kDefaultBlockTarget;
  Bytes block_raw_;
  uint64_t block_bytes_ = 0;
  std::vector<formats::BlockMember> block_members_;
  Bytes buf_;
  uint64_t offset_ = 0;
  Sha256 sha_;
  // Background hashing: the buffer being hashed is swapped out (spare_) and
  // not reused before its ticket is done.
  Bytes spare_;
  std::unique_ptr<AsyncSha256> async_; // after the buffers: stopped before they go
  uint64_t spare_ticket_ = 0;
  bool spans_outlive_writer_ = false;
  // The pack hash so far (after drain() when hashing in the background).
  Sha256& settled_sha();
  void hash_back(uint64_t from, uint64_t to);
  DigestSet written_;
  PackResult result_;
};

} // namespace hpak
