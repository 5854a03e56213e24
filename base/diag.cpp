#include "base/diag.hpp"

#include <atomic>

namespace hpak {

namespace {
DiagSink g_sink;
std::atomic<int> g_finest{-1}; // -1: no sink
} // namespace

void set_diag_sink(DiagSink sink, DiagLevel finest) {
  g_sink = std::move(sink);
  g_finest = g_sink ? int(finest) : -1;
}

bool diag_on(DiagLevel level) { return int(level) <= g_finest.load(std::memory_order_relaxed); }

void diag(DiagLevel level, const std::string& line) {
  if (diag_on(level)) g_sink(level, line);
}

} // namespace hpak
