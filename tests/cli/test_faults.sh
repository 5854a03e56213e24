#!/usr/bin/env bash
# Write errors (guarantee 5 of man/hpak-guarantees.7): with tests/faults/faultfs.so
# preloaded, the Nth write/open-for-write/mkdir/rename/link/fsync call on
# the operation's output path fails with ENOSPC, EIO or EACCES, for N swept
# over the calls the operation makes (counted first by the shim; sampled
# evenly, first and last included, when there are many). Operations:
# pack -o, pack --into, unpack, restore (fresh and dirty), gc, index.
#
# After every faulted run: either the run succeeded and its result is exactly
# right, or it exited non-zero with one `hpak: error:` line naming the
# errno's text and no crash (gc on ENOSPC may instead free what it can and
# exit 1 with the warning that says what it left for lack of space); no temp file is left (.tmp-* beside the output,
# LIB/tmp empty); nothing is published half-done (a pack -o output is absent
# or byte-identical to a clean run's; every library still passes `hpak
# verify` and its catalogs restore to what they held; no pack without its
# index); a restore target is marked incomplete (or untouched), and the
# next, unfaulted, restore makes it equal to a fresh restore.
#
# ctest runs: bash test_faults.sh <hpak-binary> <source-root>.
# FAULT_SAMPLES=N (default 10): N values of N tried per operation.
# (For the whole file:) the cmd_<op> and filter_<op> variables are read by sweep through
# `local -n` and ${!name}, which shellcheck does not follow.
# shellcheck disable=SC2034
source "$(dirname "$0")/../faults/lib.sh" "$@"

