// Diagnostics on stderr through spdlog, one line each: "hpak: LEVEL: text".
//   warnings  always (not silenced by -q: they say something went wrong or was left out)
//   -v        debug: what was opened (library: packs, midx coverage; pack:
//             objects, where its index came from and why a .hidx was not used),
//             what the command planned and did (counts), and how long each
//             engine phase and the whole command took
//   -vv       trace: also every progress report of the engine and each
//             pack of an opened library
// Core never prints; these lines are made here from what core returns and
// from its progress callback (see progress_bar in cmd/output.hpp).
#pragma once

#include <spdlog/spdlog.h>
#include <string>
#include <string_view>

namespace hpak {
class Library;
class PackReader;
} // namespace hpak

namespace hpak::cmd {

// Sets up the "hpak" logger on stderr: warnings, plus debug (verbose 1) or
// trace (verbose >= 2).
void setup_logging();
void set_verbosity(int verbose);

inline bool debug_on() { return spdlog::should_log(spdlog::level::debug); }

// -v: what a command opened.
void log_library(const Library& lib);
void log_pack(const PackReader& pack);

// "hpak: error: TEXT" on stderr through the logger, the progress line cleared
// first and every control character of TEXT escaped (base/error.hpp), so a
// path or a name in it keeps the message one line. Every error a command
// prints goes through here.
void log_error(std::string_view text);

// Engine phases (from the progress callback): at -v one line as each phase
// ends (its items done/total, the time since the engine call began or its
// previous phase ended), at -vv every report.
void log_progress(std::string_view phase, uint64_t done, uint64_t total);
// Before and after an engine call: ends the phase still open (one that never
// reported done == total) and starts the clock of the next.
void end_phases();

} // namespace hpak::cmd
