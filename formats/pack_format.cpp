#include "formats/pack_format.hpp"

#include <algorithm>
#include <cstring>

namespace hpak::formats {

const char* kind_name(Kind k) {
  switch (k) {
  case Kind::Blob: return "blob";
  case Kind::Catalog: return "catalog";
  case Kind::Dict: return "dict";
  }
  return "?";
}

const char* codec_name(Codec c) {
  switch (c) {
  case Codec::Raw: return "raw";
  case Codec::Zstd: return "zstd";
  case Codec::ZstdDict: return "zstd-dict";
  case Codec::ZstdBase: return "zstd-base";
  }
  return "?";
}

void encode_pack_header(const PackHeader& h, uint8_t out[kPackHeaderSize]) {
  std::memset(out, 0, kPackHeaderSize);
  std::memcpy(out, kPackMagic, 4);
  out[4] = uint8_t(h.version);
  out[5] = uint8_t(h.version >> 8);
  out[6] = uint8_t(kPackHeaderSize);
  out[7] = 0;
  set_u32(out + 8, h.flags);
  set_u32(out + 12, uint32_t(h.level));
  if (h.version >= kPackVersion2) set_u32(out + 16, h.block_target);
}

PackHeader decode_pack_header(ByteSpan b, const std::string& where) {
  if (b.size() < kPackHeaderSize) throw Corrupt(where, 0, "too short to be an HPAK pack (" + std::to_string(b.size()) + " bytes)");
  if (std::memcmp(b.data(), kPackMagic, 4) != 0) throw Corrupt(where, 0, "not an HPAK pack (bad magic)");
  PackHeader h;
  h.version = get_u16(b.data() + 4);
  if (h.version != kPackVersion && h.version != kPackVersion2)
    throw Corrupt(where, 4, "unsupported HPAK pack version " + std::to_string(h.version) + " (this hpak reads versions " +
                                std::to_string(kPackVersion) + " and " + std::to_string(kPackVersion2) + ")");
  if (get_u16(b.data() + 6) != kPackHeaderSize) throw Corrupt(where, 6, "bad pack header length");
  h.flags = get_u32(b.data() + 8);
  if (h.flags != 0) throw Corrupt(where, 8, "unknown pack flags");
  h.level = int32_t(get_u32(b.data() + 12));
  size_t reserved_from = 16;
  if (h.version == kPackVersion2) {
    h.block_target = get_u32(b.data() + 16);
    if (h.block_target == 0 || h.block_target > kBlockMaxRaw) throw Corrupt(where, 16, "bad block target " + std::to_string(h.block_target));
    reserved_from = 20;
  }
  for (size_t i = reserved_from; i < kPackHeaderSize; i++)
    if (b[i] != 0) throw Corrupt(where, i, "reserved header byte is not zero");
  return h;
}

static uint32_t header_check(const uint8_t* p) { return uint32_t(xxh64(ByteSpan(p, 64))); }

void encode_entry_header(const EntryHeader& h, uint8_t out[kEntryHeaderSize]) {
  std::memset(out, 0, kEntryHeaderSize);
  std::memcpy(out, kEntryMagic, 4);
  out[4] = uint8_t(h.kind);
  out[5] = uint8_t(h.codec);
  out[6] = uint8_t(h.eflags);
  out[7] = uint8_t(h.eflags >> 8);
  set_u64(out + 8, h.stored_len);
  set_u64(out + 16, h.raw_len);
  std::memcpy(out + 24, h.digest.data(), 32);
  set_u64(out + 56, h.stored_xxh);
  set_u32(out + 64, header_check(out));
}

static bool valid_kind(uint8_t k) { return k >= 1 && k <= 3; }
static bool valid_codec(uint8_t c) { return c <= 2; }
// An entry's codec: ZstdBase only on a catalog, with room for its base's
// digest and sizes a base-coded catalog can have.
static bool valid_entry_codec(const uint8_t* b) {
  if (valid_codec(b[5])) return true;
  return b[5] == uint8_t(Codec::ZstdBase) && b[4] == uint8_t(Kind::Catalog) && get_u64(b + 8) > kBaseDigestSize &&
         get_u64(b + 8) <= kBaseCodedMax && get_u64(b + 16) < kBaseCodedMax;
}

bool looks_like_entry_header(ByteSpan b) {
  if (b.size() < kEntryHeaderSize) return false;
  if (std::memcmp(b.data(), kEntryMagic, 4) != 0) return false;
  // Everything decode_entry_header checks, so a scan that trusts this never
  // meets a header decode_entry_header refuses (a raw entry whose sizes differ
  // used to abort the whole scan instead of being skipped as damage).
  return get_u32(b.data() + 64) == header_check(b.data()) && get_u32(b.data() + 68) == 0 && valid_kind(b[4]) &&
         valid_entry_codec(b.data()) && (b[5] != uint8_t(Codec::Raw) || get_u64(b.data() + 8) == get_u64(b.data() + 16));
}

EntryHeader decode_entry_header(ByteSpan b, const std::string& where, uint64_t offset) {
  if (b.size() < kEntryHeaderSize) throw Corrupt(where, offset, "truncated entry header");
  if (std::memcmp(b.data(), kEntryMagic, 4) != 0) throw Corrupt(where, offset, "bad entry magic");
  if (get_u32(b.data() + 64) != header_check(b.data()) || get_u32(b.data() + 68) != 0)
    throw Corrupt(where, offset, "entry header checksum mismatch");
  if (!valid_kind(b[4])) throw Corrupt(where, offset + 4, "unknown entry kind " + std::to_string(b[4]));
  if (b[5] == uint8_t(Codec::ZstdBase) && b[4] != uint8_t(Kind::Catalog))
    throw Corrupt(where, offset + 5, "codec zstd-base on an entry that is not a catalog");
  if (b[5] == uint8_t(Codec::ZstdBase) && !valid_entry_codec(b.data()))
    throw Corrupt(where, offset + 8, "zstd-base catalog with impossible sizes (its base digest needs 32 stored bytes; at most 128 MiB)");
  if (!valid_entry_codec(b.data())) throw Corrupt(where, offset + 5, "unknown entry codec " + std::to_string(b[5]));
  EntryHeader h;
  h.kind = Kind(b[4]);
  h.codec = Codec(b[5]);
  h.eflags = get_u16(b.data() + 6);
  h.stored_len = get_u64(b.data() + 8);
  h.raw_len = get_u64(b.data() + 16);
  std::memcpy(h.digest.data(), b.data() + 24, 32);
  h.stored_xxh = get_u64(b.data() + 56);
  if (h.codec == Codec::Raw && h.stored_len != h.raw_len) throw Corrupt(where, offset + 8, "raw entry with stored size != raw size");
  return h;
}

void encode_footer(const Footer& f, uint8_t out[kFooterSize]) {
  std::memset(out, 0, kFooterSize);
  std::memcpy(out, kFooterMagic, 4);
  set_u32(out + 4, f.version);
  set_u64(out + 8, f.entry_count);
  set_u64(out + 16, f.raw_total);
}

Footer decode_footer(ByteSpan b, const std::string& where, uint64_t offset) {
  if (b.size() < kFooterSize) throw Corrupt(where, offset, "truncated footer");
  if (std::memcmp(b.data(), kFooterMagic, 4) != 0) throw Corrupt(where, offset, "bad footer magic (truncated or damaged pack?)");
  uint32_t version = get_u32(b.data() + 4);
  if (version != 1 && version != 2) throw Corrupt(where, offset + 4, "unsupported footer version");
  for (size_t i = 24; i < kFooterSize; i++)
    if (b[i] != 0) throw Corrupt(where, offset + i, "reserved footer byte is not zero");
  Footer f;
  f.version = version;
  f.entry_count = get_u64(b.data() + 8);
  f.raw_total = get_u64(b.data() + 16);
  return f;
}

static uint32_t block_check(const uint8_t* p) { return uint32_t(xxh64(ByteSpan(p, 40))); }

void encode_block_header(const BlockHeader& h, uint8_t out[kBlockHeaderSize]) {
  std::memset(out, 0, kBlockHeaderSize);
  std::memcpy(out, kBlockMagic, 4);
  out[4] = uint8_t(Kind::Blob);
  out[5] = uint8_t(h.codec);
  set_u16(out + 6, h.flags);
  set_u32(out + 8, h.count);
  set_u32(out + 12, h.raw_len);
  set_u32(out + 16, h.stored_len);
  set_u32(out + 20, h.dict_id);
  set_u64(out + 24, h.stored_xxh);
  set_u64(out + 32, h.table_xxh);
  set_u32(out + 40, block_check(out));
}

// The reason a block header is invalid, or nullptr.
static const char* block_header_fault(const uint8_t* b, uint64_t& at) {
  at = 0;
  if (std::memcmp(b, kBlockMagic, 4) != 0) return "bad block magic";
  if (get_u32(b + 40) != block_check(b) || get_u32(b + 44) != 0) return "block header checksum mismatch";
  at = 4;
  if (b[4] != uint8_t(Kind::Blob)) return "block of a kind other than blob";
  at = 5;
  if (!valid_codec(b[5])) return "unknown block codec";
  at = 6;
  if ((get_u16(b + 6) & ~kBflagLengths) != 0) return "unknown block flags";
  uint32_t count = get_u32(b + 8), raw = get_u32(b + 12), stored = get_u32(b + 16), dict = get_u32(b + 20);
  at = 8;
  if (count == 0 || count > kBlockMaxCount) return "block member count out of range";
  at = 12;
  if (raw > kBlockMaxRaw) return "block raw size above 1 MiB";
  at = 16;
  if (b[5] == uint8_t(Codec::Raw) && stored != raw) return "raw block with stored size != raw size";
  at = 20;
  if ((b[5] == uint8_t(Codec::ZstdDict)) != (dict != 0)) return "block dictionary id does not match its codec";
  return nullptr;
}

bool looks_like_block_header(ByteSpan b) {
  uint64_t at;
  return b.size() >= kBlockHeaderSize && block_header_fault(b.data(), at) == nullptr;
}

BlockHeader decode_block_header(ByteSpan b, const std::string& where, uint64_t offset) {
  if (b.size() < kBlockHeaderSize) throw Corrupt(where, offset, "truncated block header");
  uint64_t at;
  if (const char* why = block_header_fault(b.data(), at)) throw Corrupt(where, offset + at, why);
  BlockHeader h;
  h.codec = Codec(b[5]);
  h.flags = get_u16(b.data() + 6);
  h.count = get_u32(b.data() + 8);
  h.raw_len = get_u32(b.data() + 12);
  h.stored_len = get_u32(b.data() + 16);
  h.dict_id = get_u32(b.data() + 20);
  h.stored_xxh = get_u64(b.data() + 24);
  h.table_xxh = get_u64(b.data() + 32);
  return h;
}

Bytes encode_block_table(const BlockHeader& h, const std::vector<BlockMember>& members) {
  Bytes out;
  out.reserve(members.size() * kBlockMemberSize);
  for (auto& m : members) {
    if (h.named()) put_bytes(out, m.digest);
    put_u32(out, m.raw_len);
  }
  return out;
}

std::vector<BlockMember> decode_block_table(const BlockHeader& h, ByteSpan t, const std::string& where, uint64_t offset) {
  if (t.size() != block_table_size(h)) throw Corrupt(where, offset, "truncated block member table");
  if (xxh64(t) != h.table_xxh) throw Corrupt(where, offset, "block member table checksum mismatch");
  std::vector<BlockMember> out(h.count);
  uint64_t sum = 0;
  const size_t each = h.named() ? kBlockMemberSize : kBlockLengthSize;
  for (uint32_t i = 0; i < h.count; i++) {
    const uint8_t* p = t.data() + i * each;
    if (h.named()) std::memcpy(out[i].digest.data(), p, 32), p += 32;
    out[i].raw_len = get_u32(p);
    sum += out[i].raw_len;
  }
  if (sum != h.raw_len) throw Corrupt(where, offset, "block members' sizes do not add up to the block's");
  if (h.named() && !distinct_names(out)) throw Corrupt(where, offset, "block names one object twice");
  return out;
}

bool distinct_names(const std::vector<BlockMember>& members) {
  std::vector<Digest> sorted;
  sorted.reserve(members.size());
  for (auto& m : members) sorted.push_back(m.digest);
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
}

} // namespace hpak::formats
