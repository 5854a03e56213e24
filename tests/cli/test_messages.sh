#!/usr/bin/env bash
# Messages of the operator's bad day (issue 28, item 7): catalog names are
# checked in one place and shown quoted and escaped (a newline in a name, a
# 5 KB name: one short line); `hpak index` of a truncated pack warns once per
# problem; an I/O error on the library marker names that read (not a failed
# create of a marker that exists); gc.lock that a member's umask 022 left
# without group write says so and how to fix it; "not enough space" gives
# exact figures when the rounded ones are equal; '--' ends the options, and a
# mistaken option-like argument says so.
# ctest runs: bash test_messages.sh <hpak-binary> <source-root>.
source "$(dirname "$0")/../faults/lib.sh" "$@"
source "$src_root/tests/faults/loopfs.sh" # root, mounts undone at exit
[ -f "$faultfs" ] || { echo "$test_name: skipped: no $faultfs (build the hpak_faultfs target)"; exit 125; }
preload=(env LD_PRELOAD="$faultfs" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")
H() { "$hpak" -q "$@"; }
# one_line NAME PATTERN: $W/NAME.err is one 'hpak: error:' line matching PATTERN, no crash.
one_line() {
  local f=$W/$1.err
  if [ "$(wc -l <"$f")" -eq 1 ] && grep -q '^hpak: error: ' "$f" && grep -qE -- "$2" "$f" && no_crash_output "$f"; then
    ok "$1: $(head -c 200 "$f")"
  else
    fail "$1: expected one error line matching /$2/, got: $(head -c 600 "$f")"
  fi
}
run() { # run NAME ARGS...: exit status in $rc
  local name=$1
  shift
  rc=0
  "$hpak" "$@" >"$W/$name.out" 2>"$W/$name.err" </dev/null || rc=$?
}

make_tree "$W/src" a
L=$W/lib
H pack "$W/src" --into "$L" --name t >/dev/null || fail "add t"

echo "== catalog names: checked once, quoted and escaped"
run nl pack "$W/src" --into "$L" --name $'a\nb'
expect_eq "a name with a newline: exit 2" 2 "$rc"
one_line nl "catalog name 'a\\\\nb' has a character outside \[A-Za-z0-9._\+@-\]$"
long=$(printf 'x%.0s' $(seq 5000))
run longrm catalogs rm "$L" "$long"
expect_eq "catalogs rm of a 5000-character name: exit 2" 2 "$rc"
one_line longrm "catalog name 'x{40}\.\.\.' \(5000 bytes\) is longer than 128 characters$"
check "and short ($(wc -c <"$W/longrm.err") bytes)" test "$(wc -c <"$W/longrm.err")" -lt 200
run longpack pack "$W/src" --into "$L" --name "$long"
one_line longpack "is longer than 128 characters"
check "pack says the same, as short" test "$(wc -c <"$W/longpack.err")" -lt 200
run nlrm catalogs rm "$L" $'x\ny'
one_line nlrm "catalog name 'x\\\\ny' has a character"
run nlrestore restore "$L" $'x\ny' "$W/t-nl"
one_line nlrestore "catalog name 'x\\\\ny' has a character"
run esc restore "$L" $'t\e[31m' "$W/t-esc"
one_line esc "catalog name 't\\\\x1b\[31m'"
run norm catalogs rm "$L" nosuch
one_line norm "^hpak: error: no catalog named 'nosuch' in library '$L'$"
run dot pack "$W/src" --into "$L" --name .hidden
one_line dot "catalog name '.hidden' may not start with '.' or '-'"
# A path with a newline in an error is escaped too: one line.
run nlpath restore "$W/no"$'\n'"where" t "$W/t2"
one_line nlpath "no\\\\nwhere"

echo "== every error line goes through the logger, escaped (issue 29)"
run nlcmd $'no\nsuch'
expect_eq "an unknown command with a newline: exit 2" 2 "$rc"
one_line nlcmd "^hpak: error: 'no\\\\nsuch' is not an hpak command"
run nlopt restore $'--no\nsuch'
one_line nlopt "no\\\\nsuch"
mkdir -p "$W/nlsrc"
printf 'x\n' >"$W/nlsrc/f"
H pack "$W/nlsrc" -o "$W/nl.hpak" >/dev/null || fail "pack nl.hpak"
mkdir -p "$W/u"$'\n'"dir/f" # not empty: unpack refuses
run nlunpack unpack "$W/nl.hpak" "$W/u"$'\n'"dir"
expect_eq "unpack into a directory that is not empty: exit 2" 2 "$rc"
one_line nlunpack "target directory '.*u\\\\ndir' is not empty"

echo "== hpak index of a truncated pack: each warning once"
H pack "$W/src" -o "$W/p.hpak" >/dev/null || fail "pack -o"
head -c 1000000 /dev/urandom >"$W/src2-big"
mkdir -p "$W/src2" && mv "$W/src2-big" "$W/src2/big"
H pack "$W/src2" -o "$W/p2.hpak" >/dev/null || fail "pack -o with a large raw object"
for cut in 5000 600000; do
  head -c "$cut" "$W/p2.hpak" >"$W/cut.hpak"
  run "index$cut" index "$W/cut.hpak"
  expect_eq "index of a pack cut at $cut bytes exits 1" 1 "$rc"
  expect_eq "no warning line repeated" "" "$(sort "$W/index$cut.err" | uniq -d)"
  check "it warns about the truncated entry: $(head -c 300 "$W/index$cut.err")" grep -q "truncated" "$W/index$cut.err"
done

echo "== an I/O error reading the library marker"
rc=0
"${preload[@]}" FAULT_CALL=stat FAULT_PATH_SUBSTR="$L/HPAKLIB" FAULT_NTH=1 FAULT_PERSIST=1 FAULT_ERRNO=EIO \
  "$hpak" -q pack "$W/src" --into "$L" --name t2 >"$W/eio.out" 2>"$W/eio.err" || rc=$?
expect_eq "the add exits 2" 2 "$rc"
one_line eio "^hpak: error: unable to look for the library marker '$L/HPAKLIB': Input/output error$"
check "nothing was created beside the marker" test -z "$(find "$L" -maxdepth 1 -name '.tmp-*')"

echo "== gc.lock without group write in a shared library"
member=hpakmsg$$
group=hpakmsg$$g
if command -v useradd >/dev/null && command -v setpriv >/dev/null && groupadd "$group" 2>/dev/null; then
  useradd -M -N -g "$group" -s /usr/sbin/nologin "$member" || fail "useradd"
  trap 'userdel "$member" 2>/dev/null; groupdel "$group" 2>/dev/null; loop_cleanup; finish' EXIT
  S=$W/shared
  mkdir -p "$S" && chmod 755 "$W"
  H init --shared "$S" >/dev/null || fail "init --shared"
  chgrp -R "$group" "$S"
  (umask 022 && "$hpak" -q gc "$S" >/dev/null) || fail "a first gc (creating gc.lock with umask 022)"
  check "gc.lock was created without group write" test "$(stat -c %a "$S/locks/gc.lock")" = 644
  rc=0
  HOME=/nonexistent setpriv --reuid="$(id -u "$member")" --regid="$(getent group "$group" | cut -d: -f3)" --clear-groups -- \
    "$hpak" -q gc "$S" >"$W/eacces.out" 2>"$W/eacces.err" || rc=$?
  expect_eq "the member's gc exits 2" 2 "$rc"
  one_line eacces "unable to open '$S/locks/gc.lock' for writing: Permission denied; it is not group-writable \(mode 0644, owner 'root'\).*umask 002.*'chmod g\+w $S/locks/gc.lock'"
  chmod g+w "$S/locks/gc.lock"
  rc=0
  HOME=/nonexistent setpriv --reuid="$(id -u "$member")" --regid="$(getent group "$group" | cut -d: -f3)" --clear-groups -- \
    "$hpak" -q gc "$S" >/dev/null 2>"$W/eacces2.err" || rc=$?
  expect_eq "after the fix it says, the member's gc runs ($(cat "$W/eacces2.err"))" 0 "$rc"
else
  echo "  (left out: no useradd/setpriv, or groupadd failed)"
  [ "${CI:-}" = true ] && fail "useradd/setpriv/groupadd needed under CI"
fi

echo "== not enough space: exact figures when the rounded ones are equal"
mkdir -p "$W/tfs"
mount -t tmpfs -o size=3m tmpfs "$W/tfs" || loop_skip "mount -t tmpfs failed"
loop_mounts+=("$W/tfs")
mkdir -p "$W/tfs/target"
has=$(($(stat -f -c '%a * %S' "$W/tfs" | sed 's/ //g')))
# One file of (free space - a block for its entry + 1000) bytes: 1000 bytes
# more than there is, which rounds to the same figure.
mkdir -p "$W/fit" && head -c $((has - 4096 + 1000)) /dev/urandom >"$W/fit/f"
H pack "$W/fit" --into "$L" --name fit --no-relocate >/dev/null || fail "add fit"
run space restore "$L" fit "$W/tfs/target"
expect_eq "the restore exits 2" 2 "$rc"
one_line space "not enough space in '.*': needs ([0-9.]+ [KM]iB) \(([0-9]+) bytes\), has ([0-9.]+ [KM]iB) \(([0-9]+) bytes\)"
check "the exact figures differ where the rounded ones do not" python3 -c '
import re, sys
m = re.search(r"needs ([0-9.]+ [KM]iB) \(([0-9]+) bytes\), has ([0-9.]+ [KM]iB) \(([0-9]+) bytes\)", open(sys.argv[1]).read())
assert m.group(1) == m.group(3) and int(m.group(2)) > int(m.group(4)), m.groups()' "$W/space.err"

echo "== '--' ends the options"
run dash restore "$L" t -x
expect_eq "restore LIB t -x: exit 2" 2 "$rc"
one_line dash "^hpak: error: '-x' is not an option of 'hpak restore' \(.*\); to pass an argument that starts with '-', put '--' before it: 'hpak restore \.\.\. -- -x'$"
(cd "$W" && "$hpak" -q restore "$L" t -- -x >/dev/null 2>"$W/dash2.err")
expect_eq "restore LIB t -- -x restores into './-x' ($(cat "$W/dash2.err"))" 0 $?
check "it did" test -f "$W/-x/README"
"$hpak" restore --help >"$W/help.out" 2>&1
check "restore --help says so" grep -q "Arguments after '--' are never options" "$W/help.out"

done_tests
