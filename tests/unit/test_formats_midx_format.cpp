// formats/midx_format: encode + MidxView round trip (lookups, the trailer that
// names a layer), refusal of damaged bytes, and the merge policy of layers
// (midx_layers_to_merge): few layers, each digest rewritten few times.
#include <algorithm>
#include <cmath>
#include <doctest/doctest.h>

#include "formats/midx_format.hpp"
#include "formats/pack_name.hpp"
#include "fixture_data.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

Digest digest_of(uint64_t i) { return sha256(fx::to_bytes("object " + std::to_string(i))); }

std::vector<Digest> pack_names(size_t n) {
  std::vector<Digest> out;
  for (size_t i = 0; i < n; i++) out.push_back(sha256(fx::to_bytes("pack " + std::to_string(i))));
  std::sort(out.begin(), out.end());
  return out;
}

// A merge simulated the way Library::add_midx_layer applies the policy:
// layers smallest first, the new one takes `fresh` digests plus the layers
// the policy names. Returns the digests written.
uint64_t add_layer(std::vector<uint64_t>& layers, uint64_t fresh) {
  std::sort(layers.begin(), layers.end());
  size_t n = midx_layers_to_merge(layers, fresh);
  uint64_t merged = fresh;
  for (size_t k = 0; k < n; k++) merged += layers[k];
  layers.erase(layers.begin(), layers.begin() + long(n));
  layers.push_back(merged);
  return merged;
}

} // namespace

TEST_CASE("midx: every digest is found, in the pack it was listed for; absent ones are not") {
  auto packs = pack_names(3);
  std::vector<MidxEntry> entries;
  for (uint64_t i = 0; i < 500; i++) entries.push_back({digest_of(i), uint32_t(i % 3)});
  entries.push_back({digest_of(7), 2}); // a duplicate: the first listed wins
  Bytes b = encode_midx(packs, entries);
  MidxView v(b, "t.midx");
  CHECK(v.count() == 500);
  CHECK(v.packs() == packs);
  for (uint64_t i = 0; i < 500; i++) {
    auto hit = v.find(digest_of(i));
    REQUIRE(hit.has_value());
    CHECK(*hit == uint32_t(i % 3));
  }
  CHECK_FALSE(v.find(digest_of(500)).has_value());
}

TEST_CASE("midx: the trailer is the SHA-256 of the other bytes and names the layer") {
  Bytes b = encode_midx(pack_names(1), {{digest_of(1), 0}});
  MidxView v(b, "t.midx");
  CHECK(v.trailer() == sha256(ByteSpan(b).first(b.size() - 32)));
  const std::string name = midx_layer_name(v.trailer());
  CHECK(name == "midx-" + to_hex(v.trailer()) + ".midx");
  auto parsed = parse_midx_layer_name(name);
  REQUIRE(parsed.has_value());
  CHECK(*parsed == v.trailer());
  CHECK_FALSE(parse_midx_layer_name("multi.midx").has_value());
  CHECK_FALSE(parse_midx_layer_name("midx-" + to_hex(v.trailer()) + ".hidx").has_value());
  CHECK_FALSE(parse_midx_layer_name("midx-" + to_hex(v.trailer()).substr(1) + ".midx").has_value());
  std::string upper = name;
  upper[6] = 'A';
  if (upper != name) CHECK_FALSE(parse_midx_layer_name(upper).has_value());
  CHECK_FALSE(parse_pack_file_name(name).has_value()); // not a pack or an index
}

TEST_CASE("midx: damaged bytes are refused") {
  Bytes good = encode_midx(pack_names(2), {{digest_of(1), 0}, {digest_of(2), 1}});
  for (size_t at : {size_t(0), size_t(5), size_t(30), good.size() / 2, good.size() - 1}) {
    Bytes b = good;
    b[at] ^= 0x40;
    CHECK_THROWS_AS(MidxView(b, "t.midx"), Corrupt);
  }
  Bytes shorter(good.begin(), good.end() - 1);
  CHECK_THROWS_AS(MidxView(shorter, "t.midx"), Corrupt);
  // A pack id out of range, with a good trailer.
  Bytes bad = encode_midx(pack_names(1), {{digest_of(1), 5}});
  CHECK_THROWS_AS(MidxView(bad, "t.midx"), Corrupt);
}

