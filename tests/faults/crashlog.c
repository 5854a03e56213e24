/* crashlog: an LD_PRELOAD shim that records the file-system operations a
 * process makes under one directory, for the crash-state test
 * (tests/faults/crash_states.py, tests/cli/test_crash_states.sh).
 *
 * Environment:
 *   CRASHLOG_LOG    append one line per operation to this file (required)
 *   CRASHLOG_ROOT   record only paths under this absolute directory
 *   CRASHLOG_BLOBS  directory: at each fsync of a regular file, its content
 *                   is copied to BLOBS/<seq> (what a crash then keeps)
 *
 * Lines (tab-separated; paths absolute, as the process named them):
 *   create PATH INO       open/openat/creat with O_CREAT succeeded
 *   mkdir PATH
 *   rename OLD NEW        rename, renameat, renameat2
 *   link OLD NEW          link, linkat
 *   unlink PATH           unlink, unlinkat
 *   rmdir PATH            rmdir, unlinkat(AT_REMOVEDIR)
 *   fsync PATH INO SEQ    fsync/fdatasync of a regular file (content in BLOBS/SEQ)
 *   dsync PATH            fsync/fdatasync of a directory
 *   sync                  sync(2) or syncfs(2)
 * Only successful calls are recorded. The shim never changes what a call does.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long seq;

#define REAL(name, ret, ...)                                   \
  static ret (*real_##name)(__VA_ARGS__);                      \
  if (!real_##name) real_##name = dlsym(RTLD_NEXT, #name);

/* The absolute path of `path` relative to `dirfd` (AT_FDCWD: the cwd). */
static void abs_path(int dirfd, const char* path, char* out, size_t n) {
  if (path[0] == '/') {
    snprintf(out, n, "%s", path);
    return;
  }
  char base[PATH_MAX] = "";
  if (dirfd == AT_FDCWD) {
    if (!getcwd(base, sizeof base)) base[0] = 0;
  } else {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    ssize_t k = readlink(link, base, sizeof base - 1);
    base[k > 0 ? k : 0] = 0;
  }
  snprintf(out, n, "%s/%s", base, path);
}

static int under_root(const char* p) {
  const char* root = getenv("CRASHLOG_ROOT");
  if (!root || !*root) return 1;
  size_t n = strlen(root);
  return strncmp(p, root, n) == 0 && (p[n] == '/' || p[n] == 0);
}

static void emit(const char* fmt, ...) {
  const char* log = getenv("CRASHLOG_LOG");
  if (!log) return;
  char line[3 * PATH_MAX];
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (len < 0 || (size_t)len >= sizeof line) return;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (write(fd, line, (size_t)len) < 0) {
  }
  close(fd);
}

static void log_create(int dirfd, const char* path, int fd) {
  char p[PATH_MAX * 2];
  abs_path(dirfd, path, p, sizeof p);
  if (!under_root(p)) return;
  struct stat st;
  if (fstat(fd, &st) != 0) return;
  pthread_mutex_lock(&mu);
  emit("create\t%s\t%llu\n", p, (unsigned long long)st.st_ino);
  pthread_mutex_unlock(&mu);
}

static void log_path(const char* op, int dirfd, const char* path) {
  char p[PATH_MAX * 2];
  abs_path(dirfd, path, p, sizeof p);
  if (!under_root(p)) return;
  pthread_mutex_lock(&mu);
  emit("%s\t%s\n", op, p);
  pthread_mutex_unlock(&mu);
}

static void log_pair(const char* op, int d1, const char* a, int d2, const char* b) {
  char p[PATH_MAX * 2], q[PATH_MAX * 2];
  abs_path(d1, a, p, sizeof p);
  abs_path(d2, b, q, sizeof q);
  if (!under_root(p) && !under_root(q)) return;
  pthread_mutex_lock(&mu);
  emit("%s\t%s\t%s\n", op, p, q);
  pthread_mutex_unlock(&mu);
}

/* Copies the content of `fd` (read through /proc, whatever its open mode). */
static void copy_content(int fd, const char* to) {
  char src[64];
  snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
  int in = (int)syscall(SYS_openat, AT_FDCWD, src, O_RDONLY | O_CLOEXEC);
  int out = (int)syscall(SYS_openat, AT_FDCWD, to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  char buf[65536];
  ssize_t n;
  while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) break;
  if (in >= 0) close(in);
  if (out >= 0) close(out);
}

