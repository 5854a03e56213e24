#!/usr/bin/env bash
# Junk in catalogs/ (issue 28, item 4): a directory, a malformed file, a
# 5,000-byte file, a symlink and a FIFO under valid names. gc keeps refusing to
# collect while one is there (it may name any object), and its one-line error
# says which command fixes it; `hpak repair` (and `hpak catalogs rm NAME`)
# moves such an entry, as it is, into LIB/quarantine/ and says so; gc then
# runs; nothing outside catalogs/ is touched (a symlink's target survives).
# ctest runs: bash test_quarantine.sh <hpak-binary> <source-root>.
source "$(dirname "$0")/../faults/lib.sh" "$@"
H() { "$hpak" -q "$@"; }
command -v mkfifo >/dev/null || { echo "$test_name: skipped: no mkfifo"; exit 125; }

make_tree "$W/a" a
make_tree "$W/b" b
L=$W/lib
H pack "$W/a" --into "$L" --name a >/dev/null || fail "add a"
H pack "$W/b" --into "$L" --name b >/dev/null || fail "add b"
H catalogs rm "$L" b >/dev/null || fail "catalogs rm b" # garbage for gc to collect
echo "outside the library" >"$W/target-of-link"

plant() { # plant KIND: one junk entry catalogs/junk-KIND
  local p=$L/catalogs/junk-$1
  case $1 in
  dir) mkdir "$p" && echo x >"$p/inside" ;;
  malformed) printf 'hpak-catalog 1\nnot a digest\n' >"$p" ;;
  big) head -c 5000 /dev/zero | tr '\0' a >"$p" ;;
  link) ln -s "$W/target-of-link" "$p" ;;
  fifo) mkfifo "$p" ;;
  esac
}

for kind in dir malformed big link fifo; do
  echo "== catalogs/junk-$kind"
  plant "$kind"
  "$hpak" -q gc "$L" --grace 0 >"$W/gc.out" 2>"$W/gc.err"
  rc=$?
  expect_eq "gc refuses ($kind)" 2 "$rc"
  check "with one line naming the entry, 'nothing deleted' and the fix: $(head -c 400 "$W/gc.err")" \
    bash -c '[ "$(wc -l <"$1")" -eq 1 ] && grep -qE "^hpak: error: .*junk-'"$kind"'.*gc aborted, nothing deleted .*hpak repair $2. moves it into .$2/quarantine., as does .hpak catalogs rm $2 junk-'"$kind"'." "$1"' _ "$W/gc.err" "$L"
  "$hpak" repair "$L" >"$W/repair.out" 2>"$W/repair.err"
  rc=$?
  expect_eq "repair exits 0 ($(head -c 300 "$W/repair.err"))" 0 "$rc"
  check "repair says it moved the entry: $(grep moved "$W/repair.out" | cut -c1-300)" \
    grep -qE "^moved '$L/catalogs/junk-$kind' \(.*\) -> '$L/quarantine/catalogs\.junk-$kind\.[0-9]{8}T[0-9]{6}Z' \(not a name file" "$W/repair.out"
  check "catalogs/junk-$kind is gone" test ! -e "$L/catalogs/junk-$kind" -a ! -L "$L/catalogs/junk-$kind"
  moved=$(find "$L/quarantine" -maxdepth 1 -name "catalogs.junk-$kind.*" | sort | sed -n 1p)
  check "it is in quarantine/ as it was ($moved)" test -n "$moved"
  case $kind in
  dir) check "with its content" test -f "$moved/inside" ;;
  link) check "still a link, its target untouched" test -L "$moved" -a "$(cat "$W/target-of-link")" = "outside the library" ;;
  fifo) check "still a FIFO" test -p "$moved" ;;
  big) expect_eq "all 5000 bytes" 5000 "$(stat -c %s "$moved")" ;;
  esac
  H gc "$L" --grace 0 >"$W/gc2.out" 2>"$W/gc2.err"
  expect_eq "gc runs again ($(head -c 300 "$W/gc2.err"))" 0 $?
  check "a restores" bash -c 'rm -rf "$3"; "$1" -q restore "$2" a "$3" >/dev/null' _ "$hpak" "$L" "$W/ta"
done

echo "== catalogs rm of a junk entry moves it into quarantine/ too"
plant dir
plant link
"$hpak" catalogs rm "$L" junk-dir junk-link >"$W/rm.out" 2>"$W/rm.err"
expect_eq "catalogs rm exits 0 ($(cat "$W/rm.err"))" 0 $?
check "and says where each went: $(cat "$W/rm.out")" \
  bash -c 'grep -q "^moved .$1/catalogs/junk-dir. to .$1/quarantine/catalogs.junk-dir\..*(it is not a name file: " "$2" && grep -q "^moved .$1/catalogs/junk-link. to " "$2"' _ "$L" "$W/rm.out"
check "the link's target is untouched" test "$(cat "$W/target-of-link")" = "outside the library"
H gc "$L" --grace 0 >/dev/null 2>"$W/gc3.err"
expect_eq "gc runs" 0 $?

echo "== repair -n says what it would move, moves nothing"
plant malformed
"$hpak" repair -n "$L" >"$W/rn.out" 2>&1
check "would move: $(grep 'would move' "$W/rn.out")" grep -q "^would move '$L/catalogs/junk-malformed'" "$W/rn.out"
check "still in catalogs/" test -f "$L/catalogs/junk-malformed"
"$hpak" verify "$L" >"$W/v.out" 2>&1
check "verify names it broken and the fix: $(grep junk "$W/v.out")" grep -q "junk-malformed' is BROKEN: .*'hpak repair' moves it into '$L/quarantine'" "$W/v.out"

done_tests
