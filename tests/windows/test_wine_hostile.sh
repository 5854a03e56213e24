#!/usr/bin/env bash
# The Windows hostile corpus (issue 30), hpak.exe under Wine, run by
# scripts/build-windows.sh after test_wine_cli.sh:
#   bash tests/windows/test_wine_hostile.sh HPAK_EXE [LINUX_HPAK]
#   - names Windows cannot hold (reserved device names, a trailing dot or
#     space, ':' and '\' in a name), in packs and libraries made by the Linux
#     hpak: restore and unpack refuse each in one line naming the path, exit 2,
#     the target not even created; a new catalog named so is refused by
#     pack --into before anything is stored;
#   - a directory of the target replaced by a link to a directory outside it
#     (Wine shows a Unix symlink to a directory as a reparse point by name,
#     as a junction is): a dirty restore never writes through it (it removes the
#     link, which Wine cannot: then it stops in one line); a target that is
#     such a link is refused;
#   - paths past MAX_PATH (260): pack, unpack and restore of a tree nested
#     deeper than that, compared with a manifest.
suite=test_wine_hostile
. "$(dirname "$0")/wine_lib.sh" "$@"

# ---- names Windows cannot hold
# refused_name CASE NAME [dir]: a tree holding NAME (a file, or a directory
# holding one with `dir`), packed on Linux; restore and unpack under Wine refuse it.
refused_name() {
  local case=$1 name=$2 kind=${3:-file} t=$W/names-$1
  mkdir -p "$t/keep/deeper" && printf 'kept\n' >"$t/keep/file"
  if [ "$kind" = dir ]; then mkdir "$t/keep/$name" && printf 'x\n' >"$t/keep/$name/inner"; else printf 'x\n' >"$t/keep/$name"; fi
  "$linux_hpak" -q pack "$t" -o "$W/$case.hpak" >/dev/null && "$linux_hpak" -q pack "$t" --into "$W/names-lib" --name "$case" >/dev/null ||
    { fail "$case: the Linux hpak could not pack '$name'"; return; }
  hpak "restore-$case" restore "$W/names-lib" "$case" "$W/t-$case/deep" || true
  hpak "unpack-$case" unpack "$W/$case.hpak" "$W/u-$case" || true
  local op
  for op in restore unpack; do
    expect_eq "$case: $op of a catalog holding 'keep/$name' exits 2" 2 "$(cat "$W/$op-$case.rc")"
    expect_eq "... in one line" 1 "$(wc -l <"$W/$op-$case.err")"
    check "... naming the path and saying nothing was written" \
      grep -qF "hpak: error: 'keep/$name' cannot be created on Windows: " "$W/$op-$case.err"
  done
  check "$case: ... restore created nothing" test ! -e "$W/t-$case"
  check "$case: ... unpack created nothing" test ! -e "$W/u-$case"
}

if [ -x "$linux_hpak" ]; then
  # (the cases' own names are no device names: a catalog or a file named "con" cannot be made on Windows)
  refused_name n-con CON
  refused_name n-nul nul
  refused_name n-com1 COM1
  refused_name n-aux-txt aux.txt
  refused_name n-lpt9-dir LPT9 dir
  refused_name n-dot 'trailing.'
  refused_name n-space 'trailing '
  refused_name n-colon 'a:stream'
  refused_name n-backslash 'a\b'
  check "the messages say why: a reserved device name" grep -q "'CON' is a reserved device name" "$W/restore-n-con.err"
  check "... a name ending in a dot" grep -q "ends in a dot" "$W/restore-n-dot.err"
  check "... an alternate data stream" grep -q "holds ':' (an alternate data stream)" "$W/restore-n-colon.err"
  check "... a separator" grep -q "holds '\\\\' (a separator)" "$W/restore-n-backslash.err"
  # A catalog name Windows cannot open is refused before anything is stored (it used to fail at the name's
  # publication, "Input/output error", with the pack already written).
  mkdir -p "$W/cn-src" && printf 'x\n' >"$W/cn-src/f"
  hpak cn-init init "$W/cn-lib"
  for name in con NUL.txt com1 env.; do
    hpak "cn-$name" pack "$W/cn-src" --into "$W/cn-lib" --name "$name" || true
    expect_eq "pack --into --name $name exits 2" 2 "$(cat "$W/cn-$name.rc")"
    expect_eq "... in one line" 1 "$(wc -l <"$W/cn-$name.err")"
  done
  check "... saying it is a device name" grep -qF "hpak: error: catalog name 'con' is a Windows device name" "$W/cn-con.err"
  check "... or that Windows drops its dot" grep -qF "hpak: error: catalog name 'env.' ends in a dot, which Windows drops" "$W/cn-env..err"
  check "... and nothing was stored" test -z "$(find "$W/cn-lib/packs" "$W/cn-lib/catalogs" -mindepth 1)"
  # Made on Linux, where the name is valid: listed, and unreadable in one line that says why.
  "$linux_hpak" -q pack "$W/cn-src" --into "$W/cn-lib" --name con >/dev/null || fail "the Linux hpak could not add 'con'"
  hpak cn-restore restore "$W/cn-lib" con "$W/cn-target" || true
  expect_eq "restore of a Linux library's catalog 'con' exits 2" 2 "$(cat "$W/cn-restore.rc")"
  check "... saying why, in one line" grep -qxF "hpak: error: catalog name 'con' is a Windows device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9, also before a dot): a library made elsewhere can hold it, but it cannot be read here" "$W/cn-restore.err"
