// The os seam's processes and local sockets (base/os/sys.hpp), Linux.
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/os/sys.hpp"

extern char** environ;

namespace hpak::os {

int run_program(const std::vector<std::string>& args) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t child;
  int err = posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), environ);
  if (err != 0) {
    errno = err;
    return -1;
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR) return 255;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

bool make_temp_dir(std::string& templ) {
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back(0);
  if (!mkdtemp(buf.data())) return false;
  templ = buf.data();
  return true;
}

int make_temp_file(std::string& templ) { return mkostemp(templ.data(), O_CLOEXEC); }

int connect_local(const std::string& path, int timeout_s) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20); // glibc's own upper bound for its sliding threshold
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

void fault_in(void* p, size_t n) {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23; // Linux 5.14; older headers lack the name
#endif
  if (n < (size_t(128) << 10)) return;
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t from = (uintptr_t(p) + page - 1) & ~(page - 1), to = (uintptr_t(p) + n) & ~(page - 1);
  if (to > from) (void)madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);
}

} // namespace hpak::os
