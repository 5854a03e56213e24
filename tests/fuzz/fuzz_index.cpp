// Fuzzes the index (.hidx) reader: IndexView on the bytes as given (trailer
// checked and not), and on a copy with a correct SHA-256 trailer so the
// fuzzer reaches the structural checks; then record_at / find / find_prefix.
//
// Invariants: an accepted view's records all lie inside the pack it claims
// (offset >= header, entry + payload before footer and trailer, computed
// without overflow), find() of every stored digest finds that digest, and
// find_prefix() of a digest's hex returns it.
#include "formats/index_format.hpp"
#include "fuzz_common.hpp"

using namespace hpak;
using namespace hpak::formats;

static void exercise(ByteSpan b, bool check_trailer, const uint8_t* data, size_t size) {
  IndexView v;
  try {
    v = IndexView(b, "fuzz.hidx", check_trailer);
  } catch (const Error&) {
    return;
  }
  const size_t per_record = 32 + (v.version() == kIndexVersion ? kIndexRecordSize : kIndexRecordSize2);
  FUZZ_CHECK(v.version() == kIndexVersion || v.version() == kIndexVersion2, "index version %u accepted", v.version());
  FUZZ_CHECK(v.count() <= b.size() / per_record, "count %llu for %zu bytes", (unsigned long long)v.count(), b.size());
  for (uint64_t i = 0; i < v.count(); i++) {
    IndexRecord r = v.record_at(i);
    // v2: an entry's stored_len is left to the pack (0 here); a block member
    // needs room for the block header at least.
    FUZZ_CHECK(v.version() == kIndexVersion || (r.stored_len == 0 && r.stored_xxh == 0), "v2 record with stored fields");
    FUZZ_CHECK(r.member == kNoMember || (v.version() == kIndexVersion2 && r.member < kBlockMaxCount && r.kind == Kind::Blob),
               "bad block member accepted");
    size_t hdr = r.member == kNoMember ? kEntryHeaderSize : kBlockHeaderSize;
    unsigned __int128 end = (unsigned __int128)r.offset + hdr + r.stored_len;
    FUZZ_CHECK(r.offset >= kPackHeaderSize && v.pack_size() >= kPackMinSize &&
                   end <= (unsigned __int128)v.pack_size() - kFooterSize - kTrailerSize,
               "record %llu (offset %llu, stored %llu) accepted outside a pack of %llu bytes", (unsigned long long)i,
               (unsigned long long)r.offset, (unsigned long long)r.stored_len, (unsigned long long)v.pack_size());
    FUZZ_CHECK(uint8_t(r.kind) >= 1 && uint8_t(r.kind) <= 3 &&
                   (uint8_t(r.codec) <= 2 || (r.codec == Codec::ZstdBase && r.kind == Kind::Catalog)),
               "bad kind/codec accepted");
    Digest d = v.digest_at(i);
    auto j = v.find(d);
    FUZZ_CHECK(j && *j <= i && v.digest_at(*j) == d, "find() misses a stored digest");
    if (i < 4) {
      std::string hex = to_hex(d).substr(0, 1 + (i * 7) % 64);
      auto hits = v.find_prefix(hex);
      bool found = false;
      for (auto h : hits) found |= h == i;
      FUZZ_CHECK(found, "find_prefix('%s') misses record %llu", hex.c_str(), (unsigned long long)i);
    }
  }
  // Lookups of arbitrary digests taken from the input.
  for (size_t off = 0; off + 32 <= size && off < 32 * 8; off += 32) {
    Digest d;
    std::memcpy(d.data(), data + off, 32);
    if (auto j = v.find(d)) FUZZ_CHECK(v.digest_at(*j) == d, "find() returned another digest");
  }
  if (size > 0) {
    std::string hex = to_hex(ByteSpan(data, std::min<size_t>(size, 3)));
    for (auto h : v.find_prefix(hex)) FUZZ_CHECK(to_hex(v.digest_at(h)).rfind(hex, 0) == 0, "find_prefix false hit");
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteSpan b(data, size);
  exercise(b, true, data, size);
  exercise(b, false, data, size);
  Bytes sealed = fuzz::with_sha256_trailer(data, size);
  exercise(sealed, true, data, size);
  return 0;
}
