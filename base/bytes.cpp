#include "base/bytes.hpp"

#include <bit>

static_assert(std::endian::native == std::endian::little, "hpak assumes a little-endian host");

namespace hpak {

const uint8_t* ByteReader::need(size_t n) {
  if (n > remaining()) fail("truncated: need " + std::to_string(n) + " bytes, " + std::to_string(remaining()) + " left");
  const uint8_t* p = data_.data() + pos_;
  pos_ += n;
  return p;
}

std::string_view ByteReader::str(uint32_t max) {
  uint32_t n = u32();
  if (n > max) fail("string length " + std::to_string(n) + " exceeds limit " + std::to_string(max));
  const uint8_t* p = need(n);
  return {reinterpret_cast<const char*>(p), n};
}

void ByteReader::fail(const std::string& why) const { throw Corrupt(source_, abs_pos(), why); }

} // namespace hpak
