#!/usr/bin/env bash
# bench/stat-floor.sh — the syscall floor of a no-op restore's scan against
# hpak's own no-op restore, on one thread (issue 32). See bench/stat_floor.c.
#
#   bench/stat-floor.sh HPAK TREE WORKDIR [RUNS]
#
# On WORKDIR's file system: TREE packed into a library by HPAK and restored
# into a target; then, RUNS times, alternated: stat_floor's "git" pass
# (fstatat of each file by its full path), its "hpak" pass (openat2 + fstat
# per directory, statx per file) and `HPAK restore -j 1` of the unchanged
# target (the whole command: process, catalog, scan, plan). Prints the
# medians (ms of wall time).
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: $0 HPAK TREE WORKDIR [RUNS]" >&2; exit 2; }
hpak=$1 tree=$2 work=$3 runs=${4:-9}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "$work/statfloor.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/stat_floor" "$here/stat_floor.c"
"$hpak" -q init "$tmp/L" >/dev/null
"$hpak" -q pack "$tree" --into "$tmp/L" --name env >/dev/null
"$hpak" -q restore "$tmp/L" env "$tmp/t" >/dev/null
# Directories in catalog order, each before its files (what the scan visits).
(cd "$tmp/t" && find . -mindepth 1 ! -name .hpak-state -printf '%y %P\n' | LC_ALL=C sort -k2 |
  awk '{ t = $1; sub(/^[^ ]+ /, ""); print (t == "d" ? "d " : "f ") $0 }' | { echo "d ."; cat; }) >"$tmp/list"
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ms() { local a b; a=$(date +%s%N); "$@" >/dev/null; b=$(date +%s%N); echo "scale=2; ($b - $a) / 1000000" | bc; }
: >"$tmp/res"
for _ in $(seq 1 "$runs"); do
  echo "git $("$tmp/stat_floor" "$tmp/t" git <"$tmp/list")" >>"$tmp/res"
  echo "scan $("$tmp/stat_floor" "$tmp/t" hpak <"$tmp/list")" >>"$tmp/res"
  echo "restore $(ms "$hpak" -q restore "$tmp/L" env "$tmp/t" -j 1)" >>"$tmp/res"
done
echo "# $tree: $(grep -c '^f' "$tmp/list") files, $(grep -c '^d' "$tmp/list") directories; $runs runs on $(stat -f -c %T "$work"); one thread; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| pass | median ms |\n|---|--:|\n'
printf '| fstatat of each file by its full path (git'"'"'s calls) | %s |\n' "$(grep '^git ' "$tmp/res" | cut -d' ' -f2 | median)"
printf '| openat2 + fstat per directory, statx per file (hpak'"'"'s calls) | %s |\n' "$(grep '^scan ' "$tmp/res" | cut -d' ' -f2 | median)"
printf '| `hpak restore -j 1` of the unchanged target (the whole command) | %s |\n' "$(grep '^restore ' "$tmp/res" | cut -d' ' -f2 | median)"
