/* faultfs: an LD_PRELOAD shim that makes one chosen filesystem write call
 * fail, to test how hpak handles ENOSPC, EIO and EACCES (tests/cli/test_faults.sh).
 *
 * Intercepted ("kinds", as named in FAULT_CALL):
 *   write      write, pwrite, pwrite64, writev, pwritev
 *   open       open, open64, openat, openat64, creat, creat64 -- only opens
 *              that may write (O_WRONLY, O_RDWR, O_CREAT or O_TRUNC)
 *   mkdir      mkdir, mkdirat
 *   rename     rename, renameat, renameat2
 *   link       link, linkat, symlink, symlinkat
 *   fsync      fsync, fdatasync
 *   truncate   ftruncate
 *   flock      flock (a file system without working locks: FAULT_ERRNO=ENOLCK)
 *   stat       stat, lstat, fstatat, statx and their 64 variants, by path (a
 *              failing disk: FAULT_ERRNO=EIO)
 *
 * Environment:
 *   FAULT_CALL         comma-separated kinds (or function names) to match;
 *                      unset, empty or "all": every kind above but flock and stat
 *   FAULT_PATH_SUBSTR  match only calls whose path (for fd calls, the fd's
 *                      path from /proc/self/fd; for renames, either path)
 *                      contains this string
 *   FAULT_NTH          fail the Nth matching call (1-based); 0 or unset: none
 *   FAULT_PERSIST      "1": also fail every matching call after the Nth
 *                      (a disk that stays full)
 *   FAULT_ERRNO        ENOSPC (default), EIO, EACCES, EDQUOT, EROFS, EPERM,
 *                      ENOLCK, EOPNOTSUPP, ENOSYS or a number
 *   FAULT_COUNT_FILE   if set, append "<count>\n" (the number of matching
 *                      calls this process made) to this file at exit; with
 *                      FAULT_NTH unset, the shim then only counts
 *   FAULT_LOG          if set, append one line per matching call to this
 *                      file: "<n> <function> <path>[ FAIL]"
 * A failing call does nothing and returns -1 with errno set.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum { K_WRITE = 1, K_OPEN = 2, K_MKDIR = 4, K_RENAME = 8, K_LINK = 16, K_FSYNC = 32, K_TRUNCATE = 64, K_FLOCK = 128, K_STAT = 256 };

static int cfg_ready;
static unsigned cfg_kinds = ~0u & ~(unsigned)(K_FLOCK | K_STAT);
static char cfg_names[512]; /* ",name1,name2," for function-name matches */
static const char* cfg_substr;
static long cfg_nth;
static int cfg_persist;
static int cfg_errno = ENOSPC;
static const char* cfg_count_file;
static const char* cfg_log;
static atomic_long matched;

static int parse_errno(const char* s) {
  if (!s || !*s) return ENOSPC;
  if (!strcmp(s, "ENOSPC")) return ENOSPC;
  if (!strcmp(s, "EIO")) return EIO;
  if (!strcmp(s, "EACCES")) return EACCES;
  if (!strcmp(s, "EDQUOT")) return EDQUOT;
  if (!strcmp(s, "EROFS")) return EROFS;
  if (!strcmp(s, "EPERM")) return EPERM;
  if (!strcmp(s, "ENOLCK")) return ENOLCK;
  if (!strcmp(s, "EOPNOTSUPP")) return EOPNOTSUPP;
  if (!strcmp(s, "ENOSYS")) return ENOSYS;
  return atoi(s) > 0 ? atoi(s) : ENOSPC;
}

static void raw_append(const char* path, const char* text) {
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  syscall(SYS_write, fd, text, strlen(text));
  syscall(SYS_close, fd);
}

static void report_count(void) {
  if (!cfg_count_file) return;
  char buf[32];
  snprintf(buf, sizeof buf, "%ld\n", (long)atomic_load(&matched));
  raw_append(cfg_count_file, buf);
}

