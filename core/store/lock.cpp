#include "core/store/lock.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/os/sys.hpp"
#include "core/store/lock_scope.hpp"
#include "base/diag.hpp"
#include "base/error.hpp"

namespace hpak::store {

namespace {

// "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" naming the file `st`
// (waiters, with "->", are not holders): its pid, or "".
std::string holder_pid_in(const char* line, const os::FileStat& st) {
  char type[32], adv[32], mode[32], dev_ino[128];
  long pid = 0;
  if (strstr(line, "->")) return {};
  if (sscanf(line, "%*[^:]: %31s %31s %31s %ld %127s", type, adv, mode, &pid, dev_ino) != 5) return {};
  unsigned maj = 0, min = 0;
  unsigned long long ino = 0;
  if (std::string(type) != "FLOCK" || sscanf(dev_ino, "%x:%x:%llu", &maj, &min, &ino) != 3) return {};
  if (ino != (unsigned long long)st.st_ino || maj != os::dev_major(st.st_dev) || min != os::dev_minor(st.st_dev)) return {};
  return std::to_string(pid);
}

std::string comm_of(const std::string& pid) {
  try {
    Bytes c = read_file("/proc/" + pid + "/comm");
    std::string comm(c.begin(), c.end());
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    return comm;
  } catch (const Error&) {
    return {};
  }
}

// A lock file is a library file like any other: opened without following a
// symlink (gc would write its holder line wherever one points) or blocking on
// a FIFO, and only if it is a regular file. `read_only_ok`: fall back to
// read-only for another user's file (flock needs no write access).
// EACCES on a lock file of a shared library: almost always a member who ran
// hpak with umask 022 created it without group write (man/hpak-library.7,
// PERMISSIONS). Says so, and how to fix it.
[[noreturn]] void throw_lock_access_error(const std::string& p, bool shared_library) {
  os::FileStat st;
  if (!shared_library || os::lstat_path(p.c_str(), st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & S_IWGRP))
    throw_open_error(p, EACCES, Follow::NoLinks);
  char mode[8];
  snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
  std::string owner;
  if (!os::user_of(st.st_uid, &owner, nullptr) || owner.empty()) owner = "uid " + std::to_string(st.st_uid);
  throw Error("unable to open '" + p + "' for writing: Permission denied; it is not group-writable (mode " + mode + ", owner '" +
              owner + "'), so it was created with umask 022 or stricter, while members of a shared library must run hpak with umask 002: '" +
              owner + "' or root can fix it with 'chmod g+w " + p + "'");
}

Fd open_lock_file(const std::string& p, bool shared_library, bool read_only_ok) {
  const int flags = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  int fd = os::open_path(p.c_str(), O_RDWR | O_CREAT | flags, shared_library ? 0664 : 0644);
  if (fd < 0 && errno == EACCES && read_only_ok) fd = os::open_path(p.c_str(), O_RDONLY | flags);
  if (fd < 0 && errno == EACCES) throw_lock_access_error(p, shared_library);
  if (fd < 0) throw_open_error(p, errno, Follow::NoLinks);
  Fd guard(fd);
  require_regular(fd, p);
  return guard;
}

bool locks_unsupported(int err) { return err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS; }

[[noreturn]] void throw_lock_error(const std::string& p, int err) {
  if (locks_unsupported(err))
    throw Error("unable to lock '" + p + "': " + strerror(err) +
                "; adding to, gc and repair of a library need flock(2), which this file system does not provide (restoring needs no lock)");
  throw_errno("unable to lock '" + p + "'", err);
}

// flock(fd, op | LOCK_NB): true if taken, false if someone else holds it.
bool try_flock(int fd, int op, const std::string& p) {
  if (os::flock(fd, op | LOCK_NB) == 0) return true;
  if (errno != EWOULDBLOCK && errno != EINTR) throw_lock_error(p, errno);
  return false;
}

// The gc.lock holder for an error message: the "host H pid N" line the last
// hpak holder wrote, trusted only when N is the pid /proc/locks names.
std::string describe_gc_holder(int fd, const std::string& p) {
  Bytes who = read_fd_bounded(fd, p, 4096);
  std::string recorded(who.begin(), who.end());
  while (!recorded.empty() && recorded.back() == '\n') recorded.pop_back();
  std::string holder = flock_holder(fd);
  if (!holder.empty() && !recorded.empty()) {
    std::string pid = holder.substr(0, holder.find(' ', 4));
    auto at = recorded.rfind(pid);
    if (at != std::string::npos && at + pid.size() == recorded.size()) holder = recorded + holder.substr(pid.size());
  } else if (holder.empty() && !recorded.empty()) {
    holder = "last recorded holder: " + recorded;
  }
  return holder;
}

// Best effort: the line only names the holder in another gc's error. On a
// full disk it cannot be written, and gc must run all the same (it is what
// frees the space).
void record_holder(int fd) {
  char host[256] = "?";
  os::host_name(host, sizeof host - 1);
  std::string who = "host " + std::string(host) + " pid " + std::to_string(os::pid()) + "\n";
  if (os::truncate(fd, 0) == 0 && os::pwrite(fd, who.data(), who.size(), 0) < 0) {
  }
}

void report_wait(int fd, const std::string& p, const char* mode) {
  diag_debug([&] {
    std::string holder = flock_holder(fd);
    return "waiting for " + std::string(mode) + " lock '" + p + "'" + (holder.empty() ? "" : " (held by " + holder + ")");
  });
}

void report_waited(const std::string& p, std::chrono::steady_clock::time_point since) {
  diag_debug([&] {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
    return "lock '" + p + "' taken after " + std::to_string(int(s * 1000)) + " ms";
  });
}

} // namespace

std::string flock_holder(int fd) {
  os::FileStat st;
  if (os::fstat(fd, st) != 0) return {};
  FILE* f = fopen("/proc/locks", "re");
  if (!f) return {};
  char line[512];
  std::string pid;
  while (pid.empty() && fgets(line, sizeof line, f)) pid = holder_pid_in(line, st);
  fclose(f);
  if (pid.empty()) return {};
  std::string comm = comm_of(pid);
  return "pid " + pid + (comm.empty() ? "" : " (" + comm + ")");
}

void check_locks_work(const Layout& layout, bool shared_library) {
  const std::string p = layout.publish_lock();
  Fd fd = open_lock_file(p, shared_library, /*read_only_ok=*/true);
  refuse_host_local_locks(fd.get(), layout.root());
  if (os::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) return; // released with the fd
  if (locks_unsupported(errno)) throw_lock_error(p, errno);
}

GcLock::GcLock(const Layout& layout, bool shared_library) {
  const std::string p = layout.gc_lock();
  fd_ = open_lock_file(p, shared_library, /*read_only_ok=*/false);
  refuse_host_local_locks(fd_.get(), layout.root());
  if (!try_flock(fd_.get(), LOCK_EX, p)) {
    std::string holder = describe_gc_holder(fd_.get(), p);
    throw Error("another gc or repair is running on '" + layout.root() + "'" + (holder.empty() ? "" : " (" + holder + ")"));
  }
  record_holder(fd_.get());
}

PublishLock::PublishLock(const Layout& layout, bool shared_library, bool exclusive) {
  const std::string p = layout.publish_lock();
  fd_ = open_lock_file(p, shared_library, /*read_only_ok=*/true);
  refuse_host_local_locks(fd_.get(), layout.root());
  if (try_flock(fd_.get(), exclusive ? LOCK_EX : LOCK_SH, p)) return;
  report_wait(fd_.get(), p, exclusive ? "exclusive" : "shared");
  const auto since = std::chrono::steady_clock::now();
  if (!exclusive) {
    while (os::flock(fd_.get(), LOCK_SH) != 0)
      if (errno != EINTR) throw_lock_error(p, errno);
    report_waited(p, since);
    return;
  }
  // gc waits for adds that are between checking their objects and setting
  // their name (milliseconds each), but not forever for a stopped one.
  for (int waited_ms = 0; !try_flock(fd_.get(), LOCK_EX, p); waited_ms += 10) {
    if (waited_ms >= 60000) {
      std::string holder = flock_holder(fd_.get());
      throw Error("an add has been setting its catalog name for over 60 s" + (holder.empty() ? "" : " (" + holder + ")") +
                  "; gc aborted, nothing deleted");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  report_waited(p, since);
}

} // namespace hpak::store
