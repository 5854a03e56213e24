// Fuzzes the pack grammar on arbitrary bytes: decode_pack_header,
// decode_entry_header / looks_like_entry_header at every plausible offset,
// decode_footer, and the resyncing scan_pack, then builds the index a
// PackReader builds from a scan.
//
// Invariants checked beyond "no crash": looks_like_entry_header and
// decode_entry_header agree; every record scan_pack returns lies
// inside the bytes (header + payload before `end`), records are ascending and
// disjoint, each record's header decodes to the record's fields, and the
// scanned records always make a valid IndexView (else a pack with one bad
// byte would become unreadable as a whole).
#include <algorithm>

#include "core/pack/pack_reader.hpp"
#include "formats/index_format.hpp"
#include "formats/pack_format.hpp"
#include "fuzz_common.hpp"

using namespace hpak;
using namespace hpak::formats;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteSpan b(data, size);
  try {
    PackHeader h = decode_pack_header(b, "fuzz.hpak");
    FUZZ_CHECK((h.version == kPackVersion || h.version == kPackVersion2) && h.flags == 0, "header accepted with version %u flags %u",
               h.version, h.flags);
  } catch (const Error&) {
  }
  // An entry header at offset 0 (as a standalone header) and at the first entry offset.
  for (size_t off : {size_t(0), kPackHeaderSize}) {
    if (off > size) continue;
    ByteSpan rest = b.subspan(off);
    bool looks = looks_like_entry_header(rest);
    try {
      EntryHeader e = decode_entry_header(rest, "fuzz.hpak", off);
      FUZZ_CHECK(looks, "decode_entry_header accepted what looks_like_entry_header refused");
      FUZZ_CHECK(e.codec != Codec::Raw || e.stored_len == e.raw_len, "raw entry with stored != raw");
      uint8_t again[kEntryHeaderSize];
      encode_entry_header(e, again);
      FUZZ_CHECK(std::memcmp(again, rest.data(), kEntryHeaderSize) == 0, "entry header does not round-trip");
    } catch (const Error& e) {
      // scan_pack trusts looks_like_entry_header and then decodes: the two must agree.
      FUZZ_CHECK(!looks, "looks_like_entry_header accepted a header decode_entry_header refuses: %s", e.what());
    }
  }
  // A v2 block header at the first item offset: the quick check and the full decode agree.
  if (size >= kPackHeaderSize + kBlockHeaderSize) {
    ByteSpan rest = b.subspan(kPackHeaderSize);
    bool looks = looks_like_block_header(rest);
    try {
      BlockHeader bh = decode_block_header(rest, "fuzz.hpak", kPackHeaderSize);
      FUZZ_CHECK(looks, "decode_block_header accepted what looks_like_block_header refused");
      FUZZ_CHECK(bh.count >= 1 && bh.count <= kBlockMaxCount && bh.raw_len <= kBlockMaxRaw, "block header with count %u raw %u accepted",
                 bh.count, bh.raw_len);
      FUZZ_CHECK(bh.codec != Codec::Raw || bh.stored_len == bh.raw_len, "raw block with stored != raw");
      FUZZ_CHECK((bh.flags & ~kBflagLengths) == 0, "block header with unknown flags %u accepted", unsigned(bh.flags));
    } catch (const Error& e) {
      FUZZ_CHECK(!looks, "looks_like_block_header accepted a header decode_block_header refuses: %s", e.what());
    }
  }
  if (size >= kFooterSize) {
    try {
      decode_footer(b.subspan(size - kFooterSize), "fuzz.hpak", size - kFooterSize);
    } catch (const Error&) {
    }
  }

  ScanResult s = scan_pack(b, "fuzz.hpak");
  FUZZ_CHECK(s.end <= size, "scan end %llu past size %zu", (unsigned long long)s.end, size);
  uint64_t prev_end = kPackHeaderSize;
  uint64_t block_at = UINT64_MAX; // offset of the block whose members come now
  for (auto& r : s.records) {
    if (r.member != kNoMember) {
      // v2 block members: consecutive records at their block's offset.
      FUZZ_CHECK(s.version == kPackVersion2, "block member in a scan of a version %u pack", s.version);
      if (r.offset != block_at) {
        FUZZ_CHECK(r.offset >= prev_end, "block at %llu overlaps the previous item", (unsigned long long)r.offset);
        FUZZ_CHECK(r.offset <= s.end && s.end - r.offset >= kBlockHeaderSize, "block at %llu outside the scan", (unsigned long long)r.offset);
        BlockHeader bh = decode_block_header(b.subspan(r.offset, kBlockHeaderSize), "fuzz.hpak", r.offset);
        FUZZ_CHECK(block_item_size(bh) <= s.end - r.offset, "block at %llu ends past the scan", (unsigned long long)r.offset);
        block_at = r.offset;
        prev_end = r.offset + block_item_size(bh);
      }
      continue;
    }
    FUZZ_CHECK(r.offset >= prev_end, "record at %llu overlaps the previous one", (unsigned long long)r.offset);
    FUZZ_CHECK(r.offset <= s.end && s.end - r.offset >= kEntryHeaderSize && r.stored_len <= s.end - r.offset - kEntryHeaderSize,
               "record at %llu (stored %llu) outside [32, %llu)", (unsigned long long)r.offset, (unsigned long long)r.stored_len,
               (unsigned long long)s.end);
    EntryHeader e = decode_entry_header(b.subspan(r.offset, kEntryHeaderSize), "fuzz.hpak", r.offset);
    FUZZ_CHECK(e.digest == r.digest && e.stored_len == r.stored_len && e.raw_len == r.raw_len && e.kind == r.kind &&
                   e.codec == r.codec && e.stored_xxh == r.stored_xxh,
               "record fields differ from its header");
    prev_end = r.offset + kEntryHeaderSize + r.stored_len;
  }
  for (auto& p : s.problems) FUZZ_CHECK(p.offset <= size && !p.why.empty(), "bad problem report");
  // Lengths-only blocks, named later by PackReader: sound headers, inside the scan.
  for (uint64_t at : s.unnamed_blocks) {
    FUZZ_CHECK(at >= kPackHeaderSize && at <= s.end && s.end - at >= kBlockHeaderSize, "unnamed block at %llu outside the scan",
               (unsigned long long)at);
    BlockHeader bh = decode_block_header(b.subspan(at, kBlockHeaderSize), "fuzz.hpak", at);
    FUZZ_CHECK(!bh.named() && block_item_size(bh) <= s.end - at, "unnamed block at %llu named or past the scan", (unsigned long long)at);
  }

  // What PackReader does with a scan: an in-memory index over the records.
  Digest trailer{};
  if (size >= kTrailerSize) std::memcpy(trailer.data(), data + size - kTrailerSize, kTrailerSize);
  uint64_t view_size = std::max<uint64_t>(size, s.end + kFooterSize + kTrailerSize);
  size_t n = s.records.size();
  Bytes idx = encode_index(std::move(s.records), view_size, trailer, s.index_version());
  try {
    IndexView v(idx, "fuzz.hpak (scanned)", false);
    FUZZ_CHECK(v.count() == n, "index count");
  } catch (const Corrupt& e) {
    FUZZ_CHECK(false, "the index of a scan is refused: %s (offset %llu)", e.why().c_str(), (unsigned long long)e.offset());
  }
  return 0;
}
