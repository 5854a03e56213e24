#include "core/relocation.hpp"

#include <algorithm>
#include <cstring>

namespace hpak {

RelocationScanner::RelocationScanner(const std::vector<std::string>& roots) : roots_(roots) {
  for (auto& r : roots) longest_ = std::max(longest_, r.size());
}

void RelocationScanner::feed(ByteSpan data, size_t own, uint64_t base) {
  for (unsigned i = 0; i < roots_.size(); i++) {
    const std::string& r = roots_[i];
    if (r.empty() || r.size() > data.size()) continue;
    // Candidates by memchr of the first byte (vectorised; several times faster
    // than memmem on large files), then the rest compared.
    const uint8_t* p = data.data();
    const uint8_t* limit = data.data() + std::min(own, data.size() - r.size() + 1); // starts before it
    while (p < limit) {
      p = static_cast<const uint8_t*>(memchr(p, uint8_t(r[0]), size_t(limit - p)));
      if (!p) break;
      if (std::memcmp(p + 1, r.data() + 1, r.size() - 1) == 0) hits_.emplace_back(base + uint64_t(p - data.data()), i);
      p++;
    }
  }
}

std::vector<uint64_t> RelocationScanner::finish() {
  std::sort(hits_.begin(), hits_.end(), [&](auto& a, auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return roots_[a.second].size() > roots_[b.second].size();
  });
  std::vector<uint64_t> out;
  uint64_t next_min = 0;
  for (auto& [off, idx] : hits_) {
    if (off < next_min) continue;
    out.push_back(formats::make_reloc(off, idx));
    next_min = off + roots_[idx].size();
  }
  hits_.clear();
  return out;
}

std::vector<uint64_t> find_relocations(ByteSpan data, const std::vector<std::string>& roots) {
  RelocationScanner scan(roots);
  scan.feed(data, data.size(), 0);
  return scan.finish();
}

Bytes relocate_bytes(ByteSpan data, const std::vector<uint64_t>& relocs, const std::vector<std::string>& roots,
                     std::string_view target) {
  Bytes out;
  out.reserve(data.size() + relocs.size() * target.size());
  apply_relocations(data, relocs, roots, target, [&](ByteSpan piece) { out.insert(out.end(), piece.begin(), piece.end()); });
  return out;
}

} // namespace hpak