static void configure(void) {
  if (cfg_ready) return;
  const char* calls = getenv("FAULT_CALL");
  if (calls && *calls && strcmp(calls, "all") != 0) {
    cfg_kinds = 0;
    size_t used = 1;
    cfg_names[0] = ',';
    char buf[512];
    snprintf(buf, sizeof buf, "%s", calls);
    for (char* save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      if (!strcmp(tok, "write")) cfg_kinds |= K_WRITE;
      else if (!strcmp(tok, "open")) cfg_kinds |= K_OPEN;
      else if (!strcmp(tok, "mkdir")) cfg_kinds |= K_MKDIR;
      else if (!strcmp(tok, "rename")) cfg_kinds |= K_RENAME;
      else if (!strcmp(tok, "link")) cfg_kinds |= K_LINK;
      else if (!strcmp(tok, "fsync")) cfg_kinds |= K_FSYNC;
      else if (!strcmp(tok, "truncate")) cfg_kinds |= K_TRUNCATE;
      else if (!strcmp(tok, "flock")) cfg_kinds |= K_FLOCK;
      else if (!strcmp(tok, "stat")) cfg_kinds |= K_STAT;
      else if (used + strlen(tok) + 2 < sizeof cfg_names) {
        used += (size_t)snprintf(cfg_names + used, sizeof cfg_names - used, "%s,", tok);
      }
    }
    if (used == 1) cfg_names[0] = '\0';
  }
  cfg_substr = getenv("FAULT_PATH_SUBSTR");
  if (cfg_substr && !*cfg_substr) cfg_substr = NULL;
  const char* nth = getenv("FAULT_NTH");
  cfg_nth = nth ? atol(nth) : 0;
  const char* persist = getenv("FAULT_PERSIST");
  cfg_persist = persist && !strcmp(persist, "1");
  cfg_errno = parse_errno(getenv("FAULT_ERRNO"));
  cfg_count_file = getenv("FAULT_COUNT_FILE");
  if (cfg_count_file && !*cfg_count_file) cfg_count_file = NULL;
  cfg_log = getenv("FAULT_LOG");
  if (cfg_log && !*cfg_log) cfg_log = NULL;
  cfg_ready = 1;
}

__attribute__((constructor)) static void faultfs_init(void) {
  configure();
  atexit(report_count);
}

static int kind_selected(unsigned kind, const char* fn) {
  if (cfg_kinds & kind) return 1;
  if (cfg_names[0]) {
    char pat[80];
    snprintf(pat, sizeof pat, ",%s,", fn);
    return strstr(cfg_names, pat) != NULL;
  }
  return 0;
}

/* The path an fd refers to, or a dirfd-relative name made absolute. */
static void fd_path(int fd, char* out, size_t n) {
  char link[64];
  out[0] = '\0';
  if (fd == AT_FDCWD) {
    if (!getcwd(out, n)) out[0] = '\0';
    return;
  }
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t len = readlink(link, out, n - 1);
  out[len > 0 ? len : 0] = '\0';
}

static void at_path(int dirfd, const char* name, char* out, size_t n) {
  if (!name) {
    out[0] = '\0';
    return;
  }
  if (name[0] == '/') {
    snprintf(out, n, "%s", name);
    return;
  }
  char dir[PATH_MAX];
  fd_path(dirfd, dir, sizeof dir);
  snprintf(out, n, "%s/%s", dir, name);
}

/* Decides whether this call fails. `path2` may be NULL. */
static int should_fail(unsigned kind, const char* fn, const char* path, const char* path2) {
  configure();
  if (!kind_selected(kind, fn)) return 0;
  if (cfg_substr) {
    int hit = (path && strstr(path, cfg_substr)) || (path2 && strstr(path2, cfg_substr));
    if (!hit) return 0;
  }
  long n = atomic_fetch_add(&matched, 1) + 1;
  int fail = cfg_nth > 0 && (n == cfg_nth || (cfg_persist && n > cfg_nth));
  if (cfg_log) {
    char line[2 * PATH_MAX + 64];
    snprintf(line, sizeof line, "%ld %s %s%s%s%s\n", n, fn, path ? path : "", path2 ? " -> " : "", path2 ? path2 : "",
             fail ? " FAIL" : "");
    raw_append(cfg_log, line);
  }
  if (fail) errno = cfg_errno;
  return fail;
}

static int fd_fails(unsigned kind, const char* fn, int fd) {
  configure();
  if (!kind_selected(kind, fn)) return 0;
  char p[PATH_MAX];
  fd_path(fd, p, sizeof p);
  return should_fail(kind, fn, p, NULL);
}

static int at_fails(unsigned kind, const char* fn, int dirfd, const char* name) {
  configure();
  if (!kind_selected(kind, fn)) return 0;
  char p[PATH_MAX];
  at_path(dirfd, name, p, sizeof p);
  return should_fail(kind, fn, p, NULL);
}

