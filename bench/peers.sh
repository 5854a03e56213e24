#!/usr/bin/env bash
# bench/peers.sh — time the "peer" tools hpak is compared with on one tree:
# tar --zstd (pack / unpack), mksquashfs / unsquashfs (-comp zstd), cp -a,
# rsync -a, and git (add+commit into a repo / checkout via git worktree add).
# Every extraction goes into a fresh, empty directory (hyperfine --prepare
# removes the previous one).  Runs once on tmpfs (/dev/shm) and once on disk
# (a directory under /var/tmp); the table prints the median seconds of each.
#
#   bench/peers.sh TREE [OUTDIR]
#
# OUTDIR (default: a new /tmp/hpak-peers.XXXXXX) receives the hyperfine JSON
# exports, the logs and results.txt.  Environment knobs:
#   RUNS=3          runs per measurement on tmpfs (median is reported)
#   DISK_RUNS=1     runs per measurement on disk (disk runs are slow)
#   MEDIA="tmpfs disk"   which media to measure
#   BENCH_BIN=DIR   directory holding hpak-rccbase / hpak-ceiling: adds rows
#                   for them (rccbase lifted once, untimed; ceiling reports
#                   its own write-phase time)
#   JOBS=N          -j for those two (default: nproc)
#   DISK_SYNC=1     append "sync -f" to extractions on disk (default: off,
#                   i.e. dirty data may still sit in the page cache)
#   HYPERFINE=0    force the fallback timing loop
# Uses hyperfine when installed, else a plain loop timed with date +%s.%N.
# Bounded: a 12k-file / 170 MB tree takes a few minutes with the defaults
# (about 1.5 min on tmpfs; the disk part depends on the disk).
set -euo pipefail

