// FlatDigestSet: an exact set of SHA-256 digests in one flat array (open
// addressing, linear probing, at most half full), for the sets of hundreds of
// thousands of digests gc builds (the live set, the objects the packs hold):
// no node per digest, one cache line per lookup, and insert_all() prefetches
// the slots of a batch before it probes them.
//
// Exact: a digest is found only if that very digest (all 32 bytes) was
// inserted. The slot comes from the digest's first 8 bytes (digests are
// uniform: a perfect hash) mixed by a multiplication; a slot of all-zero bytes
// is empty, so the all-zero digest is held by a flag of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "base/hash.hpp"

namespace hpak {

class FlatDigestSet {
public:
  FlatDigestSet() = default;
  explicit FlatDigestSet(size_t expected) { reserve(expected); }
  FlatDigestSet(const FlatDigestSet&) = default;
  FlatDigestSet& operator=(const FlatDigestSet&) = default;
  // A moved-from set is empty (not a husk with a stale size).
  FlatDigestSet(FlatDigestSet&& o) noexcept { take(o); }
  FlatDigestSet& operator=(FlatDigestSet&& o) noexcept {
    if (this != &o) take(o);
    return *this;
  }

  // True when `d` was not in the set (it is now).
  bool insert(const Digest& d);
  // Inserts each digest of `ds` (a batch: its slots are prefetched ahead).
  void insert_all(std::span<const Digest> ds);
  bool contains(const Digest& d) const;
  size_t count(const Digest& d) const { return contains(d) ? 1 : 0; }
  size_t size() const { return used_ + (has_zero_ ? 1 : 0); }
  bool empty() const { return size() == 0; }
  // Room for `n` digests without growing.
  void reserve(size_t n);
  // Adds every digest of `other` (which is left empty or in some valid state).
  void merge(FlatDigestSet&& other);
  void clear();
  // The same digests (in whatever slots).
  friend bool operator==(const FlatDigestSet& a, const FlatDigestSet& b);

  template <class F> void for_each(F&& f) const {
    if (has_zero_) f(Digest{});
    for (const Slot& s : slots_)
      if (!is_zero(s.d)) f(s.d);
  }

private:
  struct alignas(32) Slot {
    Digest d{};
  };
  static bool is_zero(const Digest& d) {
    uint64_t w[4];
    std::memcpy(w, d.data(), sizeof w);
    return (w[0] | w[1] | w[2] | w[3]) == 0;
  }
  static bool same(const Digest& a, const Digest& b) { // all 32 bytes, inline (no memcmp call)
    uint64_t x[4], y[4];
    std::memcpy(x, a.data(), sizeof x);
    std::memcpy(y, b.data(), sizeof y);
    return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3])) == 0;
  }
  size_t home(const Digest& d) const {
    uint64_t h;
    std::memcpy(&h, d.data(), sizeof h);
    return size_t((h * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  bool insert_at(const Digest& d, size_t i); // probes from slot i
  void take(FlatDigestSet& o) noexcept {
    slots_ = std::move(o.slots_);
    mask_ = std::exchange(o.mask_, 0);
    shift_ = std::exchange(o.shift_, 64u);
    used_ = std::exchange(o.used_, 0);
    has_zero_ = std::exchange(o.has_zero_, false);
    o.slots_.clear();
  }
  void rehash(size_t capacity);

  std::vector<Slot> slots_; // empty, or a power of two of them
  size_t mask_ = 0;
  unsigned shift_ = 64;
  size_t used_ = 0; // non-zero digests held
  bool has_zero_ = false;
};

} // namespace hpak
