#!/usr/bin/env bash
# hpak restore / unpack give the tree back exactly and touch nothing else
# (issue 10, items 4, 6, 8, 12):
# - mtimes: restore sets the recorded mtime of every file, symlink and
#   directory, and a dirty restore puts back the ones changed since;
# - a file of the target hard-linked to a file outside it is replaced, never
#   chmod'ed or utimens'ed through the link (the outside file keeps its mode
#   and mtime); hpak's own hardlink groups are kept;
# - set-uid/set-gid bits are dropped unless --preserve-setid (sticky kept);
# - a restore or unpack that cannot fit on the target's file system is
#   refused before anything is written ("needs X, has Y").
# ctest runs: bash test_restore_fidelity.sh <hpak-binary> <source-root>.
. "$(dirname "$0")/cli_lib.sh" "$@"

fails=0
bad() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
ok() { echo "ok: $*"; }
expect_eq() {
  if [ "$2" = "$3" ]; then
    if [ "$(printf '%s' "$3" | wc -l)" -gt 1 ]; then ok "$1"; else ok "$1 ($3)"; fi
  elif [ "$(printf '%s' "$2" | wc -l)" -gt 1 ]; then
    bad "$1: differs (< expected, > got): $(diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | sed -n 1,20p)"
  else
    bad "$1: expected '$2', got '$3'"
  fi
}
# rc_is NAME STATUS: like expect_rc, but a failure is counted, not fatal.
rc_is() {
  no_crash "$1"
  [ "$rc" -eq "$2" ] || bad "$1: exit $rc, expected $2; stderr: $(head -c 500 "$work/$1.err")"
}
# mtimes DIR: every entry's relative path, type and mtime (ns), state file aside.
mtimes() { (cd "$1" && find . -mindepth 1 ! -name .hpak-state -printf '%P %y %T@\n' | sort); }
modes() { (cd "$1" && find . -mindepth 1 ! -name .hpak-state ! -type l -printf '%P %m\n' | sort); }

src=$work/src/env
lib=$work/lib
make_tree "$src" 60 7
mkdir -p "$src/sbin" "$src/share/sgid" "$src/share/sticky"
printf 'same bytes as outside\n' >"$src/bin/good.txt"
chmod 0644 "$src/bin/good.txt"
printf '#!/bin/sh\necho root\n' >"$src/sbin/suid"
printf '#!/bin/sh\necho group\n' >"$src/sbin/sgid"
chmod 4755 "$src/sbin/suid"
chmod 2755 "$src/sbin/sgid"
chmod 2775 "$src/share/sgid"
chmod 1777 "$src/share/sticky"
ln -s ../bin/good.txt "$src/sbin/good-link"
# Fixed, distinct mtimes on what was added (children before parents).
i=0
for p in "$src/bin/good.txt" "$src/sbin/suid" "$src/sbin/sgid" "$src/sbin/good-link" "$src/share/sgid" "$src/share/sticky" "$src/sbin" "$src/bin" "$src/share"; do
  i=$((i + 1))
  touch -h -d "@$((1500000000 + i * 86400)).$((100000000 + i))" "$p"
done
run pack pack "$src" --into "$lib" --name env
expect_rc pack 0

# ---- item 12: mtimes
T=$work/t
run fresh restore "$lib" env "$T"
rc_is fresh 0
expect_eq "fresh restore: every mtime (files, symlinks, dirs) as packed" "$(mtimes "$src")" "$(mtimes "$T")"
touch "$T/bin/python3.11" "$T/share/doc"
touch -h "$T/bin/python"
sleep 0.01
run dirty restore "$lib" env "$T" --json
rc_is dirty 0
expect_eq "dirty restore after touch: no file rewritten" 0 "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["written"])' "$work/dirty.out")"
expect_eq "dirty restore after touch: every mtime as packed again" "$(mtimes "$src")" "$(mtimes "$T")"
# A changed file of the same size (mtime kept) is rewritten, and gets its mtime back.
printf 'SAME bytes as outside\n' >"$T/bin/good.txt"
touch -d "@1" "$T/bin/good.txt"
rm "$T/sbin/good-link"
run dirty2 restore "$lib" env "$T"
rc_is dirty2 0
expect_eq "rewritten file and symlink: their mtimes as packed" "$(mtimes "$src")" "$(mtimes "$T")"
expect_eq "rewritten file: its bytes" "same bytes as outside" "$(cat "$T/bin/good.txt")"

# ---- item 4: a hard link out of the target is replaced, not chmod'ed
mkdir -p "$work/outside"
printf 'same bytes as outside\n' >"$work/outside/private.txt"
chmod 0600 "$work/outside/private.txt"
touch -d "@1234567890" "$work/outside/private.txt"
rm "$T/bin/good.txt"
ln "$work/outside/private.txt" "$T/bin/good.txt"
run hl restore "$lib" env "$T"
rc_is hl 0
expect_eq "the outside file keeps its mode" 600 "$(stat -c %a "$work/outside/private.txt")"
expect_eq "the outside file keeps its mtime" 1234567890 "$(stat -c %Y "$work/outside/private.txt")"
expect_eq "the outside file keeps its link count" 1 "$(stat -c %h "$work/outside/private.txt")"
expect_eq "the target's file has the catalog's mode" 644 "$(stat -c %a "$T/bin/good.txt")"
expect_eq "the target's file is a file of its own" 1 "$(stat -c %h "$T/bin/good.txt")"
expect_eq "after the replacement every mtime is as packed" "$(mtimes "$src")" "$(mtimes "$T")"
run noop restore "$lib" env "$T" --json
rc_is noop 0
expect_eq "hpak's own hardlink group is kept (nothing written)" 0 "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["written"])' "$work/noop.out")"
expect_eq "the catalog's hardlinks still share an inode" 3 "$(stat -c %h "$T/bin/pip")"

