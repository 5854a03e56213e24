// The Linux part of base/os/file.hpp (the rest, common to every platform, is
// base/os/file.cpp): whether a process is gone, the descriptor limit and
// realpath(3), closing runs of descriptors.
#include "base/os/file.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <sys/resource.h>
#include <unistd.h>

namespace hpak {

bool process_gone(long pid) { return pid > 0 && kill(pid_t(pid), 0) != 0 && errno == ESRCH; }

long raise_fd_limit() {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur == RLIM_INFINITY ? LONG_MAX : long(rl.rlim_cur);
}

void reserve_fds(size_t n) {
  long limit = raise_fd_limit();
  long want = std::min<long>(limit - 1, long(n) + 64);
  if (want <= 3) return;
  int fd = dup2(0, int(want));
  if (fd >= 0) ::close(fd);
}

void close_fds(std::vector<int>& fds) {
  std::sort(fds.begin(), fds.end());
  auto it = std::upper_bound(fds.begin(), fds.end(), -1);
  while (it != fds.end()) {
    auto run_end = it + 1; // [it, run_end): consecutive numbers
    while (run_end != fds.end() && *run_end == *(run_end - 1) + 1) run_end++;
    if (run_end - it == 1 || ::close_range(unsigned(*it), unsigned(*(run_end - 1)), 0) != 0)
      for (auto f = it; f != run_end; f++) ::close(*f);
    it = run_end;
  }
  std::fill(fds.begin(), fds.end(), -1);
}

std::string real_path(const std::string& path) {
  char* r = ::realpath(path.c_str(), nullptr);
  if (!r) throw_errno("unable to resolve '" + path + "'");
  std::string s(r);
  free(r);
  return s;
}

} // namespace hpak
