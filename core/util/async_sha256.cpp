#include "core/util/async_sha256.hpp"

namespace hpak {

AsyncSha256::AsyncSha256() : worker_([this] { run(); }) {}

AsyncSha256::~AsyncSha256() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

uint64_t AsyncSha256::submit(ByteSpan data) {
  std::lock_guard lk(mu_);
  queue_.push_back(data);
  uint64_t ticket = ++submitted_;
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
    lk.unlock();
    sha_.update(next);
    lk.lock();
    done_++;
    cv_.notify_all();
  }
}

} // namespace hpak
