#!/usr/bin/env bash
# bench/scale.sh: one library grown to KMAX catalogs, as an operator grows it
# (issue 33). Add k packs a tree of BASE_FILES files every add shares plus
# NEW_FILES new small files of its own (bench/scale.py tree: deterministic);
# `gc --grace 0` runs every GC_EVERY adds. At each checkpoint K (1, STEP,
# STEP^2, ... up to KMAX, and KMAX) it measures, each with
# bench/scale_measure.py (wall time, peak RssAnon and RssFile+RssShmem
# sampled from /proc/PID/status, max RSS from getrusage, bytes passed to
# write(2) and sent to a block device from /proc/PID/io):
#   add       the K-th add (hpak pack --into)
#   restore   a fresh restore of catalog K
#   gc-rollup gc after that add (it may roll small packs up)
#   gc-noop   gc again: nothing to do
#   dry-run   gc --dry-run --json after `catalogs rm` of catalog ceil(K/2)
#   gc-rm     the real gc --json after it (its figures are compared with the
#             dry run's: the column "dry = real" of the report)
#   verify    hpak verify of the library
# then adds the removed catalog again (not measured) and grows on.
# Writes OUT/results.jsonl (one object per measurement), OUT/scale.md (the
# table) and OUT/scale.svg (the curves). Nothing is timed against a limit.
#
# Environment: KMAX (1000), STEP (10), GC_EVERY (50), BASE_FILES (2000),
# NEW_FILES (200), HPAK (build/hpak; HPAK_COMMIT names its commit in the
# report, else the source tree's HEAD), WORK (a new directory under /dev/shm,
# else under TMPDIR; removed at the end unless KEEP=1), OUT (./hpak-scale-out).
# Quick run: KMAX=20 STEP=4 bash bench/scale.sh
set -euo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
die() {
  echo "scale.sh: $*" >&2
  exit 2
}

HPAK=${HPAK:-$root/build/hpak}
KMAX=${KMAX:-1000}
STEP=${STEP:-10}
GC_EVERY=${GC_EVERY:-50}
BASE_FILES=${BASE_FILES:-2000}
NEW_FILES=${NEW_FILES:-200}
OUT=${OUT:-$PWD/hpak-scale-out}
for v in KMAX STEP GC_EVERY NEW_FILES; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a whole number of at least 1, not '${!v}'"
done
[[ $BASE_FILES =~ ^[0-9]+$ ]] || die "BASE_FILES must be a whole number, not '$BASE_FILES'"
[ "$STEP" -ge 2 ] || die "STEP must be at least 2, not $STEP"
[ -x "$HPAK" ] || die "no hpak binary at '$HPAK' (build it: bash scripts/build.sh build; or set HPAK)"
command -v python3 >/dev/null || die "python3 is needed (bench/scale.py, bench/scale_measure.py)"

if [ -z "${WORK:-}" ]; then
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then WORK=$(mktemp -d /dev/shm/hpak-scale.XXXXXX); else WORK=$(mktemp -d "${TMPDIR:-/tmp}/hpak-scale.XXXXXX"); fi
  made_work=1
else
  mkdir -p "$WORK" || die "cannot create WORK '$WORK'"
  [ -z "$(ls -A "$WORK")" ] || die "WORK '$WORK' is not empty"
  made_work=0
