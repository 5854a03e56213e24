/* hpak_no_openat2: runs a command where openat2(2) fails, as on a kernel
 * before 5.6 (ENOSYS) or under a container's seccomp profile (EPERM)
 * (tests/cli/test_restore_safety.sh; the fallback of base/os/fs_ops.cpp).
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
#include <fcntl.h>
#include <sys/syscall.h>

#include "seccomp_deny.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

static long probe(void) { return syscall(SYS_openat2, AT_FDCWD, ".", NULL, 0); }

int main(int argc, char** argv) {
  if (argc < 3 || (strcmp(argv[1], "ENOSYS") && strcmp(argv[1], "EPERM"))) {
    fprintf(stderr, "usage: %s ENOSYS|EPERM COMMAND ARGS...\n", argv[0]);
    return 2;
  }
  unsigned err = strcmp(argv[1], "ENOSYS") == 0 ? ENOSYS : EPERM;
  return deny_then_exec("hpak_no_openat2", SYS_openat2, err, probe, argv + 2);
}
