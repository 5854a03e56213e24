# shellcheck shell=bash
# Helpers shared by test_gc.sh, test_gc_crash.sh, test_gc_torture.sh and
# test_repair.sh. Sourced, not run (ctest only runs tests/cli/test_*.sh).
# The sourcing script sets $hpak (binary) and $root (source root) first.
#
# Environments are packed with --no-relocate, so a restored tree must equal
# its source byte for byte (diff -r) wherever it is restored.

set -uo pipefail

# A private scratch directory, removed on exit (kept with HPAK_TEST_KEEP=1).
work=$(mktemp -d "${TMPDIR:-/tmp}/hpak-$(basename "$0" .sh).XXXXXX")
_gc_helpers_cleanup() {
  stop_watchdog
  local p
  for p in $(jobs -p); do
    # shellcheck disable=SC2046 # one argument per pid: the split is wanted
    kill $(_descendants "$p") "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  if [ "${HPAK_TEST_KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap _gc_helpers_cleanup EXIT

# A watchdog: a test that hangs (a deadlock, a lock never released) fails
# instead of running until ctest's timeout; every process the test started
# is killed first. $1 = seconds.
_descendants() {
  local c
  for c in $(pgrep -P "$1"); do
    _descendants "$c"
    echo "$c"
  done
}
_watchdog_pid=
watchdog() {
  local me=$$ secs=$1
  (
    trap 'kill $(pgrep -P $BASHPID) 2>/dev/null; exit 0' TERM
    # shellcheck disable=SC2217 # not input for sleep: the background sleep keeps none of the test's descriptors open
    sleep "$secs" </dev/null >/dev/null 2>&1 &
    wait $!
    echo "FAIL: $(basename "$0") did not finish within $secs s (watchdog)" >&2
    for p in $(_descendants "$me"); do [ "$p" = "$BASHPID" ] || kill -KILL "$p" 2>/dev/null; done
    kill -TERM "$me" 2>/dev/null
  ) &
  _watchdog_pid=$!
}
stop_watchdog() {
  [ -n "$_watchdog_pid" ] && kill "$_watchdog_pid" 2>/dev/null && wait "$_watchdog_pid" 2>/dev/null
  _watchdog_pid=
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# shellcheck disable=SC2154 # $hpak is set by the sourcing script (see the top)
H() { "$hpak" -q "$@"; }
# H_report: without -q, for a command whose report on stdout the test reads
# (gc -q prints nothing but warnings and errors).
H_report() { "$hpak" "$@"; }

gencorpus=$(dirname "$hpak")/bench/hpak-gencorpus
[ -x "$gencorpus" ] || gencorpus=

# mk_tree DIR SEED FILES: a deterministic tree (an rcc-style environment from
# hpak-gencorpus when it is built; otherwise plain files, dirs and a symlink).
mk_tree() {
  local dir=$1 seed=$2 files=$3
  if [ -n "$gencorpus" ]; then
    "$gencorpus" --profile rcc --files "$files" --seed "$seed" "$dir" >/dev/null || fail "hpak-gencorpus $dir"
    return
  fi
  mkdir -p "$dir"
  local i
  for ((i = 0; i < files; i++)); do
    mkdir -p "$dir/d$((i % 7))/s$((i % 3))"
    { echo "seed $seed file $i"; head -c $(((seed * 131 + i * 977) % 5000)) /dev/zero | tr '\0' "$(printf "\\$(printf %03o $((65 + (seed + i) % 26)))")"; } \
      >"$dir/d$((i % 7))/s$((i % 3))/f$i.txt"
  done
  ln -s d0/s0/f0.txt "$dir/link"
}

# tiny_tree DIR TAG: 5 small files whose content is unique to TAG.
tiny_tree() {
  local dir=$1 tag=$2 i
  mkdir -p "$dir/sub"
  for i in 1 2 3; do printf 'tiny %s file %s\n' "$tag" "$i" >"$dir/f$i"; done
  printf 'nested %s\n' "$tag" >"$dir/sub/g"
  printf '#!/bin/sh\necho %s\n' "$tag" >"$dir/sub/run.sh"
  chmod 755 "$dir/sub/run.sh"
}

# add_env LIB NAME SRC
add_env() {
  local out
  # shellcheck disable=SC2086 # ADD_ENV_ARGS: extra pack options, word-split on purpose
  out=$(H pack "$3" --no-relocate ${ADD_ENV_ARGS:-} --into "$1" --name "$2" 2>&1) || fail "adding '$2' from '$3' to '$1': $out"
}

# Digests of every regular file under the given trees (= their blob digests).
file_digests() { find "$@" -type f -print0 | xargs -0 -r sha256sum | cut -c1-64 | LC_ALL=C sort -u; }
# Blob digests held by the visible packs of a library.
lib_blobs() {
  local p
  for p in "$1"/packs/pack-*.hpak; do
    [ -e "${p%.hpak}.hidx" ] || continue
    H index "$p" --show --no-write | awk '$2 == "blob" { print $1 }'
  done | LC_ALL=C sort -u
}

# tree_diff SRC TARGET: prints nothing when TARGET holds SRC byte for byte
# (content, symlink targets, file types and modes; the restore state file aside).
tree_diff() {
  local src=$1 dst=$2
  diff -r --no-dereference -x .hpak-state "$src" "$dst" 2>&1 | sed -n 1,20p
  diff <(cd "$src" && find . -mindepth 1 -printf '%y %m %P\n' | LC_ALL=C sort) \
    <(cd "$dst" && find . -mindepth 1 ! -name .hpak-state -printf '%y %m %P\n' | LC_ALL=C sort) 2>&1 | sed -n 1,20p
}

# check_restore LIB NAME SRC TARGET [WHAT]: a fresh restore of NAME into
# TARGET succeeds and equals SRC.
check_restore() {
  local lib=$1 name=$2 src=$3 dst=$4 what=${5:-}
  local out d
  rm -rf "$dst" && mkdir -p "$(dirname "$dst")"
  out=$(H restore "$lib" "$name" "$dst" 2>&1) || fail "${what:+$what: }restore of '$name' failed: $out"
  d=$(tree_diff "$src" "$dst")
  [ -z "$d" ] || fail "${what:+$what: }restore of '$name' differs from its source '$src':
$d"
}

# verify_lib LIB [WHAT]: `hpak verify LIB` checks every pack end to end and
# every catalog's objects. (A library pack alone is not standalone, so
# without a library-aware verify the restores of every catalog are the check.)
verify_lib() {
  local lib=$1 what=${2:-} out
  if grep -qi librar <<<"$("$hpak" verify --help 2>/dev/null)"; then
    out=$(H verify "$lib" 2>&1) || fail "${what:+$what: }hpak verify '$lib' failed:
$(head -40 <<<"$out")"
  fi
}

pack_count() { find "$1/packs" -maxdepth 1 -name 'pack-*.hidx' | wc -l; }

# The packs become older than the default grace period (1 hour).
age_packs() { touch -h -d '2 hours ago' "$1"/packs/pack-*.hidx; }

# lib_listing LIB: names and SHA-256 of every file in the library (the gc
# lock file aside: it records the last holder).
lib_listing() {
  (cd "$1" && find . -path ./locks/gc.lock -prune -o -printf '%y %P\n' | LC_ALL=C sort &&
    find . -type f ! -path ./locks/gc.lock -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
}

# json_get FILE KEY: a top-level number of a JSON document (python3 or jq).
json_get() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
  else
    jq -r ".$2" "$1"
  fi
}
json_valid() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>&1
  elif command -v jq >/dev/null 2>&1; then
    jq . "$1" >/dev/null
  else
    echo "no python3 or jq to check JSON" >&2
  fi
}

# flip FILE OFFSET: inverts one byte in place.
flip() {
  local f=$1 off=$2 b
  b=$(od -An -tu1 -j "$off" -N1 "$f" | tr -d ' \n')
  [ -n "$b" ] || fail "no byte at offset $off of '$f'"
  printf "$(printf '\\%03o' $((b ^ 0xff)))" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
}

# mutate DIR SEED PCT: changes about PCT% of the files of DIR (chosen by SEED)
# and adds one new file, so a copy of a tree shares most objects with it.
mutate() {
  local dir=$1 seed=$2 pct=$3 f
  while IFS= read -r f; do
    [ -w "$f" ] || chmod u+w "$f"
    printf 'mutated by %s\n' "$seed" >>"$f"
  done < <(find "$dir" -type f | LC_ALL=C sort | awk -v seed="$seed" -v pct="$pct" 'BEGIN { srand(seed) } rand() * 100 < pct')
  printf 'new file of %s\n' "$seed" >"$dir/new-$seed.txt"
}

# no_condemned LIB [WHAT]: no index or pack is left condemned.
no_condemned() {
  local left
  left=$(find "$1/packs" -name '*.condemned')
  [ -z "$left" ] || fail "${2:+$2: }condemned files left in '$1': $left"
}

# strace_can_pause: strace can delay a syscall of a traced hpak (strace is
# installed, supports -e inject=...:delay_exit, and ptrace is allowed).
# (LeakSanitizer cannot run under ptrace: it is turned off for traced runs.)
strace_can_pause() {
  command -v strace >/dev/null 2>&1 &&
    strace -f -o /dev/null -e trace=getpid -e inject=getpid:delay_exit=1000:when=1 true >/dev/null 2>&1 &&
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
      strace -f -o /dev/null -e trace=rename -e inject=rename:delay_exit=1000:when=1 "$hpak" --version >/dev/null 2>&1
}