fi
cleanup() {
  if [ "${KEEP:-0}" = 1 ]; then echo "scale.sh: kept $WORK"; elif [ "$made_work" = 1 ]; then rm -rf "$WORK"; else rm -rf "${WORK:?}"/*; fi
}
trap cleanup EXIT
mkdir -p "$OUT" || die "cannot create OUT '$OUT'"
lib=$WORK/lib
tree=$WORK/tree
results=$OUT/results.jsonl
: >"$results"

# Checkpoints: 1, STEP, STEP^2, ... <= KMAX, and KMAX.
checkpoints=()
for ((k = 1; k <= KMAX; k *= STEP)); do checkpoints+=("$k"); done
[ "${checkpoints[-1]}" -eq "$KMAX" ] || checkpoints+=("$KMAX")
is_checkpoint() {
  local c
  for c in "${checkpoints[@]}"; do [ "$c" -eq "$1" ] && return 0; done
  return 1
}

lib_bytes() { find "$lib" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
lib_packs() { find "$lib/packs" -maxdepth 1 -name 'pack-*.hidx' | wc -l; }
make_tree() { python3 "$here/scale.py" tree "$tree" "$1" "$BASE_FILES" "$NEW_FILES"; }
add() { "$HPAK" -q pack "$tree" --no-relocate --into "$lib" --name "c$1" >/dev/null || die "add of c$1 failed"; }

# measure OP K CMD...: runs CMD measured, its stdout into $WORK/OP.out;
# appends the measurement (with k, op, the library's bytes and packs after,
# and the 1-minute load average before: the machine may be shared).
measure() {
  local op=$1 k=$2 load
  shift 2
  load=$(cut -d' ' -f1 /proc/loadavg)
  python3 "$here/scale_measure.py" "$WORK/m.json" "$@" >"$WORK/$op.out" 2>"$WORK/$op.err" ||
    die "K=$k $op: '$*' failed: $(sed -n 1,5p "$WORK/$op.err")"
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
d.update(k=int(sys.argv[2]), op=sys.argv[3], lib_bytes=int(sys.argv[4]), packs=int(sys.argv[5]), load1=float(sys.argv[6]))
print(json.dumps(d))' "$WORK/m.json" "$k" "$op" "$(lib_bytes)" "$(lib_packs)" "$load" >>"$results"
}

# same_figures DRY.json REAL.json: "yes" when every figure but the timings
# (and a young pack's age) is equal, else the first that differ
# (bench/gc_same_figures.py, which tests/cli/test_gc_threads.sh uses too).
same_figures() { python3 "$here/gc_same_figures.py" "$1" "$2" || true; }

checkpoint() {
  local k=$1 gone=$((($1 + 1) / 2))
  rm -rf "$WORK/target"
  measure restore "$k" "$HPAK" -q restore "$lib" "c$k" "$WORK/target"
  rm -rf "$WORK/target"
  measure gc-rollup "$k" "$HPAK" -q gc --grace 0 "$lib"
  measure gc-noop "$k" "$HPAK" -q gc --grace 0 "$lib"
  "$HPAK" -q catalogs rm "$lib" "c$gone" >/dev/null || die "catalogs rm c$gone failed"
  measure dry-run "$k" "$HPAK" -q gc --dry-run --json --grace 0 "$lib"
  measure gc-rm "$k" "$HPAK" -q gc --json --grace 0 "$lib"
  echo "$k $(same_figures "$WORK/dry-run.out" "$WORK/gc-rm.out")" >>"$OUT/dry-equals-real.txt"
  measure verify "$k" "$HPAK" -q verify "$lib"
  make_tree "$gone"
  add "$gone"
  echo "scale.sh: K=$k done ($(lib_packs) packs, $(($(lib_bytes) / 1048576)) MiB, ${SECONDS}s)" >&2
}

"$HPAK" -q init "$lib" >/dev/null || die "hpak init '$lib' failed"
: >"$OUT/dry-equals-real.txt"
for ((k = 1; k <= KMAX; k++)); do
  make_tree "$k"
  if is_checkpoint "$k"; then
    measure add "$k" "$HPAK" -q pack "$tree" --no-relocate --into "$lib" --name "c$k"
    checkpoint "$k"
  else
    add "$k"
    if [ $((k % GC_EVERY)) -eq 0 ]; then "$HPAK" -q gc --grace 0 "$lib" >/dev/null || die "gc at K=$k failed"; fi
  fi
done

python3 "$here/scale.py" table "$results" "$OUT/table.md"
python3 "$here/scale.py" svg "$results" "$OUT/scale.svg"
{
  echo "# Scale bench (bench/scale.sh)"
  echo
  echo "KMAX=$KMAX STEP=$STEP GC_EVERY=$GC_EVERY BASE_FILES=$BASE_FILES NEW_FILES=$NEW_FILES;" \
    "library on $(stat -f -c %T "$WORK"), $(nproc) cores, $(uname -sr), $("$HPAK" --version | sed -n 1p)" \
    "(${HPAK_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo 'commit unknown')});" \
    "HPAK_FSYNC=${HPAK_FSYNC:-unset}; ${SECONDS} s in all."
  echo
  cat "$OUT/table.md"
  echo
  echo "The dry run's figures equal the real run's (K: answer):"
  echo
  sed 's/^/- K=/' "$OUT/dry-equals-real.txt"
} >"$OUT/scale.md"
echo "scale.sh: $OUT/scale.md, $OUT/scale.svg"
