/* seccomp_deny.h: the one piece the syscall-denying launchers share
 * (hpak_no_openat2, hpak_no_copy_range). deny_then_exec() installs a seccomp
 * BPF filter (PR_SET_NO_NEW_PRIVS, then PR_SET_SECCOMP with SECCOMP_RET_ERRNO)
 * that answers syscall NR with ERR and lets every other call through, checks
 * with PROBE that it took effect, and execs argv[0] (the filter is inherited
 * across exec). Returns 125 (skipped) if seccomp is unavailable or did not take
 * effect, 127 if the command cannot run.
 */
#pragma once
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#if defined(__x86_64__)
#define HPAK_SECCOMP_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define HPAK_SECCOMP_ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#define HPAK_SECCOMP_ARCH AUDIT_ARCH_I386
#else
#error "seccomp_deny.h: unknown architecture"
#endif

static int deny_then_exec(const char* tool, long nr, unsigned err, long (*probe)(void), char** argv) {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, HPAK_SECCOMP_ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    fprintf(stderr, "%s: unable to install the seccomp filter: %s\n", tool, strerror(errno));
    return 125;
  }
  long r = probe();
  if (r >= 0 || errno != (int)err) {
    fprintf(stderr, "%s: the filter did not take effect (the probe gave %ld, %s)\n", tool, r, strerror(errno));
    return 125;
  }
  execvp(argv[0], argv);
  fprintf(stderr, "%s: unable to run '%s': %s\n", tool, argv[0], strerror(errno));
  return 127;
}
