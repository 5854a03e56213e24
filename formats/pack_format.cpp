#include "formats/pack_format.hpp"

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
}

PackHeader decode_pack_header(ByteSpan b, const std::string& where) {
  if (b.size() < kPackHeaderSize) throw Corrupt(where, 0, "too short to be an HPAK pack (" + std::to_string(b.size()) + " bytes)");
  if (std::memcmp(b.data(), kPackMagic, 4) != 0) throw Corrupt(where, 0, "not an HPAK pack (bad magic)");
  PackHeader h;
  h.version = get_u16(b.data() + 4);
  if (h.version != kPackVersion)
    throw Corrupt(where, 4, "unsupported HPAK pack version " + std::to_string(h.version) + " (this hpak reads version " +
                                std::to_string(kPackVersion) + ")");
  if (get_u16(b.data() + 6) != kPackHeaderSize) throw Corrupt(where, 6, "bad pack header length");
  h.flags = get_u32(b.data() + 8);
  if (h.flags != 0) throw Corrupt(where, 8, "unknown pack flags");
  h.level = int32_t(get_u32(b.data() + 12));
  for (size_t i = 16; i < kPackHeaderSize; i++)
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

bool looks_like_entry_header(ByteSpan b) {
  if (b.size() < kEntryHeaderSize) return false;
  if (std::memcmp(b.data(), kEntryMagic, 4) != 0) return false;
  // Everything decode_entry_header checks, so a scan that trusts this never
  // meets a header decode_entry_header refuses (a raw entry whose sizes differ
  // used to abort the whole scan instead of being skipped as damage).
  return get_u32(b.data() + 64) == header_check(b.data()) && get_u32(b.data() + 68) == 0 && valid_kind(b[4]) &&
         valid_codec(b[5]) && (b[5] != uint8_t(Codec::Raw) || get_u64(b.data() + 8) == get_u64(b.data() + 16));
}

EntryHeader decode_entry_header(ByteSpan b, const std::string& where, uint64_t offset) {
  if (b.size() < kEntryHeaderSize) throw Corrupt(where, offset, "truncated entry header");
  if (std::memcmp(b.data(), kEntryMagic, 4) != 0) throw Corrupt(where, offset, "bad entry magic");
  if (get_u32(b.data() + 64) != header_check(b.data()) || get_u32(b.data() + 68) != 0)
    throw Corrupt(where, offset, "entry header checksum mismatch");
  if (!valid_kind(b[4])) throw Corrupt(where, offset + 4, "unknown entry kind " + std::to_string(b[4]));
  if (!valid_codec(b[5])) throw Corrupt(where, offset + 5, "unknown entry codec " + std::to_string(b[5]));
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
  set_u32(out + 4, 1);
  set_u64(out + 8, f.entry_count);
  set_u64(out + 16, f.raw_total);
}

Footer decode_footer(ByteSpan b, const std::string& where, uint64_t offset) {
  if (b.size() < kFooterSize) throw Corrupt(where, offset, "truncated footer");
  if (std::memcmp(b.data(), kFooterMagic, 4) != 0) throw Corrupt(where, offset, "bad footer magic (truncated or damaged pack?)");
  if (get_u32(b.data() + 4) != 1) throw Corrupt(where, offset + 4, "unsupported footer version");
  for (size_t i = 24; i < kFooterSize; i++)
    if (b[i] != 0) throw Corrupt(where, offset + i, "reserved footer byte is not zero");
  Footer f;
  f.entry_count = get_u64(b.data() + 8);
  f.raw_total = get_u64(b.data() + 16);
  return f;
}

} // namespace hpak::formats
