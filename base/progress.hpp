// Progress reporting from the engine to whoever drives it (the cmd layer draws
// it). Called from the engine's coordinating thread only; may be empty.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string_view>

namespace hpak {

using Progress = std::function<void(std::string_view phase, uint64_t done, uint64_t total)>;

inline void report(const Progress& p, std::string_view phase, uint64_t done, uint64_t total) {
  if (p) p(phase, done, total);
}

// Progress of one parallel pass over `total` items: every worker calls
// tick(tid) once per item; worker 0 (the calling thread of parallel_for)
// reports now and then; finish() reports the pass complete.
class PassProgress {
public:
  PassProgress(const Progress& p, std::string_view phase, uint64_t total) : p_(p), phase_(phase), total_(total) {}
  void tick(unsigned tid) {
    uint64_t d = done_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (tid == 0 && d - last_ >= 64) {
      last_ = d;
      report(p_, phase_, d, total_);
    }
  }
  void finish() { report(p_, phase_, total_, total_); }

private:
  const Progress& p_;
  std::string_view phase_;
  uint64_t total_, last_ = 0; // last_: worker 0 only
  std::atomic<uint64_t> done_{0};
};

} // namespace hpak
