// Little-endian encoding helpers and a bounds-checked reader.
//
// Every on-disk integer in hpak is little-endian. `ByteReader` never reads past
// its span: any underflow throws Corrupt naming the source and absolute offset,
// so parsers of hostile input cannot read out of bounds.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.hpp"

namespace hpak {

using Bytes = std::vector<uint8_t>;
using ByteSpan = std::span<const uint8_t>;

inline void put_u8(Bytes& b, uint8_t v) { b.push_back(v); }
inline void put_u16(Bytes& b, uint16_t v) { for (int i = 0; i < 2; i++) b.push_back(uint8_t(v >> (8 * i))); }
inline void put_u32(Bytes& b, uint32_t v) { for (int i = 0; i < 4; i++) b.push_back(uint8_t(v >> (8 * i))); }
inline void put_u64(Bytes& b, uint64_t v) { for (int i = 0; i < 8; i++) b.push_back(uint8_t(v >> (8 * i))); }
inline void put_bytes(Bytes& b, ByteSpan s) { b.insert(b.end(), s.begin(), s.end()); }
inline void put_str(Bytes& b, std::string_view s) {
  put_u32(b, uint32_t(s.size()));
  b.insert(b.end(), s.begin(), s.end());
}

// LEB128: 7 bits per byte, low first, the high bit set on every byte but the
// last (at most 10 bytes for a u64). zigzag maps a signed delta to an unsigned
// one (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...) so small deltas take one byte.
inline void put_var(Bytes& b, uint64_t v) {
  while (v >= 0x80) {
    b.push_back(uint8_t(v) | 0x80);
    v >>= 7;
  }
  b.push_back(uint8_t(v));
}
inline uint64_t zigzag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return int64_t(v >> 1) ^ -int64_t(v & 1); }
inline void put_vstr(Bytes& b, std::string_view s) {
  put_var(b, s.size());
  b.insert(b.end(), s.begin(), s.end());
}

inline uint16_t get_u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t get_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v; // hpak targets little-endian hosts (checked in bytes.cpp)
}
inline uint64_t get_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void set_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void set_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void set_u64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

class ByteReader {
public:
  // `base` is the absolute offset of data[0] within `source`, for messages.
  ByteReader(ByteSpan data, std::string source, uint64_t base = 0)
      : data_(data), source_(std::move(source)), base_(base) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  bool at_end() const { return pos_ == data_.size(); }
  uint64_t abs_pos() const { return base_ + pos_; }

  uint8_t u8() { return *need(1); }
  uint16_t u16() { return get_u16(need(2)); }
  uint32_t u32() { return get_u32(need(4)); }
  uint64_t u64() { return get_u64(need(8)); }
  ByteSpan bytes(size_t n) { const uint8_t* p = need(n); return {p, n}; }
  // A u32 length then that many bytes; `max` bounds the length.
  std::string_view str(uint32_t max);
  // A LEB128 integer in its shortest form (see put_var): a longer encoding,
  // or one past 64 bits, is refused, so each value has one encoding.
  uint64_t var();
  // A var length then that many bytes; `max` bounds the length.
  std::string_view vstr(uint64_t max);

  [[noreturn]] void fail(const std::string& why) const;

private:
  // Inline: the parsers of catalogs and indexes call it per field.
  const uint8_t* need(size_t n) {
    if (n > remaining()) [[unlikely]]
      fail_truncated(n);
    const uint8_t* p = data_.data() + pos_;
    pos_ += n;
    return p;
  }
  [[noreturn]] void fail_truncated(size_t n) const;
  ByteSpan data_;
  std::string source_;
  uint64_t base_;
  size_t pos_ = 0;
};

} // namespace hpak
