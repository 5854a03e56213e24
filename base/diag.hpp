// Diagnostics from the engine for an operator (-v, -vv): core never prints;
// it hands a line to the sink the command installed (cmd/log.cpp routes it to
// spdlog on stderr). Without a sink, nothing is built or written.
//   debug: a decision an operator of shared storage wants to see (a lock
//          waited for, a rescan of packs/, a pack skipped and why, a fallback)
//   trace: the same at a finer grain (per object or per file)
#pragma once

#include <functional>
#include <string>

namespace hpak {

enum class DiagLevel { Debug, Trace };
using DiagSink = std::function<void(DiagLevel, const std::string&)>;

// Installs the sink, and the finest level it wants (nothing finer is built).
void set_diag_sink(DiagSink sink, DiagLevel finest);
bool diag_on(DiagLevel level);
void diag(DiagLevel level, const std::string& line);

// diag_debug([&] { return "text"; }): the text is built only when wanted.
template <class F> void diag_debug(F&& make) {
  if (diag_on(DiagLevel::Debug)) diag(DiagLevel::Debug, make());
}
template <class F> void diag_trace(F&& make) {
  if (diag_on(DiagLevel::Trace)) diag(DiagLevel::Trace, make());
}

} // namespace hpak
