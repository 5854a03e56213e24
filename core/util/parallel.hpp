// A minimal parallel-for: `threads` workers pull indices [0, n) from a shared
// atomic counter in chunks. The first exception thrown by any worker stops the
// others from taking new work and is rethrown on the calling thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace hpak {

unsigned default_threads(); // hardware concurrency, at least 1

// Like parallel_for, but the calling thread first runs `lead()` (work the
// others may wait on, e.g. creating directories) while the other workers
// already take indices; then it takes indices too. An exception from lead()
// stops the loop like one from fn; fn must not wait on lead's work forever
// (check a flag lead sets when it fails).
template <class Lead, class F>
void parallel_for_lead(size_t n, unsigned threads, size_t chunk, Lead&& lead, F&& fn) {
  if (n == 0) return;
  threads = std::max(1u, std::min<unsigned>(threads, unsigned((n + chunk - 1) / chunk)));
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mu;
  auto work = [&](unsigned tid, bool leads) {
    try {
      if (leads) lead();
      while (!failed.load(std::memory_order_relaxed)) {
        size_t begin = next.fetch_add(chunk, std::memory_order_relaxed);
        if (begin >= n) break;
        size_t end = std::min(n, begin + chunk);
        for (size_t i = begin; i < end; i++) fn(i, tid);
      }
    } catch (...) {
      std::lock_guard lk(error_mu);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; t++) pool.emplace_back(work, t, false);
  work(0, true);
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

template <class F>
void parallel_for(size_t n, unsigned threads, size_t chunk, F&& fn) {
  parallel_for_lead(n, threads, chunk, [] {}, std::forward<F>(fn));
}

} // namespace hpak
