#!/usr/bin/env bash
# Names Windows cannot hold (issue 30; core/restore/windows_names.hpp): on
# Linux, `restore --windows-names` and `unpack --windows-names` refuse such a
# catalog in one line naming the first path, before anything is written
# (the target is not even created); without the option the same tree
# restores as it always did. On Windows the check is always on (the same code).
. "$(dirname "$0")/cli_lib.sh" "$@"

make_tree "$work/ok" 40 3
run pack_ok pack -q --no-relocate "$work/ok" --into "$work/lib" --name ok
expect_rc pack_ok 0
run restore_ok restore -q --windows-names "$work/lib" ok "$work/t-ok"
expect_rc restore_ok 0
diff -r --no-dereference -x .hpak-state "$work/ok" "$work/t-ok" >/dev/null || fail "a Windows-safe tree restored with --windows-names differs"

# case_of NAME SETUP PATTERN: a tree made by SETUP (run in its directory) is
# packed, then refused by restore and unpack --windows-names with PATTERN;
# without the option both write it.
case_of() {
  local name=$1 setup=$2 pattern=$3
  mkdir -p "$work/src-$name/keep"
  echo kept >"$work/src-$name/keep/file"
  (cd "$work/src-$name" && eval "$setup")
  run "pack-$name" pack -q "$work/src-$name" --into "$work/lib" --name "$name"
  expect_rc "pack-$name" 0
  run "packfile-$name" pack -q "$work/src-$name" -o "$work/$name.hpak"
  expect_rc "packfile-$name" 0

  run "restore-$name" restore --windows-names "$work/lib" "$name" "$work/t-$name/deep"
  refused "restore-$name" "$pattern"
  grep -q "nothing was written" "$work/restore-$name.err" || fail "$name: the error does not say nothing was written: $(err "restore-$name")"
  [ ! -e "$work/t-$name" ] || fail "$name: restore --windows-names created '$work/t-$name' before refusing"

  run "unpack-$name" unpack --windows-names "$work/$name.hpak" "$work/u-$name"
  refused "unpack-$name" "$pattern"
  [ ! -e "$work/u-$name" ] || fail "$name: unpack --windows-names created its directory before refusing"

  run "restore-plain-$name" restore -q "$work/lib" "$name" "$work/p-$name"
  expect_rc "restore-plain-$name" 0
  diff -r --no-dereference -x .hpak-state "$work/src-$name" "$work/p-$name" >/dev/null || fail "$name: the plain restore differs"
}

case_of device 'mkdir sub && echo x >sub/NUL.txt' "'sub/NUL.txt' cannot be created on Windows: 'NUL.txt' is a reserved device name"
case_of com 'echo x >com7' "'com7' is a reserved device name"
case_of case_pair 'echo a >Makefile && echo b >makefile' "'Makefile' and 'makefile' differ only in case"
case_of case_dir 'mkdir -p Lib/x lib && echo a >Lib/x/f' "'Lib' and 'lib' differ only in case"
case_of dot 'echo x >"name."' "'name.' cannot be created on Windows: its name ends in a dot"
case_of space 'mkdir "dir " && echo x >"dir /f"' "'dir ' cannot be created on Windows: its name ends in a space"
case_of colon 'echo x >"a:b"' "alternate data stream"
case_of backslash 'echo x >"a\\b"' "a separator"
case_of question 'echo x >"what?"' "holds '\\?'"
echo "ok: $test_name"
