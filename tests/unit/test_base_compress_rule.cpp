// base/compress_rule: "compress, else store raw" — level 0 never
// compresses, and a frame not smaller than the raw bytes is not kept.
#include <doctest/doctest.h>
#include <random>

#include "base/compress_rule.hpp"

using namespace hpak;

TEST_CASE("compress_if_smaller: level 0 stores raw, a smaller frame is kept, a larger one is not") {
  Bytes text(64 * 1024, 'x');
  Bytes stored = {1, 2, 3};
  CHECK_FALSE(compress_if_smaller(text, 0, stored));
  CHECK(stored.empty());
  CHECK_FALSE(compress_if_smaller(text, -1, stored));
  CHECK(stored.empty());

  REQUIRE(compress_if_smaller(text, 3, stored));
  CHECK(!stored.empty());
  CHECK(stored.size() < text.size());

  std::mt19937_64 rng(42);
  Bytes noise(4096);
  for (auto& b : noise) b = uint8_t(rng());
  CHECK_FALSE(compress_if_smaller(noise, 19, stored));
  CHECK(stored.empty());
  CHECK_FALSE(compress_if_smaller(Bytes{}, 3, stored));
}
