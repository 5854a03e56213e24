// Parses durations like "30d", "12h", "15m", "90s", "0" into seconds.
#pragma once

#include <string>

namespace hpak::cmd {

int64_t parse_duration(const std::string& s); // throws hpak::Error

} // namespace hpak::cmd
