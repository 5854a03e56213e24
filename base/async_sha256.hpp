// AsyncSha256: SHA-256 of a byte stream computed on a helper thread, so a
// writer that copies large runs of bytes (gc's verbatim repack) overlaps the
// hashing with its own work instead of paying for both in turn.
//
// submit() queues a span; the caller keeps its bytes valid and unchanged
// until wait(ticket), drain() or cancel() returns. Spans are hashed in
// submission order. The destructor cancels: spans still queued are dropped,
// not hashed, so no span is read after its owner gave up on the hash (an
// exception unwinding past the writer frees the bytes).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

#include "base/hash.hpp"

namespace hpak {

class AsyncSha256 {
public:
  AsyncSha256();
  ~AsyncSha256();
  AsyncSha256(const AsyncSha256&) = delete;
  AsyncSha256& operator=(const AsyncSha256&) = delete;

  uint64_t submit(ByteSpan data); // returns a ticket
  void wait(uint64_t ticket);     // until that span (and all before it) is hashed
  void drain();                   // until everything submitted is hashed
  // Drops the spans not yet started and waits for the one being hashed: once
  // it returns, no span submitted so far is read again. The hash is then
  // unusable (state() throws).
  void cancel() noexcept;
  // The hash state; use only after drain(), from the submitting thread.
  Sha256& state();

private:
  void run();
  Sha256 sha_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ByteSpan> queue_;
  uint64_t submitted_ = 0, done_ = 0;
  bool stop_ = false, cancelled_ = false, busy_ = false;
  std::thread worker_;
};

} // namespace hpak
