#include "core/pack/block_compressor.hpp"

namespace hpak {

using namespace formats;

std::vector<size_t> block_cuts(const std::vector<formats::BlockMember>& members, size_t every) {
  std::vector<size_t> cuts;
  size_t end = 0, last = 0;
  for (const auto& m : members) {
    end += m.raw_len;
    if (end - last >= every) cuts.push_back(last = end);
  }
  if (!cuts.empty() && cuts.back() == end) cuts.pop_back(); // the frame's end is no cut
  return cuts;
}

void compress_block(ClosedBlock& b, int level, const ZstdDict* dict) {
  if (level > 0) zstd_compress_cut(b.raw, block_cuts(b.members, kBlockCutEvery), level, dict, b.stored);
  if (level > 0 && b.stored.size() < b.raw.size()) {
    b.codec = dict ? Codec::ZstdDict : Codec::Zstd;
    b.raw = Bytes();
    return;
  }
  b.codec = Codec::Raw;
  b.stored = std::move(b.raw);
}

BlockCompressor::BlockCompressor(unsigned helpers) {
  for (unsigned i = 0; i < std::max(1u, helpers); i++) workers_.emplace_back([this] { run(); });
}

BlockCompressor::~BlockCompressor() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void BlockCompressor::submit(ClosedBlock b, int level, const ZstdDict* dict) {
  auto slot = std::make_unique<Slot>();
  slot->block = std::move(b);
  slot->level = level;
  slot->dict = dict;
  {
    std::lock_guard lk(mu_);
    slots_.push_back(std::move(slot));
  }
  work_cv_.notify_one();
}

size_t BlockCompressor::pending() const {
  std::lock_guard lk(mu_);
  return slots_.size();
}

bool BlockCompressor::oldest_done() const {
  std::lock_guard lk(mu_);
  return !slots_.empty() && slots_.front()->done;
}

ClosedBlock BlockCompressor::take() {
  std::unique_ptr<Slot> slot;
  {
    std::unique_lock lk(mu_);
    if (slots_.empty()) throw Error("internal error: no block to take");
    done_cv_.wait(lk, [&] { return slots_.front()->done; });
    slot = std::move(slots_.front());
    slots_.pop_front();
  }
  if (slot->error) std::rethrow_exception(slot->error);
  return std::move(slot->block);
}

BlockCompressor::Slot* BlockCompressor::next_to_start() {
  for (auto& s : slots_)
    if (!s->started) return s.get();
  return nullptr;
}

// A slot stays in slots_ until taken, and is taken only once done: the
// pointer a helper holds while it compresses stays valid.
void BlockCompressor::run() {
  std::unique_lock lk(mu_);
  for (;;) {
    Slot* s = nullptr;
    work_cv_.wait(lk, [&] { return stop_ || (s = next_to_start()) != nullptr; });
    if (stop_) return;
    s->started = true;
    lk.unlock();
    try {
      compress_block(s->block, s->level, s->dict);
    } catch (...) {
      s->error = std::current_exception();
    }
    lk.lock();
    s->done = true;
    done_cv_.notify_all();
  }
}

} // namespace hpak
