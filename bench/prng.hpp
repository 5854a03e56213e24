// bench/prng.hpp — small, fully specified PRNG for the benchmark corpus
// generator (hpak-gencorpus).  xoshiro256** seeded through splitmix64; all
// derived helpers use integer arithmetic only (no <random> distributions,
// no libm), so a given seed produces the same stream on every platform and
// every standard library version.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

namespace bench {

inline uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Combine two values into a well-mixed 64-bit seed (for per-file streams).
inline uint64_t mix_seed(uint64_t a, uint64_t b) {
  uint64_t s = a ^ (b * 0xd1342543de82ef95ULL);
  splitmix64(s);
  return splitmix64(s);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (auto &w : s_) w = splitmix64(x);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n); n must be > 0.  Multiply-shift (tiny bias, but fully
  // deterministic, which is all the corpus needs).
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  // Uniform in [lo, hi] (inclusive).
  uint64_t range(uint64_t lo, uint64_t hi) { return lo + below(hi - lo + 1); }
  // True with probability num/den.
  bool chance(uint64_t num, uint64_t den) { return below(den) < num; }
  // Skewed towards small indices (Zipf-like): min of two uniforms.
  uint64_t skewed(uint64_t n) {
    uint64_t a = below(n), b = below(n);
    return a < b ? a : b;
  }
  // Stronger skew: min of three uniforms.
  uint64_t skewed3(uint64_t n) {
    uint64_t a = skewed(n), c = below(n);
    return a < c ? a : c;
  }
  // Piecewise log-uniform in [lo, hi]: uniform power-of-two bucket, then
  // uniform inside the bucket.  Integer only.
  uint64_t logish(uint64_t lo, uint64_t hi) {
    int lb = 63 - __builtin_clzll(lo | 1), hb = 63 - __builtin_clzll(hi | 1);
    int b = lb + static_cast<int>(below(static_cast<uint64_t>(hb - lb + 1)));
    uint64_t blo = uint64_t{1} << b, bhi = (uint64_t{1} << (b + 1)) - 1;
    if (blo < lo) blo = lo;
    if (bhi > hi) bhi = hi;
    return range(blo, bhi);
  }
  template <class Vec>
  const auto &pick(const Vec &v) { return v[below(std::size(v))]; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace bench
