/* hpak_swap_race: attacks a restore target while hpak restores into it
 * (tests/cli/test_symlink_race.sh, guarantee 2 of man/hpak-guarantees.7).
 *
 *   hpak_swap_race SECONDS HOLD_DIR CANARY TARGET/ENTRY...
 *
 * For SECONDS, round-robin over the ENTRYs: atomically exchange the entry
 * with a symlink to CANARY (renameat2 RENAME_EXCHANGE, so the entry is a
 * symlink for an instant and then the real thing again), the real entry
 * waiting meanwhile in HOLD_DIR (outside the target, same filesystem).
 * Between exchanges it sleeps a few microseconds at random so the swaps land
 * at every point of a restore. A directory entry is swapped with a symlink
 * to the canary directory, a file entry with a symlink to CANARY/file.
 * At the end every entry is swapped back (the target is left as it was,
 * apart from what the restores did). Prints the number of swaps made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int rm_one(const char* path, const struct stat* st, int flag, struct FTW* ftw) {
  (void)st;
  (void)ftw;
  if (flag == FTW_DP) {
    chmod(path, 0700);
    rmdir(path);
    return 0;
  }
  unlink(path);
  return 0;
}

/* rm -rf without following symlinks. */
static void rm_rf(const char* path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    unlink(path);
    return;
  }
  chmod(path, 0700);
  nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s SECONDS HOLD_DIR CANARY TARGET/ENTRY...\n", argv[0]);
    return 2;
  }
  double seconds = atof(argv[1]);
  const char* hold = argv[2];
  const char* canary = argv[3];
  int n = argc - 4;
  char** entries = argv + 4;
  char (*held)[4096] = calloc((size_t)n, sizeof *held);
  if (!held) return 2;
  char canary_file[4096];
  snprintf(canary_file, sizeof canary_file, "%s/file", canary);
  for (int i = 0; i < n; i++) snprintf(held[i], sizeof held[i], "%s/swap-%d", hold, i);
  srand((unsigned)getpid());
  long swaps = 0, misses = 0;
  double end = now() + seconds;
  for (int k = 0; now() < end; k++) {
    int i = k % n;
    struct stat st;
    /* A fresh symlink in the hold dir each time (a restore may have removed
     * the previous one after it was swapped in). */
    rm_rf(held[i]);
    if (lstat(entries[i], &st) != 0) {
      misses++;
      usleep(50);
      continue;
    }
    if (symlink(S_ISDIR(st.st_mode) ? canary : canary_file, held[i]) != 0) {
      perror("symlink");
      return 2;
    }
    if (renameat2(AT_FDCWD, held[i], AT_FDCWD, entries[i], RENAME_EXCHANGE) != 0) {
      misses++;
      continue;
    }
    swaps++;
    usleep((useconds_t)(rand() % 200));
    /* Swap back: the real entry returns, the symlink goes to the hold dir. */
    if (renameat2(AT_FDCWD, held[i], AT_FDCWD, entries[i], RENAME_EXCHANGE) != 0) {
      /* The restore removed the symlink (or replaced it): put the held
       * entry back only if the name is free, else drop it. */
      if (renameat2(AT_FDCWD, held[i], AT_FDCWD, entries[i], RENAME_NOREPLACE) != 0) rm_rf(held[i]);
    }
    rm_rf(held[i]); /* the symlink (or a directory a restore made meanwhile), now in the hold dir */
    usleep((useconds_t)(rand() % 300));
  }
  for (int i = 0; i < n; i++) rm_rf(held[i]);
  printf("%ld swaps, %ld misses\n", swaps, misses);
  free(held);
  return 0;
}