usage() { echo "usage: $0 TREE [OUTDIR]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
TREE=$(realpath -e "$1")
[[ -d $TREE ]] || usage
OUT=${2:-$(mktemp -d /tmp/hpak-peers.XXXXXX)}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
QT=$(printf %q "$TREE")
RUNS=${RUNS:-3}
DISK_RUNS=${DISK_RUNS:-1}
MEDIA=${MEDIA:-tmpfs disk}
JOBS=${JOBS:-$(nproc)}
BENCH_BIN=${BENCH_BIN:-}
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
HAVE_HF=0
if [[ ${HYPERFINE:-1} != 0 ]] && command -v hyperfine >/dev/null; then HAVE_HF=1; fi

declare -A ROOT=([tmpfs]=/dev/shm [disk]=/var/tmp)
declare -A RES SIZE
WORKDIRS=()
cleanup() { for w in "${WORKDIRS[@]}"; do rm -rf "$w"; done; }
trap cleanup EXIT

runs_for() { if [[ $1 == disk ]]; then echo "$DISK_RUNS"; else echo "$RUNS"; fi; }

# median of numbers on stdin
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "NA"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# measure MEDIUM KEY PREPARE COMMAND  -> RES[MEDIUM|KEY] = median seconds
measure() {
  local medium=$1 key=$2 prep=$3 cmd=$4 tag="$1-${2//[^A-Za-z0-9]/_}" runs
  runs=$(runs_for "$medium")
  echo "  [$medium] $key" >&2
  if [[ $HAVE_HF == 1 ]]; then
    if hyperfine --runs "$runs" --style basic --prepare "$prep" \
         --export-json "$OUT/$tag.json" "$cmd" >"$OUT/$tag.log" 2>&1; then
      RES[$medium|$key]=$(jq -r '.results[0].median' "$OUT/$tag.json" 2>/dev/null ||
                          grep -o '"median": *[0-9.e-]*' "$OUT/$tag.json" | awk 'NR == 1 {print $2}')
    else
      RES[$medium|$key]=FAIL
    fi
  else
    local i t0 t1
    : >"$OUT/$tag.times"
    for ((i = 0; i < runs; i++)); do
      bash -c "$prep" >>"$OUT/$tag.log" 2>&1
      t0=$(date +%s.%N)
      if ! bash -c "$cmd" >>"$OUT/$tag.log" 2>&1; then RES[$medium|$key]=FAIL; return; fi
      t1=$(date +%s.%N)
      echo "$t1 - $t0" | bc >>"$OUT/$tag.times"
    done
    RES[$medium|$key]=$(median <"$OUT/$tag.times")
  fi
}

# hpak-ceiling times itself (write phase only): median of its own output.
measure_ceiling() {
  local medium=$1 key=$2 w=$3 i
  echo "  [$medium] $key" >&2
  for ((i = 0; i < $(runs_for "$medium"); i++)); do
    rm -rf "$w/out"
    [[ $medium != disk ]] || sync -f "$w"
    "$BENCH_BIN/hpak-ceiling" "$TREE" "$w/out" -j "$JOBS"
  done | median >"$OUT/$medium-ceiling.median"
  RES[$medium|$key]=$(cat "$OUT/$medium-ceiling.median")
}

OPS=()
add_op() { local k; for k in "${OPS[@]}"; do [[ $k == "$1" ]] && return; done; OPS+=("$1"); }

GIT="git -c user.name=bench -c user.email=bench@localhost -c gc.auto=0 -c core.autocrlf=false"
for medium in $MEDIA; do
  w=$(mktemp -d "${ROOT[$medium]}/hpak-peers.XXXXXX")
  WORKDIRS+=("$w")
  sync_cmd=""
  [[ $medium == disk && ${DISK_SYNC:-0} == 1 ]] && sync_cmd=" && sync -f $w"
  # On disk, flush the previous run's deletions before timing the next one.
  psync=""
  [[ $medium == disk ]] && psync=" && sync -f $w"
  echo "== $medium: $w" >&2
  G="$GIT --git-dir=$w/repo/.git"

  add_op "tar --zstd -cf (pack)"
  measure "$medium" "tar --zstd -cf (pack)" "rm -f $w/t.tar.zst" "tar --zstd -cf $w/t.tar.zst -C $QT ."
  add_op "tar --zstd -xf"
  measure "$medium" "tar --zstd -xf" "rm -rf $w/out && mkdir $w/out$psync" "tar --zstd -xf $w/t.tar.zst -C $w/out$sync_cmd"
  SIZE[$medium|tar.zst]=$(stat -c %s "$w/t.tar.zst")

  add_op "mksquashfs -comp zstd (pack)"
  measure "$medium" "mksquashfs -comp zstd (pack)" "rm -f $w/t.sqfs" \
    "mksquashfs $QT $w/t.sqfs -comp zstd -noappend -quiet -no-progress"
  add_op "unsquashfs"
  measure "$medium" "unsquashfs" "rm -rf $w/out$psync" "unsquashfs -quiet -no-progress -d $w/out $w/t.sqfs$sync_cmd"
  SIZE[$medium|squashfs]=$(stat -c %s "$w/t.sqfs")

  add_op "cp -a"
  measure "$medium" "cp -a" "rm -rf $w/out$psync" "cp -a $QT $w/out$sync_cmd"
  add_op "rsync -a"
  measure "$medium" "rsync -a" "rm -rf $w/out$psync" "rsync -a $QT/ $w/out/$sync_cmd"

  add_op "git add -A + commit (pack)"
  measure "$medium" "git add -A + commit (pack)" "rm -rf $w/repo && git init -q $w/repo" \
    "$G --work-tree=$QT add -A && $G --work-tree=$QT commit -q -m bench"
  SIZE[$medium|git objects]=$(du -sb "$w/repo/.git/objects" | cut -f1)
  add_op "git worktree add (checkout)"
  measure "$medium" "git worktree add (checkout)" "rm -rf $w/out && $G worktree prune$psync" \
    "$G worktree add -q --detach $w/out HEAD$sync_cmd"
  rm -rf "$w/out"
  $G worktree prune

  if [[ -n $BENCH_BIN && -x $BENCH_BIN/hpak-rccbase ]]; then
    "$BENCH_BIN/hpak-rccbase" lift "$TREE" "$w/rcclib"
    add_op "hpak-rccbase restore -j$JOBS"
    measure "$medium" "hpak-rccbase restore -j$JOBS" "rm -rf $w/out$psync" \
      "$BENCH_BIN/hpak-rccbase restore $w/rcclib $w/out -j $JOBS$sync_cmd"
    SIZE[$medium|rcc library]=$(du -sb "$w/rcclib" | cut -f1)
  fi
  if [[ -n $BENCH_BIN && -x $BENCH_BIN/hpak-ceiling ]]; then
    add_op "hpak-ceiling -j$JOBS (write phase)"
    measure_ceiling "$medium" "hpak-ceiling -j$JOBS (write phase)" "$w"
  fi
  rm -rf "$w/out"
done

{
  nf=$(find "$TREE" -type f | wc -l)
  nd=$(find "$TREE" -type d | wc -l)
  nb=$(find "$TREE" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
  echo "tree: $TREE  files=$nf dirs=$nd file_bytes=$nb"
  label="median seconds ($([[ $HAVE_HF == 1 ]] && echo hyperfine || echo date-loop)):"
  for m in $MEDIA; do
    extra=""
    if [[ $m == disk && ${DISK_SYNC:-0} == 1 ]]; then extra=", +sync -f"; fi
    label+=" $m=${ROOT[$m]} ($(runs_for "$m") runs$extra)"
  done
  echo "$label"
  echo "load average: start $LOAD0, end $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cpus)"
  printf '%-36s' "operation"
  for m in $MEDIA; do printf '%16s' "$m"; done
  echo
  for op in "${OPS[@]}"; do
    printf '%-36s' "$op"
    for m in $MEDIA; do
      v=${RES[$m|$op]:-NA}
      [[ $v =~ ^[0-9.e+-]+$ ]] && v=$(printf '%.3f' "$v")
      printf '%16s' "$v"
    done
    echo
  done
  m1=${MEDIA%% *}
  for k in tar.zst squashfs "git objects" "rcc library"; do
    if [[ -n ${SIZE[$m1|$k]:-} ]]; then
      printf 'size %-14s %12s bytes (ratio %.2f)\n' "$k" "${SIZE[$m1|$k]}" \
        "$(echo "$nb / ${SIZE[$m1|$k]}" | bc -l)"
    fi
  done
} | tee "$OUT/results.txt"
echo "results and raw data: $OUT" >&2
