#!/usr/bin/env bash
# The ctime fence holds at the very edge (issue 32): a restore takes its fence
# after its last change, writes its state while the fence's wait runs, and
# returns only once the wait is over. So a file edited in place right after a
# restore returns (same size; no fork between hpak's exit and the write, the
# tick of the coarse clock not yet passed) has a ctime at or above the fence,
# and the next restore compares it and puts its bytes back. A fence trusted
# before its wait ended lets the next restore keep such a file (its mtime
# only reset) when the edit lands in the tick of the fence, which a
# multigrain file system (Linux 6.13+) often prevents: the unit test
# tests/unit/test_os_ctime_fence.cpp catches such a fence on every run.
# ctest runs: bash test_restore_fence.sh <hpak-binary> <source-root>.
. "$(dirname "$0")/cli_lib.sh" "$@"
. "$(dirname "$0")/library_helpers.sh"

src=$work/src
lib=$work/lib
T=$work/space
mkdir -p "$src/d"
for i in 0 1 2 3 4 5 6 7; do printf 'file %s: AAAAAAAA\n' "$i" >"$src/d/f$i"; done
"$hpak" -q init "$lib" >/dev/null
"$hpak" -q pack "$src" --into "$lib" --name env >/dev/null
"$hpak" -q restore "$lib" env "$T" >/dev/null
rounds=${FENCE_ROUNDS:-40}
for ((r = 0; r < rounds; r++)); do
  f=$T/d/f$((r % 8))
  # A restore that rewrites the file (a new inode: with multigrain ctimes,
  # Linux 6.13+, a file whose ctime was read since its last change gets a
  # fine-grained ctime on the next one, which the scan's statx would cause),
  # then the edit at once: bash's own redirection, no process started.
  printf 'more\n' >>"$f"
  "$hpak" -q restore "$lib" env "$T" >/dev/null
  printf 'Z' 1<>"$f"
  "$hpak" -q restore "$lib" env "$T" --json >"$work/r.json"
  if ! cmp -s "$f" "$src/d/f$((r % 8))"; then
    fail "round $r: a same-size edit made right after a restore was kept by the next restore: $(head -c 40 "$f")"
  fi
done
ok "$rounds same-size edits made right after a restore returned were all put back"
