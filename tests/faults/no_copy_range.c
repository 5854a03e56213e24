/* hpak_no_copy_range: runs a command where copy_file_range(2) fails with a
 * chosen errno, as a kernel or file system that refuses it would
 * (tests/cli/test_large_files.sh; the fallback of core/pack/large_copy.cpp).
 *
 *   hpak_no_copy_range ENOSYS|EXDEV|EINVAL|EOPNOTSUPP COMMAND ARGS...
 *
 * Installs a seccomp BPF filter (PR_SET_NO_NEW_PRIVS, then PR_SET_SECCOMP with
 * SECCOMP_RET_ERRNO) that answers copy_file_range with that errno and lets
 * every other call through, checks that it took effect, and execs COMMAND.
 * Exit 125 (skipped) if seccomp is unavailable.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/syscall.h>

#include "seccomp_deny.h"

#ifndef SYS_copy_file_range
#define SYS_copy_file_range 326
#endif

static long probe(void) { return syscall(SYS_copy_file_range, -1, NULL, -1, NULL, 1, 0); }

static const struct {
  const char* name;
  unsigned err;
} kErrs[] = {{"ENOSYS", ENOSYS}, {"EXDEV", EXDEV}, {"EINVAL", EINVAL}, {"EOPNOTSUPP", EOPNOTSUPP}};

int main(int argc, char** argv) {
  unsigned err = 0;
  for (size_t i = 0; argc >= 3 && i < sizeof kErrs / sizeof kErrs[0]; i++)
    if (strcmp(argv[1], kErrs[i].name) == 0) err = kErrs[i].err;
  if (err == 0) {
    fprintf(stderr, "usage: %s ENOSYS|EXDEV|EINVAL|EOPNOTSUPP COMMAND ARGS...\n", argv[0]);
    return 2;
  }
  return deny_then_exec("hpak_no_copy_range", SYS_copy_file_range, err, probe, argv + 2);
}
