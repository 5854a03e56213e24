// Parallel loops on one small thread pool per call: `threads` workers, the
// calling thread being worker 0. The first exception thrown by any worker stops
// the others from taking new work and is rethrown on the calling thread.
//
// - parallel_for: indices [0, n) pulled from a shared atomic counter in chunks.
// - parallel_for_lead: the same after the calling thread ran `lead()`.
// - parallel_ordered: a pipeline; workers produce items, the calling thread
//   consumes them strictly in index order, with bounded work in flight.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace hpak {

unsigned default_threads(); // hardware concurrency, at least 1

namespace detail {
// Runs work(tid) for tid in [0, threads) on as many threads, tid 0 on the
// calling thread; joins them all and rethrows the first exception, after
// calling stop() (so the others can end early) for every exception caught.
template <class Work, class Stop>
void run_threads(unsigned threads, Work&& work, Stop&& stop) {
  std::exception_ptr error;
  std::mutex error_mu;
  auto guarded = [&](unsigned tid) {
    try {
      work(tid);
    } catch (...) {
      {
        std::lock_guard lk(error_mu);
        if (!error) error = std::current_exception();
      }
      stop();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; t++) pool.emplace_back(guarded, t);
  guarded(0);
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}
} // namespace detail

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
  auto work = [&](unsigned tid) {
    if (tid == 0) lead();
    while (!failed.load(std::memory_order_relaxed)) {
      size_t begin = next.fetch_add(chunk, std::memory_order_relaxed);
      if (begin >= n) break;
      size_t end = std::min(n, begin + chunk);
      for (size_t i = begin; i < end; i++) fn(i, tid);
    }
  };
  detail::run_threads(threads, work, [&] { failed = true; });
}

template <class F>
void parallel_for(size_t n, unsigned threads, size_t chunk, F&& fn) {
  parallel_for_lead(n, threads, chunk, [] {}, std::forward<F>(fn));
}

// What parallel_ordered lets run ahead of the consumer: at most `window`
// items, and items whose cost adds up to at most `budget` (the next item to
// consume is always let in, whatever its cost).
struct InFlight {
  size_t window = 1024;
  uint64_t budget = UINT64_MAX;
};

// Calls produce(i) for every i in [0, n) on `threads` worker threads (which
// take indices in order), and consume(i) on the calling thread for i = 0, 1,
// ... each once its produce returned, so the consumer sees items in index
// order whatever the thread count. A worker waits before producing item i
// until `limits` let it in, with cost(i) counted until consume(i) returns.
template <class Cost, class Produce, class Consume>
void parallel_ordered(size_t n, unsigned threads, InFlight limits, Cost&& cost, Produce&& produce, Consume&& consume) {
  if (n == 0) return;
  std::mutex mu; // guards everything below but `next`
  std::condition_variable cv;
  std::vector<uint64_t> costs(n);
  std::vector<char> ready(n, 0);
  size_t consumed = 0;
  uint64_t inflight = 0;
  bool failed = false;
  std::atomic<size_t> next{0};
  auto admitted = [&](size_t i, uint64_t c) {
    return i < consumed + limits.window && (i == consumed || inflight + c <= limits.budget);
  };
  auto produce_all = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      uint64_t c = cost(i);
      {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return failed || admitted(i, c); });
        if (failed) return;
        inflight += c;
        costs[i] = c;
      }
      produce(i);
      {
        std::lock_guard lk(mu);
        ready[i] = 1;
      }
      cv.notify_all();
    }
  };
  auto consume_all = [&] {
    for (size_t i = 0; i < n; i++) {
      {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return failed || ready[i]; });
        if (failed) return;
      }
      consume(i);
      {
        std::lock_guard lk(mu);
        inflight -= costs[i];
        consumed = i + 1;
      }
      cv.notify_all();
    }
  };
  auto stop = [&] {
    {
      std::lock_guard lk(mu);
      failed = true;
    }
    cv.notify_all();
  };
  const unsigned workers = std::max(1u, std::min<unsigned>(threads, unsigned(std::min<size_t>(n, UINT32_MAX))));
  auto work = [&](unsigned tid) {
    if (tid == 0) consume_all();
    else produce_all();
  };
  detail::run_threads(workers + 1, work, stop);
}

} // namespace hpak
