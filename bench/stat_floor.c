// bench/stat_floor.c — the syscall floor of a no-op or dirty restore's scan
// (issue 32): the least any tool that checks a tree against a stat cache can
// do, with nothing else (no catalog, no index, no allocation per file).
//
//   stat_floor TREE MODE < LIST
//
// LIST holds one line per directory ("d REL", before its files) and per
// non-directory ("f REL"), as bench/stat-floor.sh writes it. MODE:
//   git   fstatat(TREE, REL, AT_SYMLINK_NOFOLLOW) per file: git's lstat of
//         each index entry by its full path
//   hpak  per directory, openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//         RESOLVE_NO_XDEV) + fstat + close; per file, statx of its name in
//         that directory: the calls hpak's scan makes (it keeps the
//         directories open, which costs the same)
// Prints the pass's milliseconds (CLOCK_MONOTONIC), on one thread.
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int open_beneath(int root, const char* rel) {
  struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
                         .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS};
  return (int)syscall(SYS_openat2, root, rel, &how, sizeof how);
}

int main(int argc, char** argv) {
  if (argc != 3 || (strcmp(argv[2], "git") != 0 && strcmp(argv[2], "hpak") != 0)) {
    fprintf(stderr, "usage: stat_floor TREE git|hpak < LIST\n");
    return 2;
  }
  size_t cap = 1024, n = 0;
  char** lines = malloc(cap * sizeof *lines);
  char buf[8192];
  while (fgets(buf, sizeof buf, stdin)) {
    buf[strcspn(buf, "\n")] = 0;
    if (n == cap) lines = realloc(lines, (cap *= 2) * sizeof *lines);
    lines[n++] = strdup(buf);
  }
  int root = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) {
    perror(argv[1]);
    return 1;
  }
  const int git = strcmp(argv[2], "git") == 0;
  int dir = -1, failed = 0;
  struct stat st;
  struct statx sx;
  double t0 = now_ms();
  for (size_t i = 0; i < n; i++) {
    const char* rel = lines[i] + 2;
    if (lines[i][0] == 'd') {
      if (git) continue;
      if (dir >= 0) close(dir);
      dir = open_beneath(root, rel);
      failed |= dir < 0 || fstat(dir, &st) != 0;
    } else if (git) {
      failed |= fstatat(root, rel, &st, AT_SYMLINK_NOFOLLOW) != 0;
    } else {
      const char* leaf = strrchr(rel, '/');
      failed |= statx(dir, leaf ? leaf + 1 : rel, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &sx) != 0;
    }
  }
  printf("%.2f\n", now_ms() - t0);
  if (failed) fprintf(stderr, "stat_floor: a call failed (the tree changed under the list?)\n");
  return failed;
}
