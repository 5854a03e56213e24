#include "core/mount/mount_content.hpp"

#include "base/os/sys.hpp"
#include "base/error.hpp"
#include "core/pack/relocation.hpp"
#include "core/restore/materialize.hpp"

namespace hpak {

MountContent::MountContent(const MountTree& tree, const ObjectSource& src, const ReadChecks& checks, std::string shown,
                           std::function<void(const std::string&)> on_error, uint64_t cache_bytes)
    : tree_(tree), src_(src), checks_(checks), shown_(std::move(shown)), on_error_(std::move(on_error)), cache_bytes_(cache_bytes) {}

std::shared_ptr<MountContent::File> MountContent::file(uint64_t ino) {
  std::lock_guard lk(mu_);
  auto it = cache_.find(ino);
  if (it != cache_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second.file;
  }
  lru_.push_front(ino);
  auto f = std::make_shared<File>();
  cache_.emplace(ino, Cached{f, lru_.begin()});
  trim();
  return f;
}

void MountContent::trim() {
  // A file held elsewhere (use_count > 1: an open handle, a read in flight)
  // stays; only this lock hands out new holders, so the count cannot grow
  // while it is looked at. A file being loaded is held by its loader.
  for (auto it = lru_.end(); it != lru_.begin() && (held_ > cache_bytes_ || cache_.size() > kMaxCached);) {
    --it;
    auto c = cache_.find(*it);
    File& f = *c->second.file;
    if (c->second.file.use_count() > 1) continue;
    std::unique_lock fl(f.mu, std::try_to_lock); // never waits: nobody else holds f
    if (!fl || f.failed) continue;                // a failed file stays EIO
    const uint64_t bytes = f.loaded ? f.size : 0;
    fl.unlock();
    held_ -= bytes;
    cache_.erase(c);
    it = lru_.erase(it);
  }
}

bool MountContent::serve_mapped(const formats::Node& n, File& f) {
  if (n.size < kKernelCopyThreshold) return false;
  std::optional<ObjectRef> ref = src_.locate(n.digest);
  if (!ref || ref->rec.codec != formats::Codec::Raw || ref->rec.member != formats::kNoMember || ref->rec.raw_len != n.size ||
      ref->pack->checks_every_read())
    return false;
  const RelocAction action = reloc_action(n, tree_.catalog().roots, tree_.relocate_to());
  if (action == RelocAction::Splice || action == RelocAction::Pad || action == RelocAction::Blocked) return false;
  ByteSpan stored = ref->pack->checked_stored(ref->rec); // entry header and XXH3, as a restore checks them
  if (checks_.verify && sha256(stored) != n.digest)
    throw Corrupt(ref->pack->path(), ref->rec.offset, "content of " + to_hex(n.digest) + " does not match its name");
  if (stored.size() != n.size) return false;
  f.mapped = stored;
  f.size = n.size;
  return true;
}

bool MountContent::load(uint64_t ino, File& f) {
  std::lock_guard lk(f.mu);
  if (f.loaded) return !f.failed;
  f.loaded = true;
  const bool ok = decode(ino, f);
  f.done.store(true, std::memory_order_release);
  return ok;
}

bool MountContent::decode(uint64_t ino, File& f) {
  const formats::Node* n = tree_.node_of(ino);
  try {
    if (!n || n->type != formats::NodeType::File) throw Error("internal error: inode " + std::to_string(ino) + " is not a file");
    if (serve_mapped(*n, f)) return true; // held in the pack's mapping, not in cache_bytes_
    Fd mfd(os::memfd("hpak-mount"));
    if (!mfd) throw_errno("unable to make a memory file for '" + shown_ + "/" + n->path + "'");
    Bytes scratch;
    write_file_content(*n, tree_.catalog(), src_, mfd.get(), shown_, tree_.relocate_to(), checks_, scratch);
    f.size = tree_.inode(ino)->size;
    f.fd = std::move(mfd);
    std::lock_guard clk(mu_);
    held_ += f.size;
    trim();
    return true;
  } catch (const std::exception& e) {
    f.failed = true;
    failures_++;
    if (on_error_) on_error_(std::string("'") + shown_ + "/" + (n ? n->path : "?") + "' unreadable: " + e.what());
    return false;
  }
}

} // namespace hpak
