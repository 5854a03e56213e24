#include "base/async_sha256.hpp"

#include "base/error.hpp"

namespace hpak {

AsyncSha256::AsyncSha256() : worker_([this] { run(); }) {}

AsyncSha256::~AsyncSha256() {
  cancel();
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void AsyncSha256::cancel() noexcept {
  std::unique_lock lk(mu_);
  cancelled_ = true;
  queue_.clear();
  cv_.wait(lk, [&] { return !busy_; });
  done_ = submitted_; // nobody waits for a dropped span
  cv_.notify_all();
}

Sha256& AsyncSha256::state() {
  if (cancelled_) throw Error("internal error: the hash of a cancelled AsyncSha256 was asked for");
  return sha_;
}

uint64_t AsyncSha256::submit(ByteSpan data) {
  std::lock_guard lk(mu_);
  uint64_t ticket = ++submitted_;
  if (cancelled_) { // never read: the hash is given up
    done_ = submitted_;
    return ticket;
  }
  queue_.push_back(data);
  cv_.notify_all();
  return ticket;
}

void AsyncSha256::wait(uint64_t ticket) {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return done_ >= ticket; });
}

void AsyncSha256::drain() {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return done_ >= submitted_; });
}

void AsyncSha256::run() {
  std::unique_lock lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return; // stop_ and nothing left
    ByteSpan next = queue_.front();
    queue_.pop_front();
    busy_ = true;
    lk.unlock();
    sha_.update(next);
    lk.lock();
    busy_ = false;
    done_++;
    cv_.notify_all();
  }
}

} // namespace hpak
