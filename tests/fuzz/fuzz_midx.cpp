// Fuzzes the multi-pack index reader (a layer, or the legacy multi.midx):
// MidxView on the bytes as given and on a copy with a correct SHA-256 trailer
// (so the structural checks are reached), then find() for stored and arbitrary
// digests; and the layers' merge policy on counts taken from the bytes.
//
// Invariants of an accepted midx: every pack id is < npacks, find() of every
// stored digest returns its own pack id, find() never returns an id out of
// range, trailer() is the last 32 bytes and its layer name parses back to it.
// Opened for lookups (MidxCheck::lookup, no trailer or order check): find()
// of any digest, stored or not, returns nothing or an id < npacks.
// Of the policy: it merges a prefix of the layers, each fewer than twice what
// was gathered before it, and stops only at one holding at least twice.
#include <algorithm>
#include <cstring>
#include <vector>

#include "formats/midx_format.hpp"
#include "formats/pack_name.hpp"
#include "fuzz_common.hpp"

using namespace hpak;
using namespace hpak::formats;

static void exercise(ByteSpan b, const uint8_t* data, size_t size) {
  MidxView v;
  try {
    v = MidxView(b, "fuzz.midx");
  } catch (const Error&) {
    return;
  }
  size_t npacks = v.packs().size();
  FUZZ_CHECK(std::memcmp(v.trailer().data(), b.data() + b.size() - 32, 32) == 0, "trailer");
  auto named = parse_midx_layer_name(midx_layer_name(v.trailer()));
  FUZZ_CHECK(named && *named == v.trailer(), "layer name round trip");
  FUZZ_CHECK(v.count() <= b.size() / 36, "count");
  // The layout: 24-byte header, packs, fanout, digests, ids, trailer.
  const uint8_t* digests = b.data() + 24 + 32 * npacks + 1024;
  const uint8_t* ids = digests + 32 * v.count();
  for (uint64_t i = 0; i < v.count(); i++) {
    Digest d;
    std::memcpy(d.data(), digests + 32 * i, 32);
    auto id = v.find(d);
    FUZZ_CHECK(id && *id < npacks && *id == get_u32(ids + 4 * i), "find() of stored digest %llu", (unsigned long long)i);
  }
  for (size_t off = 0; off + 32 <= size && off < 32 * 8; off += 32) {
    Digest d;
    std::memcpy(d.data(), data + off, 32);
    if (auto id = v.find(d)) FUZZ_CHECK(*id < npacks, "pack id out of range");
  }
}

static void exercise_lookup(ByteSpan b, const uint8_t* data, size_t size) {
  MidxView v;
  try {
    v = MidxView(b, "fuzz.midx", MidxCheck::lookup);
  } catch (const Error&) {
    return;
  }
  const size_t npacks = v.packs().size();
  FUZZ_CHECK(v.count() <= b.size() / 36, "count");
  const uint8_t* digests = b.data() + 24 + 32 * npacks + 1024;
  for (uint64_t i = 0; i < v.count() && i < 4096; i++) {
    Digest d;
    std::memcpy(d.data(), digests + 32 * i, 32);
    if (auto id = v.find(d)) FUZZ_CHECK(*id < npacks, "lookup opening: pack id out of range for stored digest %llu", (unsigned long long)i);
  }
  for (size_t off = 0; off + 32 <= size && off < 32 * 8; off += 32) {
    Digest d;
    std::memcpy(d.data(), data + off, 32);
    if (auto id = v.find(d)) FUZZ_CHECK(*id < npacks, "lookup opening: pack id out of range");
  }
}

// Counts (u16 each, so sums cannot overflow) from the bytes: the first is the
// fresh digests, the rest the layers, sorted smallest first.
static void exercise_policy(const uint8_t* data, size_t size) {
  if (size < 2) return;
  uint64_t fresh = uint64_t(data[0]) | uint64_t(data[1]) << 8;
  std::vector<uint64_t> layers;
  for (size_t i = 2; i + 1 < size && layers.size() < 64; i += 2) layers.push_back(uint64_t(data[i]) | uint64_t(data[i + 1]) << 8);
  std::sort(layers.begin(), layers.end());
  size_t n = midx_layers_to_merge(layers, fresh);
  FUZZ_CHECK(n <= layers.size(), "merged more layers than there are");
  uint64_t gathered = fresh;
  for (size_t k = 0; k < n; k++) {
    FUZZ_CHECK(layers[k] < 2 * gathered, "merged layer %zu holding at least twice what was gathered", k);
    gathered += layers[k];
  }
  if (n < layers.size()) FUZZ_CHECK(layers[n] >= 2 * gathered, "stopped before a layer it should merge");
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  exercise_policy(data, size);
  exercise(ByteSpan(data, size), data, size);
  exercise_lookup(ByteSpan(data, size), data, size);
  Bytes sealed = fuzz::with_sha256_trailer(data, size);
  exercise(sealed, data, size);
  return 0;
}
