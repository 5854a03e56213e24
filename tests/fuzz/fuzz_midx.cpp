// Fuzzes the multi-pack index reader: MidxView on the bytes as given and on a
// copy with a correct SHA-256 trailer (so the structural checks are reached),
// then find() for stored and arbitrary digests.
//
// Invariants of an accepted midx: every pack id is < npacks, find() of every
// stored digest returns its own pack id, find() never returns an id out of range.
#include "formats/midx_format.hpp"
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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  exercise(ByteSpan(data, size), data, size);
  Bytes sealed = fuzz::with_sha256_trailer(data, size);
  exercise(sealed, data, size);
  return 0;
}
