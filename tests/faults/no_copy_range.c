/* hpak_no_copy_range: runs a command where copy_file_range(2) fails with a
 * chosen errno, as a kernel or file system that refuses it would
 * (tests/cli/test_large_files.sh; the fallback of core/large_copy.cpp).
 *
 *   hpak_no_copy_range ENOSYS|EXDEV|EINVAL|EOPNOTSUPP COMMAND ARGS...
 *
 * Installs a seccomp BPF filter (PR_SET_NO_NEW_PRIVS, then PR_SET_SECCOMP with
 * SECCOMP_RET_ERRNO) that answers copy_file_range with that errno and lets
 * every other call through, checks that it took effect, and execs COMMAND.
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

#ifndef SYS_copy_file_range
#define SYS_copy_file_range 326
#endif

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#define ARCH AUDIT_ARCH_I386
#else
#error "hpak_no_copy_range: unknown architecture"
#endif

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
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_copy_file_range, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    fprintf(stderr, "hpak_no_copy_range: unable to install the seccomp filter: %s\n", strerror(errno));
    return 125;
  }
  long r = syscall(SYS_copy_file_range, -1, NULL, -1, NULL, 1, 0);
  if (r >= 0 || errno != (int)err) {
    fprintf(stderr, "hpak_no_copy_range: the filter did not take effect (copy_file_range gave %ld, %s)\n", r, strerror(errno));
    return 125;
  }
  execvp(argv[2], argv + 2);
  fprintf(stderr, "hpak_no_copy_range: unable to run '%s': %s\n", argv[2], strerror(errno));
  return 127;
}