static int at2_fails(unsigned kind, const char* fn, int d1, const char* n1, int d2, const char* n2) {
  configure();
  if (!kind_selected(kind, fn)) return 0;
  char p1[PATH_MAX], p2[PATH_MAX];
  at_path(d1, n1, p1, sizeof p1);
  at_path(d2, n2, p2, sizeof p2);
  return should_fail(kind, fn, p1, p2);
}

#define REAL(ret, name, ...)                                                  \
  static ret (*real_##name)(__VA_ARGS__);                                     \
  static ret (*get_##name(void))(__VA_ARGS__) {                               \
    if (!real_##name) real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name); \
    return real_##name;                                                       \
  }

static int writes(int flags) { return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0; }

/* ---- write ---- */
REAL(ssize_t, write, int, const void*, size_t)
ssize_t write(int fd, const void* buf, size_t n) {
  if (fd_fails(K_WRITE, "write", fd)) return -1;
  return get_write()(fd, buf, n);
}
REAL(ssize_t, pwrite, int, const void*, size_t, off_t)
ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  if (fd_fails(K_WRITE, "pwrite", fd)) return -1;
  return get_pwrite()(fd, buf, n, off);
}
REAL(ssize_t, pwrite64, int, const void*, size_t, off_t)
ssize_t pwrite64(int fd, const void* buf, size_t n, off_t off) {
  if (fd_fails(K_WRITE, "pwrite", fd)) return -1;
  return get_pwrite64()(fd, buf, n, off);
}
REAL(ssize_t, writev, int, const struct iovec*, int)
ssize_t writev(int fd, const struct iovec* iov, int cnt) {
  if (fd_fails(K_WRITE, "writev", fd)) return -1;
  return get_writev()(fd, iov, cnt);
}
REAL(ssize_t, pwritev, int, const struct iovec*, int, off_t)
ssize_t pwritev(int fd, const struct iovec* iov, int cnt, off_t off) {
  if (fd_fails(K_WRITE, "pwritev", fd)) return -1;
  return get_pwritev()(fd, iov, cnt, off);
}

/* ---- open ---- */
static mode_t mode_arg(int flags, va_list ap) { return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0; }

REAL(int, open, const char*, int, ...)
int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (writes(flags) && at_fails(K_OPEN, "open", AT_FDCWD, path)) return -1;
  return get_open()(path, flags, mode);
}
REAL(int, open64, const char*, int, ...)
int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (writes(flags) && at_fails(K_OPEN, "open", AT_FDCWD, path)) return -1;
  return get_open64()(path, flags, mode);
}
REAL(int, openat, int, const char*, int, ...)
int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (writes(flags) && at_fails(K_OPEN, "openat", dirfd, path)) return -1;
  return get_openat()(dirfd, path, flags, mode);
}
REAL(int, openat64, int, const char*, int, ...)
int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (writes(flags) && at_fails(K_OPEN, "openat", dirfd, path)) return -1;
  return get_openat64()(dirfd, path, flags, mode);
}
REAL(int, creat, const char*, mode_t)
int creat(const char* path, mode_t mode) {
  if (at_fails(K_OPEN, "creat", AT_FDCWD, path)) return -1;
  return get_creat()(path, mode);
}
REAL(int, creat64, const char*, mode_t)
int creat64(const char* path, mode_t mode) {
  if (at_fails(K_OPEN, "creat", AT_FDCWD, path)) return -1;
  return get_creat64()(path, mode);
}

/* ---- mkdir ---- */
REAL(int, mkdir, const char*, mode_t)
int mkdir(const char* path, mode_t mode) {
  if (at_fails(K_MKDIR, "mkdir", AT_FDCWD, path)) return -1;
  return get_mkdir()(path, mode);
}
REAL(int, mkdirat, int, const char*, mode_t)
int mkdirat(int dirfd, const char* path, mode_t mode) {
  if (at_fails(K_MKDIR, "mkdirat", dirfd, path)) return -1;
  return get_mkdirat()(dirfd, path, mode);
}

