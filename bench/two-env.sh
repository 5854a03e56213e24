#!/usr/bin/env bash
# bench/two-env.sh — what a library holding two environments costs against
# the two environments' .tar.zst files (issue 32: goal <= 0.6x when they share
# 90% of their files).
#
#   bench/two-env.sh HPAK TREE_A TREE_B WORKDIR
#
# On WORKDIR: `tar --zstd -cf` (zstd level 3) of each tree; a new library with
# `hpak pack TREE_A --into` then `hpak pack TREE_B --into` (the library's
# default level 3). Prints how many of B's distinct objects A already holds,
# the library's bytes (every file under it: packs, indexes, multi-pack index
# layers, catalog names) after each add, and the ratios.
set -euo pipefail
[[ $# -eq 4 ]] || { echo "usage: $0 HPAK TREE_A TREE_B WORKDIR" >&2; exit 2; }
hpak=$1 a=$2 b=$3 work=$4
tmp=$(mktemp -d "$work/twoenv.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
sums() { (cd "$1" && find . -type f -print0 | xargs -0 -r sha256sum | cut -c1-64 | sort -u); }
bytes_under() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
ratio() { echo "scale=3; $1 / $2" | bc -l; }

tar --zstd -cf "$tmp/a.tar.zst" -C "$(dirname "$a")" "$(basename "$a")"
tar --zstd -cf "$tmp/b.tar.zst" -C "$(dirname "$b")" "$(basename "$b")"
ta=$(stat -c %s "$tmp/a.tar.zst") tb=$(stat -c %s "$tmp/b.tar.zst")
shared=$(comm -12 <(sums "$a") <(sums "$b") | wc -l)
nb=$(sums "$b" | wc -l)
"$hpak" -q init "$tmp/L" >/dev/null
"$hpak" -q pack "$a" --into "$tmp/L" --name a >/dev/null
la=$(bytes_under "$tmp/L")
"$hpak" -q pack "$b" --into "$tmp/L" --name b >/dev/null
lab=$(bytes_under "$tmp/L")
echo "# A: $a ($(find "$a" -type f | wc -l) files); B: $b ($(find "$b" -type f | wc -l) files, $shared of its $nb distinct objects in A)"
printf '| | bytes | × its .tar.zst |\n|---|--:|--:|\n'
printf '| library holding A | %s | %s |\n' "$la" "$(ratio "$la" "$ta")"
printf '| library holding A and B | %s | %s (the two .tar.zst: %s) |\n' "$lab" "$(ratio "$lab" $((ta + tb)))" $((ta + tb))
