// Levenshtein distance, for "did you mean" suggestions (an unknown command in
// cmd/main.cpp, an unknown catalog name in core/library/library.cpp).
#pragma once

#include <cstddef>
#include <string_view>

namespace hpak {

// The fewest single-byte insertions, deletions and substitutions turning `a`
// into `b`. O(|a|*|b|) time, O(|b|) memory.
size_t edit_distance(std::string_view a, std::string_view b);

} // namespace hpak
