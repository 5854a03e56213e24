// Progress reporting from the engine to whoever drives it (the cmd layer draws
// it). Called from the engine's coordinating thread only; may be empty.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace hpak {

using Progress = std::function<void(std::string_view phase, uint64_t done, uint64_t total)>;

inline void report(const Progress& p, std::string_view phase, uint64_t done, uint64_t total) {
  if (p) p(phase, done, total);
}

} // namespace hpak
