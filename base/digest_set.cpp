#include "base/digest_set.hpp"

#include <algorithm>
#include <bit>
#include <utility>

namespace hpak {

namespace {
constexpr size_t kMinCapacity = 16;
constexpr size_t kPrefetchAhead = 8;
} // namespace

void FlatDigestSet::rehash(size_t capacity) {
  std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(capacity));
  mask_ = capacity - 1;
  shift_ = 64 - unsigned(std::countr_zero(capacity));
  used_ = 0;
  for (const Slot& s : old)
    if (!is_zero(s.d)) insert_at(s.d, home(s.d));
}

void FlatDigestSet::reserve(size_t n) {
  size_t capacity = std::max(kMinCapacity, std::bit_ceil(n * 2 + 1));
  if (capacity > slots_.size()) rehash(capacity);
}

bool FlatDigestSet::insert_at(const Digest& d, size_t i) {
  for (;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (same(s.d, d)) return false;
    if (is_zero(s.d)) {
      s.d = d;
      used_++;
      return true;
    }
  }
}

bool FlatDigestSet::insert(const Digest& d) {
  if (is_zero(d)) return !std::exchange(has_zero_, true);
  if ((used_ + 1) * 2 > slots_.size()) reserve(used_ + 1);
  return insert_at(d, home(d));
}

void FlatDigestSet::insert_all(std::span<const Digest> ds) {
  reserve(used_ + ds.size() / 4); // a guess; insert() grows as it needs
  for (size_t k = 0; k < ds.size(); k++) {
    if (k + kPrefetchAhead < ds.size()) __builtin_prefetch(&slots_[home(ds[k + kPrefetchAhead])]);
    insert(ds[k]);
  }
}

bool FlatDigestSet::contains(const Digest& d) const {
  if (is_zero(d)) return has_zero_;
  if (slots_.empty()) return false;
  for (size_t i = home(d);; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (same(s.d, d)) return true;
    if (is_zero(s.d)) return false;
  }
}

void FlatDigestSet::merge(FlatDigestSet&& other) {
  if (other.size() > size()) std::swap(*this, other);
  if (other.has_zero_) has_zero_ = true;
  // insert() grows as it needs: sets merged often share most digests (two
  // workers' marks), and room for the sum would double the array for nothing.
  for (const Slot& s : other.slots_)
    if (!is_zero(s.d)) insert(s.d);
  other.clear();
}

void FlatDigestSet::clear() {
  slots_.clear();
  slots_.shrink_to_fit();
  mask_ = 0;
  shift_ = 64;
  used_ = 0;
  has_zero_ = false;
}

bool operator==(const FlatDigestSet& a, const FlatDigestSet& b) {
  if (a.size() != b.size()) return false;
  bool same = true;
  a.for_each([&](const Digest& d) { same = same && b.contains(d); });
  return same;
}

} // namespace hpak
