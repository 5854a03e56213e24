#!/usr/bin/env bash
# The real hpak.exe under Wine (issue 30), run by scripts/build-windows.sh
# after the unit tests:
#   bash tests/windows/test_wine_cli.sh HPAK_EXE [LINUX_HPAK]
# WINE (default wine64), WINEPREFIX and WINEDEBUG come from the caller.
#
# A tree made here (nested directories, small and large files, an empty file,
# a read-only file) is packed into a .hpak, verified and unpacked; packed into
# a library (pack --into), restored fresh, again unchanged (nothing written)
# and after edits (dirty: exactly the edited files written), and the library
# gc'ed and verified. Compatibility, with the Linux hpak (LINUX_HPAK, default
# build/hpak of the checkout): a library made on Linux restores under Wine, a
# pack and a library made under Wine restore on Linux, a directory remote
# published on one side is fetched on the other, each compared with a manifest
# (sha256 of every file, every directory). Symbolic links: what the Windows
# build does (symlink_at: CreateSymbolicLinkW, EPERM where the user may not)
# is asserted as documented in hpak-library(7), "Windows".
set -uo pipefail # not -e: every check runs and is counted
export LC_ALL=C
exe=$(realpath "${1:?usage: $0 HPAK_EXE [LINUX_HPAK]}")
root=$(cd "$(dirname "$0")/../.." && pwd)
linux_hpak=${2:-$root/build/hpak}
wine=${WINE:-$(command -v wine64 || echo /usr/lib/wine/wine64)}
W=$(realpath "$(mktemp -d "${TMPDIR:-/tmp}/hpak-wine-cli-XXXXXX")")
failures=0
cleanup() {
  if [ "$failures" -eq 0 ]; then chmod -R u+rwx "$W" 2>/dev/null || true; rm -rf "$W"; else echo "test_wine_cli: kept $W"; fi
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
pass() { echo "ok: $*"; }
check() { # check WHAT COMMAND...
  local what=$1
  shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}
expect_eq() { # expect_eq WHAT WANT GOT
  if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: want '$2', got '$3'"; fi
}
# hpak NAME ARGS...: hpak.exe under Wine, stdout in $W/NAME.out, stderr in
# $W/NAME.err (their lines end in CRLF on Windows: the CR is dropped here),
# its exit status in $W/NAME.rc (and as the status).
hpak() {
  local name=$1
  shift
  local rc=0
  "$wine" "$exe" "$@" >"$W/$name.out" 2>"$W/$name.err" || rc=$?
  sed -i 's/\r$//' "$W/$name.out" "$W/$name.err"
  echo "$rc" >"$W/$name.rc"
  return "$rc"
}
json() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
# manifest DIR: every directory and every file with its sha256, by relative path.
manifest() {
  (cd "$1" && find . -mindepth 1 -type d ! -name .hpak-state -printf 'd %P\n' | sort &&
    find . -type f ! -name .hpak-state -printf '%P\0' | sort -z | xargs -0 -r sha256sum)
}
same_tree() { # same_tree WHAT A B
  if diff <(manifest "$2") <(manifest "$3") >"$W/manifest.diff"; then pass "$1"; else fail "$1: $(head -5 "$W/manifest.diff" | tr '\n' ' ')"; fi
}
read_only() { [ -f "$1" ] && case $(stat -c %A "$1") in *w*) false ;; *) true ;; esac; }

# ---- the tree
src=$W/src
mkdir -p "$src/a/b/c" "$src/empty-dir/nested" "$src/lib/python3.11/site-packages/pkg"
printf 'hello\n' >"$src/hello.txt"
: >"$src/empty.txt"
for i in $(seq 1 40); do printf 'module %d\n%s\n' "$i" "$(seq 1 "$i")" >"$src/lib/python3.11/site-packages/pkg/m$i.py"; done
head -c 3000000 /dev/urandom >"$src/a/b/c/large.bin"   # several blocks, incompressible
seq 1 200000 >"$src/a/b/text.txt"                      # compressible
printf 'frozen\n' >"$src/a/readonly.txt"
chmod 0444 "$src/a/readonly.txt"
nfiles=$(find "$src" -type f | wc -l)

