// HPAK multi-pack index, format version 1: sorted digest tables over many
// packs of a library, so an existence check or lookup costs one binary search
// per layer however many packs there are (git's MIDX idea, layered as git's
// incremental multi-pack-index chains).
//
// A library's index is a set of layers, each a file of its own in packs/:
//
//   layer    ::= "midx-" hex64 ".midx"          -- hex64: the layer's trailer (formats/pack_name.hpp)
//   legacy   ::= "multi.midx"                   -- the single index of older hpak: read as one more layer
//   midx     ::= "HMIX" version:u32(=1) npacks:u32 reserved:u32(=0) count:u64
//                pack:[32] * npacks            -- SHA-256 names of the covered packs, sorted
//                fanout:u32[256] digest:[32] * count pack_id:u32 * count
//                trailer                       -- SHA-256 of every preceding byte
//
// Every layer and the legacy file have the midx grammar. Each digest appears
// once per layer (the first covered pack holding it). The set of layers is
// what a listing of packs/ shows: there is no chain file, so no file can name
// a layer that is gone, and a layer is published by one rename (written
// whole under a temp name first). Layers are disposable: readers ignore a
// layer that is unreadable, misnamed or names a pack that is not visible, and
// look the packs it covers up in their own .hidx; layers may overlap (two adds
// folding the same layer at once), which costs a lookup, never an answer.
//
// Writers: an add writes no layer while fewer than kMidxMinUncovered visible
// packs are outside every usable layer (a lookup searches those packs' own
// indexes, one binary search each: a layer over them would only repeat their
// indexes). From that many on, it writes one layer covering them all, merged with the smallest layers while the next smallest holds fewer
// than twice the digests gathered so far (midx_layers_to_merge), then deletes
// the layers it merged. So, adds running one at a time, layer sizes at least
// double from one to the next: at most log2(objects) + 1 layers, and a digest
// is rewritten only when its layer grows 1.5 times or more (amortised
// O(log n) writes per object). Adds racing may leave overlapping layers a few
// more; the next merges or gc fold them. gc, after rewriting or deleting
// packs, writes a layer as an add does (over its new packs and the packs left
// of the layers that named a deleted pack: those are stale), then deletes the
// stale layers. repair writes one layer over every visible pack (none if they
// are fewer than kMidxMinUncovered) and deletes every other layer and the
// legacy file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/hash.hpp"

namespace hpak::formats {

constexpr uint32_t kMidxVersion = 1; // the only one read and written

// The fewest packs outside every layer that a writer covers with a new layer.
constexpr size_t kMidxMinUncovered = 4;

struct MidxEntry {
  Digest digest;
  uint32_t pack;
};

Bytes encode_midx(const std::vector<Digest>& packs, std::vector<MidxEntry> entries);

// How much of a layer MidxView checks when it opens one.
//  - full: the header, the SHA-256 trailer, the fanout, and every digest in
//    its bucket and in order, every pack id in range (verify, fuzzing, tests):
//    it reads the whole file.
//  - lookup: the header, the size and the fanout only (1 KiB), so a reader
//    of a large library touches only the pages its lookups reach. A layer is a
//    hint: every answer is checked against the pack's own index, a digest out
//    of order is only a miss (the caller then searches the packs' indexes), a
//    pack id out of range is a miss, and find() never reads outside the file.
enum class MidxCheck { full, lookup };

class MidxView {
public:
  MidxView() = default;
  MidxView(ByteSpan bytes, std::string where, MidxCheck check = MidxCheck::full);
  const std::vector<Digest>& packs() const { return packs_; }
  uint64_t count() const { return count_; }
  std::optional<uint32_t> find(const Digest& d) const;
  // The i-th digest (sorted) and its pack id, i < count().
  Digest digest_at(uint64_t i) const;
  uint32_t pack_at(uint64_t i) const;
  const Digest& trailer() const { return trailer_; }

private:
  std::vector<Digest> packs_;
  uint64_t count_ = 0;
  Digest trailer_{};
  const uint8_t* fanout_ = nullptr;
  const uint8_t* digests_ = nullptr;
  const uint8_t* ids_ = nullptr;
};

// The merge policy of a new layer: `smallest_first` are the digest counts of
// the usable layers, smallest first; `fresh` the digests of the packs no
// layer covers. Returns how many of the smallest layers the new layer takes
// in: each next one while it holds fewer than twice the digests gathered.
size_t midx_layers_to_merge(const std::vector<uint64_t>& smallest_first, uint64_t fresh);

} // namespace hpak::formats
