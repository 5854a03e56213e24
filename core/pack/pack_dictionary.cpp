#include "core/pack/pack_dictionary.hpp"

#include <algorithm>

#include "base/os/file.hpp"
#include "base/os/sys.hpp"
#include "base/zstd_codec.hpp"

namespace hpak {

namespace {

struct Sample {
  Bytes bytes;
  std::vector<size_t> sizes;
};

// Reads one small file into the sample (false if it cannot be read now).
bool read_into(const WalkedTree& walked, size_t node, Sample& s) {
  const formats::Node& n = walked.tree.nodes[node];
  Fd fd(os::open_at(walked.rootfd.get(), n.path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return false;
  Bytes b;
  try {
    b = read_fd_bounded(fd.get(), n.path.str(), n.size);
  } catch (const Error&) {
    return false; // changed since the walk: the hash pass reports what matters
  }
  if (b.empty()) return false;
  s.bytes.insert(s.bytes.end(), b.begin(), b.end());
  s.sizes.push_back(b.size());
  return true;
}

// The training sample: every stride-th small file, up to `budget` bytes.
Sample training_sample(const WalkedTree& walked, const std::vector<size_t>& small, size_t stride, uint64_t budget) {
  Sample s;
  for (size_t k = 0; k < small.size() && s.bytes.size() < budget; k += stride) read_into(walked, small[k], s);
  return s;
}

// The judging sample: `windows` runs of consecutive small files, a block's
// worth each, spread over the tree, skipping the training files: groups like
// the blocks the pack will hold, of files the dictionary was not trained on.
std::vector<Sample> judging_sample(const WalkedTree& walked, const std::vector<size_t>& small, size_t stride, size_t windows,
                                   uint64_t block) {
  std::vector<Sample> out;
  for (size_t w = 0; w < windows; w++) {
    Sample s;
    for (size_t k = (2 * w + 1) * small.size() / (2 * windows); k < small.size() && s.bytes.size() < block; k++)
      if (k % stride != 0) read_into(walked, small[k], s);
    if (!s.bytes.empty()) out.push_back(std::move(s));
  }
  return out;
}

// The stored bytes of the judging groups, each compressed as one block.
uint64_t stored_size(const std::vector<Sample>& groups, int level, const ZstdDict* dict) {
  uint64_t total = 0;
  Bytes out;
  for (const Sample& g : groups) {
    zstd_compress(g.bytes, level, dict, out);
    total += out.size();
  }
  return total;
}

} // namespace

DictionaryChoice choose_dictionary(const WalkedTree& walked, const PackWriter& writer, int level) {
  DictionaryChoice c;
  std::vector<size_t> small;
  for (size_t i : walked.tree.files) {
    uint64_t size = walked.tree.nodes[i].size;
    if (size == 0 || !writer.is_small(size)) continue;
    small.push_back(i);
    c.small_bytes += size;
  }
  if (level <= 0 || c.small_bytes < kDictMinSmallBytes) return c;
  const size_t capacity = c.small_bytes >= kDictLargeFromBytes ? 64 * 1024 : 16 * 1024;
  const uint64_t budget = capacity * kDictSampleRatio;
  const uint64_t block = formats::kDefaultBlockTarget;
  const size_t stride = size_t(std::max<uint64_t>(2, (c.small_bytes + budget - 1) / budget));
  Sample train = training_sample(walked, small, stride, budget);
  std::vector<Sample> judge = judging_sample(walked, small, stride, size_t(std::max<uint64_t>(8, budget / 4 / block)), block);
  c.sample_bytes = train.bytes.size();
  uint64_t judged = 0;
  for (const Sample& g : judge) judged += g.bytes.size();
  if (train.sizes.size() < 16 || judged == 0) return c;
  Bytes dict = zstd_train_dict(train.bytes, train.sizes, capacity, level);
  if (dict.empty()) return c;
  ZstdDict zd(dict, level);
  int64_t saved = int64_t(stored_size(judge, level, nullptr)) - int64_t(stored_size(judge, level, &zd));
  Bytes stored;
  zstd_compress(dict, level, nullptr, stored);
  c.estimated_gain = int64_t(double(saved) * double(c.small_bytes) / double(judged)) - 2 * int64_t(stored.size());
  if (c.estimated_gain > 0) c.dict = std::move(dict);
  return c;
}

} // namespace hpak