# ---- item 6: set-id bits
expect_eq "restore drops set-uid" 755 "$(stat -c %a "$T/sbin/suid")"
expect_eq "restore drops set-gid on a file" 755 "$(stat -c %a "$T/sbin/sgid")"
expect_eq "restore drops set-gid on a directory" 775 "$(stat -c %a "$T/share/sgid")"
expect_eq "restore keeps the sticky bit" 1777 "$(stat -c %a "$T/share/sticky")"
P=$work/p
run keep restore "$lib" env "$P" --preserve-setid
rc_is keep 0
expect_eq "--preserve-setid keeps set-uid" 4755 "$(stat -c %a "$P/sbin/suid")"
expect_eq "--preserve-setid keeps set-gid" 2755 "$(stat -c %a "$P/sbin/sgid")"
expect_eq "--preserve-setid keeps a set-gid directory" 2775 "$(stat -c %a "$P/share/sgid")"
run drop restore "$lib" env "$P"
rc_is drop 0
expect_eq "a dirty restore without --preserve-setid drops set-uid" 755 "$(stat -c %a "$P/sbin/suid")"
expect_eq "a dirty restore without --preserve-setid drops set-gid (dir)" 775 "$(stat -c %a "$P/share/sgid")"
run pk pack "$src" -o "$work/env.hpak"
expect_rc pk 0
run up unpack "$work/env.hpak" "$work/u"
rc_is up 0
expect_eq "unpack drops set-uid" 755 "$(stat -c %a "$work/u/sbin/suid")"
expect_eq "unpack drops set-gid (dir)" 775 "$(stat -c %a "$work/u/share/sgid")"
run up2 unpack "$work/env.hpak" "$work/u2" --preserve-setid
rc_is up2 0
expect_eq "unpack --preserve-setid: all modes as packed" "$(modes "$src")" "$(modes "$work/u2")"
expect_eq "unpack: every mtime as packed" "$(mtimes "$src")" "$(mtimes "$work/u2")"
# umask is not applied: modes come from the catalog.
(umask 077 && "$hpak" -q restore "$lib" env "$work/um" --preserve-setid >/dev/null 2>&1) || bad "restore under umask 077"
expect_eq "restore under umask 077: modes as packed" "$(modes "$src")" "$(modes "$work/um")"

# ---- item 8: disk space, checked before writing
small=$work/small
mkdir -p "$small"
if mount -t tmpfs -o size=1m tmpfs "$small" 2>/dev/null; then
  trap 'umount "$small" 2>/dev/null; cli_cleanup' EXIT
  dup=$work/src/dup
  mkdir -p "$dup"
  head -c 262144 /dev/urandom >"$dup/f0"
  for k in 1 2 3 4 5 6 7; do cp "$dup/f0" "$dup/f$k"; done
  run pd pack "$dup" --into "$lib" --name dup
  expect_rc pd 0
  run pdo pack "$dup" -o "$work/dup.hpak"
  expect_rc pdo 0
  run full restore "$lib" dup "$small/t"
  rc_is full 2
  one_line_error full "not enough space .*needs [0-9.]+ [KMG]iB, has [0-9.]+ [KMG]iB"
  expect_eq "nothing written into the refused target" "" "$(find "$small/t" -type f ! -name .hpak-state 2>/dev/null)"
  run fullu unpack "$work/dup.hpak" "$small/u"
  rc_is fullu 2
  one_line_error fullu "not enough space .*needs [0-9.]+ [KMG]iB, has [0-9.]+ [KMG]iB"
  expect_eq "nothing unpacked into the refused target" "" "$(find "$small/u" -type f 2>/dev/null)"
  # What fits is restored (two copies: 512 KiB in a 1 MiB file system).
  rm -f "$dup"/f[2-7]
  run pd2 pack "$dup" --into "$lib" --name dup2
  expect_rc pd2 0
  rm -rf "${small:?}"/*
  run fits restore "$lib" dup2 "$small/t"
  rc_is fits 0
  # A dirty restore (switching the space to the bigger catalog) is checked
  # too, before its first change: the space keeps what it had.
  before_sw=$(cd "$small/t" && find . -printf '%P|%y|%s|%T@\n' | sort)
  run fulld restore "$lib" dup "$small/t"
  rc_is fulld 2
  one_line_error fulld "not enough space .*needs [0-9.]+ [KMG]iB, has [0-9.]+ [KMG]iB"
  expect_eq "a refused dirty restore changes nothing" "$before_sw" "$(cd "$small/t" && find . -printf '%P|%y|%s|%T@\n' | sort)"
  umount "$small"
  trap cli_cleanup EXIT
else
  echo "skipped: disk space (cannot mount a tmpfs)"
fi

if [ "$fails" -ne 0 ]; then
  echo "$test_name: $fails failed"
  exit 1
fi
echo "$test_name: all passed"
