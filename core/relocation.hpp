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

// find_relocations over a file seen in windows (the packer's large files):
// feed(data, own, base) gets the bytes [base, base + data.size()) of the file,
// which run `lookahead()` bytes past the window's own `own` bytes (or to the
// end of the file), and keeps the occurrences that start within its own bytes;
// finish() returns exactly what find_relocations would for the whole file.
class RelocationScanner {
public:
  explicit RelocationScanner(const std::vector<std::string>& roots);
  size_t lookahead() const { return longest_ ? longest_ - 1 : 0; }
  void feed(ByteSpan data, size_t own, uint64_t base);
  std::vector<uint64_t> finish();

private:
  const std::vector<std::string>& roots_;
  size_t longest_ = 0;
  std::vector<std::pair<uint64_t, unsigned>> hits_; // (offset, root)
};

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
