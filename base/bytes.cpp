#include "base/bytes.hpp"

#include <bit>

static_assert(std::endian::native == std::endian::little, "hpak assumes a little-endian host");

namespace hpak {

void ByteReader::fail_truncated(size_t n) const {
  fail("truncated: need " + std::to_string(n) + " bytes, " + std::to_string(remaining()) + " left");
}

std::string_view ByteReader::str(uint32_t max) {
  uint32_t n = u32();
  if (n > max) fail("string length " + std::to_string(n) + " exceeds limit " + std::to_string(max));
  const uint8_t* p = need(n);
  return {reinterpret_cast<const char*>(p), n};
}

uint64_t ByteReader::var() {
  uint64_t v = 0;
  for (unsigned shift = 0;; shift += 7) {
    uint8_t byte = u8();
    if (shift == 63 && byte > 1) fail("variable-length integer past 64 bits");
    v |= uint64_t(byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      if (byte == 0 && shift > 0) fail("variable-length integer not in its shortest form");
      return v;
    }
  }
}

std::string_view ByteReader::vstr(uint64_t max) {
  uint64_t n = var();
  if (n > max) fail("string length " + std::to_string(n) + " exceeds limit " + std::to_string(max));
  const uint8_t* p = need(size_t(n));
  return {reinterpret_cast<const char*>(p), size_t(n)};
}

void ByteReader::fail(const std::string& why) const { throw Corrupt(source_, abs_pos(), why); }

} // namespace hpak
