#!/usr/bin/env bash
# The layered multi-pack index (issue 33): an add writes a layer once 4 packs
# (kMidxMinUncovered) are outside every layer, over those packs, and merges
# the smaller layers geometrically (formats/midx_format.hpp).
#  - 101 adds: after the k-th there are at most bits(k) layers (k's binary
#    length), fewer than 4 packs outside them, verify is clean and every name
#    restores;
#  - the state an add killed after publishing its layer, before deleting the
#    layers it merged, leaves (both present, overlapping): lookups, verify and
#    the next add and gc work; a killed writer's temp layer is ignored;
#  - adds killed with SIGKILL at random moments: the library verifies and
#    every name set restores;
#  - two processes adding at once: every name restores, verify is clean, and
#    a full gc (one pack) leaves no layer;
#  - gc's index work follows the change: after a full gc and adds (one large
#    layer over its pack and the next three), a gc after one `catalogs rm`
#    keeps the large layer as it is and writes a layer over the packs of the
#    layer that named the deleted pack only (bytes of midx files written,
#    compared with the large layer's); the state it leaves when killed before
#    deleting the stale layers reads and verifies.
# ctest runs: bash test_midx_layers.sh <hpak-binary> <source-root>.
prefer_shm=1
source "$(dirname "$0")/../faults/lib.sh" "$@"
export HPAK_FSYNC=0 # throwaway libraries
H() { "$hpak" -q "$@"; }

layers() { find "$1/packs" -maxdepth 1 -name 'midx-*.midx' -printf '.' | wc -c; }
bits() { local k=$1 n=0; while [ "$k" -gt 0 ]; do k=$((k / 2)); n=$((n + 1)); done; echo "$n"; }
add() { H pack "$W/src/$2" --no-relocate --into "$1" --name "$2" >/dev/null; }
outside() { "$hpak" -v catalogs "$1" 2>&1 | sed -n "s/.* \([0-9]*\) outside the midx.*/\1/p"; }
few_outside() { local n; n=$(outside "$1"); [ -n "$n" ] && [ "$n" -lt 4 ]; } # kMidxMinUncovered
restores() { # LIB NAME: restores NAME and compares it with its source
  rm_tree "$W/t"
  H restore "$1" "$2" "$W/t" >/dev/null 2>"$W/r.err" || { echo "$2: $(cat "$W/r.err")"; return 1; }
  same_tree "$W/src/$2" "$W/t" >/dev/null || { echo "$2 differs"; return 1; }
}
restores_all() { # LIB NAME...
  local lib=$1 n
  shift
  for n in "$@"; do restores "$lib" "$n" || return 1; done
}
verifies() { "$hpak" verify "$1" >"$W/v.out" 2>&1 || { grep -v '^ok' "$W/v.out" | cut -c1-300; return 1; }; }
rm_tree() { chmod -R u+rwx "$1" 2>/dev/null; rm -rf "$1"; }

for i in $(seq 1 140); do make_tree "$W/src/e$i" "e$i" 12; done

echo "== 101 adds"
L=$W/lib
worst=""
for k in $(seq 1 101); do
  add "$L" "e$k" || fail "add e$k"
  n=$(layers "$L")
  [ "$n" -le "$(bits "$k")" ] || worst="$worst k=$k:$n"
done
expect_eq "at most bits(k) layers after the k-th add (k=1..101; bits(101) = 7)" "" "$worst"
echo "  layers after 101 adds: $(layers "$L")"
check "no legacy multi.midx is written" test ! -e "$L/packs/multi.midx"
check "fewer than 4 packs outside the layers ($(outside "$L"))" few_outside "$L"
check "verify: every layer agrees with the packs' indexes" verifies "$L"
names=()
for k in $(seq 1 101); do names+=("e$k"); done
check "every name restores" restores_all "$L" "${names[@]}"

echo "== an add killed after publishing its layer, before deleting the layers it merged"
merged=""
for k in $(seq 102 112); do # until an add merges a layer (sizes vary a little: not every add does)
  rm_tree "$W/before"
  cp -a "$L" "$W/before"
  add "$L" "e$k" || fail "add e$k"
  merged=$(comm -23 <(cd "$W/before/packs" && find . -name 'midx-*.midx' -printf '%f\n' | sort) \
    <(cd "$L/packs" && find . -name 'midx-*.midx' -printf '%f\n' | sort))
  [ -n "$merged" ] && break
done
[ -n "$merged" ] || fail "no add of e102..e112 merged a layer"
echo "  the add of e$k merged $(wc -w <<<"$merged") layer(s); putting them back"
for f in $merged; do cp -p "$W/before/packs/$f" "$L/packs/$f"; done
# And what a writer killed before its rename leaves: a temp file.
cp -p "$L/packs/$(sed -n 1p <<<"$merged")" "$L/packs/.tmp-midx-0123-w999999999h0000"
check "both the new layer and the merged ones are read: verify is clean" verifies "$L"
check "fewer than 4 packs outside the layers ($(outside "$L"))" few_outside "$L"
check "names restore" restores_all "$L" e1 e101 "e$k"
add "$L" e113 || fail "add e113 after the crash state"
check "the next add works; names restore" restores_all "$L" e1 "e$k" e113
H gc "$L" --grace 0 >/dev/null 2>"$W/gc.err" || fail "gc: $(cat "$W/gc.err")"
check "verify after gc" verifies "$L"

