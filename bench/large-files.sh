#!/usr/bin/env bash
# bench/large-files.sh — issue 18: a tree of one large incompressible file plus
# some text, timed side by side with its peers on tmpfs and on ext4:
#
#   pack     hpak pack -o P TREE                 vs  zstd -3 -T2 of the same bytes
#   unpack   hpak unpack P DIR (re-hashes)       vs  cp -a TREE DIR
#   restore  hpak restore LIB env DIR            vs  cp -a TREE DIR
#   trusted  hpak restore --trust-large-objects  vs  cp -a TREE DIR (the explicit
#            fast path: large raw objects copied unread; when the binary has it)
#
# Each row is the median wall time of RUNS runs, the median CPU time (user +
# system: steadier than wall time on a shared machine) and the largest peak
# RSS (/usr/bin/time -f %M) of those runs; the page cache is warm (the tree, the
# pack and the library are read once first), as for cp -a.  Every extraction
# goes into a fresh directory that is removed after the run (not timed).
#
#   bench/large-files.sh [OUTDIR]
#
# Environment knobs:
#   BIG_MB=1536      size of the incompressible file (MiB)
#   TEXT_MB=259      size of the text file (MiB): C headers of /usr/include, repeated
#   RUNS=3           runs per measurement
#   MEDIA="tmpfs ext4"   tmpfs = /dev/shm, ext4 = /var/tmp
#   HPAK=build/hpak  binary to time
#   XFS=0            1: also restore a level-0 library into a loop-mounted XFS
#                    image (mkfs.xfs -m reflink=1; needs root) and report the
#                    used-space growth and the shared extents (xfs_io fiemap)
#   ALIGN=0          1: make the tree's big file land at a 4 KiB-aligned offset
#                    in a level-0 v1 pack (a padding file sorts before it), so
#                    the XFS row shows what an aligned pack (format v2) gets
# Quick run: BIG_MB=256 TEXT_MB=48 RUNS=1 MEDIA=tmpfs bench/large-files.sh
set -euo pipefail

OUT=${1:-$(mktemp -d /tmp/hpak-large.XXXXXX)}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
BIG_MB=${BIG_MB:-1536}
TEXT_MB=${TEXT_MB:-259}
RUNS=${RUNS:-3}
MEDIA=${MEDIA:-tmpfs ext4}
HPAK=$(realpath "${HPAK:-build/hpak}")
XFS=${XFS:-0}
ALIGN=${ALIGN:-0}
declare -A ROOT=([tmpfs]=/dev/shm [ext4]=/var/tmp)
WORK=()
cleanup() {
  if [[ -n ${XFS_MNT:-} ]]; then umount "$XFS_MNT" 2>/dev/null || true; fi
  for w in "${WORK[@]}"; do rm -rf "$w"; done
}
trap cleanup EXIT

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "NA"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# make_tree DIR: big.bin (incompressible) + text.txt (C headers, repeated)
make_tree() {
  local d=$1
  mkdir -p "$d"
  if [[ $ALIGN == 1 ]]; then
    # v1 level-0 pack: 32-byte pack header, 72-byte entry headers, objects in
    # path order: the payload of big.bin starts at 32+72+pad+72.
    head -c $((4096 - 176)) /dev/zero | tr '\0' 'p' >"$d/a-pad"
  fi
  openssl rand -out "$d/big.bin" $((BIG_MB << 20)) 2>/dev/null || head -c $((BIG_MB << 20)) /dev/urandom >"$d/big.bin"
  local src="$OUT/text-src"
  find /usr/include -name '*.h' -type f -print0 | sort -z | xargs -0 cat >"$src" 2>/dev/null || true
  [[ -s $src ]] || head -c $((8 << 20)) /dev/urandom | base64 >"$src"
  while (($(stat -c %s "$d/text.txt" 2>/dev/null || echo 0) < (TEXT_MB << 20))); do cat "$src" >>"$d/text.txt"; done
  truncate -s $((TEXT_MB << 20)) "$d/text.txt"
  rm -f "$src"
}

# timed KEY CLEANUP COMMAND...: RUNS runs; T[KEY]=median seconds, C[KEY]=median
# CPU seconds, M[KEY]=max peak RSS (KiB)
declare -A T C M
timed() {
  local key=$1 clean=$2 i s u y m ts=() cs=() ms=()
  shift 2
  for ((i = 0; i < RUNS; i++)); do
    eval "$clean"
    /usr/bin/time -f '%e %U %S %M' -o "$OUT/time.txt" "$@" >"$OUT/cmd.log" 2>&1 || { echo "failed: $*" >&2; cat "$OUT/cmd.log" >&2; exit 1; }
    read -r s u y m <"$OUT/time.txt"
    ts+=("$s")
    cs+=("$(awk -v u="$u" -v y="$y" 'BEGIN { print u + y }')")
    ms+=("$m")
  done
  eval "$clean"
  T[$key]=$(printf '%s\n' "${ts[@]}" | median)
  C[$key]=$(printf '%s\n' "${cs[@]}" | median)
  M[$key]=$(printf '%s\n' "${ms[@]}" | sort -g | tail -1)
  printf '  %-28s %8s s  %8s cpu-s  %8s MiB\n' "$key" "${T[$key]}" "${C[$key]}" "$((M[$key] / 1024))" >&2
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "NA" }'; }

