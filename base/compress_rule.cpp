#include "base/compress_rule.hpp"

#include "base/zstd_codec.hpp"

namespace hpak {

bool compress_if_smaller(ByteSpan raw, int level, Bytes& stored) {
  stored.clear();
  if (level <= 0) return false;
  zstd_compress(raw, level, nullptr, stored);
  if (stored.size() < raw.size()) return true;
  stored.clear();
  return false;
}

} // namespace hpak
