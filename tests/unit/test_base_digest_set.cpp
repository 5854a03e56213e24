// base/digest_set: FlatDigestSet is exact (a digest is found only if those 32
// bytes were inserted, however many digests share its first 8 bytes or its
// slot), keeps everything across growth and merges, and agrees with
// std::set on a random mix of inserts and lookups.
#include <doctest/doctest.h>
#include <random>
#include <set>
#include <vector>

#include "base/digest_set.hpp"

using namespace hpak;

namespace {

Digest digest_of(uint64_t prefix, uint64_t rest) {
  Digest d{};
  std::memcpy(d.data(), &prefix, 8);
  std::memcpy(d.data() + 24, &rest, 8);
  return d;
}

} // namespace

TEST_CASE("FlatDigestSet: insert says whether the digest was new; contains only what was inserted") {
  FlatDigestSet s;
  CHECK(s.empty());
  CHECK_FALSE(s.contains(digest_of(1, 1)));
  CHECK(s.insert(digest_of(1, 1)));
  CHECK_FALSE(s.insert(digest_of(1, 1)));
  CHECK(s.size() == 1);
  CHECK(s.contains(digest_of(1, 1)));
  CHECK(s.count(digest_of(1, 1)) == 1);
  CHECK_FALSE(s.contains(digest_of(1, 2))); // same first 8 bytes, another digest
  CHECK_FALSE(s.contains(digest_of(2, 1)));
}

TEST_CASE("FlatDigestSet: the all-zero digest is a digest like any other") {
  FlatDigestSet s;
  CHECK_FALSE(s.contains(Digest{}));
  CHECK(s.insert(digest_of(0, 1))); // first 8 bytes zero, not all zero
  CHECK_FALSE(s.contains(Digest{}));
  CHECK(s.insert(Digest{}));
  CHECK_FALSE(s.insert(Digest{}));
  CHECK(s.contains(Digest{}));
  CHECK(s.size() == 2);
  size_t seen = 0, zeros = 0;
  s.for_each([&](const Digest& d) {
    seen++;
    zeros += d == Digest{};
  });
  CHECK(seen == 2);
  CHECK(zeros == 1);
}

TEST_CASE("FlatDigestSet: digests that share their first 8 bytes (one home slot) are all kept apart, across growth") {
  FlatDigestSet s;
  for (uint64_t k = 1; k <= 1000; k++) CHECK(s.insert(digest_of(42, k)));
  CHECK(s.size() == 1000);
  for (uint64_t k = 1; k <= 1000; k++) CHECK(s.contains(digest_of(42, k)));
  CHECK_FALSE(s.contains(digest_of(42, 1001)));
  CHECK_FALSE(s.contains(digest_of(43, 1)));
}

TEST_CASE("FlatDigestSet: agrees with std::set on random inserts, batches, merges and lookups") {
  std::mt19937_64 rng(33);
  // Few distinct prefixes and rests: many collisions, many repeats.
  auto random_digest = [&] { return digest_of(rng() % 5000, rng() % 8); };
  std::set<Digest> want;
  FlatDigestSet s;
  for (int i = 0; i < 20000; i++) {
    Digest d = random_digest();
    CHECK(s.insert(d) == want.insert(d).second);
  }
  std::vector<Digest> batch;
  for (int i = 0; i < 20000; i++) batch.push_back(random_digest());
  s.insert_all(batch);
  want.insert(batch.begin(), batch.end());
  FlatDigestSet other;
  for (int i = 0; i < 30000; i++) {
    Digest d = random_digest();
    other.insert(d);
    want.insert(d);
  }
  other.insert(Digest{});
  want.insert(Digest{});
  s.merge(std::move(other));
  CHECK(s.size() == want.size());
  for (int i = 0; i < 20000; i++) {
    Digest d = random_digest();
    CHECK(s.contains(d) == (want.count(d) == 1));
  }
  std::set<Digest> listed;
  s.for_each([&](const Digest& d) { CHECK(listed.insert(d).second); });
  CHECK(listed == want);
}

TEST_CASE("FlatDigestSet: merging a larger set into a smaller one keeps both") {
  FlatDigestSet small, large;
  small.insert(digest_of(7, 8)); // not one of large's
  for (uint64_t k = 1; k <= 500; k++) large.insert(digest_of(k, k));
  small.merge(std::move(large));
  CHECK(small.size() == 501);
  CHECK(small.contains(digest_of(7, 8)));
  CHECK(small.contains(digest_of(500, 500)));
  CHECK(large.empty());
  large.insert(digest_of(1, 2)); // a moved-from set is usable
  CHECK(large.size() == 1);
}

TEST_CASE("FlatDigestSet: equal when they hold the same digests, whatever the order of inserts") {
  FlatDigestSet a, b;
  for (uint64_t k = 1; k <= 100; k++) a.insert(digest_of(k % 7, k));
  for (uint64_t k = 100; k >= 1; k--) b.insert(digest_of(k % 7, k));
  CHECK(a == b);
  b.insert(Digest{});
  CHECK_FALSE(a == b);
  a.insert(digest_of(9, 9));
  CHECK_FALSE(a == b); // same size, one digest differs
}

TEST_CASE("FlatDigestSet: a moved-from set is empty and usable; the moved-to set has everything") {
  FlatDigestSet a;
  for (uint64_t k = 1; k <= 100; k++) a.insert(digest_of(k, k));
  a.insert(Digest{});
  FlatDigestSet b(std::move(a));
  CHECK(b.size() == 101);
  CHECK(b.contains(Digest{}));
  CHECK(b.contains(digest_of(100, 100)));
  CHECK(a.size() == 0);
  CHECK_FALSE(a.contains(Digest{}));
  CHECK_FALSE(a.contains(digest_of(1, 1)));
  CHECK(a.insert(digest_of(1, 1)));
  FlatDigestSet c;
  c = std::move(b);
  CHECK(c.size() == 101);
  CHECK(b.empty());
  FlatDigestSet d = c; // a copy is independent
  d.insert(digest_of(7, 8));
  CHECK(d.size() == 102);
  CHECK(c.size() == 101);
}