# ---- pack, verify, unpack
hpak pack -q pack "$src" -o "$W/env.hpak" || true
expect_eq "pack exits 0 ($(head -c 200 "$W/pack.err"))" 0 "$(cat "$W/pack.rc")"
check "pack wrote env.hpak and env.hidx" test -s "$W/env.hpak" -a -s "$W/env.hidx"
check "pack left no temp file" test -z "$(find "$W" -maxdepth 1 -name '.tmp-*')"
hpak verify verify "$W/env.hpak" || true
check "verify says ok" grep -q "^ok: " "$W/verify.out"
hpak unpack -q unpack "$W/env.hpak" "$W/out" || true
expect_eq "unpack exits 0 ($(head -c 200 "$W/unpack.err"))" 0 "$(cat "$W/unpack.rc")"
same_tree "unpacked tree = source (manifest)" "$src" "$W/out"
check "the read-only file unpacks read-only" read_only "$W/out/a/readonly.txt"
check "the writable file unpacks writable" test "$(stat -c %A "$W/out/hello.txt" | cut -c3)" = w
# cat writes a file's bytes as they are (no CRLF translation on stdout).
"$wine" "$exe" cat "$W/env.hpak" a/b/text.txt >"$W/cat.out" 2>"$W/cat.err"
check "cat gives a file's bytes unchanged" cmp -s "$W/cat.out" "$src/a/b/text.txt"
# A corrupted copy fails verify (the check can fail).
cp "$W/env.hpak" "$W/bad.hpak" && cp "$W/env.hidx" "$W/bad.hidx"
size=$(stat -c %s "$W/bad.hpak")
printf 'XXXXXXXX' | dd of="$W/bad.hpak" bs=1 seek=$((size / 2)) conv=notrunc status=none
hpak badverify verify "$W/bad.hpak" || true
expect_eq "verify of a corrupted pack exits 1" 1 "$(cat "$W/badverify.rc")"

# ---- a library: pack --into, restore fresh / unchanged / dirty, gc
lib=$W/lib
hpak into -q pack "$src" --into "$lib" --name env --json || true
expect_eq "pack --into exits 0 ($(head -c 200 "$W/into.err"))" 0 "$(cat "$W/into.rc")"
hpak fresh -q restore "$lib" env "$W/t" --json || true
expect_eq "fresh restore exits 0 ($(head -c 200 "$W/fresh.err"))" 0 "$(cat "$W/fresh.rc")"
same_tree "fresh restore = source (manifest)" "$src" "$W/t"
[ "$(cat "$W/fresh.rc")" = 0 ] && expect_eq "fresh restore writes every file" "$nfiles" "$(json "$W/fresh.out" written)"
check "the read-only file restores read-only" read_only "$W/t/a/readonly.txt"
hpak same -q restore "$lib" env "$W/t" --json || true
expect_eq "restore of an unchanged target exits 0 ($(head -c 200 "$W/same.err"))" 0 "$(cat "$W/same.rc")"
[ "$(cat "$W/same.rc")" = 0 ] && expect_eq "an unchanged target: nothing written" 0 "$(json "$W/same.out" written)"
printf 'edited\n' >>"$W/t/hello.txt"
rm "$W/t/lib/python3.11/site-packages/pkg/m7.py"
printf 'stray\n' >"$W/t/a/stray.txt"
hpak dirty -q restore "$lib" env "$W/t" --json || true
expect_eq "dirty restore exits 0 ($(head -c 200 "$W/dirty.err"))" 0 "$(cat "$W/dirty.rc")"
same_tree "dirty restore = source (manifest)" "$src" "$W/t"
[ "$(cat "$W/dirty.rc")" = 0 ] && expect_eq "dirty restore writes the edited and the deleted file" 2 "$(json "$W/dirty.out" written)"
# Windows paths (Wine's Z: is /): the library named with backslashes, the target as Z:/... .
hpak zrestore -q restore "Z:${lib//\//\\}" env "Z:$W/zt" || true
expect_eq "restore with Windows paths (Z:\\..., Z:/...) exits 0 ($(head -c 200 "$W/zrestore.err"))" 0 "$(cat "$W/zrestore.rc")"
same_tree "... into the directory they name (manifest)" "$src" "$W/zt"
hpak gc -q gc "$lib" || true
expect_eq "gc exits 0 ($(head -c 200 "$W/gc.err"))" 0 "$(cat "$W/gc.rc")"
hpak libverify verify "$lib" || true
expect_eq "verify of the library after gc exits 0 ($(head -c 200 "$W/libverify.err"))" 0 "$(cat "$W/libverify.rc")"

# ---- symbolic links (hpak-library(7), "Windows")
# Wine shows a Unix symbolic link as the file or directory it names (it has no
# reparse point for it), so a tree packed under Wine holds a copy, not a link.
lt=$W/linktree
mkdir -p "$lt/d" && printf 'target\n' >"$lt/d/f" && ln -s d/f "$lt/link"
hpak linkpack pack "$lt" -o "$W/links.hpak" || true
expect_eq "pack of a tree holding a Unix symlink exits 0 under Wine" 0 "$(cat "$W/linkpack.rc")"
check "... and records no symlink (Wine shows the file it names)" grep -q " 0 symlinks" "$W/linkpack.out"
hpak linkls ls -l "$W/links.hpak" || true
check "... 'link' is a regular file of the target's size" grep -Eq '^-r.* 7 .* link$' "$W/linkls.out"

