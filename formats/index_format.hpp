// HPAK index (.hidx), format version 1: an mmap-able, binary-searchable map
// from object digest to its entry in one pack. All integers little-endian.
//
//   hidx     ::= header fanout digests records trailer
//   header   ::= "HIDX" version:u32(=1) count:u64 pack_size:u64
//                pack_sum:[32]                 -- the pack's trailer (ties idx to pack)
//   fanout   ::= u32[256]                      -- fanout[b] = #digests with first byte <= b
//   digests  ::= [32] * count                  -- sorted ascending (ties by offset)
//   records  ::= record * count, in the order of `digests`
//   record   ::= offset:u64 stored_len:u64 raw_len:u64 stored_xxh:u64
//                kind:u8 codec:u8 reserved:[6]zero                -- 40 bytes
//   trailer  ::= SHA-256 of every preceding byte of the index
//
// Digests are kept apart from records so the binary search touches only them
// (git's idx v2 rationale). The same digest may appear twice (a pack keeps two
// copies of each catalog); lookup returns the first, `equal_range` all.
// The index is derived data: `hpak index` rebuilds it byte-identically from
// the pack alone, so a lost or damaged index never loses an object.
//
// Index format version 2, for v2 packs (a v1 pack keeps a v1 index):
//
//   hidx2    ::= header2 fanout digests records2 trailer
//   header2  ::= "HIDX" version:u32(=2) count:u64 pack_size:u64 pack_sum:[32]
//   records2 ::= record2 * count, in the order of `digests`
//   record2  ::= offset:u64 raw_len:u64 member:u32 kind:u8 codec:u8
//                reserved:u16(=0)                                 -- 24 bytes
//
// `offset` is that of the item holding the object: an entry header (member =
// 0xffffffff) or a block header (member = the object's position in the block's
// table). stored_len and stored_xxh are left to the pack's item header (checked
// by its own hdr_xxh on every read), so an object costs 32 + 24 bytes here
// instead of 32 + 40. Full digests stay: lookups, prefixes (`cat`) and the
// multi-pack index need no pack access. Rebuilt from a v2 pack's headers and
// tables alone (no decompression), byte for byte.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/hash.hpp"
#include "formats/pack_format.hpp"

namespace hpak::formats {

constexpr uint32_t kIndexVersion = 1; // for v1 packs
constexpr uint32_t kIndexVersion2 = 2; // for v2 packs
constexpr size_t kIndexHeaderSize = 56;
constexpr size_t kIndexRecordSize = 40;
constexpr size_t kIndexRecordSize2 = 24;
constexpr uint32_t kNoMember = 0xffffffffu;
constexpr char kIndexMagic[4] = {'H', 'I', 'D', 'X'};

struct IndexRecord {
  Digest digest{};
  uint64_t offset = 0; // of the entry header within the pack
  uint64_t stored_len = 0;
  uint64_t raw_len = 0;
  uint64_t stored_xxh = 0;
  Kind kind = Kind::Blob;
  Codec codec = Codec::Raw;
  // v2: the position in the block at `offset`, or kNoMember for an entry.
  // A v2 index does not hold stored_len and stored_xxh (0 from IndexView):
  // PackReader fills them from the item header.
  uint32_t member = kNoMember;
};

// The most bytes an index of a pack of `pack_size` bytes can need: each
// object takes at least kBlockLengthSize bytes of a pack (a member's row in a
// lengths-only block table; an entry takes its 72-byte header) and at most 32 + 40 bytes of
// an index.
uint64_t max_index_size(uint64_t pack_size);

// What the first kIndexHeaderSize bytes of an index say (magic and version
// checked, or Corrupt naming `where`); `size` is the whole index's.
struct IndexHeader {
  uint32_t version = 0;
  uint64_t count = 0, pack_size = 0, size = 0;
};
IndexHeader decode_index_header(ByteSpan head, const std::string& where);

// Binary search of a sorted digest table with a 256-entry fanout (shared by
// .hidx and .midx): the position of the first `d`, if present. O(log n).
std::optional<uint64_t> fanout_find(const uint8_t* fanout, const uint8_t* digests, uint64_t count, const Digest& d);

// Serialises records (sorted here) into index bytes.
// `version` 2 for a v2 pack (24-byte records), 1 for a v1 pack.
Bytes encode_index(std::vector<IndexRecord> records, uint64_t pack_size, const Digest& pack_sum, uint32_t version = kIndexVersion);

// A validated, read-only view over index bytes (typically an mmap). The view
// checks sizes, fanout, ordering and record fields on construction and the
// trailer hash unless told not to; it throws Corrupt naming `where`.
class IndexView {
public:
  IndexView() = default;
  IndexView(ByteSpan bytes, std::string where, bool check_trailer = true);

  uint64_t count() const { return count_; }
  uint32_t version() const { return version_; }
  uint64_t pack_size() const { return pack_size_; }
  const Digest& pack_sum() const { return pack_sum_; }
  Digest digest_at(uint64_t i) const;
  IndexRecord record_at(uint64_t i) const;
  // Index of the first record with this digest, if any. O(log n).
  std::optional<uint64_t> find(const Digest& d) const;
  // All indices whose digest starts with the hex prefix (for `cat <prefix>`).
  std::vector<uint64_t> find_prefix(std::string_view hex_prefix) const;

private:
  void check_record2(const uint8_t* r, uint64_t off) const;

  ByteSpan bytes_;
  std::string where_;
  uint64_t count_ = 0;
  uint32_t version_ = kIndexVersion;
  size_t rec_size_ = kIndexRecordSize;
  uint64_t pack_size_ = 0;
  Digest pack_sum_{};
  const uint8_t* fanout_ = nullptr;
  const uint8_t* digests_ = nullptr;
  const uint8_t* records_ = nullptr;
};

} // namespace hpak::formats
