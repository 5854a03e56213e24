#!/usr/bin/env bash
# bench/format-v2.sh — pack format 1 against format 2 (issue 15), side by side
# on the same trees and medium, runs interleaved, medians reported.
#
#   bench/format-v2.sh HPAK WORKDIR RUNS DIR...
#
# For each DIR (a tree), on WORKDIR's file system:
#   size     pack + index of `hpak pack -l 3 --pack-version N` against
#            `tar --zstd -cf` (zstd level 3) of the same tree; the floor is the
#            .tar.zst plus 32 bytes per distinct object (its SHA-256 name)
#   unpack   `hpak unpack -j 2` of each pack into an empty directory, and
#            `tar -xf` of the .tar.zst (the peer)
#   restore  `hpak restore` of a library holding the tree (one add, format N)
#            into an empty directory
#   gc       `hpak gc --grace 0` of a library of 8 adds (the tree split in
#            8 parts, one pack each) merged into one pack
# Targets and figures go to standard output as a table (seconds, medians of
# RUNS runs; each run does format 1 then format 2, then the peer).
set -euo pipefail
[[ $# -ge 4 ]] || { echo "usage: $0 HPAK WORKDIR RUNS DIR..." >&2; exit 2; }
hpak=$1 work=$2 runs=$3
shift 3
tmp=$(mktemp -d "$work/fmtv2.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }
# timed CMD...: seconds taken (stdout and stderr of the command discarded)
timed() {
  local t0 t1
  t0=$(now)
  "$@" >/dev/null 2>&1 || { echo "format-v2.sh: failed: $*" >&2; exit 1; }
  t1=$(now)
  echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for dir in "$@"; do
  name=$(basename "$dir")
  objects=$(find "$dir" -type f -print0 | xargs -0 sha256sum | cut -c1-64 | sort -u | wc -l)
  tar --zstd -cf "$tmp/t.tar.zst" -C "$(dirname "$dir")" "$name"
  tz=$(stat -c %s "$tmp/t.tar.zst")
  echo "## $dir: $(find "$dir" -type f | wc -l) files, $objects distinct objects; .tar.zst $tz bytes; floor $((tz + 32 * objects))"
  for v in 1 2; do
    "$hpak" -q pack "$dir" -o "$tmp/p$v.hpak" -l 3 --pack-version "$v" >/dev/null
    size=$(($(stat -c %s "$tmp/p$v.hpak") + $(stat -c %s "$tmp/p$v.hidx")))
    printf 'size      format %s  %10d bytes  %.3fx tar.zst  %.3fx floor\n' "$v" "$size" "$(echo "$size / $tz" | bc -l)" \
      "$(echo "$size / ($tz + 32 * $objects)" | bc -l)"
    rm -rf "$tmp/L$v" "$tmp/G$v"
    "$hpak" -q init "$tmp/L$v" >/dev/null
    "$hpak" -q pack "$dir" --into "$tmp/L$v" --name env --pack-version "$v" >/dev/null
    # gc source: 8 packs, one per part of the tree (top-level entries dealt round-robin)
    "$hpak" -q init "$tmp/G$v" >/dev/null
    i=0
    while IFS= read -r -d '' e; do
      mkdir -p "$tmp/parts/$((i % 8))"
      cp -a "$e" "$tmp/parts/$((i % 8))/"
      i=$((i + 1))
    done < <(find "$dir" -mindepth 1 -maxdepth 1 -print0 | sort -z)
    for k in $(seq 0 7); do
      [ -d "$tmp/parts/$k" ] && "$hpak" -q pack "$tmp/parts/$k" --into "$tmp/G$v" --name "p$k" --pack-version "$v" >/dev/null
    done
    rm -rf "$tmp/parts"
    cp -a "$tmp/G$v" "$tmp/G$v.orig"
  done
  declare -A t=()
  for _ in $(seq 1 "$runs"); do
    for v in 1 2; do
      rm -rf "$tmp/u"
      t[unpack$v]+="$(timed "$hpak" -q unpack "$tmp/p$v.hpak" "$tmp/u" -j 2) "
      rm -rf "$tmp/u"
      t[restore$v]+="$(timed "$hpak" -q restore "$tmp/L$v" env "$tmp/u" -j 2) "
      rm -rf "$tmp/u" "$tmp/G$v"
      cp -a "$tmp/G$v.orig" "$tmp/G$v"
      t[gc$v]+="$(timed "$hpak" -q gc "$tmp/G$v" --grace 0 --upgrade) "
    done
    rm -rf "$tmp/u" && mkdir -p "$tmp/u"
    t[tar]+="$(timed tar -xf "$tmp/t.tar.zst" -C "$tmp/u") "
    rm -rf "$tmp/u"
  done
  tar_med=$(echo "${t[tar]}" | tr ' ' '\n' | grep . | median)
  printf 'time      tar -x (peer)       %.3f s\n' "$tar_med"
  for job in unpack restore gc; do
    m1=$(echo "${t[${job}1]}" | tr ' ' '\n' | grep . | median)
    m2=$(echo "${t[${job}2]}" | tr ' ' '\n' | grep . | median)
    printf 'time      %-8s format 1 %.3f s (%.2fx tar -x)  format 2 %.3f s (%.2fx tar -x)  2/1 %.2f\n' "$job" "$m1" \
      "$(echo "$m1 / $tar_med" | bc -l)" "$m2" "$(echo "$m2 / $tar_med" | bc -l)" "$(echo "$m2 / $m1" | bc -l)"
  done
  unset t
  rm -rf "$tmp"/p* "$tmp"/L* "$tmp"/G* "$tmp/t.tar.zst"
done