# ---- compatibility with the Linux hpak
if [ -x "$linux_hpak" ]; then
  "$linux_hpak" -q pack "$src" --into "$W/linuxlib" --name env >/dev/null
  hpak fromlinux -q restore "$W/linuxlib" env "$W/from-linux" || true
  expect_eq "a library made on Linux restores under Wine ($(head -c 200 "$W/fromlinux.err"))" 0 "$(cat "$W/fromlinux.rc")"
  same_tree "... byte for byte (manifest)" "$src" "$W/from-linux"
  # A symlink of a Linux pack: CreateSymbolicLinkW, which Wine 8 answers with
  # success and no link; the os layer sees no link there (EOPNOTSUPP): one line, exit 2.
  "$linux_hpak" -q pack "$lt" -o "$W/linux-links.hpak" >/dev/null
  hpak linkunpack -q unpack "$W/linux-links.hpak" "$W/linkout" || true
  expect_eq "unpack of a pack holding a symlink fails under Wine" 2 "$(cat "$W/linkunpack.rc")"
  expect_eq "... in one line naming the link" "hpak: error: unable to create symlink '$W/linkout/link': Operation not supported" "$(cat "$W/linkunpack.err")"
  # A remote (the directory backend): published on Linux, fetched and restored under Wine, and back.
  "$linux_hpak" -q publish "$W/linuxlib" "$W/www/" >/dev/null
  hpak fetch -q fetch "$W/www" env --into "$W/fetched" || true
  expect_eq "fetch under Wine from a directory published on Linux exits 0 ($(head -c 200 "$W/fetch.err"))" 0 "$(cat "$W/fetch.rc")"
  hpak fetchedrestore -q restore "$W/fetched" env "$W/fetched-t" || true
  same_tree "... and restores the tree (manifest)" "$src" "$W/fetched-t"
  hpak publish -q publish "$lib" "$W/www-wine/" || true
  expect_eq "publish under Wine exits 0 ($(head -c 200 "$W/publish.err"))" 0 "$(cat "$W/publish.rc")"
  if ! { "$linux_hpak" -q fetch "$W/www-wine" env --into "$W/linux-fetched" &&
    "$linux_hpak" -q restore "$W/linux-fetched" env "$W/linux-fetched-t"; } >/dev/null 2>&1; then
    fail "Linux fetch and restore of the Wine publish"
  fi
  same_tree "... which Linux fetches and restores (manifest)" "$src" "$W/linux-fetched-t"
  # Names Windows cannot hold (core/restore/windows_names.hpp, always on for hpak.exe): refused in
  # one line before anything is created.
  mkdir -p "$W/names" && printf 'a\n' >"$W/names/Makefile" && printf 'b\n' >"$W/names/makefile"
  "$linux_hpak" -q pack "$W/names" -o "$W/names.hpak" >/dev/null
  hpak names -q unpack "$W/names.hpak" "$W/names-out" || true
  expect_eq "unpack of a case pair under Wine exits 2" 2 "$(cat "$W/names.rc")"
  check "... saying the names differ only in case" grep -q "'Makefile' and 'makefile' differ only in case" "$W/names.err"
  check "... having created nothing" test ! -e "$W/names-out"
  # An executable file: its exec bit is not applied on Windows nor read back;
  # an unchanged target writes nothing and counts it as a mode fixed.
  mkdir -p "$W/exe" && printf '#!/bin/sh\n' >"$W/exe/run.sh" && chmod 0755 "$W/exe/run.sh" && printf 'data\n' >"$W/exe/d.txt"
  "$linux_hpak" -q pack "$W/exe" --into "$W/exelib" --name env >/dev/null
  hpak exe1 -q restore "$W/exelib" env "$W/exet" --json || true
  hpak exe2 -q restore "$W/exelib" env "$W/exet" --json || true
  expect_eq "an unchanged target with an executable: nothing written" 0 "$(json "$W/exe2.out" written 2>/dev/null)"
  expect_eq "... one mode counted as fixed (the exec bit)" 1 "$(json "$W/exe2.out" modes_fixed 2>/dev/null)"
  "$linux_hpak" -q unpack "$W/env.hpak" "$W/on-linux" >/dev/null 2>"$W/onlinux.err" || fail "Linux unpack of the Wine pack: $(head -c 200 "$W/onlinux.err")"
  same_tree "a pack made under Wine unpacks on Linux identically (manifest)" "$src" "$W/on-linux"
  "$linux_hpak" -q restore "$lib" env "$W/wine-lib-on-linux" >/dev/null 2>"$W/winelib.err" || fail "Linux restore of the Wine library: $(head -c 200 "$W/winelib.err")"
  same_tree "a library made under Wine restores on Linux (manifest)" "$src" "$W/wine-lib-on-linux"
elif [ "${CI:-}" = true ]; then
  fail "no Linux hpak at $linux_hpak (CI=true: the compatibility part must run; scripts/build.sh builds it)"
else
  echo "test_wine_cli: compatibility left out: no Linux hpak at $linux_hpak (scripts/build.sh builds it)"
fi

# No run crashed (Wine reports an unhandled exception on stderr, whatever the exit status).
crashed=$(grep -l "Unhandled\|page fault" "$W"/*.err 2>/dev/null | xargs -r -n1 basename | tr '\n' ' ')
expect_eq "no hpak.exe run crashed" "" "$crashed"

echo "test_wine_cli: $failures failure(s)"
[ "$failures" -eq 0 ]
