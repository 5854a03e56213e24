#include "core/store/dir_stream.hpp"

#include <algorithm>
#include <cerrno>

#include "base/os/sys.hpp"
#include "base/error.hpp"

namespace hpak::store {

DirStream::DirStream(const std::string& path) : dir_(os::dir_open(path.c_str())), what_(path) {
  if (!dir_) throw_errno("unable to read '" + what_ + "'");
}

DirStream::DirStream(Fd dir, std::string what) : what_(std::move(what)) {
  dir_ = os::dir_from_fd(dir.get());
  if (!dir_) throw_errno("unable to read '" + what_ + "'");
  dir.release(); // closedir closes it
}

DirStream DirStream::reopen(int dirfd, std::string what) {
  int fd = os::open_at(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_errno("unable to read '" + what + "'");
  return DirStream(Fd(fd), std::move(what));
}

DirStream::~DirStream() {
  if (dir_) os::dir_close(dir_);
}

std::optional<std::string_view> DirStream::next() {
  for (;;) {
    const char* e = os::dir_next(dir_);
    if (!e) {
      if (errno != 0) throw_errno("unable to read '" + what_ + "'");
      return std::nullopt;
    }
    std::string_view n(e);
    if (n != "." && n != "..") return n;
  }
}

static std::vector<std::string> drain_sorted(DirStream& d) {
  std::vector<std::string> out;
  while (auto n = d.next()) out.emplace_back(*n);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> list_dir(const std::string& dir) {
  DirStream d(dir);
  return drain_sorted(d);
}

std::vector<std::string> list_dir_at(int dirfd, const std::string& what) {
  DirStream d = DirStream::reopen(dirfd, what);
  return drain_sorted(d);
}

} // namespace hpak::store
