// formats/index_format: encode + IndexView round trip, lookups (every digest,
// missing ones, prefixes, duplicates) and refusal of damaged indexes.
#include <algorithm>
#include <cstring>
#include <doctest/doctest.h>

#include "formats/index_format.hpp"
#include "fixture_data.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

constexpr uint64_t kFakePackSize = 1 << 20;

std::vector<IndexRecord> make_records(size_t n, uint64_t seed) {
  fx::Rng rng(seed);
  std::vector<IndexRecord> recs;
  uint64_t off = kPackHeaderSize;
  for (size_t i = 0; i < n; i++) {
    IndexRecord r;
    Bytes content = fx::make_content(rng, 16, false);
    r.digest = sha256(content);
    r.offset = off;
    r.stored_len = rng.range(0, 100);
    r.raw_len = r.stored_len + rng.below(50);
    r.stored_xxh = rng.next();
    r.kind = Kind(1 + rng.below(3));
    r.codec = Codec(rng.below(3));
    off += kEntryHeaderSize + r.stored_len;
    recs.push_back(r);
  }
  std::reverse(recs.begin(), recs.end()); // encode_index must sort them itself
  return recs;
}

Digest some_sum() { return sha256(fx::to_bytes("pack")); }

bool same(const IndexRecord& a, const IndexRecord& b) {
  return a.digest == b.digest && a.offset == b.offset && a.stored_len == b.stored_len && a.raw_len == b.raw_len &&
         a.stored_xxh == b.stored_xxh && a.kind == b.kind && a.codec == b.codec;
}

// Re-computes the trailer after a deliberate edit, so the structural checks
// (not the checksum) are what must catch it.
void reseal(Bytes& b) {
  Digest d = sha256(ByteSpan(b.data(), b.size() - 32));
  std::memcpy(b.data() + b.size() - 32, d.data(), 32);
}

void expect_corrupt(const Bytes& b, const std::string& why, bool check_trailer = true) {
  try {
    IndexView v(b, "test.hidx", check_trailer);
    FAIL_CHECK("index accepted; expected '" << why << "'");
  } catch (const Corrupt& e) {
    CHECK_MESSAGE(std::string(e.what()).find(why) != std::string::npos, "message: " << std::string(e.what()) << " / expected: " << why);
    CHECK(e.where() == "test.hidx");
  }
}

size_t digests_at() { return kIndexHeaderSize + 1024; }
size_t records_at(uint64_t count) { return digests_at() + 32 * count; }

} // namespace

TEST_CASE("index: round trip, and every digest is found with its record") {
  for (size_t n : {0, 1, 2, 300}) {
    CAPTURE(n);
    auto recs = make_records(n, n + 1);
    Bytes b = encode_index(recs, kFakePackSize, some_sum());
    CHECK(b.size() == kIndexHeaderSize + 1024 + n * (32 + kIndexRecordSize) + 32);
    IndexView v(b, "x");
    CHECK(v.count() == n);
    CHECK(v.pack_size() == kFakePackSize);
    CHECK(v.pack_sum() == some_sum());
    for (uint64_t i = 1; i < v.count(); i++) CHECK(std::memcmp(v.digest_at(i - 1).data(), v.digest_at(i).data(), 32) < 0);
    for (auto& r : recs) {
      auto i = v.find(r.digest);
      REQUIRE(i.has_value());
      CHECK(v.digest_at(*i) == r.digest);
      CHECK(same(v.record_at(*i), r));
    }
    // Encoding is deterministic and independent of input order.
    auto shuffled = recs;
    std::rotate(shuffled.begin(), shuffled.begin() + (n ? n / 2 : 0), shuffled.end());
    CHECK(encode_index(shuffled, kFakePackSize, some_sum()) == b);
  }
}

TEST_CASE("index: missing digests are not found") {
  auto recs = make_records(200, 9);
  Bytes b = encode_index(recs, kFakePackSize, some_sum());
  IndexView v(b, "x");
  fx::Rng rng(99);
  for (int i = 0; i < 500; i++) {
    Digest d = sha256(fx::make_content(rng, 20, false));
    CHECK_FALSE(v.find(d).has_value());
  }
  // Near misses: each present digest with its last or first byte changed.
  for (auto& r : recs) {
    Digest d = r.digest;
    d[31] ^= 1;
    CHECK_FALSE(v.find(d).has_value());
    d = r.digest;
    d[0] ^= 0x80;
    bool present = false;
    for (auto& o : recs) present |= o.digest == d;
    CHECK(v.find(d).has_value() == present);
  }
  Digest lo{}, hi;
  hi.fill(0xff);
  CHECK_FALSE(v.find(lo).has_value());
  CHECK_FALSE(v.find(hi).has_value());
  const Bytes empty_bytes = encode_index({}, kFakePackSize, some_sum());
  IndexView empty_view(empty_bytes, "x");
  CHECK_FALSE(empty_view.find(recs[0].digest).has_value());
}

