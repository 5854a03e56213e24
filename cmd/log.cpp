#include "cmd/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

// spdlog is compiled here, once (SPDLOG_COMPILED_LIB, set by the hpak_log
// target): its headers declare, these define. In its header-only mode every
// file that logs compiled all of spdlog again (twice a command file's time).
#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/details/periodic_worker-inl.h>
#include <spdlog/details/registry-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/spdlog-inl.h>
#ifdef _WIN32
#include <spdlog/sinks/wincolor_sink-inl.h>
#else
#include <spdlog/sinks/ansicolor_sink-inl.h>
#endif
#include <spdlog/sinks/stdout_color_sinks-inl.h>

#include "cmd/output.hpp"
#include "core/library/library.hpp"
#include "core/pack/pack_reader.hpp"
#include "base/diag.hpp"

namespace hpak::cmd {

void setup_logging() {
  auto logger = spdlog::stderr_color_mt("hpak");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("hpak: %l: %v");
  spdlog::set_level(spdlog::level::warn);
}

void set_verbosity(int verbose) {
  if (verbose <= 0) return;
  spdlog::set_level(verbose > 1 ? spdlog::level::trace : spdlog::level::debug);
  // The engine's own diagnostics (base/diag.hpp): locks waited for,
  // packs skipped, rescans, fallbacks taken.
  set_diag_sink([](DiagLevel level, const std::string& line) {
    if (level == DiagLevel::Debug) spdlog::debug("{}", line);
    else spdlog::trace("{}", line);
  }, verbose > 1 ? DiagLevel::Trace : DiagLevel::Debug);
}

void log_error(std::string_view text) {
  clear_progress();
  spdlog::error("{}", escape_controls(text));
}

void log_library(const Library& lib) {
  if (!debug_on()) return;
  auto packs = lib.packs();
  spdlog::debug("library '{}': {} pack{} visible, {} outside the midx ({} layer{}); {}, default level {}", lib.root(), packs.size(),
                packs.size() == 1 ? "" : "s", lib.uncovered_packs(), lib.midx_layers(), lib.midx_layers() == 1 ? "" : "s",
                lib.shared() ? "shared" : "private",
                lib.default_level() < 0 ? std::string("unset") : std::to_string(lib.default_level()));
  for (const PackReader* p : packs) {
    if (p->index_source() == PackReader::IndexSource::Scan && !p->index_problem().empty())
      spdlog::debug("pack '{}': its index was not used ({}); scanned instead", p->path(), p->index_problem());
    else spdlog::trace("pack '{}': {} objects, {} bytes", p->path(), p->index().count(), p->bytes().size());
  }
}

void log_pack(const PackReader& pack) {
  if (!debug_on()) return;
  const bool scanned = pack.index_source() == PackReader::IndexSource::Scan;
  spdlog::debug("pack '{}': {} bytes, {} objects, index {}{}{}", pack.path(), pack.bytes().size(), pack.index().count(),
                scanned ? "from a scan of the pack" : "from '" + index_path_for(pack.path()) + "'",
                pack.index_problem().empty() ? "" : ": the index file was not used: ", pack.index_problem());
  if (!pack.damage().empty()) spdlog::debug("pack '{}': {} damaged region(s) found by the scan", pack.path(), pack.damage().size());
}

namespace {
struct PhaseState {
  std::string name; // the phase open, or ""
  uint64_t done = 0, total = 0;
  bool ended = false;
  double mark = now_seconds(); // when the previous phase ended (or the process began)
};
PhaseState g_phase;

void end_phase() {
  double now = now_seconds();
  spdlog::debug("phase '{}': {}/{} in {:.3f} s", g_phase.name, g_phase.done, g_phase.total, now - g_phase.mark);
  g_phase.mark = now;
  g_phase.ended = true;
}
} // namespace

void log_progress(std::string_view phase, uint64_t done, uint64_t total) {
  spdlog::trace("progress: {} {}/{}", phase, done, total);
  // A new phase, or the same one again after it ended (a next pass).
  if (phase != g_phase.name || (g_phase.ended && done < total)) {
    if (!g_phase.name.empty() && !g_phase.ended) end_phase();
    g_phase.name = std::string(phase);
    g_phase.ended = false;
  }
  g_phase.done = done;
  g_phase.total = total;
  if (done == total && !g_phase.ended) end_phase();
}

void end_phases() {
  if (!g_phase.name.empty() && !g_phase.ended && debug_on()) end_phase();
  g_phase.name.clear();
  g_phase.mark = now_seconds();
}

} // namespace hpak::cmd
