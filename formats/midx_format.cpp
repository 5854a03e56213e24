#include "formats/midx_format.hpp"

#include <algorithm>
#include <cstring>

#include "formats/index_format.hpp"

namespace hpak::formats {

Bytes encode_midx(const std::vector<Digest>& packs, std::vector<MidxEntry> entries) {
  std::stable_sort(entries.begin(), entries.end(), [](const MidxEntry& a, const MidxEntry& b) { return a.digest < b.digest; });
  entries.erase(std::unique(entries.begin(), entries.end(), [](const MidxEntry& a, const MidxEntry& b) { return a.digest == b.digest; }),
                entries.end());
  Bytes out;
  for (char c : {'H', 'M', 'I', 'X'}) put_u8(out, uint8_t(c));
  put_u32(out, kMidxVersion);
  put_u32(out, uint32_t(packs.size()));
  put_u32(out, 0);
  put_u64(out, entries.size());
  for (auto& p : packs) put_bytes(out, p);
  uint32_t fan[256] = {};
  for (auto& e : entries) fan[e.digest[0]]++;
  uint32_t acc = 0;
  for (int i = 0; i < 256; i++) put_u32(out, acc += fan[i]);
  for (auto& e : entries) put_bytes(out, e.digest);
  for (auto& e : entries) put_u32(out, e.pack);
  put_bytes(out, sha256(out));
  return out;
}

MidxView::MidxView(ByteSpan b, std::string where, MidxCheck check) {
  ByteReader r(b, where);
  ByteSpan magic = r.bytes(4);
  if (std::memcmp(magic.data(), "HMIX", 4) != 0) r.fail("not an HPAK multi-pack index");
  if (r.u32() != kMidxVersion) r.fail("unsupported multi-pack index version");
  uint32_t npacks = r.u32();
  if (r.u32() != 0) r.fail("reserved field is not zero");
  count_ = r.u64();
  if (npacks > b.size() / 32 || count_ > b.size() / 36) r.fail("counts do not fit the file");
  uint64_t expect = 24 + uint64_t(npacks) * 32 + 1024 + count_ * 36 + 32;
  if (b.size() != expect) r.fail("size does not match its counts");
  std::memcpy(trailer_.data(), b.data() + b.size() - 32, 32);
  if (check == MidxCheck::full && sha256(b.first(b.size() - 32)) != trailer_)
    throw Corrupt(where, b.size() - 32, "multi-pack index checksum mismatch");
  for (uint32_t i = 0; i < npacks; i++) {
    Digest d;
    std::memcpy(d.data(), r.bytes(32).data(), 32);
    packs_.push_back(d);
  }
  fanout_ = b.data() + r.pos();
  digests_ = fanout_ + 1024;
  ids_ = digests_ + count_ * 32;
  uint32_t prev = 0;
  for (int i = 0; i < 256; i++) {
    uint32_t f = get_u32(fanout_ + 4 * i);
    if (f < prev) r.fail("fanout is not monotonic");
    prev = f;
  }
  if (prev != count_) r.fail("fanout total does not match the count");
  if (check == MidxCheck::lookup) return;
  for (uint64_t i = 0; i < count_; i++) {
    // A digest outside its fanout bucket would be invisible to find().
    const uint8_t* d = digests_ + 32 * i;
    uint32_t lo = d[0] == 0 ? 0 : get_u32(fanout_ + 4 * (d[0] - 1));
    uint32_t hi = get_u32(fanout_ + 4 * d[0]);
    if (i < lo || i >= hi) throw Corrupt(where, uint64_t(d - b.data()), "digest outside its fanout bucket");
    if (i > 0 && std::memcmp(digests_ + 32 * (i - 1), digests_ + 32 * i, 32) >= 0) r.fail("digests are not sorted");
    if (get_u32(ids_ + 4 * i) >= npacks) r.fail("pack id out of range");
  }
}

Digest MidxView::digest_at(uint64_t i) const {
  Digest d;
  std::memcpy(d.data(), digests_ + 32 * i, 32);
  return d;
}

uint32_t MidxView::pack_at(uint64_t i) const { return get_u32(ids_ + 4 * i); }

std::optional<uint32_t> MidxView::find(const Digest& d) const {
  auto i = fanout_find(fanout_, digests_, count_, d);
  if (!i) return std::nullopt;
  const uint32_t id = get_u32(ids_ + 4 * *i);
  if (id >= packs_.size()) return std::nullopt; // only a layer opened with MidxCheck::lookup has one
  return id;
}

size_t midx_layers_to_merge(const std::vector<uint64_t>& smallest_first, uint64_t fresh) {
  uint64_t gathered = fresh;
  size_t n = 0;
  while (n < smallest_first.size() && smallest_first[n] < 2 * gathered) gathered += smallest_first[n++];
  return n;
}

} // namespace hpak::formats
