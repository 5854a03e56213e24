# shellcheck shell=bash
# Shared by tests/cli/test_faults.sh, test_crash_restore.sh and
# test_symlink_race.sh (sourced, not run): arguments, a scratch directory
# kept on failure, check/fail reporting, a small tree with every node type,
# tree comparison and restore-state inspection.
#
#   source "$(dirname "$0")/../faults/lib.sh" "$@"   # $1 = hpak binary, $2 = source root
#
# The helper binaries (faultfs.so, hpak_swap_race) are found in tests/ of the
# build directory, beside the hpak binary's directory.
set -uo pipefail
export LC_ALL=C
hpak=$(realpath "${1:?usage: $0 HPAK_BINARY SOURCE_ROOT}")
# shellcheck disable=SC2034 # src_root, faultfs, swap_race: used by the scripts that source this file
{
  src_root=${2:?usage: $0 HPAK_BINARY SOURCE_ROOT}
  build_dir=$(dirname "$hpak")
  faultfs=$build_dir/tests/faultfs.so
  swap_race=$build_dir/tests/hpak_swap_race
}
test_name=$(basename "$0" .sh)
for tool in python3 cmp diff find; do
  command -v "$tool" >/dev/null || { echo "$test_name: skipped: $tool is not installed"; exit 125; }
done

# Scratch space: $HPAK_TEST_TMP, else $TMPDIR, else /tmp. A test may set
# prefer_shm=1 before sourcing to use /dev/shm when it is there: tmpfs makes
# the many small creates and unlinks of the crash and race loops ~10x faster
# (kill -9 and symlink swaps behave the same on it as on a disk filesystem).
tmp_base=${HPAK_TEST_TMP:-}
if [ -z "$tmp_base" ] && [ "${prefer_shm:-0}" = 1 ] && [ -d /dev/shm ] && [ -w /dev/shm ] &&
  [ "$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print $4}')" -gt 1048576 ] 2>/dev/null; then
  tmp_base=/dev/shm
fi
W=$(mktemp -d "${tmp_base:-${TMPDIR:-/tmp}}/hpak-$test_name-XXXXXX") || exit 2
W=$(realpath "$W")
fails=0
bg_pids=()
finish() {
  local pid
  for pid in "${bg_pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  wait 2>/dev/null
  if [ "$fails" -eq 0 ]; then
    chmod -R u+rwx "$W" 2>/dev/null
    rm -rf "$W"
  else
    echo "$test_name: keeping $W for inspection"
  fi
}
trap finish EXIT

ok() { echo "ok: $*"; }
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
check() {
  local what=$1
  shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}
expect_eq() {
  if [ "$2" = "$3" ]; then ok "$1 ($3)"; else fail "$1: expected '$2', got '$3'"; fi
}
done_tests() {
  if [ "$fails" -eq 0 ]; then
    echo "$test_name: all passed"
    exit 0
  fi
  echo "$test_name: $fails failed"
  exit 1
}

# make_tree DIR VARIANT [FILES]: a small environment-like tree: nested
# directories (one read-only), executables, a 0600 file, empty files, a
# larger compressible file, symlinks (relative and absolute into the tree),
# hardlinks, and files holding DIR's own path (relocations).
make_tree() {
  local d=$1 v=$2 n=${3:-40} i
  mkdir -p "$d/bin" "$d/lib/python3/site-packages/pkg" "$d/etc" "$d/share/doc" "$d/empty-dir"
  printf '#!/bin/sh\nexec %s/bin/python3 "$@"\n' "$d" >"$d/bin/run"
  chmod 755 "$d/bin/run"
  ln "$d/bin/run" "$d/bin/run-hardlink"
  ln -s run "$d/bin/alias"
  ln -s "$d/lib/python3" "$d/bin/abs-link"
  printf 'prefix=%s\nvariant=%s\n' "$d" "$v" >"$d/etc/env.conf"
  chmod 600 "$d/etc/env.conf"
  : >"$d/etc/empty"
  for ((i = 0; i < n; i++)); do
    ((i % 100 == 0)) && mkdir -p "$d/lib/python3/site-packages/pkg/sub$((i / 100))"
    printf 'def f%d():\n    return "%s %d"\n' "$i" "$v" "$i" >"$d/lib/python3/site-packages/pkg/sub$((i / 100))/mod$i.py"
  done
  printf 'shared by every variant\n' >"$d/share/doc/COMMON"
  for ((i = 0; i < 200; i++)); do printf 'line %d of a compressible file, variant %s\n' "$i" "$v"; done >"$d/share/doc/big.txt"
  printf 'readme %s\n' "$v" >"$d/README"
  chmod 555 "$d/share/doc"
}

# One line per entry: path, type, mode, symlink target; then hardlink counts.
tree_sig() {
  (cd "$1" && find . -path ./.hpak-state -prune -o -name '.tmp.hpak-state*' -prune -o ! -path . -printf '%P|%y|%m|%l\n' | sort)
  (cd "$1" && find . -type f ! -name .hpak-state -links +1 -printf '%P|links %n\n' | sort)
}
# same_tree A B: equal entries, types, modes, symlink targets, hardlink counts
# and bytes (state files aside). Prints the first differences.
same_tree() {
  local d
  d=$(diff <(tree_sig "$1") <(tree_sig "$2"))
  if [ -n "$d" ]; then
    echo "trees differ ($1 vs $2):"
    head -n 10 <<<"$d"
    return 1
  fi
  d=$(diff -r --no-dereference -q -x .hpak-state -x '.tmp.hpak-state*' "$1" "$2" 2>&1)
  if [ -n "$d" ]; then
    echo "contents differ ($1 vs $2):"
    head -n 10 <<<"$d"
    return 1
  fi
  return 0
}

# state_field TARGET FIELD: complete (1/0) | name | target, from TARGET/.hpak-state;
# "none" if there is no state file, "bad" if it cannot be parsed.
state_field() {
  [ -f "$1/.hpak-state" ] || { echo none; return; }
  python3 - "$1/.hpak-state" "$2" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read()
try:
    assert b[:4] == b"HPRS"
    (version,) = struct.unpack_from("<I", b, 4)
    assert version in (1, 2)
    pos = 56 + (16 if version == 2 else 0)  # version 2: a 16-byte boot id after fence_ns
    strs = []
    for _ in range(3):
        (n,) = struct.unpack_from("<I", b, pos)
        strs.append(b[pos + 4:pos + 4 + n].decode("utf-8", "replace"))
        pos += 4 + n
    print({"complete": str(b[8]), "target": strs[0], "name": strs[2]}[sys.argv[2]])
except Exception:
    print("bad")
EOF
}

# rm_tree DIR: removes a tree that may hold read-only directories.
rm_tree() {
  [ -e "$1" ] || [ -L "$1" ] || return 0
  chmod -R u+rwx "$1" 2>/dev/null
  rm -rf "$1"
}

# no_crash_output FILE: stderr shows no sanitizer report, abort or uncaught exception.
no_crash_output() {
  ! grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:|terminate called|Segmentation fault|core dumped|Aborted' "$1"
}
