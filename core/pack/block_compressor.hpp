// BlockCompressor: compresses a pack's closed blocks of small objects on
// helper threads, so the thread that fills the blocks (pack's writer, gc
// storing the live members of a block again) does not wait for zstd.
//
// Blocks are taken back in the order they were submitted, each compressed by
// the same rule as on one thread (compress_block), so a pack is byte for byte
// the one a single thread writes.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/bytes.hpp"
#include "base/zstd_codec.hpp"
#include "formats/pack_format.hpp"

namespace hpak {

struct ClosedBlock {
  Bytes raw; // the members' bytes, in member order
  std::vector<formats::BlockMember> members;
  formats::Codec codec = formats::Codec::Raw; // set by compress_block
  Bytes stored;                               // the payload: a zstd frame, or `raw` moved here
};

// Where a block's frame ends a zstd block: at the end of the member that
// reaches `every` bytes past the previous cut (never at the block's end).
// zstd decodes a block whole, so a member read alone costs the decode of the
// frame up to the first cut past its end, not of the whole 64 KiB block
// (a dirty restore reads one changed file from each of hundreds of blocks).
constexpr size_t kBlockCutEvery = 16 * 1024;
std::vector<size_t> block_cuts(const std::vector<formats::BlockMember>& members, size_t every);

// A block's codec rule: zstd (against `dict` when set; its frame cut at
// block_cuts) if that is smaller than the raw bytes and `level` > 0, else raw.
void compress_block(ClosedBlock& b, int level, const ZstdDict* dict);

class BlockCompressor {
public:
  explicit BlockCompressor(unsigned helpers);
  // Stops the helpers: blocks not taken are dropped (the pack is abandoned).
  ~BlockCompressor();
  BlockCompressor(const BlockCompressor&) = delete;
  BlockCompressor& operator=(const BlockCompressor&) = delete;

  // `dict` must outlive this compressor.
  void submit(ClosedBlock b, int level, const ZstdDict* dict);
  size_t pending() const; // submitted and not taken yet
  bool oldest_done() const;
  // The oldest block not taken yet, once compressed (waits for it); rethrows
  // what compressing it threw.
  ClosedBlock take();
  // How many blocks may wait: beyond it, the submitter takes the oldest first.
  size_t window() const { return 2 * workers_.size() + 1; }

private:
  struct Slot {
    ClosedBlock block;
    int level = 0;
    const ZstdDict* dict = nullptr;
    bool started = false, done = false;
    std::exception_ptr error;
  };
  void run();
  Slot* next_to_start(); // under mu_

  mutable std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::unique_ptr<Slot>> slots_; // submission order
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

} // namespace hpak
