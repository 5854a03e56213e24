#!/usr/bin/env bash
# bench/run-all.sh — regenerate bench/RESULTS.md in one command.
#
#   bench/run-all.sh [extra `hpak bench` options, e.g. --runs 3]
#
# 1. builds a Release tree in $BUILD (default /tmp/build-bench) and copies
#    hpak and the helper binaries to $OUT/bin, so a rebuild while the
#    benchmark runs cannot change what is measured;
# 2. runs `hpak bench` (all suites, generated corpora, tmpfs and disk) ->
#    $OUT/results.json, $OUT/tables.md, $OUT/log.txt;
# 3. unless REAL=0: assembles a real Python environment with
#    bench/real-corpus.sh and runs the restore, pack and verify suites on it
#    -> $OUT/real.json, $OUT/real.md;
# 4. renders bench/RESULTS.md (bench/render_results.py): environment, load,
#    the exact commands, every table, the targets, and the analysis; it looks
#    every figure up by its row or target id and states the machine (CPUs,
#    kernel, load, file systems and mount options) as the runs recorded it.
#
# Both runs keep their work directories (--keep) and this script removes them
# at the end, with a pause between the runs: on ext4, creating files within a
# few minutes of deleting many is slow (recently freed inodes are skipped), and
# the second run's disk figures must not pay for the first run's clean-up.
#
# Environment: BUILD, OUT (default /var/tmp/hpak-bench-results), REAL=0/1,
# PAUSE (seconds between the runs, default 300),
# RESULTS (default bench/RESULTS.md). Needs cmake, ninja, python3; uses tar,
# zstd, git, strace, sha256sum when installed. Takes 20-40 minutes on a
# loaded 2-core machine; run nothing else heavy meanwhile.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-/tmp/build-bench}
OUT=${OUT:-/var/tmp/hpak-bench-results}
REAL=${REAL:-1}
RESULTS=${RESULTS:-$root/bench/RESULTS.md}
PAUSE=${PAUSE:-300}
kept=()
cleanup() {
  local d
  for d in "${kept[@]}"; do rm -rf "$d"; done
}
trap cleanup EXIT
# The work directories a run kept (from its log).
kept_dirs() { sed -n 's/^bench: \[[ 0-9.]* s\] kept the work directory //p' "$1"; }

echo "run-all: building Release into $BUILD" >&2
cmake -S "$root" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$BUILD" hpak hpak-gencorpus hpak-rccbase hpak-ceiling >/dev/null

mkdir -p "$OUT/bin/bench"
cp "$BUILD/hpak" "$OUT/bin/hpak"
cp "$BUILD"/bench/hpak-{gencorpus,rccbase,ceiling} "$OUT/bin/bench/"
hpak=$OUT/bin/hpak
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | wc -l)

echo "run-all: hpak bench $* (progress in $OUT/log.txt)" >&2
"$hpak" bench --keep --save "$OUT/results.json" "$@" >"$OUT/tables.md" 2>"$OUT/log.txt" || {
  echo "run-all: hpak bench exited $? (see $OUT/log.txt)" >&2
}
mapfile -t -O "${#kept[@]}" kept < <(kept_dirs "$OUT/log.txt")

real_args=()
if [[ $REAL != 0 ]]; then
  rm -rf "$OUT/realenv"
  "$root/bench/real-corpus.sh" "$OUT/realenv" >"$OUT/real-corpus.txt"
  echo "run-all: pause ${PAUSE}s, then hpak bench --corpus (real environment)" >&2
  sleep "$PAUSE"
  "$hpak" bench --keep --corpus "$OUT/realenv" --suite restore,pack,verify --save "$OUT/real.json" "$@" \
    >"$OUT/real.md" 2>"$OUT/real-log.txt" || echo "run-all: real-corpus run exited $?" >&2
  mapfile -t -O "${#kept[@]}" kept < <(kept_dirs "$OUT/real-log.txt")
  real_args=(--real "$OUT/real.json" --real-tables "$OUT/real.md" --real-corpus "$(cat "$OUT/real-corpus.txt")")
  kept+=("$OUT/realenv")
fi

python3 "$root/bench/render_results.py" --results "$OUT/results.json" --tables "$OUT/tables.md" \
  --commit "$commit$([[ $dirty -gt 0 ]] && echo " (+$dirty uncommitted changes)")" --args "$*" "${real_args[@]}" >"$RESULTS.tmp"
mv "$RESULTS.tmp" "$RESULTS"
echo "run-all: wrote $RESULTS (raw results in $OUT); removing the work directories" >&2
