// The per-pack trained zstd dictionary of `hpak pack -o` (format 2 blocks).
//
// Small objects (the ones that go into blocks) lose compression context to
// their 64 KiB blocks; a dictionary trained on a sample of them gives some
// back. It is written only when it pays: the tree's small files must hold at
// least kDictMinSmallBytes; it is trained on every k-th small file up to
// kDictSampleRatio times its size, then judged on runs of consecutive small
// files it was not trained on, each compressed as one block with and without
// it: the saving, scaled to all the small bytes, must beat the dictionary's
// two stored copies. Library packs (`pack --into`, gc, fetch) get none: gc
// and fetch copy blocks between packs and do not carry dictionaries.
#pragma once

#include <cstdint>

#include "base/bytes.hpp"
#include "core/pack/pack_passes.hpp"
#include "core/pack/pack_writer.hpp"

namespace hpak {

constexpr uint64_t kDictMinSmallBytes = 1ull << 20;   // below: no dictionary
constexpr uint64_t kDictLargeFromBytes = 8ull << 20;  // from here: 64 KiB, else 16 KiB
constexpr size_t kDictSampleRatio = 25;              // sample bytes per dictionary byte

struct DictionaryChoice {
  Bytes dict;                 // empty: none (too few small bytes, training failed or it does not pay)
  uint64_t small_bytes = 0;   // raw bytes of the tree's small files
  uint64_t sample_bytes = 0;  // of them, read and trained on
  int64_t estimated_gain = 0; // bytes saved over all small bytes, less the two stored copies
};

// Reads a sample of `walked`'s small files (those `writer` puts into
// blocks), through the tree's root descriptor with no link followed (a file
// that cannot be read is left out of the sample), and trains a dictionary on
// it at `level`. Deterministic for the same tree.
DictionaryChoice choose_dictionary(const WalkedTree& walked, const PackWriter& writer, int level);

} // namespace hpak
