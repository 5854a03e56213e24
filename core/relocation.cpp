#include "core/relocation.hpp"

#include <algorithm>
#include <cstring>

namespace hpak {

std::vector<uint64_t> find_relocations(ByteSpan data, const std::vector<std::string>& roots) {
  std::vector<std::pair<uint64_t, unsigned>> hits; // (offset, root)
  for (unsigned i = 0; i < roots.size(); i++) {
    const std::string& r = roots[i];
    if (r.empty() || r.size() > data.size()) continue;
    const uint8_t* p = data.data();
    const uint8_t* end = data.data() + data.size();
    while (p + r.size() <= end) {
      const void* hit = memmem(p, size_t(end - p), r.data(), r.size());
      if (!hit) break;
      const uint8_t* h = static_cast<const uint8_t*>(hit);
      hits.emplace_back(uint64_t(h - data.data()), i);
      p = h + 1;
    }
  }
  std::sort(hits.begin(), hits.end(), [&](auto& a, auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return roots[a.second].size() > roots[b.second].size();
  });
  std::vector<uint64_t> out;
  uint64_t next_min = 0;
  for (auto& [off, idx] : hits) {
    if (off < next_min) continue;
    out.push_back(formats::make_reloc(off, idx));
    next_min = off + roots[idx].size();
  }
  return out;
}

Bytes relocate_bytes(ByteSpan data, const std::vector<uint64_t>& relocs, const std::vector<std::string>& roots,
                     std::string_view target) {
  Bytes out;
  out.reserve(data.size() + relocs.size() * target.size());
  apply_relocations(data, relocs, roots, target, [&](ByteSpan piece) { out.insert(out.end(), piece.begin(), piece.end()); });
  return out;
}

} // namespace hpak
