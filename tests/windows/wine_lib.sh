# shellcheck shell=bash
# tests/windows/wine_lib.sh — what the Wine suites share (sourced by
# tests/windows/test_wine_cli.sh, test_wine_hostile.sh and test_wine_calls.sh): the arguments
# (HPAK_EXE [LINUX_HPAK]), a work directory $W (kept when a check failed),
# the counted checks, `hpak NAME ARGS...` (hpak.exe under Wine, its output in
# $W/NAME.out/.err/.rc) and a manifest of a tree.
# WINE (default wine64), WINEPREFIX and WINEDEBUG come from the caller.
set -uo pipefail # not -e: every check runs and is counted
export LC_ALL=C
exe=$(realpath "${1:?usage: $0 HPAK_EXE [LINUX_HPAK]}")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck disable=SC2034 # used by the suites that source this file
linux_hpak=${2:-$root/build/hpak}
wine=${WINE:-$(command -v wine64 || echo /usr/lib/wine/wine64)}
W=$(realpath "$(mktemp -d "${TMPDIR:-/tmp}/hpak-${suite:?}-XXXXXX")")
failures=0
cleanup() {
  if [ "$failures" -eq 0 ]; then chmod -R u+rwx "$W" 2>/dev/null || true; rm -rf "$W"; else echo "$suite: kept $W"; fi
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
# finish: the count, and the status (0: every check passed).
finish() {
  # No run crashed (Wine reports an unhandled exception on stderr, whatever the exit status).
  local crashed
  crashed=$(grep -l "Unhandled\|page fault" "$W"/*.err 2>/dev/null | xargs -r -n1 basename | tr '\n' ' ')
  expect_eq "no hpak.exe run crashed" "" "$crashed"
  echo "$suite: $failures failure(s)"
  [ "$failures" -eq 0 ]
}