TEST_CASE("midx: opened for lookups, a damaged layer answers within its packs and finds what is intact") {
  auto packs = pack_names(2);
  std::vector<MidxEntry> entries;
  for (uint64_t i = 0; i < 300; i++) entries.push_back({digest_of(i), uint32_t(i % 2)});
  const Bytes good = encode_midx(packs, entries);
  const size_t digests_at = 24 + 32 * packs.size() + 1024, ids_at = digests_at + 32 * 300;
  MidxView sorted(good, "t.midx");
  // Damage after the fanout, trailer not fixed: full checks refuse it, a
  // lookup opening reads only the header and fanout.
  Bytes b = good;
  b[digests_at + 32 * 10 + 3] ^= 0x01;                // one digest changed (maybe out of order)
  std::memcpy(b.data() + ids_at + 4 * 20, "\xff\xff\xff\x7f", 4); // one pack id out of range
  CHECK_THROWS_AS(MidxView(b, "t.midx"), Corrupt);
  MidxView v(b, "t.midx", MidxCheck::lookup);
  CHECK(v.count() == 300);
  size_t found = 0;
  for (uint64_t i = 0; i < 300; i++) {
    const Digest d = sorted.digest_at(i);
    auto hit = v.find(d);
    if (hit) CHECK(*hit < packs.size());
    found += hit.has_value();
  }
  CHECK(found >= 297);    // the two damaged entries may miss (a miss sends the reader to the packs' indexes)
  CHECK(found < 300);     // and the out-of-range id does
  // The header and fanout are still checked.
  Bytes fan = good;
  std::memcpy(fan.data() + 24 + 32 * packs.size(), "\xff\xff\xff\xff", 4); // fanout[0] past the count
  CHECK_THROWS_AS(MidxView(fan, "t.midx", MidxCheck::lookup), Corrupt);
  Bytes shorter(good.begin(), good.end() - 1);
  CHECK_THROWS_AS(MidxView(shorter, "t.midx", MidxCheck::lookup), Corrupt);
}

TEST_CASE("midx merge policy: a layer takes in the smallest layers holding fewer than twice what it gathered") {
  CHECK(midx_layers_to_merge({}, 10) == 0);
  CHECK(midx_layers_to_merge({100}, 0) == 0); // nothing new: nothing merged
  CHECK(midx_layers_to_merge({10}, 10) == 1);
  CHECK(midx_layers_to_merge({20}, 10) == 0); // not fewer than twice
  CHECK(midx_layers_to_merge({19}, 10) == 1);
  CHECK(midx_layers_to_merge({10, 39, 1000}, 10) == 2); // 10 < 2 * 10; then 39 < 2 * 20
  CHECK(midx_layers_to_merge({10, 40, 1000}, 10) == 1); // 40 is not fewer than 2 * 20
  CHECK(midx_layers_to_merge({10, 39, 100}, 10) == 3);  // 100 < 2 * 59
  CHECK(midx_layers_to_merge({10, 100, 1000}, 10) == 1);
}

TEST_CASE("midx merge policy: adds of equal size keep O(log n) layers and write O(log n) per digest") {
  std::vector<uint64_t> layers;
  uint64_t written = 0, total = 0;
  const uint64_t per_add = 200;
  for (int k = 1; k <= 1000; k++) {
    written += add_layer(layers, per_add);
    total += per_add;
    CHECK(layers.size() <= size_t(std::log2(double(k))) + 1);
    std::sort(layers.begin(), layers.end());
    for (size_t i = 1; i < layers.size(); i++) CHECK(layers[i] >= 2 * layers[i - 1]); // geometric
  }
  // A single rewritten index would have written total * 1001 / 2 digests.
  CHECK(written <= total * (uint64_t(std::log2(1000.0)) + 2));
  MESSAGE("1000 adds of 200 digests: " << written << " digests written (" << double(written) / double(total) << " per digest)");
}

TEST_CASE("midx merge policy: uneven adds stay geometric too") {
  fx::Rng rng(7);
  std::vector<uint64_t> layers;
  uint64_t written = 0, total = 0;
  for (int k = 1; k <= 2000; k++) {
    uint64_t fresh = 1 + rng.below(k % 97 == 0 ? 100000 : 300);
    written += add_layer(layers, fresh);
    total += fresh;
    CHECK(double(layers.size()) <= std::log2(double(total)) + 1);
  }
  CHECK(double(written) <= double(total) * (std::log(double(total)) / std::log(1.5) + 2));
}
