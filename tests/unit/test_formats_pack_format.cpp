// formats/pack_format: pack header, entry header and footer encode/decode,
// and refusal of every damaged field.
#include <cstring>
#include <doctest/doctest.h>

#include "formats/pack_format.hpp"
#include "fixture_data.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

EntryHeader sample_entry() {
  EntryHeader h;
  h.kind = Kind::Blob;
  h.codec = Codec::Zstd;
  h.eflags = 0x1234;
  h.stored_len = 0x0102030405060708ull;
  h.raw_len = 0x1112131415161718ull;
  h.digest = sha256(fx::to_bytes("entry"));
  h.stored_xxh = 0xdeadbeefcafef00dull;
  return h;
}

template <class F>
void expect_corrupt(F&& f, const std::string& why, uint64_t offset) {
  try {
    f();
    FAIL_CHECK("accepted; expected '" << why << "'");
  } catch (const Corrupt& e) {
    CHECK_MESSAGE(std::string(e.what()).find(why) != std::string::npos, "message: " << std::string(e.what()) << " / expected: " << why);
    CHECK(e.where() == "p.hpak");
    CHECK(e.offset() == offset);
  }
}

} // namespace

TEST_CASE("pack format: sizes and names") {
  CHECK(kPackMinSize == 96);
  CHECK(std::string(kind_name(Kind::Blob)) == "blob");
  CHECK(std::string(kind_name(Kind::Catalog)) == "catalog");
  CHECK(std::string(kind_name(Kind::Dict)) == "dict");
  CHECK(std::string(codec_name(Codec::Raw)) == "raw");
  CHECK(std::string(codec_name(Codec::Zstd)) == "zstd");
  CHECK(std::string(codec_name(Codec::ZstdDict)) == "zstd-dict");
}

TEST_CASE("pack format: header round trip and refusals") {
  PackHeader h;
  h.level = -7;
  uint8_t b[kPackHeaderSize];
  encode_pack_header(h, b);
  CHECK(std::memcmp(b, "HPAK", 4) == 0);
  CHECK(get_u16(b + 4) == kPackVersion);
  CHECK(get_u16(b + 6) == kPackHeaderSize);
  PackHeader d = decode_pack_header(ByteSpan(b, sizeof b), "p.hpak");
  CHECK(d.version == kPackVersion);
  CHECK(d.flags == 0);
  CHECK(d.level == -7);

  auto with = [&](size_t at, uint8_t v) {
    Bytes c(b, b + sizeof b);
    c[at] = v;
    return c;
  };
  expect_corrupt([&] { decode_pack_header(with(0, 'X'), "p.hpak"); }, "bad magic", 0);
  expect_corrupt([&] { decode_pack_header(with(4, 3), "p.hpak"); }, "unsupported HPAK pack version 3", 4);
  expect_corrupt([&] { decode_pack_header(with(5, 1), "p.hpak"); }, "unsupported HPAK pack version 257", 4);
  expect_corrupt([&] { decode_pack_header(with(6, 64), "p.hpak"); }, "bad pack header length", 6);
  expect_corrupt([&] { decode_pack_header(with(8, 1), "p.hpak"); }, "unknown pack flags", 8);
  for (size_t i = 16; i < kPackHeaderSize; i++)
    expect_corrupt([&] { decode_pack_header(with(i, 1), "p.hpak"); }, "reserved header byte", i);
  for (size_t len = 0; len < kPackHeaderSize; len++)
    expect_corrupt([&] { decode_pack_header(ByteSpan(b, len), "p.hpak"); }, "too short", 0);
}

TEST_CASE("pack format: entry header round trip") {
  EntryHeader h = sample_entry();
  uint8_t b[kEntryHeaderSize];
  encode_entry_header(h, b);
  CHECK(std::memcmp(b, "HPEn", 4) == 0);
  CHECK(get_u32(b + 68) == 0);
  CHECK(looks_like_entry_header(ByteSpan(b, sizeof b)));
  EntryHeader d = decode_entry_header(ByteSpan(b, sizeof b), "p.hpak", 1000);
  CHECK(d.kind == h.kind);
  CHECK(d.codec == h.codec);
  CHECK(d.eflags == h.eflags);
  CHECK(d.stored_len == h.stored_len);
  CHECK(d.raw_len == h.raw_len);
  CHECK(d.digest == h.digest);
  CHECK(d.stored_xxh == h.stored_xxh);
  // Longer buffers are fine: only the first 72 bytes are the header.
  Bytes longer(b, b + sizeof b);
  longer.resize(200, 0xaa);
  CHECK(looks_like_entry_header(longer));
  CHECK(decode_entry_header(longer, "p.hpak", 0).raw_len == h.raw_len);
}