elif [ "${CI:-}" = true ]; then
  fail "no Linux hpak at $linux_hpak (CI=true: the names must be tested; scripts/build.sh builds it)"
else
  echo "$suite: names left out: no Linux hpak at $linux_hpak (scripts/build.sh builds it)"
fi

# ---- a directory of the target replaced by a link to a directory outside
src=$W/src
mkdir -p "$src/a/b" "$src/c"
for i in 1 2 3; do printf 'file %d\n' "$i" >"$src/a/b/f$i.txt"; done
printf 'top\n' >"$src/c/top.txt"
hpak pack -q pack "$src" --into "$W/lib" --name env || true
expect_eq "pack --into exits 0 ($(head -c 200 "$W/pack.err"))" 0 "$(cat "$W/pack.rc")"
T=$W/t
hpak fresh -q restore "$W/lib" env "$T" || true
same_tree "fresh restore (manifest)" "$src" "$T"
outside=$W/outside
mkdir -p "$outside" && printf 'keep\n' >"$outside/keep"
chmod -R u+w "$T/a/b" && rm -rf "$T/a/b" && ln -s "$outside" "$T/a/b"
hpak junction -q restore "$W/lib" env "$T" || true
# On Windows RemoveDirectoryW removes a junction itself and the restore makes the
# directory again; Wine cannot remove a Unix symlink to a directory that way (it
# answers "Directory not empty", the directory it names being full): the restore
# stops there, in one line naming the link, having written nothing through it.
if [ "$(cat "$W/junction.rc")" = 0 ]; then
  check "dirty restore over a link to a directory outside: the link replaced by a real directory" test -d "$T/a/b" -a ! -L "$T/a/b"
  same_tree "... the tree restored (manifest)" "$src" "$T"
else
  expect_eq "dirty restore over a link to a directory outside, which Wine cannot remove, exits 2" 2 "$(cat "$W/junction.rc")"
  expect_eq "... in one line naming it" "hpak: error: unable to remove '$T/a/b': Directory not empty" "$(cat "$W/junction.err")"
  check "... the link left as it was" test -L "$T/a/b"
fi
expect_eq "... the directory outside untouched" keep "$(ls -A "$outside" | tr '\n' ' ' | sed 's/ $//')"
ln -s "$outside" "$W/link-to-outside"
hpak linkedtarget -q restore "$W/lib" env "$W/link-to-outside" || true
expect_eq "a restore into a target that is a link to a directory fails" 2 "$(cat "$W/linkedtarget.rc")"
check "... saying it is a link" grep -q "is a symlink" "$W/linkedtarget.err"
expect_eq "... the directory it points to untouched" keep "$(ls -A "$outside" | tr '\n' ' ' | sed 's/ $//')"

# ---- paths past MAX_PATH (260 characters)
deep=$W/deep
seg=a-directory-name-of-fifty-characters-0123456789abc
long=$deep/$seg/$seg/$seg/$seg/$seg/$seg
mkdir -p "$long"
printf 'deep\n' >"$long/file-at-the-bottom-of-a-long-path.txt"
head -c 200000 /dev/urandom >"$long/large.bin"
check "the tree's deepest file path is longer than 260 characters (Z: form)" \
  test "$(( ${#long} + 2 + 37 ))" -gt 260
hpak deeppack -q pack "$deep" -o "$W/deep.hpak" || true
expect_eq "pack of a tree past MAX_PATH exits 0 ($(head -c 200 "$W/deeppack.err"))" 0 "$(cat "$W/deeppack.rc")"
hpak deepunpack -q unpack "$W/deep.hpak" "$W/deep-u" || true
expect_eq "unpack of it exits 0 ($(head -c 200 "$W/deepunpack.err"))" 0 "$(cat "$W/deepunpack.rc")"
same_tree "... the tree (manifest)" "$deep" "$W/deep-u"
hpak deepinto -q pack "$deep" --into "$W/lib" --name deep || true
hpak deeprestore -q restore "$W/lib" deep "$W/deep-r" || true
expect_eq "restore of it exits 0 ($(head -c 200 "$W/deeprestore.err"))" 0 "$(cat "$W/deeprestore.rc")"
same_tree "... the tree (manifest)" "$deep" "$W/deep-r"
printf 'changed\n' >"$W/deep-r/${long#"$deep"/}/file-at-the-bottom-of-a-long-path.txt"
hpak deepdirty -q restore "$W/lib" deep "$W/deep-r" --json || true
expect_eq "a dirty restore rewrites the changed deep file" 1 "$(json "$W/deepdirty.out" written 2>/dev/null)"
same_tree "... the tree (manifest)" "$deep" "$W/deep-r"
hpak deepverify verify "$W/deep.hpak" || true
expect_eq "verify of the pack exits 0" 0 "$(cat "$W/deepverify.rc")"

finish
