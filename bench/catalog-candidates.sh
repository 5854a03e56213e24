#!/usr/bin/env bash
# bench/catalog-candidates.sh — sizes of the format 3 catalog candidates
# (issue 32) against `tar --zstd -cf` (zstd level 3) on the given trees.
#
#   bench/catalog-candidates.sh HPAK V2SIM DIR...
#
# For each DIR: packs it with `hpak pack -l 3` (the real format 2 pack + index:
# the `cat2` row must equal it, byte for byte, for the simulator to be
# trusted), makes the .tar.zst, then prints `hpak-v2sim --catalogs`'s
# candidates with their breakdown and each total as a ratio to the .tar.zst
# and to the floor = .tar.zst + 32 bytes per unique object.
set -euo pipefail
# shellcheck source=bench/candidate_sizes.sh
source "$(dirname "$0")/candidate_sizes.sh"
candidates_args "$0" "$@"
for dir in "${dirs[@]}"; do
  real_sizes "$dir"
  echo "## $dir: real format 2 pack $real_pack + index $real_idx = $((real_pack + real_idx)); .tar.zst $tz"
  "$sim" --catalogs --level 3 "$dir" | awk -v tz="$tz" '
    /^#/ { print; for (i = 1; i <= NF; i++) if ($(i + 1) == "objects,") n = $i + 0; next }
    $1 == "candidate" { printf "%-30s %9s %9s %9s %9s %9s %9s %10s %9s %8s\n", $1, $2, $3, $4, $5, $6, $7, $8, "x tar.zst", "x floor"; next }
    { printf "%-30s %9d %9d %9d %9d %9d %9d %10d %9.3f %8.3f\n", $1, $2, $3, $4, $5, $6, $7, $8, $8 / tz, $8 / (tz + 32 * n) }
    END { printf "floor = %d + 32 x %d = %d\n", tz, n, tz + 32 * n }'
  clean_sizes
done