TEST_CASE("pack format: every flipped bit of an entry header is detected") {
  uint8_t good[kEntryHeaderSize];
  encode_entry_header(sample_entry(), good);
  for (size_t i = 0; i < kEntryHeaderSize; i++) {
    for (int bit = 0; bit < 8; bit++) {
      Bytes b(good, good + sizeof good);
      b[i] ^= uint8_t(1 << bit);
      CAPTURE(i);
      CAPTURE(bit);
      CHECK_FALSE(looks_like_entry_header(b));
      CHECK_THROWS_AS(decode_entry_header(b, "p.hpak", 0), Corrupt);
    }
  }
  for (size_t len = 0; len < kEntryHeaderSize; len++) {
    CHECK_FALSE(looks_like_entry_header(ByteSpan(good, len)));
    expect_corrupt([&] { decode_entry_header(ByteSpan(good, len), "p.hpak", 77); }, "truncated entry header", 77);
  }
}

TEST_CASE("pack format: entry header field checks behind a valid checksum") {
  // A hostile writer can produce a correct hdr_xxh for any field values.
  auto forge = [](uint8_t kind, uint8_t codec, uint64_t stored, uint64_t raw) {
    EntryHeader h = sample_entry();
    h.stored_len = stored;
    h.raw_len = raw;
    uint8_t b[kEntryHeaderSize];
    encode_entry_header(h, b);
    b[4] = kind;
    b[5] = codec;
    set_u32(b + 64, uint32_t(xxh64(ByteSpan(b, 64))));
    return Bytes(b, b + sizeof b);
  };
  CHECK_NOTHROW(decode_entry_header(forge(1, 0, 5, 5), "p.hpak", 0));
  for (uint8_t k : {0, 4, 255}) {
    Bytes b = forge(k, 1, 5, 9);
    CHECK_FALSE(looks_like_entry_header(b));
    expect_corrupt([&] { decode_entry_header(b, "p.hpak", 100); }, "unknown entry kind", 104);
  }
  for (uint8_t c : {4, 255}) {
    Bytes b = forge(1, c, 5, 9);
    CHECK_FALSE(looks_like_entry_header(b));
    expect_corrupt([&] { decode_entry_header(b, "p.hpak", 100); }, "unknown entry codec", 105);
  }
  // zstd-base (3): a catalog only, with room for its base's digest, below 128 MiB.
  CHECK(looks_like_entry_header(forge(2, 3, 100, 900)));
  CHECK_NOTHROW(decode_entry_header(forge(2, 3, 100, 900), "p.hpak", 0));
  for (uint8_t k : {1, 3}) {
    Bytes b = forge(k, 3, 100, 900);
    CHECK_FALSE(looks_like_entry_header(b));
    expect_corrupt([&] { decode_entry_header(b, "p.hpak", 100); }, "codec zstd-base on an entry that is not a catalog", 105);
  }
  for (auto [stored, raw] : {std::pair<uint64_t, uint64_t>{32, 900}, {100, uint64_t(1) << 27}, {(uint64_t(1) << 27) + 1, 900}}) {
    Bytes b = forge(2, 3, stored, raw);
    CHECK_FALSE(looks_like_entry_header(b));
    expect_corrupt([&] { decode_entry_header(b, "p.hpak", 100); }, "zstd-base catalog with impossible sizes", 108);
  }
  expect_corrupt([&] { decode_entry_header(forge(1, 0, 5, 6), "p.hpak", 100); }, "raw entry with stored size != raw size", 108);
  // Non-zero padding is refused even with a checksum over the first 64 bytes.
  Bytes p = forge(1, 1, 5, 9);
  p[70] = 1;
  CHECK_FALSE(looks_like_entry_header(p));
  CHECK_THROWS_AS(decode_entry_header(p, "p.hpak", 0), Corrupt);
}

TEST_CASE("pack format: footer round trip and refusals") {
  Footer f;
  f.entry_count = 123456789012ull;
  f.raw_total = 0xfedcba9876543210ull;
  uint8_t b[kFooterSize];
  encode_footer(f, b);
  Footer d = decode_footer(ByteSpan(b, sizeof b), "p.hpak", 500);
  CHECK(d.entry_count == f.entry_count);
  CHECK(d.raw_total == f.raw_total);
  auto with = [&](size_t at, uint8_t v) {
    Bytes c(b, b + sizeof b);
    c[at] = v;
    return c;
  };
  expect_corrupt([&] { decode_footer(with(0, 'X'), "p.hpak", 500); }, "bad footer magic", 500);
  expect_corrupt([&] { decode_footer(with(4, 3), "p.hpak", 500); }, "unsupported footer version", 504);
  for (size_t i = 24; i < kFooterSize; i++)
    expect_corrupt([&] { decode_footer(with(i, 9), "p.hpak", 500); }, "reserved footer byte", 500 + i);
  for (size_t len = 0; len < kFooterSize; len++)
    expect_corrupt([&] { decode_footer(ByteSpan(b, len), "p.hpak", 500); }, "truncated footer", 500);
}
