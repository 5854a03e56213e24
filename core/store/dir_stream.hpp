// Directory listing without a closedir to forget: DirStream owns its os::Dir,
// skips "." and "..", and throws on a read error instead of ending early (a
// listing cut short by EIO must not look like a smaller directory to gc).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/os/sys.hpp"
#include "base/os/file.hpp"

namespace hpak::store {

class DirStream {
public:
  // opendir(path). `what` names the directory in errors (default: path).
  explicit DirStream(const std::string& path);
  // Takes ownership of `dir`, an open directory.
  DirStream(Fd dir, std::string what);
  // A fresh open file description of the directory open at `dirfd` (a dup
  // would share, and advance, the caller's offset); `dirfd` stays the caller's.
  static DirStream reopen(int dirfd, std::string what);
  ~DirStream();
  DirStream(DirStream&& o) noexcept : dir_(o.dir_), what_(std::move(o.what_)) { o.dir_ = nullptr; }
  DirStream(const DirStream&) = delete;
  DirStream& operator=(const DirStream&) = delete;
  DirStream& operator=(DirStream&&) = delete;

  // The next name, or nullopt at the end. Valid until the next call.
  std::optional<std::string_view> next();
  int fd() const { return os::dir_fd(dir_); }

private:
  os::Dir* dir_ = nullptr;
  std::string what_;
};

// Every name of a directory (no "." or ".."), sorted.
std::vector<std::string> list_dir(const std::string& dir);
std::vector<std::string> list_dir_at(int dirfd, const std::string& what);

} // namespace hpak::store
