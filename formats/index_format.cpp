#include "formats/index_format.hpp"

#include <algorithm>
#include <cstring>

namespace hpak::formats {

Bytes encode_index(std::vector<IndexRecord> recs, uint64_t pack_size, const Digest& pack_sum, uint32_t version) {
  std::sort(recs.begin(), recs.end(), [](const IndexRecord& a, const IndexRecord& b) {
    int c = std::memcmp(a.digest.data(), b.digest.data(), 32);
    return c != 0 ? c < 0 : a.offset != b.offset ? a.offset < b.offset : a.member < b.member;
  });
  size_t rec_size = version == kIndexVersion2 ? kIndexRecordSize2 : kIndexRecordSize;
  Bytes out;
  out.reserve(kIndexHeaderSize + 1024 + recs.size() * (32 + rec_size) + 32);
  for (char c : kIndexMagic) put_u8(out, uint8_t(c));
  put_u32(out, version);
  put_u64(out, recs.size());
  put_u64(out, pack_size);
  put_bytes(out, pack_sum);
  uint32_t fan[256] = {};
  for (auto& r : recs) fan[r.digest[0]]++;
  uint32_t acc = 0;
  for (int i = 0; i < 256; i++) {
    acc += fan[i];
    put_u32(out, acc);
  }
  for (auto& r : recs) put_bytes(out, r.digest);
  for (auto& r : recs) {
    if (version == kIndexVersion2) {
      put_u64(out, r.offset);
      put_u64(out, r.raw_len);
      put_u32(out, r.member);
      put_u8(out, uint8_t(r.kind));
      put_u8(out, uint8_t(r.codec));
      put_u16(out, 0);
      continue;
    }
    put_u64(out, r.offset);
    put_u64(out, r.stored_len);
    put_u64(out, r.raw_len);
    put_u64(out, r.stored_xxh);
    put_u8(out, uint8_t(r.kind));
    put_u8(out, uint8_t(r.codec));
    for (int i = 0; i < 6; i++) put_u8(out, 0);
  }
  Digest sum = sha256(out);
  put_bytes(out, sum);
  return out;
}

uint64_t max_index_size(uint64_t pack_size) {
  return kIndexHeaderSize + 1024 + 32 + (pack_size / kBlockLengthSize + 1) * (32 + kIndexRecordSize);
}

IndexHeader decode_index_header(ByteSpan b, const std::string& where) {
  if (b.size() < kIndexHeaderSize) throw Corrupt(where, 0, "too short to be an HPAK index");
  if (std::memcmp(b.data(), kIndexMagic, 4) != 0) throw Corrupt(where, 0, "not an HPAK index (bad magic)");
  IndexHeader h;
  h.version = get_u32(b.data() + 4);
  if (h.version != kIndexVersion && h.version != kIndexVersion2) throw Corrupt(where, 4, "unsupported index version " + std::to_string(h.version));
  h.count = get_u64(b.data() + 8);
  h.pack_size = get_u64(b.data() + 16);
  const uint64_t per = 32 + (h.version == kIndexVersion2 ? kIndexRecordSize2 : kIndexRecordSize);
  if (h.count > (uint64_t(1) << 56) / per) throw Corrupt(where, 8, "object count " + std::to_string(h.count) + " is impossible");
  h.size = kIndexHeaderSize + 1024 + h.count * per + 32;
  return h;
}

IndexView::IndexView(ByteSpan b, std::string where, bool check_trailer) : bytes_(b), where_(std::move(where)) {
  if (b.size() < kIndexHeaderSize + 1024 + 32) throw Corrupt(where_, 0, "too short to be an HPAK index");
  if (std::memcmp(b.data(), kIndexMagic, 4) != 0) throw Corrupt(where_, 0, "not an HPAK index (bad magic)");
  version_ = get_u32(b.data() + 4);
  if (version_ != kIndexVersion && version_ != kIndexVersion2) throw Corrupt(where_, 4, "unsupported index version " + std::to_string(version_));
  rec_size_ = version_ == kIndexVersion2 ? kIndexRecordSize2 : kIndexRecordSize;
  count_ = get_u64(b.data() + 8);
  pack_size_ = get_u64(b.data() + 16);
  std::memcpy(pack_sum_.data(), b.data() + 24, 32);
  if (count_ > (b.size() / (32 + rec_size_)))
    throw Corrupt(where_, 8, "object count " + std::to_string(count_) + " does not fit the index size");
  uint64_t expect = kIndexHeaderSize + 1024 + count_ * (32 + rec_size_) + 32;
  if (b.size() != expect)
    throw Corrupt(where_, 0, "index size " + std::to_string(b.size()) + " does not match its count (expected " + std::to_string(expect) + ")");
  if (check_trailer) {
    Digest sum = sha256(b.first(b.size() - 32));
    if (std::memcmp(sum.data(), b.data() + b.size() - 32, 32) != 0)
      throw Corrupt(where_, b.size() - 32, "index checksum mismatch (damaged index; rebuild it with 'hpak index')");
  }
  fanout_ = b.data() + kIndexHeaderSize;
  digests_ = fanout_ + 1024;
  records_ = digests_ + count_ * 32;
  uint32_t prev = 0;
  for (int i = 0; i < 256; i++) {
    uint32_t f = get_u32(fanout_ + 4 * i);
    if (f < prev) throw Corrupt(where_, kIndexHeaderSize + 4 * i, "fanout table is not monotonic");
    prev = f;
  }
  if (prev != count_) throw Corrupt(where_, kIndexHeaderSize + 1020, "fanout total does not match the count");
  for (uint64_t i = 0; i < count_; i++) {
    const uint8_t* d = digests_ + 32 * i;
    uint32_t lo = d[0] == 0 ? 0 : get_u32(fanout_ + 4 * (d[0] - 1));
    uint32_t hi = get_u32(fanout_ + 4 * d[0]);
    if (i < lo || i >= hi) throw Corrupt(where_, digests_ - b.data() + 32 * i, "digest outside its fanout bucket");
    if (i > 0 && std::memcmp(d - 32, d, 32) > 0) throw Corrupt(where_, digests_ - b.data() + 32 * i, "digests are not sorted");
    const uint8_t* r = records_ + rec_size_ * i;
    uint64_t off = uint64_t(r - b.data());
    if (version_ == kIndexVersion2) {
      check_record2(r, off);
      continue;
    }
    if (r[32] < 1 || r[32] > 3) throw Corrupt(where_, off + 32, "bad kind in index record");
    if (r[33] > 3 || (r[33] == uint8_t(Codec::ZstdBase) && r[32] != uint8_t(Kind::Catalog)))
      throw Corrupt(where_, off + 33, "bad codec in index record");
    // Entries lie between the header and the footer. Computed so that no term
    // can wrap: `pack_size_ - 64` once underflowed for a pack_size below 64 and
    // let records point anywhere.
    uint64_t eoff = get_u64(r), slen = get_u64(r + 8);
    uint64_t entries_end = pack_size_ >= kPackMinSize ? pack_size_ - kFooterSize - kTrailerSize : 0;
    if (eoff < kPackHeaderSize || eoff > entries_end || entries_end - eoff < kEntryHeaderSize ||
        slen > entries_end - eoff - kEntryHeaderSize)
      throw Corrupt(where_, off, "record points outside the pack");
  }
}

// A v2 record: offset of an entry or block header inside the pack, a member
// position below the block limit, raw sizes a block member can have.
void IndexView::check_record2(const uint8_t* r, uint64_t off) const {
  uint64_t eoff = get_u64(r), raw = get_u64(r + 8);
  uint32_t member = get_u32(r + 16);
  if (r[20] < 1 || r[20] > 3) throw Corrupt(where_, off + 20, "bad kind in index record");
  if (r[21] > 3 || (r[21] == uint8_t(Codec::ZstdBase) && r[20] != uint8_t(Kind::Catalog)))
    throw Corrupt(where_, off + 21, "bad codec in index record"); // zstd-base: catalogs only
  if (get_u16(r + 22) != 0) throw Corrupt(where_, off + 22, "reserved index record bytes are not zero");
  uint64_t entries_end = pack_size_ >= kPackMinSize ? pack_size_ - kFooterSize - kTrailerSize : 0;
  size_t hdr = member == kNoMember ? kEntryHeaderSize : kBlockHeaderSize;
  if (eoff < kPackHeaderSize || eoff > entries_end || entries_end - eoff < hdr) throw Corrupt(where_, off, "record points outside the pack");
  if (member != kNoMember && (member >= kBlockMaxCount || raw > kBlockMaxRaw || r[20] != uint8_t(Kind::Blob)))
    throw Corrupt(where_, off + 16, "bad block member in index record");
}

Digest IndexView::digest_at(uint64_t i) const {
  Digest d;
  std::memcpy(d.data(), digests_ + 32 * i, 32);
  return d;
}

IndexRecord IndexView::record_at(uint64_t i) const {
  IndexRecord r;
  std::memcpy(r.digest.data(), digests_ + 32 * i, 32);
  const uint8_t* p = records_ + rec_size_ * i;
  if (version_ == kIndexVersion2) {
    r.offset = get_u64(p);
    r.raw_len = get_u64(p + 8);
    r.member = get_u32(p + 16);
    r.kind = Kind(p[20]);
    r.codec = Codec(p[21]);
    return r;
  }
  r.offset = get_u64(p);
  r.stored_len = get_u64(p + 8);
  r.raw_len = get_u64(p + 16);
  r.stored_xxh = get_u64(p + 24);
  r.kind = Kind(p[32]);
  r.codec = Codec(p[33]);
  return r;
}

std::optional<uint64_t> fanout_find(const uint8_t* fanout, const uint8_t* digests, uint64_t count, const Digest& d) {
  if (count == 0) return std::nullopt;
  uint64_t lo = d[0] == 0 ? 0 : get_u32(fanout + 4 * (d[0] - 1));
  uint64_t hi = get_u32(fanout + 4 * d[0]);
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (std::memcmp(digests + 32 * mid, d.data(), 32) < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo < count && std::memcmp(digests + 32 * lo, d.data(), 32) == 0) return lo;
  return std::nullopt;
}

std::optional<uint64_t> IndexView::find(const Digest& d) const { return fanout_find(fanout_, digests_, count_, d); }

std::vector<uint64_t> IndexView::find_prefix(std::string_view hex) const {
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < count_; i++) {
    if (to_hex(ByteSpan(digests_ + 32 * i, 32)).compare(0, hex.size(), hex) == 0) out.push_back(i);
  }
  return out;
}

} // namespace hpak::formats
