// Relocation: finding where the packed tree's own absolute path(s) occur in
// file bytes (at pack time) and writing another path in their place (at
// restore time). Offsets and root indices are encoded as in
// formats/catalog_format.hpp.
#pragma once

#include <string>
#include <vector>

#include "core/util/bytes.hpp"

namespace hpak {

// Ascending, non-overlapping occurrences of any root in `data`; where two roots
// match at one offset the longer wins.
std::vector<uint64_t> find_relocations(ByteSpan data, const std::vector<std::string>& roots);

// Writes `data` with every relocation replaced by `target`, to `sink` in pieces.
template <class Sink>
void apply_relocations(ByteSpan data, const std::vector<uint64_t>& relocs, const std::vector<std::string>& roots,
                       std::string_view target, Sink&& sink);

// `data` relocated into a new buffer.
Bytes relocate_bytes(ByteSpan data, const std::vector<uint64_t>& relocs, const std::vector<std::string>& roots,
                     std::string_view target);

} // namespace hpak

#include "formats/catalog_format.hpp"

template <class Sink>
void hpak::apply_relocations(ByteSpan data, const std::vector<uint64_t>& relocs, const std::vector<std::string>& roots,
                             std::string_view target, Sink&& sink) {
  uint64_t pos = 0;
  for (uint64_t v : relocs) {
    uint64_t off = formats::reloc_offset(v);
    sink(data.subspan(pos, off - pos));
    sink(ByteSpan(reinterpret_cast<const uint8_t*>(target.data()), target.size()));
    pos = off + roots[formats::reloc_root(v)].size();
  }
  sink(data.subspan(pos));
}