TEST_CASE("index: digests at the edges of the fanout table") {
  std::vector<IndexRecord> recs(4);
  recs[0].digest.fill(0x00);
  recs[1].digest.fill(0xff);
  recs[2].digest.fill(0x7f);
  recs[3].digest.fill(0x80);
  for (size_t i = 0; i < recs.size(); i++) recs[i].offset = kPackHeaderSize + i * kEntryHeaderSize;
  const Bytes bytes = encode_index(recs, kFakePackSize, some_sum()); // the view does not own its bytes
  IndexView v(bytes, "x");
  for (auto& r : recs) {
    auto i = v.find(r.digest);
    REQUIRE(i.has_value());
    CHECK(v.record_at(*i).offset == r.offset);
  }
  CHECK(v.find_prefix("ff").size() == 1);
  CHECK(v.find_prefix("00").size() == 1);
  CHECK(v.find_prefix("7").size() == 1);
}

TEST_CASE("index: find_prefix") {
  auto recs = make_records(300, 5);
  Bytes b = encode_index(recs, kFakePackSize, some_sum());
  IndexView v(b, "x");
  for (auto& r : recs) {
    std::string hex = to_hex(r.digest);
    for (size_t len : {1, 2, 4, 8, 64}) {
      auto hits = v.find_prefix(hex.substr(0, len));
      size_t expect = 0;
      for (auto& o : recs) expect += to_hex(o.digest).compare(0, len, hex, 0, len) == 0;
      CHECK(hits.size() == expect);
      CHECK(std::find(hits.begin(), hits.end(), *v.find(r.digest)) != hits.end());
      for (auto h : hits) CHECK(to_hex(v.digest_at(h)).compare(0, len, hex, 0, len) == 0);
    }
  }
  CHECK(v.find_prefix("").size() == recs.size());
  Digest missing{};
  missing[0] = 0x12;
  std::string hex = to_hex(missing);
  bool present = false;
  for (auto& r : recs) present |= r.digest == missing;
  if (!present) CHECK(v.find_prefix(hex).empty());
}

TEST_CASE("index: duplicate digests (catalog mirrors)") {
  auto recs = make_records(10, 3);
  IndexRecord dup = recs[4];
  dup.offset = 900000;
  dup.kind = Kind::Catalog;
  recs.push_back(dup);
  const Bytes bytes = encode_index(recs, kFakePackSize, some_sum());
  IndexView v(bytes, "x");
  CHECK(v.count() == 11);
  auto i = v.find(dup.digest);
  REQUIRE(i.has_value());
  // The first of equal digests is the one at the lower offset.
  CHECK(v.record_at(*i).offset == recs[4].offset);
  REQUIRE(*i + 1 < v.count());
  CHECK(v.digest_at(*i + 1) == dup.digest);
  CHECK(v.record_at(*i + 1).offset == 900000);
  CHECK(v.find_prefix(to_hex(dup.digest)).size() == 2);
}

