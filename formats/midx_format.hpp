// HPAK multi-pack index (packs/multi.midx), format version 1: one sorted
// digest table over many packs of a library, so an existence check or lookup
// costs one binary search however many packs there are (git's MIDX idea).
//
//   midx     ::= "HMIX" version:u32(=1) npacks:u32 reserved:u32(=0) count:u64
//                pack:[32] * npacks            -- SHA-256 names of the covered packs, sorted
//                fanout:u32[256] digest:[32] * count pack_id:u32 * count
//                trailer                       -- SHA-256 of every preceding byte
//
// Each digest appears once (the first covered pack holding it). The midx is
// disposable: readers ignore it when it names a pack that is gone, and fall
// back to the packs' own .hidx; gc and `pack --into` rebuild it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/hash.hpp"

namespace hpak::formats {

constexpr uint32_t kMidxVersion = 1; // the only one read and written

struct MidxEntry {
  Digest digest;
  uint32_t pack;
};

Bytes encode_midx(const std::vector<Digest>& packs, std::vector<MidxEntry> entries);

class MidxView {
public:
  MidxView() = default;
  MidxView(ByteSpan bytes, std::string where);
  const std::vector<Digest>& packs() const { return packs_; }
  uint64_t count() const { return count_; }
  std::optional<uint32_t> find(const Digest& d) const;

private:
  std::vector<Digest> packs_;
  uint64_t count_ = 0;
  const uint8_t* fanout_ = nullptr;
  const uint8_t* digests_ = nullptr;
  const uint8_t* ids_ = nullptr;
};

} // namespace hpak::formats
