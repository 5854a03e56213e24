#!/usr/bin/env bash
# Nothing is written outside the target (guarantee 2 of man/hpak-guarantees.7),
# even while another process swaps parts of the target for symlinks.
#
# Dirty restores run in a loop (switching between two environments, after
# drifting modes, contents and stray files so every repair path runs: removes,
# rewrites, mode fixes, new directories, links), while tests/faults/swap_race.c
# atomically exchanges directories of the target with a symlink to an outside
# canary directory, and files with a symlink to a canary file, and back
# (renameat2 RENAME_EXCHANGE, a few microseconds each). Restores may fail
# while their tree changes underfoot (that is fine), but must never crash,
# and afterwards the canary directory must be exactly as it was: same
# entries, modes, sizes, contents, mtimes. A last, undisturbed restore must
# bring the target back to a fresh restore's tree.
#
# RACE_SECONDS (default 20) bounds the loop.
# ctest runs: bash test_symlink_race.sh <hpak-binary> <source-root>.
prefer_shm=1
source "$(dirname "$0")/../faults/lib.sh" "$@"

[ -x "$swap_race" ] || { echo "$test_name: skipped: no $swap_race (build the hpak_swap_race target)"; exit 125; }
budget=${RACE_SECONDS:-20}

make_tree "$W/src/v0" v0 60
make_tree "$W/src/v1" v1 60
# v1 differs in modes too, so switching needs mode fixes both ways.
chmod 640 "$W/src/v1/README"
chmod 700 "$W/src/v1/bin/run"
chmod 755 "$W/src/v1/etc/env.conf"
mkdir -p "$W/src/v1/lib/extra"
echo new >"$W/src/v1/lib/extra/only-in-v1"
for v in 0 1; do "$hpak" -q pack "$W/src/v$v" --into "$W/lib" --name "v$v" >/dev/null || fail "add v$v"; done

# The canary: a directory outside the target, with a file, a subdirectory and
# a read-only file; every swapped-in symlink points into it.
C=$W/canary
mkdir -p "$C/sub" "$W/hold"
echo 'canary: must never change' >"$C/file"
echo 'canary sub' >"$C/sub/file"
echo 'read-only canary' >"$C/ro"
chmod 444 "$C/ro"
canary_sig() {
  (cd "$C" && find . -printf '%P|%y|%m|%s|%T@|%n\n' | sort && find . -type f -exec sha256sum {} + | sort -k2)
}
canary_sig >"$W/canary.before"

T=$W/tgt
"$hpak" -q restore "$W/lib" v1 "$T" >/dev/null || fail "reference restore"
cp -a "$T" "$W/ref-tgt" # relocated to $T, as the last restore below must be
"$hpak" -q restore "$W/lib" v0 "$T" >/dev/null || fail "first restore"

# Entries under attack: directories (one read-only, one only in v1) and files
# whose modes the restores keep fixing.
targets=("$T/lib/python3/site-packages/pkg/sub0" "$T/etc" "$T/share/doc" "$T/bin" "$T/lib/extra"
  "$T/README" "$T/etc/env.conf" "$T/bin/run" "$T/lib/python3/site-packages/pkg/sub0/mod1.py")

# drift: what a user might do between restores; makes the next restore work
# (mode fixes, a rewrite, a stray file). tests/faults/drift.py never follows
# a symlink itself, so whatever reaches the canary came from hpak.
drift() { python3 "$src_root/tests/faults/drift.py" "$T" "$1"; }

"$swap_race" "$budget" "$W/hold" "$C" "${targets[@]}" >"$W/swap.out" 2>&1 &
swapper=$!
bg_pids+=("$swapper")
restores=0 failed=0 crashed=0
start=$SECONDS
while kill -0 "$swapper" 2>/dev/null && [ $((SECONDS - start)) -lt $((budget + 5)) ]; do
  drift "$restores"
  if ! "$hpak" -q restore "$W/lib" "v$((restores % 2))" "$T" >/dev/null 2>"$W/err.txt"; then
    failed=$((failed + 1))
    sed "s|$W/||g" "$W/err.txt" >>"$W/errors.all"
  fi
  restores=$((restores + 1))
  if ! no_crash_output "$W/err.txt"; then
    crashed=$((crashed + 1))
    [ "$crashed" -gt 1 ] || fail "restore $restores crashed: $(grep -m 3 . "$W/err.txt")"
  fi
done
wait "$swapper"
swap_rc=$?
expect_eq "the swapper ran to the end" 0 "$swap_rc"
ok "$restores dirty restores ($failed failed as the tree changed underfoot) against $(cat "$W/swap.out")"
expect_eq "no restore crashed" 0 "$crashed"
if [ -s "$W/errors.all" ]; then
  echo "   the failed restores said (most frequent first):"
  sed -E 's/[0-9]+/N/g' "$W/errors.all" | sort | uniq -c | sort -rn | sed -n 's/^/   /; 1,5p'
fi
canary_sig >"$W/canary.after"
if diff "$W/canary.before" "$W/canary.after" >"$W/canary.diff"; then
  ok "the canary directory outside the target is unchanged"
else
  fail "the canary directory changed:"
  head -n 20 "$W/canary.diff"
fi
check "nothing else appeared beside the target" test "$(cd "$W" && find . -mindepth 1 -maxdepth 1 -type d | sort | tr '\n' ' ')" = "./canary ./hold ./lib ./ref-tgt ./src ./tgt "

# Undisturbed, the next restore repairs whatever the race left.
"$hpak" -q restore "$W/lib" v1 "$T" >"$W/r.out" 2>&1 || fail "the final restore fails: $(head -n 2 "$W/r.out")"
check "the final restore equals a fresh restore" same_tree "$T" "$W/ref-tgt"
done_tests