RESULTS=$OUT/results.txt
{
  echo "# bench/large-files.sh: big ${BIG_MB} MiB (incompressible) + text ${TEXT_MB} MiB, medians of $RUNS"
  echo "# $("$HPAK" --version 2>/dev/null | sed -n 1p); $(nproc) cores; load at start $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$RESULTS"

for medium in $MEDIA; do
  W=$(mktemp -d "${ROOT[$medium]}/hpak-large.XXXXXX")
  WORK+=("$W")
  echo "[$medium] tree in $W" >&2
  make_tree "$W/tree"
  cat "$W/tree"/* >/dev/null
  "$HPAK" -q pack -o "$W/p.hpak" -n env "$W/tree" >/dev/null
  "$HPAK" -q pack --into "$W/lib" -n env "$W/tree" >/dev/null
  timed "$medium cp -a" "rm -rf $W/dst" cp -a "$W/tree" "$W/dst"
  timed "$medium zstd -3 -T2" "rm -f $W/z.zst" zstd -3 -T2 -q -f -c "$W/tree/big.bin" "$W/tree/text.txt" -o "$W/z.zst"
  timed "$medium hpak pack" "rm -f $W/q.hpak $W/q.hidx" "$HPAK" -q pack -o "$W/q.hpak" -n env "$W/tree"
  timed "$medium hpak unpack" "rm -rf $W/dst" "$HPAK" -q unpack "$W/p.hpak" "$W/dst"
  timed "$medium hpak restore" "rm -rf $W/dst" "$HPAK" -q restore "$W/lib" env "$W/dst"
  jobs="unpack restore"
  if grep -q -- --trust-large-objects <<<"$("$HPAK" restore --help)"; then
    timed "$medium hpak trusted" "rm -rf $W/dst" "$HPAK" -q restore --trust-large-objects "$W/lib" env "$W/dst"
    jobs+=" trusted"
  fi
  {
    printf '%-6s %-14s %8s %8s %8s  %s\n' "$medium" job seconds cpu-s peakMiB "ratio (wall; cpu)"
    row() { printf '%-6s %-14s %8s %8s %8s  %s\n' "$medium" "$1" "${T[$medium $1]}" "${C[$medium $1]}" "$((${M[$medium $1]} / 1024))" "$2"; }
    row "cp -a" ""
    row "zstd -3 -T2" ""
    row "hpak pack" "$(ratio "${T[$medium hpak pack]}" "${T[$medium zstd -3 -T2]}"); $(ratio "${C[$medium hpak pack]}" "${C[$medium zstd -3 -T2]}") x zstd -3 -T2"
    for k in $jobs; do
      row "hpak $k" "$(ratio "${T[$medium hpak $k]}" "${T[$medium cp -a]}"); $(ratio "${C[$medium hpak $k]}" "${C[$medium cp -a]}") x cp -a"
    done
  } >>"$RESULTS"
  rm -rf "$W"
done

if [[ $XFS == 1 ]]; then
  command -v mkfs.xfs >/dev/null || { echo "XFS=1 needs xfsprogs (scripts/setup.sh --test)" >&2; exit 1; }
  W=$(mktemp -d /var/tmp/hpak-xfs.XXXXXX)
  WORK+=("$W")
  truncate -s $(((BIG_MB + TEXT_MB) * 3 + 1024))M "$W/img"
  mkfs.xfs -q -m reflink=1 "$W/img"
  XFS_MNT=$W/mnt
  mkdir -p "$XFS_MNT"
  mount -o loop "$W/img" "$XFS_MNT"
  make_tree "$XFS_MNT/tree"
  "$HPAK" -q pack -l 0 --into "$XFS_MNT/lib" -n env "$XFS_MNT/tree" >/dev/null
  rm -rf "$XFS_MNT/tree"
  sync -f "$XFS_MNT"
  used0=$(df -B1 --output=used "$XFS_MNT" | tail -1)
  /usr/bin/time -f '%e %M' -o "$W/time.txt" "$HPAK" -q restore "$XFS_MNT/lib" env "$XFS_MNT/dst"
  sync -f "$XFS_MNT"
  used1=$(df -B1 --output=used "$XFS_MNT" | tail -1)
  tree_bytes=$(du -sb --apparent-size "$XFS_MNT/dst" | cut -f1)
  shared=0 extents=0
  while read -r line; do
    flags=${line##* }
    case $flags in 0x*) extents=$((extents + 1)); (((flags & 0x2000) != 0)) && shared=$((shared + 1)) ;; esac
  done < <(xfs_io -r -c 'fiemap -v' "$XFS_MNT/dst/big.bin" | tail -n +3)
  {
    echo "xfs    restore of a level-0 library (align=$ALIGN): $(cut -d' ' -f1 "$W/time.txt") s, peak $(($(cut -d' ' -f2 "$W/time.txt") / 1024)) MiB"
    echo "xfs    used space grew by $(((used1 - used0) >> 20)) MiB for a tree of $((tree_bytes >> 20)) MiB ($(ratio $((used1 - used0)) "$tree_bytes") of it); big.bin: $shared of $extents extents shared"
  } >>"$RESULTS"
fi
cat "$RESULTS"
