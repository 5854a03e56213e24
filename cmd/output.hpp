// Output helpers for the command layer: progress on a TTY, human sizes, and
// a checked flush of stdout (ENOSPC/EIO/EPIPE are errors). JSON: cmd/json.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cmd/json.hpp"
#include "base/progress.hpp"
#include "core/pack/relocation.hpp"

namespace hpak::cmd {

// A Progress callback drawing "phase done/total" on stderr when it is a TTY
// and --quiet is off, and logging the phases with -v (cmd/log.hpp); an empty
// function when neither. One per engine call.
Progress progress_bar();
void clear_progress();

std::string human_bytes(uint64_t n);
std::string mode_string(char type, uint32_t mode);
double now_seconds();

// "relocation: 6 text files (any target path), 3 in place (...), ...": how the
// files holding a packed path will be relocated; empty when there are none.
std::string relocation_line(const RelocCounts& c);
// "relocation":{"text":6,"in_place":3,"in_place_max_target":37,"same_length":1611,"verbatim":2}
void relocation_json(JsonWriter& w, const RelocCounts& c);

// Flushes stdout; on failure prints an error and returns false.
bool finish_stdout();

} // namespace hpak::cmd