[ -f "$faultfs" ] || { echo "$test_name: skipped: no $faultfs (build the hpak_faultfs target)"; exit 125; }
samples=${FAULT_SAMPLES:-10}
errnos=(ENOSPC EIO EACCES)
declare -A errtext=([ENOSPC]="No space left on device" [EIO]="Input/output error" [EACCES]="Permission denied")
# An ASan build links libasan dynamically (gcc): it must not insist on coming first.
preload=(env LD_PRELOAD="$faultfs" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")

# count_calls FILTER CMD...: how many matching calls CMD makes.
count_calls() {
  local filter=$1
  shift
  rm -f "$W/count"
  "${preload[@]}" FAULT_PATH_SUBSTR="$filter" FAULT_COUNT_FILE="$W/count" "$@" >/dev/null 2>&1
  [ -f "$W/count" ] && awk '{s += $1} END {print s + 0}' "$W/count" || echo 0
}

# pick_ns COUNT K: up to K values in 1..COUNT, evenly spread, 1 and COUNT included.
pick_ns() {
  python3 -c '
import sys
c, k = int(sys.argv[1]), int(sys.argv[2])
if c <= k:
    ns = range(1, c + 1)
else:
    ns = sorted({1 + round(i * (c - 1) / (k - 1)) for i in range(k)})
print(" ".join(map(str, ns)))' "$1" "$2"
}

# ---- fixtures
SRC=$W/src/env-a
SRC2=$W/src/env-b
SRC3=$W/src/env-c
make_tree "$SRC" a
make_tree "$SRC2" b
make_tree "$SRC3" c
TGT=$W/tgt # the restore target (nothing else under $W starts with "tgt")
mkdir -p "$W/ref"
"$hpak" -q pack -j1 "$SRC" -o "$W/ref/p.hpak" --name t >/dev/null || fail "reference pack"
"$hpak" -q pack -j1 "$SRC" --into "$W/base-lib" --name a >/dev/null || fail "base library"
cp -a "$W/base-lib" "$W/lib-ab"
"$hpak" -q pack -j1 "$SRC2" --into "$W/lib-ab" --name b >/dev/null || fail "library a+b"
cp -a "$W/lib-ab" "$W/gc-base"
"$hpak" -q pack -j1 "$SRC3" --into "$W/gc-base" --name c >/dev/null || fail "library a+b+c"
"$hpak" -q catalogs rm "$W/gc-base" c >/dev/null || fail "catalogs rm c"
for name in a b; do
  "$hpak" -q restore -j1 "$W/lib-ab" "$name" "$TGT" >/dev/null || fail "reference restore $name"
  cp -a "$TGT" "$W/ref-$name"
  rm_tree "$TGT"
done

# ---- per-trial checks. Each adds "why" lines to $W/why; the driver reports them.
problem() { echo "$*" >>"$W/why"; }

# restores_to LIB NAME REF: restoring NAME from LIB into a fresh $TGT gives REF.
restores_to() {
  rm_tree "$TGT"
  if ! "$hpak" -q restore -j1 "$1" "$2" "$TGT" >"$W/r.out" 2>&1; then
    problem "restore $2 from $1 failed: $(head -n 2 "$W/r.out")"
  elif ! same_tree "$TGT" "$3" >"$W/r.out"; then
    problem "restore $2 differs from a fresh restore: $(head -n 3 "$W/r.out")"
  fi
  rm_tree "$TGT"
}

no_temp_in() {
  local d left
  for d in "$@"; do
    [ -d "$d" ] || continue
    left=$(find "$d" -maxdepth 1 -name '.tmp-*' | sed -n 1,3p)
    [ -z "$left" ] || problem "temp files left: $left"
  done
}

library_sound() { # LIB NAME=REF...
  local lib=$1 pair p
  shift
  [ -z "$(ls -A "$lib/tmp" 2>/dev/null)" ] || problem "LIB/tmp not empty: $(ls -A "$lib/tmp" | sed -n 1,3p | tr '\n' ' ')"
  no_temp_in "$lib" "$lib/packs" "$lib/catalogs"
  for p in "$lib"/packs/pack-*.hpak; do
    [ -e "$p" ] || continue
    [ -f "${p%.hpak}.hidx" ] || problem "pack without its index: $(basename "$p")"
  done
  "$hpak" -q verify "$lib" >"$W/v.out" 2>&1 || problem "hpak verify LIB fails: $(grep -m 2 . "$W/v.out")"
  for pair in "$@"; do
    if [ -f "$lib/catalogs/${pair%%=*}" ]; then
      restores_to "$lib" "${pair%%=*}" "${pair#*=}"
    else
      problem "catalog ${pair%%=*} is gone"
    fi
  done
}

# ---- operations: setup_X, cmd_X (array), filter_X, after_X RC
setup_pack_o() { rm_tree "$W/out" && mkdir -p "$W/out"; }
cmd_pack_o=("$hpak" -q pack -j1 "$SRC" -o "$W/out/p.hpak" --name t)
filter_pack_o=$W/out/
after_pack_o() {
  no_temp_in "$W/out"
  if [ -e "$W/out/p.hpak" ]; then
    cmp -s "$W/out/p.hpak" "$W/ref/p.hpak" || problem "a damaged p.hpak was published"
    cmp -s "$W/out/p.hidx" "$W/ref/p.hidx" || problem "p.hpak published without its intact index"
  else
    [ ! -e "$W/out/p.hidx" ] || problem "an index without its pack was published"
    [ "$1" -ne 0 ] || problem "success, but no pack"
  fi
}

setup_pack_into() { rm_tree "$W/lib" && cp -a "$W/base-lib" "$W/lib"; }
cmd_pack_into=("$hpak" -q pack -j1 "$SRC2" --into "$W/lib" --name b)
filter_pack_into=$W/lib/
after_pack_into() {
  if [ "$1" -eq 0 ] || [ -f "$W/lib/catalogs/b" ]; then
    library_sound "$W/lib" a="$W/ref-a" b="$W/ref-b"
  else
    library_sound "$W/lib" a="$W/ref-a"
  fi
  # The same add, unfaulted, completes (a leftover never blocks it).
  if "$hpak" -q pack -j1 "$SRC2" --into "$W/lib" --name b >"$W/r.out" 2>&1; then
    restores_to "$W/lib" b "$W/ref-b"
  else
    problem "the unfaulted add after the fault fails: $(head -n 2 "$W/r.out")"
  fi
}

setup_unpack() { rm_tree "$W/unp"; }
cmd_unpack=("$hpak" -q unpack -j1 "$W/ref/p.hpak" "$W/unp")
filter_unpack=$W/unp
after_unpack() {
  local f
  if [ -d "$W/unp" ]; then
    chmod -R u+rx "$W/unp" 2>/dev/null
    while IFS= read -r -d '' f; do
      cmp -s "$W/unp/$f" "$SRC/$f" || problem "partial or wrong file left: $f"
    done < <(cd "$W/unp" && find . -type f -printf '%P\0')
  fi
  [ "$1" -ne 0 ] || same_tree "$W/unp" "$SRC" >/dev/null || problem "success, but the tree differs"
  if "$hpak" -q unpack -j1 --force "$W/ref/p.hpak" "$W/unp" >"$W/r.out" 2>&1; then
    same_tree "$W/unp" "$SRC" >"$W/r.out" || problem "unpack --force after the fault differs: $(head -n 3 "$W/r.out")"
  else
    problem "unpack --force after the fault fails: $(head -n 2 "$W/r.out")"
  fi
}

# after_restore RC NAME REF OLDNAME: shared by the fresh and the dirty restore.
after_restore() {
  local rc=$1 name=$2 ref=$3 old=$4 complete state_name
  [ -z "$(find "$TGT" -maxdepth 1 -name '.tmp.hpak-state*' 2>/dev/null)" ] || problem "temp state file left"
  complete=$(state_field "$TGT" complete)
  state_name=$(state_field "$TGT" name)
  if [ "$rc" -eq 0 ]; then
    [ "$complete" = 1 ] && [ "$state_name" = "$name" ] || problem "success, but the state is '$complete' for '$state_name'"
    same_tree "$TGT" "$ref" >/dev/null || problem "success, but the tree differs from a fresh restore"
  elif [ "$complete" = 1 ]; then
    # Allowed only if the fault came before the first change: the old state stands.
    [ "$state_name" = "$old" ] || problem "failed restore left a complete state for '$state_name'"
  elif [ "$complete" = none ]; then
    [ -z "$old" ] || problem "failed dirty restore lost the state file"
    [ -z "$(ls -A "$TGT" 2>/dev/null)" ] || problem "failed restore wrote files but no state: $(ls -A "$TGT" | sed -n 1,3p | tr '\n' ' ')"
  elif [ "$complete" != 0 ]; then
    problem "state file unreadable after the fault ($complete)"
  fi
  if "$hpak" -q restore -j1 "$W/lib-ab" "$name" "$TGT" >"$W/r.out" 2>&1; then
    same_tree "$TGT" "$ref" >"$W/r.out" || problem "the next restore does not repair the target: $(head -n 3 "$W/r.out")"
    [ "$(state_field "$TGT" complete)" = 1 ] || problem "the next restore leaves the state incomplete"
  else
    problem "the next restore fails: $(head -n 2 "$W/r.out")"
  fi
}

setup_restore_fresh() { rm_tree "$TGT"; }
cmd_restore_fresh=("$hpak" -q restore -j1 "$W/lib-ab" a "$TGT")
filter_restore_fresh=$TGT
after_restore_fresh() { after_restore "$1" a "$W/ref-a" ""; }

setup_restore_dirty() {
  rm_tree "$TGT"
  "$hpak" -q restore -j1 "$W/lib-ab" a "$TGT" >/dev/null || problem "setup restore failed"
  # Drift since the last restore: a mode, a removed file, a stray file, same-size new bytes.
  chmod 600 "$TGT/README"
  rm -f "$TGT/lib/python3/site-packages/pkg/sub0/mod3.py"
  echo stray >"$TGT/stray.txt"
  printf 'X' | dd of="$TGT/bin/run" bs=1 seek=3 conv=notrunc status=none
}
cmd_restore_dirty=("$hpak" -q restore -j1 "$W/lib-ab" b "$TGT")
filter_restore_dirty=$TGT
after_restore_dirty() { after_restore "$1" b "$W/ref-b" a; }

setup_gc() { rm_tree "$W/glib" && cp -a "$W/gc-base" "$W/glib"; }
cmd_gc=("$hpak" -q gc "$W/glib" --grace 0)
filter_gc=$W/glib/
after_gc() {
  library_sound "$W/glib" a="$W/ref-a" b="$W/ref-b"
  [ ! -e "$W/glib/catalogs/c" ] || problem "a removed catalog came back"
  if "$hpak" -q gc "$W/glib" --grace 0 >"$W/r.out" 2>&1; then
    "$hpak" -q verify "$W/glib" >"$W/r.out" 2>&1 || problem "verify after the unfaulted gc fails: $(head -n 2 "$W/r.out")"
  else
    problem "the unfaulted gc after the fault fails: $(head -n 2 "$W/r.out")"
  fi
}

index_variant=0
setup_index() {
  rm_tree "$W/ix" && mkdir -p "$W/ix" && cp "$W/ref/p.hpak" "$W/ix/p.hpak"
  # Alternate: rebuilding a present index, and writing a missing one.
  index_variant=$((1 - index_variant))
  [ "$index_variant" -eq 0 ] || cp "$W/ref/p.hidx" "$W/ix/p.hidx"
}
cmd_index=("$hpak" -q index "$W/ix/p.hpak")
filter_index=$W/ix/
after_index() {
  no_temp_in "$W/ix"
  if [ -e "$W/ix/p.hidx" ]; then
    cmp -s "$W/ix/p.hidx" "$W/ref/p.hidx" || problem "a damaged index was published"
  else
    [ "$1" -ne 0 ] || problem "success, but no index"
  fi
}

# ---- the sweep
sweep() {
  local op=$1 filter cmd count ns n i=0 e persist rc errors=0 successes=0 t0
  local -n cmdref="cmd_$op"
  filter_var="filter_$op"
  filter=${!filter_var}
  cmd=("${cmdref[@]}")
  t0=$SECONDS
  : >"$W/why"
  "setup_$op"
  count=$(count_calls "$filter" "${cmd[@]}")
  if [ "$count" -lt 1 ]; then
    fail "$op: the shim counted no calls on $filter"
    return
  fi
  ns=$(pick_ns "$count" "$samples")
  # One more run with a disk that stays full from the middle on.
  for n in $ns persist:$(((count + 1) / 2)); do
    persist=0
    case $n in persist:*) persist=1 n=${n#persist:} ;; esac
    e=${errnos[i % ${#errnos[@]}]}
    [ "$persist" -eq 0 ] || e=ENOSPC
    i=$((i + 1))
    "setup_$op"
    : >"$W/why"
    "${preload[@]}" FAULT_PATH_SUBSTR="$filter" FAULT_NTH="$n" FAULT_PERSIST="$persist" FAULT_ERRNO="$e" "${cmd[@]}" >"$W/out.txt" 2>"$W/err.txt"
    rc=$?
    no_crash_output "$W/err.txt" || problem "crash output: $(grep -m 3 . "$W/err.txt")"
    if [ "$op" = gc ] && [ "$rc" -eq 1 ]; then
      # gc freed what it could and left the rest for lack of space (man
      # hpak-gc, A full disk): a warning naming the failed write, no error.
      errors=$((errors + 1))
      [ "$e" = ENOSPC ] || problem "exit 1 for $e (only a lack of space leaves packs and exits 1)"
      grep -q "^hpak: warning: .* left as .* for lack of space in .*${errtext[$e]}" "$W/err.txt" ||
        problem "exit 1 without the warning naming '${errtext[$e]}': $(head -n 2 "$W/err.txt")"
      [ -z "$(grep '^hpak: error: ' "$W/err.txt")" ] || problem "exit 1 with an error line: $(grep -m 1 '^hpak: error: ' "$W/err.txt")"
    elif [ "$rc" -eq 0 ]; then
      successes=$((successes + 1))
    else
      errors=$((errors + 1))
      [ "$rc" -eq 1 ] || [ "$rc" -eq 2 ] || problem "exit status $rc"
      local nerr
      nerr=$(grep -c '^hpak: error: ' "$W/err.txt")
      [ "$nerr" -eq 1 ] || problem "$nerr 'hpak: error:' lines: $(head -n 3 "$W/err.txt")"
      grep -q "^hpak: error: .*${errtext[$e]}" "$W/err.txt" || problem "the error does not say '${errtext[$e]}': $(head -n 1 "$W/err.txt")"
      [ -z "$(grep -v '^hpak: ' "$W/err.txt")" ] || problem "stray stderr output: $(grep -v '^hpak: ' "$W/err.txt" | sed -n 1,2p)"
    fi
    "after_$op" "$rc"
    if [ -s "$W/why" ]; then
      fail "$op: call $n of $count failing with $e$([ "$persist" -eq 1 ] && echo ' (and every later one)') (exit $rc, stderr: $(head -n 1 "$W/err.txt")):"
      sed 's/^/      /' "$W/why"
    fi
  done
  ok "$op: $count calls, $i faulted runs ($errors clean errors, $successes complete successes), $((SECONDS - t0)) s"
}

for op in pack_o pack_into unpack restore_fresh restore_dirty gc index; do
  sweep "$op"
done
done_tests