TEST_CASE("index: damage is refused") {
  auto recs = make_records(40, 11);
  const Bytes good = encode_index(recs, kFakePackSize, some_sum());
  const uint64_t n = recs.size();
  SUBCASE("every flipped byte fails the trailer check") {
    for (size_t i = 0; i < good.size(); i++) {
      Bytes b = good;
      b[i] ^= 0xff;
      CAPTURE(i);
      CHECK_THROWS_AS(IndexView(b, "x"), Corrupt);
      // Without the trailer check the structure checks still hold: either
      // refused, or a view whose lookups stay within the buffer.
      try {
        IndexView v(b, "x", false);
        for (auto& r : recs) (void)v.find(r.digest);
        (void)v.find_prefix("ab");
      } catch (const Corrupt&) {
      }
    }
  }
  SUBCASE("trailer") {
    Bytes b = good;
    b.back() ^= 1;
    expect_corrupt(b, "checksum mismatch");
  }
  SUBCASE("magic and version") {
    Bytes b = good;
    b[0] = 'X';
    expect_corrupt(b, "bad magic");
    b = good;
    b[4] = 3;
    reseal(b);
    expect_corrupt(b, "unsupported index version 3");
  }
  SUBCASE("size") {
    for (size_t cut : {size_t(1), size_t(32), size_t(40), size_t(72), good.size() - kIndexHeaderSize}) {
      CAPTURE(cut);
      expect_corrupt(Bytes(good.begin(), good.end() - long(cut)), "");
    }
    Bytes b = good;
    b.push_back(0);
    expect_corrupt(b, "does not match its count");
    for (size_t len = 0; len < good.size(); len++) CHECK_THROWS_AS(IndexView(ByteSpan(good.data(), len), "x"), Corrupt);
  }
  SUBCASE("count") {
    for (uint64_t c : {n + 1, n - 1, uint64_t(1) << 40, ~uint64_t(0)}) {
      Bytes b = good;
      set_u64(b.data() + 8, c);
      reseal(b);
      CAPTURE(c);
      expect_corrupt(b, "count");
    }
  }
  SUBCASE("fanout not monotonic") {
    Bytes b = good;
    uint32_t f = get_u32(b.data() + kIndexHeaderSize + 4 * 10);
    set_u32(b.data() + kIndexHeaderSize + 4 * 10, f + 5);
    reseal(b);
    expect_corrupt(b, "fanout table is not monotonic");
  }
  SUBCASE("fanout total") {
    Bytes b = good;
    set_u32(b.data() + kIndexHeaderSize + 4 * 255, uint32_t(n + 1));
    reseal(b);
    expect_corrupt(b, "fanout total");
  }
  SUBCASE("digest outside its fanout bucket") {
    Bytes b = good;
    b[digests_at()] ^= 0x40; // first digest's leading byte moves to another bucket
    reseal(b);
    expect_corrupt(b, "");
    // The bucket is right but the order within it is wrong.
    std::vector<IndexRecord> two(2);
    two[0].digest.fill(0x11);
    two[1].digest.fill(0x11);
    two[1].digest[31] = 0x22;
    two[0].offset = two[1].offset = kPackHeaderSize;
    Bytes c = encode_index(two, kFakePackSize, some_sum());
    std::swap_ranges(c.begin() + long(digests_at()), c.begin() + long(digests_at() + 32), c.begin() + long(digests_at() + 32));
    reseal(c);
    expect_corrupt(c, "not sorted");
  }
  SUBCASE("bad kind or codec") {
    Bytes b = good;
    b[records_at(n) + 32] = 0;
    reseal(b);
    expect_corrupt(b, "bad kind");
    b = good;
    b[records_at(n) + 32] = 4;
    reseal(b);
    expect_corrupt(b, "bad kind");
    b = good;
    b[records_at(n) + 33] = 4; // 3 is zstd-base (catalogs)
    reseal(b);
    expect_corrupt(b, "bad codec");
    b = good;
    b[records_at(n) + 32] = uint8_t(Kind::Blob);
    b[records_at(n) + 33] = uint8_t(Codec::ZstdBase); // zstd-base on a blob
    reseal(b);
    expect_corrupt(b, "bad codec");
  }
  SUBCASE("record points outside the pack") {
    for (auto [field, value] : std::vector<std::pair<int, uint64_t>>{{0, 0},
                                                                    {0, kPackHeaderSize - 1},
                                                                    {0, kFakePackSize},
                                                                    {0, ~uint64_t(0)},
                                                                    {8, kFakePackSize},
                                                                    {8, ~uint64_t(0)},
                                                                    {8, kFakePackSize - kFooterSize - kTrailerSize}}) {
      Bytes b = good;
      set_u64(b.data() + records_at(n) + field, value);
      reseal(b);
      CAPTURE(field);
      CAPTURE(value);
      expect_corrupt(b, "outside the pack");
    }
  }
}

TEST_CASE("index: the header alone says the index's size; max_index_size bounds it by the pack's") {
  for (uint32_t version : {kIndexVersion, kIndexVersion2}) {
    std::vector<IndexRecord> recs = make_records(37, version);
    if (version == kIndexVersion2)
      for (auto& r : recs) r.stored_len = r.stored_xxh = 0;
    Bytes b = encode_index(recs, kFakePackSize, some_sum(), version);
    IndexHeader h = decode_index_header(ByteSpan(b).first(kIndexHeaderSize), "test.hidx");
    CHECK(h.version == version);
    CHECK(h.count == 37);
    CHECK(h.pack_size == kFakePackSize);
    CHECK(h.size == b.size());
    CHECK(b.size() <= max_index_size(kFakePackSize));
  }
  Bytes zeros(kIndexHeaderSize, 0);
  CHECK_THROWS_AS(decode_index_header(zeros, "z"), Corrupt);
  CHECK_THROWS_AS(decode_index_header(ByteSpan(zeros).first(10), "z"), Corrupt);
  Bytes huge = encode_index({}, 100, some_sum());
  uint64_t count = uint64_t(1) << 60;
  std::memcpy(huge.data() + 8, &count, 8);
  CHECK_THROWS_AS(decode_index_header(ByteSpan(huge).first(kIndexHeaderSize), "h"), Corrupt);
  // The bound: 72 index bytes for every 4 of the pack (a member of a
  // lengths-only block), and the fixed parts.
  CHECK(max_index_size(0) == kIndexHeaderSize + 1024 + 32 + 72);
  CHECK(max_index_size(36000) == kIndexHeaderSize + 1024 + 32 + 9001 * 72);
  CHECK(max_index_size(uint64_t(1) << 62) > (uint64_t(1) << 62)); // no overflow
}
