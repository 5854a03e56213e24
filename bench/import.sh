#!/usr/bin/env bash
# bench/import.sh — hpak import of an rcc hololib: import time and library size
# against the hololib's own size on disk, and restore time of the imported
# environment against the rcc-style baseline (hpak-rccbase).
#
#   bench/import.sh [BUILD_DIR] [FILES] [RUNS]      (defaults: build, 12000, 3)
#   TREE=real bench/import.sh [BUILD_DIR] - [RUNS]
#
# The tree is `hpak-gencorpus --profile rcc` generated at a 24-character space
# path (as rcc's) so that ~5% of its files embed that path; with TREE=real it is
# a real Python environment instead: `python3 -m venv --copies` made at that
# space path (so bin/pip*, bin/activate* and pyvenv.cfg embed it, as in an rcc
# space) and filled with bench/real-corpus.sh's standard library and packages;
# it is lifted into
# an rcc hololib (directory and hololib.zip) by tests/tools/make_rcc_hololib.py
# (gzip level 1 objects, like rcc). Work happens under $BENCH_DIR (default
# /var/tmp/hpak-import-bench, ext4); page cache warm; medians of RUNS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
files=${2:-12000}
runs=${3:-3}
hpak=$build/hpak
gencorpus=$build/bench/hpak-gencorpus
rccbase=$build/bench/hpak-rccbase
gen=$root/tests/tools/make_rcc_hololib.py
W=${BENCH_DIR:-/var/tmp/hpak-import-bench}
rm -rf "$W" && mkdir -p "$W/holotree"
space=$W/holotree/h1a2b3c4_5d6e7f8a9b0c1dt

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
secs() { local t0; t0=$(now); "$@" >/dev/null; echo "$(now) - $t0" | bc; }
du_b() { du -sb "$1" | cut -f1; } # apparent bytes (directories count 4 KiB each)
file_bytes() { find "$1" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
du_k() { du -sk "$1" | cut -f1; } # allocated KiB

make_tree() {
  if [[ ${TREE:-gen} == real ]]; then
    bash "$root/bench/real-corpus.sh" "$W/real" >/dev/null
    python3 -m venv --copies "$space"
    local libs=("$W"/real/lib/python3.*) lib; lib=${libs[0]}
    cp -a "$lib/." "$space/lib/$(basename "$lib")/"
  else
    "$gencorpus" --profile rcc --files "$files" --reloc-path "$space" "$space" >/dev/null
  fi
}
make_tree
cat=$(python3 "$gen" lift "$space" "$W/hololib")
python3 "$gen" lift "$space" - --zip "$W/hololib.zip" >/dev/null
"$rccbase" lift "$space" "$W/rccbase" >/dev/null

echo "date: $(date -u +%Y-%m-%dT%H:%MZ); load: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
echo "tree (${TREE:-gen}): $(find "$space" -type f | wc -l) files, $(du_b "$space") bytes, $(grep -rlF --exclude-dir=__pycache__ "$space" "$space" | wc -l) files (outside __pycache__, which rcc leaves out) embed the space path"
echo "hololib dir: $(file_bytes "$W/hololib") bytes in files, $(du_b "$W/hololib") apparent, $(( $(du_k "$W/hololib") * 1024 )) allocated"
echo "hololib.zip: $(du_b "$W/hololib.zip") bytes"

imp=() zimp=()
for _ in $(seq "$runs"); do
  rm -rf "${W:?}/lib" "$W/libz"
  imp+=("$(secs "$hpak" -q import "$W/lib" "$W/hololib")")
  zimp+=("$(secs "$hpak" -q import "$W/libz" "$W/hololib.zip")")
done
echo "import (dir):  median $(printf '%s\n' "${imp[@]}" | median) s of ${imp[*]}"
echo "import (zip):  median $(printf '%s\n' "${zimp[@]}" | median) s of ${zimp[*]}"
echo "library: $(file_bytes "$W/lib") bytes in files, $(du_b "$W/lib") apparent, $(( $(du_k "$W/lib") * 1024 )) allocated"
reimp=$(secs "$hpak" -q import "$W/lib" "$W/hololib")
echo "re-import (nothing new): $reimp s"

target=$W/spaces/a-longer-space-name-than-rcc-would-allow
rh=() rr=()
for _ in $(seq "$runs"); do
  rm -rf "$W/spaces" && mkdir -p "$W/spaces"
  rh+=("$(secs "$hpak" -q restore "$W/lib" "$cat" "$target")")
  rm -rf "$W/spaces" && mkdir -p "$W/spaces"
  rr+=("$(secs "$rccbase" restore "$W/rccbase" "$target")")
done
echo "fresh restore hpak (imported): median $(printf '%s\n' "${rh[@]}" | median) s of ${rh[*]}"
echo "fresh restore rcc-style:       median $(printf '%s\n' "${rr[@]}" | median) s of ${rr[*]}"
rm -rf "$W"