/* ---- rename ---- */
REAL(int, rename, const char*, const char*)
int rename(const char* from, const char* to) {
  if (at2_fails(K_RENAME, "rename", AT_FDCWD, from, AT_FDCWD, to)) return -1;
  return get_rename()(from, to);
}
REAL(int, renameat, int, const char*, int, const char*)
int renameat(int d1, const char* from, int d2, const char* to) {
  if (at2_fails(K_RENAME, "renameat", d1, from, d2, to)) return -1;
  return get_renameat()(d1, from, d2, to);
}
REAL(int, renameat2, int, const char*, int, const char*, unsigned)
int renameat2(int d1, const char* from, int d2, const char* to, unsigned flags) {
  if (at2_fails(K_RENAME, "renameat2", d1, from, d2, to)) return -1;
  return get_renameat2()(d1, from, d2, to, flags);
}

/* ---- link ---- */
REAL(int, link, const char*, const char*)
int link(const char* from, const char* to) {
  if (at2_fails(K_LINK, "link", AT_FDCWD, from, AT_FDCWD, to)) return -1;
  return get_link()(from, to);
}
REAL(int, linkat, int, const char*, int, const char*, int)
int linkat(int d1, const char* from, int d2, const char* to, int flags) {
  if (at2_fails(K_LINK, "linkat", d1, from, d2, to)) return -1;
  return get_linkat()(d1, from, d2, to, flags);
}
REAL(int, symlink, const char*, const char*)
int symlink(const char* target, const char* path) {
  if (at_fails(K_LINK, "symlink", AT_FDCWD, path)) return -1;
  return get_symlink()(target, path);
}
REAL(int, symlinkat, const char*, int, const char*)
int symlinkat(const char* target, int dirfd, const char* path) {
  if (at_fails(K_LINK, "symlinkat", dirfd, path)) return -1;
  return get_symlinkat()(target, dirfd, path);
}

/* ---- fsync, truncate ---- */
REAL(int, fsync, int)
int fsync(int fd) {
  if (fd_fails(K_FSYNC, "fsync", fd)) return -1;
  return get_fsync()(fd);
}
REAL(int, fdatasync, int)
int fdatasync(int fd) {
  if (fd_fails(K_FSYNC, "fdatasync", fd)) return -1;
  return get_fdatasync()(fd);
}
REAL(int, ftruncate, int, off_t)
int ftruncate(int fd, off_t len) {
  if (fd_fails(K_TRUNCATE, "ftruncate", fd)) return -1;
  return get_ftruncate()(fd, len);
}

/* ---- flock ---- */
REAL(int, flock, int, int)
int flock(int fd, int op) {
  if (fd_fails(K_FLOCK, "flock", fd)) return -1;
  return get_flock()(fd, op);
}

/* ---- stat (reads: only with FAULT_CALL=stat) ---- */
REAL(int, stat, const char*, struct stat*)
int stat(const char* path, struct stat* st) {
  if (at_fails(K_STAT, "stat", AT_FDCWD, path)) return -1;
  return get_stat()(path, st);
}
REAL(int, lstat, const char*, struct stat*)
int lstat(const char* path, struct stat* st) {
  if (at_fails(K_STAT, "lstat", AT_FDCWD, path)) return -1;
  return get_lstat()(path, st);
}
REAL(int, stat64, const char*, struct stat64*)
int stat64(const char* path, struct stat64* st) {
  if (at_fails(K_STAT, "stat", AT_FDCWD, path)) return -1;
  return get_stat64()(path, st);
}
REAL(int, lstat64, const char*, struct stat64*)
int lstat64(const char* path, struct stat64* st) {
  if (at_fails(K_STAT, "lstat", AT_FDCWD, path)) return -1;
  return get_lstat64()(path, st);
}
REAL(int, fstatat, int, const char*, struct stat*, int)
int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  if (*path && at_fails(K_STAT, "fstatat", dirfd, path)) return -1;
  return get_fstatat()(dirfd, path, st, flags);
}
REAL(int, fstatat64, int, const char*, struct stat64*, int)
int fstatat64(int dirfd, const char* path, struct stat64* st, int flags) {
  if (*path && at_fails(K_STAT, "fstatat", dirfd, path)) return -1;
  return get_fstatat64()(dirfd, path, st, flags);
}
REAL(int, statx, int, const char*, int, unsigned, struct statx*)
int statx(int dirfd, const char* path, int flags, unsigned mask, struct statx* st) {
  if (*path && at_fails(K_STAT, "statx", dirfd, path)) return -1;
  return get_statx()(dirfd, path, flags, mask, st);
}
