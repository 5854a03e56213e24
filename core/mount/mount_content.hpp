// The bytes of a mounted file (hpak mount): decoded on its first read, not
// at mount or open, exactly as a restore writes them and with the same
// checks (write_file_content, core/restore/materialize.hpp: the entry header,
// the XXH3 of the stored bytes, the SHA-256 too with `verify`; relocated to
// the mount's path; block members through the pack reader's block cache).
// They go into an anonymous memory file (memfd) that reads are served from,
// but for a large raw object served as packed (stored raw, at least
// kKernelCopyThreshold bytes, not rewritten by the relocation, in a pack
// whose mapping may be read from: not another member's of a shared library):
// its stored bytes are checked in the pack's mapping on the first read, as a
// restore checks them, and each read is then served from that range of the
// mapping, nothing copied (a mapping stays valid after gc deletes the file). The memory files are cached per inode,
// the least recently used dropped once more than `cache_bytes` of them are
// held by no open handle or read in flight (the kernel's page cache keeps
// what was read; a file dropped and read again is decoded again). A file
// whose object is missing or fails a check is never served: every read of
// it fails (EIO), and the failure is reported once through `on_error`.
#pragma once

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/os/file.hpp"
#include "core/mount/mount_tree.hpp"
#include "core/pack/large_copy.hpp"
#include "core/pack/object_source.hpp"

namespace hpak {

class MountContent {
public:
  // The decoded bytes of one file, shared by its open handles.
  struct File {
    std::mutex mu;
    bool loaded = false;
    bool failed = false;
    std::atomic<bool> done{false}; // load has finished (loaded or failed): a read needs no decode

    Fd fd;             // the memfd holding the bytes (once loaded), or
    ByteSpan mapped;   // a large raw object's checked bytes in its pack's mapping (fd empty)
    uint64_t size = 0; // as a restore writes it
  };

  static constexpr uint64_t kDefaultCacheBytes = 64ull << 20;

  MountContent(const MountTree& tree, const ObjectSource& src, const ReadChecks& checks, std::string shown,
               std::function<void(const std::string&)> on_error, uint64_t cache_bytes = kDefaultCacheBytes);
  // The shared state of regular file `ino`: the cached one, else a new one
  // (not loaded yet); the most recently used from now.
  std::shared_ptr<File> file(uint64_t ino);
  // Loads `f` of `ino` if it is not yet; false when its object cannot be
  // served (reported once).
  bool load(uint64_t ino, File& f);
  // Files whose object failed since the mount (for tests and the summary).
  uint64_t failures() const { return failures_; }

private:
  const MountTree& tree_;
  const ObjectSource& src_;
  ReadChecks checks_;
  std::string shown_;
  std::function<void(const std::string&)> on_error_;
  struct Cached {
    std::shared_ptr<File> file;
    std::list<uint64_t>::iterator lru; // its place in lru_
  };
  // The body of load, under f.mu: decodes and checks `f`'s bytes; false when they cannot be served (reported).
  bool decode(uint64_t ino, File& f);
  // A large raw object served from its pack's mapping (see above): checked,
  // `f` set; false when `n` is not one (then decoded into a memfd).
  bool serve_mapped(const formats::Node& n, File& f);
  // Drops the least recently used files nobody holds while more than
  // cache_bytes_ are held (or more than kMaxCached inodes); under mu_.
  void trim();
  static constexpr size_t kMaxCached = 1 << 16;

  uint64_t cache_bytes_;
  std::mutex mu_;
  std::unordered_map<uint64_t, Cached> cache_;
  std::list<uint64_t> lru_; // most recently used first
  uint64_t held_ = 0;       // bytes of the loaded files in cache_
  std::atomic<uint64_t> failures_{0};
};

} // namespace hpak
