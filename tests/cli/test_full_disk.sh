#!/usr/bin/env bash
# A full disk (issue 28, items 0-2), on small ext4 file systems of the test's
# own (loop devices, tests/faults/loopfs.sh):
#  0. an add whose pack write fails with ENOSPC mid-pack (large spans queued
#     for the background hash) fails cleanly: exit 2, one line, no crash
#     (a use after free of those spans was a SIGSEGV), no temp file left;
#  1. gc on a full library frees space: packs with no live object go first,
#     without any new pack; when the new pack does not fit, what can be freed
#     is, the rest is left and said (exit 1), and a later gc with room
#     finishes; the library stays intact throughout;
#  2. an add whose name is durable exits 0 when the multi-pack index cannot
#     be written (a warning); an add that fails before its name is durable
#     leaves no name.
# ctest runs: bash test_full_disk.sh <hpak-binary> <source-root>.
source "$(dirname "$0")/../faults/lib.sh" "$@"
source "$src_root/tests/faults/loopfs.sh"
[ -f "$faultfs" ] || { echo "$test_name: skipped: no $faultfs (build the hpak_faultfs target)"; exit 125; }
preload=(env LD_PRELOAD="$faultfs" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")
H() { "$hpak" -q "$@"; }

# rand_file PATH KB: incompressible bytes.
rand_file() { head -c "$(($2 * 1024))" /dev/urandom >"$1"; }
# text_file PATH MB SEED: compressible (to about 70%), but not to nothing:
# its zstd frame is far over the 512 KiB that PackWriter hashes beside the write.
text_file() {
  python3 - "$1" "$2" "$3" <<'PY'
import random, sys
r = random.Random(int(sys.argv[3]))
alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789 \n"
with open(sys.argv[1], "wb") as f:
    for _ in range(int(sys.argv[2])):
        f.write(bytes(r.choice(alphabet) for _ in range(1 << 20)))
PY
}
# one_error FILE PATTERN: exactly one stderr line, an hpak error matching PATTERN, no crash.
one_error() {
  [ "$(wc -l <"$1")" -eq 1 ] && grep -q '^hpak: error: ' "$1" && grep -qE -- "$2" "$1" && no_crash_output "$1"
}
empty_dir() { [ -z "$(ls -A "$1" 2>/dev/null)" ]; }
names_of() { "$hpak" catalogs "$1" --names 2>/dev/null | tr '\n' ' '; }
visible_packs() { ls "$1"/packs/*.hidx 2>/dev/null | wc -l; }
restores() { rm_tree "$W/rt"; H restore "$1" "$2" "$W/rt" >/dev/null 2>&1 && diff -r -x .hpak-state "$3" "$W/rt" >/dev/null; }

# ---------------------------------------------------------------------------
echo "== 0. an add failing with ENOSPC while large spans are hashed in the background"
mkdir -p "$W/big"
for i in 0 1 2 3; do text_file "$W/big/t$i" 6 "$i"; done
# The second write of the pack fails, and every one after it: a disk that
# filled up. With the spans' hash still running on the helper thread, the
# unwinding freed them under it (SIGSEGV, exit 139, 6 of 6 runs before the fix).
# Under ASan, freed large blocks go to its quarantine, still mapped, and the
# helper's reads (in OpenSSL, not instrumented) would go unnoticed: without a
# quarantine they are unmapped at once, and such a read is a SEGV ASan reports.
crashes=0
for try in 1 2 3 4 5 6; do
  rm_tree "$W/f0"
  "${preload[@]}" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:quarantine_size_mb=0" FAULT_CALL=write FAULT_PATH_SUBSTR=/tmp/.tmp-pack FAULT_NTH=2 FAULT_PERSIST=1 \
    "$hpak" -q pack "$W/big" --into "$W/f0" --name big >"$W/f0.out" 2>"$W/f0.err"
  rc=$?
  if [ "$rc" -ne 2 ] || ! one_error "$W/f0.err" "unable to write '.*/tmp/\.tmp-pack-.*': No space left on device"; then
    crashes=$((crashes + 1))
    echo "  try $try: exit $rc: $(head -c 300 "$W/f0.err")"
  fi
  empty_dir "$W/f0/tmp" || { crashes=$((crashes + 1)); echo "  try $try left $(ls "$W/f0/tmp")"; }
done
expect_eq "6 adds failing mid-pack (faultfs ENOSPC): exit 2, one line, nothing left in tmp/" 0 "$crashes"

# The same on a real full file system: the add's pack does not fit.
loop_fs small 48
rm -f "$W/small/filler."*
H init "$W/small/lib" >/dev/null || fail "init on the loop file system"
fill_fs "$W/small" 6144 || fail "filling the loop file system"
crashes=0
for try in 1 2 3; do
  "$hpak" -q pack "$W/big" --into "$W/small/lib" --name big >"$W/f0b.out" 2>"$W/f0b.err"
  rc=$?
  if [ "$rc" -ne 2 ] || ! one_error "$W/f0b.err" "No space left on device"; then
    crashes=$((crashes + 1))
    echo "  try $try: exit $rc: $(head -c 300 "$W/f0b.err")"
  fi
  empty_dir "$W/small/lib/tmp" || { crashes=$((crashes + 1)); echo "  try $try left $(ls "$W/small/lib/tmp")"; }
done
expect_eq "3 adds into a full ext4: exit 2 with one 'No space left on device' line, nothing left in tmp/" 0 "$crashes"
check "the library is intact after them" bash -c '"$1" -q verify "$2" >/dev/null' _ "$hpak" "$W/small/lib"
loop_cleanup

# ---------------------------------------------------------------------------
echo "== 1a. gc of a library that filled its file system: the dead packs go"
loop_fs gc64 64
L=$W/gc64/lib
H init "$L" >/dev/null || fail "init"
n=0
while :; do
  n=$((n + 1))
  mkdir -p "$W/e/e$n"
  rand_file "$W/e/e$n/data" 3072
  echo "env $n" >"$W/e/e$n/README"
  "$hpak" -q pack "$W/e/e$n" --into "$L" --name "e$n" >/dev/null 2>"$W/fill.err" || break
  [ "$n" -lt 40 ] || break
done
check "the adds filled the file system (add $n: $(head -c 200 "$W/fill.err"))" grep -q "No space left on device" "$W/fill.err"
added=$((n - 1))
echo "  $added environments added, $(free_kb "$W/gc64") KiB free"
for i in 1 2 3 4 5 6 7; do H catalogs rm "$L" "e$i" >/dev/null || fail "catalogs rm e$i"; done
packs_before=$(visible_packs "$L")
free_before=$(free_kb "$W/gc64")
"$hpak" gc "$L" --grace 0 >"$W/gc1.out" 2>"$W/gc1.err"
rc=$?
echo "  gc: exit $rc; $(tail -n 1 "$W/gc1.out"); $(head -c 400 "$W/gc1.err")"
check "gc --grace 0 on the full disk does not fail (exit $rc)" test "$rc" -eq 0 -o "$rc" -eq 1
check "no crash" no_crash_output "$W/gc1.err"
free_after=$(free_kb "$W/gc64")
check "it freed the 7 removed environments' packs ($free_before -> $free_after KiB free)" test "$free_after" -ge $((free_before + 7 * 3000))
check "7 fewer visible packs ($packs_before before, $(visible_packs "$L") after; the merge may add one)" \
  test "$(visible_packs "$L")" -le $((packs_before - 6))
check "the library verifies" bash -c '"$1" -q verify "$2" >/dev/null' _ "$hpak" "$L"
for i in 8 "$added"; do check "e$i still restores" restores "$L" "e$i" "$W/e/e$i"; done
check "tmp/ holds nothing (the failed add's leftover went too)" empty_dir "$L/tmp"
loop_cleanup

# ---------------------------------------------------------------------------
echo "== 1b. gc with no room for the new pack: frees what it can, says what it left"
loop_fs gc48 48
L=$W/gc48/lib
mkdir -p "$W/m/a" "$W/m/b" "$W/m/c"
rand_file "$W/m/a/shared" 12288
rand_file "$W/m/a/dead" 12288
cp "$W/m/a/shared" "$W/m/b/shared"
rand_file "$W/m/c/alone" 3072
H init "$L" >/dev/null || fail "init"
for e in a b c; do "$hpak" -q pack "$W/m/$e" --into "$L" --name "$e" >/dev/null || fail "add $e"; done
a_pack=$(ls -t "$L"/packs/*.hpak | tail -n 1) # the first add's: shared and dead
H catalogs rm "$L" a c >/dev/null || fail "catalogs rm a c"
# a's pack: 12 MiB live (b uses it), 12 MiB dead: rewriting it needs 12 MiB;
# c's pack is dead. Leave 6 MiB: c's 3 MiB do not make room for the copy.
fill_fs "$W/gc48" 6144 || fail "filling"
free_before=$(free_kb "$W/gc48")
"$hpak" gc -n "$L" --grace 0 >"$W/gc2n.out" 2>"$W/gc2n.err"
expect_eq "a dry run exits 0" 0 $?
check "and warns that the new pack would not fit: $(cat "$W/gc2n.err")" \
  grep -q "^hpak: warning: the new pack would need about [0-9]* MiB, and the file system has [0-9]* MiB free: gc would delete" "$W/gc2n.err"
"$hpak" gc "$L" --grace 0 >"$W/gc2.out" 2>"$W/gc2.err"
rc=$?
echo "  gc: exit $rc; $(tail -n 1 "$W/gc2.out")"
sed 's/^/  /' "$W/gc2.err"
expect_eq "gc exits 1: it left packs for lack of space" 1 "$rc"
check "no crash" no_crash_output "$W/gc2.err"
check "one warning says what it left, why, and what to do" \
  grep -qE "^hpak: warning: [0-9]+ packs? left as (it was|they were) for lack of space in '$L': copying (its|their) live objects needs [0-9.]+ MiB, the file system has [0-9.]+ (KiB|MiB) free; free some space \(or grow the file system\) and run gc again$" "$W/gc2.err"
check "the pack table marks a's pack left" grep -q "left: no room to copy its live objects" "$W/gc2.out"
check "a's pack is still there" test -e "$a_pack"
check "c's dead pack was deleted ($free_before -> $(free_kb "$W/gc48") KiB free)" test "$(free_kb "$W/gc48")" -ge $((free_before + 3000))
check "tmp/ holds nothing (no half-written pack)" empty_dir "$L/tmp"
check "the library verifies" bash -c '"$1" -q verify "$2" >/dev/null' _ "$hpak" "$L"
check "b restores" restores "$L" b "$W/m/b"
"$hpak" -q gc "$L" --grace 0 --json >"$W/gc2.json" 2>/dev/null
check "--json lists the packs left and the figures" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["left_for_space"] and r["space_needed"] > r["space_free"] > 0, r' "$W/gc2.json"
rm -f "$W/gc48"/filler.*
"$hpak" gc "$L" --grace 0 >"$W/gc3.out" 2>"$W/gc3.err"
expect_eq "with room again, gc exits 0 ($(head -c 300 "$W/gc3.err"))" 0 $?
check "and a's pack is rewritten (gone)" test ! -e "$a_pack"
check "b still restores" restores "$L" b "$W/m/b"
check "the library verifies" bash -c '"$1" -q verify "$2" >/dev/null' _ "$hpak" "$L"
loop_cleanup

# ---------------------------------------------------------------------------
echo "== 2a. an add whose name is durable: the multi-pack index cannot be written"
loop_fs midx 24
L=$W/midx/lib
H init "$L" >/dev/null || fail "init"
# 9 packs of 400 objects each: a multi-pack index layer over them of about 130 KiB.
for p in 1 2 3 4 5 6 7 8 9; do
  python3 - "$W/s/p$p" "$p" <<'PY'
import os, sys
os.makedirs(sys.argv[1])
for i in range(400):
    with open(f"{sys.argv[1]}/f{i}", "w") as f:
        f.write(f"pack {sys.argv[2]} file {i}\n")
PY
  "$hpak" -q pack "$W/s/p$p" --into "$L" --name "p$p" >/dev/null || fail "add p$p"
done
rm -f "$L"/packs/*.midx # disposable: now every pack is outside the multi-pack index
mkdir -p "$W/s/tiny" && echo tiny >"$W/s/tiny/t"
fill_fs "$W/midx" 64 || fail "filling"
"$hpak" -q pack "$W/s/tiny" --into "$L" --name tiny >"$W/a2.out" 2>"$W/a2.err"
rc=$?
echo "  add: exit $rc: $(cat "$W/a2.err")"
expect_eq "the add exits 0" 0 "$rc"
check "with one warning about the multi-pack index" \
  grep -qE "^hpak: warning: unable to write '.*packs/\.tmp-midx-[0-9a-f]{64}\.midx-.*': No space left on device; no multi-pack index layer was written" "$W/a2.err"
check "and nothing else on stderr" test "$(wc -l <"$W/a2.err")" -eq 1
check "the name is set" grep -qw tiny <<<"$(names_of "$L")"
check "and restores" restores "$L" tiny "$W/s/tiny"
check "no temp file is left in packs/" test -z "$(find "$L/packs" -maxdepth 1 -name '.tmp-*')"
check "the library verifies" bash -c '"$1" -q verify "$2" >/dev/null' _ "$hpak" "$L"
loop_cleanup

echo "== 2b. an add that fails before its name is durable leaves no name"
L=$W/l2b
H init "$L" >/dev/null || fail "init"
mkdir -p "$W/s/n2" && echo two >"$W/s/n2/f"
# The fsync of catalogs/ after the name is renamed in fails (EIO): the add
# fails, and the name must not be there (it is not durable).
"${preload[@]}" FAULT_CALL=fsync FAULT_PATH_SUBSTR="$L/catalogs" FAULT_LOG="$W/fsync.log" \
  "$hpak" -q pack "$W/s/n2" --into "$L" --name n2 >/dev/null 2>&1 || fail "counting the fsyncs"
nth=$(awk -v d="$L/catalogs" '$3 == d {print $1; exit}' "$W/fsync.log")
[ -n "$nth" ] || fail "no fsync of '$L/catalogs' recorded: $(cat "$W/fsync.log")"
H catalogs rm "$L" n2 >/dev/null
"${preload[@]}" FAULT_CALL=fsync FAULT_PATH_SUBSTR="$L/catalogs" FAULT_NTH="$nth" FAULT_ERRNO=EIO \
  "$hpak" -q pack "$W/s/n2" --into "$L" --name n2 >"$W/b2.out" 2>"$W/b2.err"
rc=$?
expect_eq "the add exits 2" 2 "$rc"
check "one line: the sync that failed, and the name not set ($(cat "$W/b2.err"))" \
  one_error "$W/b2.err" "unable to sync directory '$L/catalogs': Input/output error; catalog 'n2' not set"
check "the name is not there" test ! -e "$L/catalogs/n2"
# Over an existing name: the old digest stays.
mkdir -p "$W/s/n3" && echo three >"$W/s/n3/f"
H pack "$W/s/n2" --into "$L" --name keep >/dev/null || fail "add keep"
old=$(cat "$L/catalogs/keep")
"${preload[@]}" FAULT_CALL=fsync FAULT_PATH_SUBSTR="$L/catalogs" FAULT_NTH="$nth" FAULT_ERRNO=EIO \
  "$hpak" -q pack "$W/s/n3" --into "$L" --name keep >/dev/null 2>"$W/b3.err"
expect_eq "replacing a name: the add exits 2" 2 $?
expect_eq "and the name still names the old catalog" "$old" "$(cat "$L/catalogs/keep")"
check "which restores" restores "$L" keep "$W/s/n2"
check "the library verifies" bash -c '"$1" -q verify "$2" >/dev/null' _ "$hpak" "$L"

done_tests