echo "== adds killed with SIGKILL at random moments"
K=$W/killed
add "$K" e1 || fail "add e1"
set_names=(e1)
for i in $(seq 2 31); do
  "$hpak" -q pack "$W/src/e$i" --no-relocate --into "$K" --name "e$i" >/dev/null 2>&1 &
  pid=$!
  sleep "0.0$((RANDOM % 10))"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  [ -e "$K/catalogs/e$i" ] && set_names+=("e$i")
  verifies "$K" >"$W/kv.out" || { fail "verify after killing add e$i: $(cat "$W/kv.out")"; break; }
done
echo "  ${#set_names[@]} of 31 names were set before their add was killed"
check "every name set restores" restores_all "$K" "${set_names[@]}"
add "$K" e32 || fail "an add after the kills"
check "after the next add, fewer than 4 packs outside the layers ($(outside "$K"))" few_outside "$K"
check "verify" verifies "$K"

echo "== two processes adding at once"
C=$W/concurrent
H init "$C" >/dev/null || fail "init"
adder() { local i; for i in "$@"; do add "$C" "e$i" || echo "add e$i failed" >>"$W/adders.err"; done; }
: >"$W/adders.err"
adder $(seq 33 2 72) &
a=$!
adder $(seq 34 2 72) &
b=$!
wait "$a" "$b"
expect_eq "no add failed" "" "$(cat "$W/adders.err")"
cnames=()
for i in $(seq 33 72); do cnames+=("e$i"); done
check "all 40 names restore" restores_all "$C" "${cnames[@]}"
check "verify is clean" verifies "$C"
echo "  layers after 40 concurrent adds: $(layers "$C"), packs outside them: $(outside "$C")"
n=$(layers "$C")
check "layers stay few (overlaps of racing merges: at most 2 * bits(40) = 12): $n" test "$n" -le 12
H gc "$C" --grace 0 --full >/dev/null 2>"$W/gc.err" || fail "gc: $(cat "$W/gc.err")"
expect_eq "a full gc leaves one pack and no layer (its own index serves)" 0 "$(layers "$C")"
check "verify after gc" verifies "$C"
check "names restore after gc" restores_all "$C" e33 e50 e72

echo "== gc's index work follows the change"
G=$W/gcmidx
for i in $(seq 1 40); do add "$G" "e$i" || fail "add e$i"; done
H gc "$G" --grace 0 --full >/dev/null 2>"$W/gc.err" || fail "gc --full: $(cat "$W/gc.err")"
expect_eq "a full gc leaves no layer" 0 "$(layers "$G")"
for i in $(seq 41 43); do add "$G" "e$i" || fail "add e$i"; done
expect_eq "the 3rd add covers the full gc's pack and its own three with a layer" 1 "$(layers "$G")"
big=$(cd "$G/packs" && ls midx-*.midx)
bigsize=$(stat -c %s "$G/packs/$big")
(cd "$G/packs" && ls ./*.hpak) >"$W/kept.list"
for i in $(seq 44 48); do add "$G" "e$i" || fail "add e$i"; done
expect_eq "the 7th add writes a second layer" 2 "$(layers "$G")"
# The packs of the large layer stay within the grace period; the five packs
# after it are made older (a pack's age is its index's mtime), so the gc's
# roll-up takes only them.
(cd "$G/packs" && for p in ./*.hpak; do grep -qxF "$p" "$W/kept.list" || touch -h -d '3 hours ago' "${p%.hpak}.hidx"; done)
H catalogs rm "$G" e44 >/dev/null || fail "catalogs rm e44"
midx_sizes() { (cd "$1/packs" && find . -maxdepth 1 -name 'midx-*.midx' -printf '%f %s\n' | sort); }
midx_sizes "$G" >"$W/midx.before"
rm_tree "$W/gbefore"
cp -a "$G" "$W/gbefore"
H gc "$G" --grace 1h >/dev/null 2>"$W/gc.err" || fail "gc after catalogs rm: $(cat "$W/gc.err")"
midx_sizes "$G" >"$W/midx.after"
written=$(comm -13 "$W/midx.before" "$W/midx.after" | awk '{s += $2} END {print s + 0}')
dropped=$(comm -23 "$W/midx.before" "$W/midx.after" | wc -l)
echo "  large layer: $bigsize bytes; midx bytes written by the gc: $written; layers deleted: $dropped; layers after: $(layers "$G")"
check "the large layer (naming only packs that remain) is kept as it is" grep -qx "$big $bigsize" "$W/midx.after"
check "the gc wrote less than a quarter of the large layer's bytes ($written of $bigsize)" test $((written * 4)) -lt "$bigsize"
check "the layers that named deleted packs are gone" test "$dropped" -ge 1
check "fewer than 4 packs outside the layers ($(outside "$G"))" few_outside "$G"
check "verify after gc" verifies "$G"
check "names restore after gc" restores_all "$G" e1 e40 e41 e47
# A gc killed after publishing its layer, before deleting the stale ones.
for f in $(comm -23 "$W/midx.before" "$W/midx.after" | cut -d' ' -f1); do cp -p "$W/gbefore/packs/$f" "$G/packs/$f"; done
check "with the stale layers back: verify is clean" verifies "$G"
check "with the stale layers back: names restore" restores_all "$G" e1 e40 e41 e47
H gc "$G" --grace 1h >/dev/null 2>"$W/gc.err" || fail "gc after the crash state: $(cat "$W/gc.err")"
check "the next gc deletes the stale layers" cmp -s "$W/midx.after" <(midx_sizes "$G")
check "verify after the next gc" verifies "$G"

done_tests
