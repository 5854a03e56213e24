// AsyncSha256: SHA-256 of a byte stream computed on a helper thread, so a
// writer that copies large runs of bytes (gc's verbatim repack) overlaps the
// hashing with its own work instead of paying for both in turn.
//
// submit() queues a span; the caller keeps its bytes valid and unchanged
// until wait(ticket) or drain() returns. Spans are hashed in submission order.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

#include "core/util/hash.hpp"

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
  // The hash state; use only after drain(), from the submitting thread.
  Sha256& state() { return sha_; }

private:
  void run();
  Sha256 sha_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ByteSpan> queue_;
  uint64_t submitted_ = 0, done_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

} // namespace hpak