static void log_fsync(int fd) {
  char link[64], p[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t k = readlink(link, p, sizeof p - 1);
  if (k <= 0) return;
  p[k] = 0;
  if (!under_root(p)) return;
  struct stat st;
  if (fstat(fd, &st) != 0) return;
  pthread_mutex_lock(&mu);
  if (S_ISDIR(st.st_mode)) {
    emit("dsync\t%s\n", p);
  } else if (S_ISREG(st.st_mode)) {
    long n = ++seq;
    const char* blobs = getenv("CRASHLOG_BLOBS");
    if (blobs) {
      char to[PATH_MAX];
      snprintf(to, sizeof to, "%s/%d-%ld", blobs, (int)getpid(), n);
      copy_content(fd, to);
    }
    emit("fsync\t%s\t%llu\t%d-%ld\n", p, (unsigned long long)st.st_ino, (int)getpid(), n);
  }
  pthread_mutex_unlock(&mu);
}

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

#define OPEN_LIKE(name)                                                \
  int name(const char* path, int flags, ...) {                         \
    REAL(name, int, const char*, int, ...)                             \
    va_list ap;                                                        \
    va_start(ap, flags);                                               \
    mode_t mode = mode_arg(flags, ap);                                 \
    va_end(ap);                                                        \
    int fd = real_##name(path, flags, mode);                           \
    if (fd >= 0 && (flags & O_CREAT)) log_create(AT_FDCWD, path, fd);  \
    return fd;                                                         \
  }
OPEN_LIKE(open)
OPEN_LIKE(open64)

#define OPENAT_LIKE(name)                                                   \
  int name(int dirfd, const char* path, int flags, ...) {                   \
    REAL(name, int, int, const char*, int, ...)                             \
    va_list ap;                                                             \
    va_start(ap, flags);                                                    \
    mode_t mode = mode_arg(flags, ap);                                      \
    va_end(ap);                                                             \
    int fd = real_##name(dirfd, path, flags, mode);                         \
    if (fd >= 0 && (flags & O_CREAT)) log_create(dirfd, path, fd);          \
    return fd;                                                              \
  }
OPENAT_LIKE(openat)
OPENAT_LIKE(openat64)

int creat(const char* path, mode_t mode) { return open(path, O_WRONLY | O_CREAT | O_TRUNC, mode); }
int creat64(const char* path, mode_t mode) { return open(path, O_WRONLY | O_CREAT | O_TRUNC, mode); }

int mkdir(const char* path, mode_t mode) {
  REAL(mkdir, int, const char*, mode_t)
  int r = real_mkdir(path, mode);
  if (r == 0) log_path("mkdir", AT_FDCWD, path);
  return r;
}

int mkdirat(int dirfd, const char* path, mode_t mode) {
  REAL(mkdirat, int, int, const char*, mode_t)
  int r = real_mkdirat(dirfd, path, mode);
  if (r == 0) log_path("mkdir", dirfd, path);
  return r;
}

int rename(const char* a, const char* b) {
  REAL(rename, int, const char*, const char*)
  int r = real_rename(a, b);
  if (r == 0) log_pair("rename", AT_FDCWD, a, AT_FDCWD, b);
  return r;
}

int renameat(int d1, const char* a, int d2, const char* b) {
  REAL(renameat, int, int, const char*, int, const char*)
  int r = real_renameat(d1, a, d2, b);
  if (r == 0) log_pair("rename", d1, a, d2, b);
  return r;
}

int renameat2(int d1, const char* a, int d2, const char* b, unsigned flags) {
  REAL(renameat2, int, int, const char*, int, const char*, unsigned)
  int r = real_renameat2(d1, a, d2, b, flags);
  if (r == 0) log_pair("rename", d1, a, d2, b); /* RENAME_EXCHANGE is not used by hpak */
  return r;
}

int link(const char* a, const char* b) {
  REAL(link, int, const char*, const char*)
  int r = real_link(a, b);
  if (r == 0) log_pair("link", AT_FDCWD, a, AT_FDCWD, b);
  return r;
}

int linkat(int d1, const char* a, int d2, const char* b, int flags) {
  REAL(linkat, int, int, const char*, int, const char*, int)
  int r = real_linkat(d1, a, d2, b, flags);
  if (r == 0) log_pair("link", d1, a, d2, b);
  return r;
}

int unlink(const char* path) {
  REAL(unlink, int, const char*)
  int r = real_unlink(path);
  if (r == 0) log_path("unlink", AT_FDCWD, path);
  return r;
}

int rmdir(const char* path) {
  REAL(rmdir, int, const char*)
  int r = real_rmdir(path);
  if (r == 0) log_path("rmdir", AT_FDCWD, path);
  return r;
}

int unlinkat(int dirfd, const char* path, int flags) {
  REAL(unlinkat, int, int, const char*, int)
  int r = real_unlinkat(dirfd, path, flags);
  if (r == 0) log_path(flags & AT_REMOVEDIR ? "rmdir" : "unlink", dirfd, path);
  return r;
}

int fsync(int fd) {
  REAL(fsync, int, int)
  int r = real_fsync(fd);
  if (r == 0) log_fsync(fd);
  return r;
}

int fdatasync(int fd) {
  REAL(fdatasync, int, int)
  int r = real_fdatasync(fd);
  if (r == 0) log_fsync(fd);
  return r;
}

void sync(void) {
  REAL(sync, void, void)
  real_sync();
  pthread_mutex_lock(&mu);
  emit("sync\n");
  pthread_mutex_unlock(&mu);
}

int syncfs(int fd) {
  REAL(syncfs, int, int)
  int r = real_syncfs(fd);
  if (r == 0) {
    pthread_mutex_lock(&mu);
    emit("sync\n");
    pthread_mutex_unlock(&mu);
  }
  return r;
}
