/* hpak_no_openat2: runs a command where openat2(2) fails, as on a kernel
 * before 5.6 (ENOSYS) or under a container's seccomp profile (EPERM)
 * (tests/cli/test_restore_safety.sh; the fallback of core/fs_ops.cpp).
 *
 *   hpak_no_openat2 ENOSYS|EPERM COMMAND ARGS...
 *
 * An LD_PRELOAD shim cannot intercept hpak's raw syscall(SYS_openat2), so
 * this installs a seccomp BPF filter (PR_SET_NO_NEW_PRIVS, then
 * PR_SET_SECCOMP with SECCOMP_RET_ERRNO) that answers openat2 with the
 * chosen errno and lets every other call through, checks that it took
 * effect, and execs COMMAND (the filter is inherited across exec).
 * Exit 125 (skipped) if seccomp is unavailable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#define ARCH AUDIT_ARCH_I386
#else
#error "hpak_no_openat2: unknown architecture"
#endif

int main(int argc, char** argv) {
  if (argc < 3 || (strcmp(argv[1], "ENOSYS") && strcmp(argv[1], "EPERM"))) {
    fprintf(stderr, "usage: %s ENOSYS|EPERM COMMAND ARGS...\n", argv[0]);
    return 2;
  }
  unsigned err = strcmp(argv[1], "ENOSYS") == 0 ? ENOSYS : EPERM;
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    fprintf(stderr, "hpak_no_openat2: unable to install the seccomp filter: %s\n", strerror(errno));
    return 125;
  }
  long r = syscall(SYS_openat2, AT_FDCWD, ".", NULL, 0);
  if (r >= 0 || errno != (int)err) {
    fprintf(stderr, "hpak_no_openat2: the filter did not take effect (openat2 gave %ld, %s)\n", r, strerror(errno));
    return 125;
  }
  execvp(argv[2], argv + 2);
  fprintf(stderr, "hpak_no_openat2: unable to run '%s': %s\n", argv[2], strerror(errno));
  return 127;
}
