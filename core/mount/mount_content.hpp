// The bytes of a mounted file (hpak mount): decoded on its first read, not
// at mount or open, exactly as a restore writes them and with the same
// checks (write_file_content, core/restore/materialize.hpp: the entry header,
// the XXH3 of the stored bytes, the SHA-256 too with `verify`; relocated to
// the mount's path; block members through the pack reader's block cache,
// large raw objects copied by range). They go into an anonymous memory file
// (memfd) that reads are served from, and which goes when the last open
// handle of the file closes (the kernel's page cache keeps what was read).
// A file whose object is missing or fails a check is never served: every
// read of it fails (EIO) until its handles close, and the failure is
// reported once through `on_error`.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

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
    Fd fd;             // the memfd holding the bytes (once loaded)
    uint64_t size = 0; // as a restore writes it
  };

  MountContent(const MountTree& tree, const ObjectSource& src, const ReadChecks& checks, std::string shown,
               std::function<void(const std::string&)> on_error);
  // The shared state of regular file `ino` (not loaded yet).
  std::shared_ptr<File> open(uint64_t ino);
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
  std::mutex mu_;
  std::map<uint64_t, std::weak_ptr<File>> open_;
  std::atomic<uint64_t> failures_{0};
};

} // namespace hpak
