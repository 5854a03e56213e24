#!/usr/bin/env bash
# bench/v2-candidates.sh — sizes of the pack format v2 candidates (issue 15)
# against `tar --zstd -cf` (zstd level 3) on the given trees.
#
#   bench/v2-candidates.sh HPAK V2SIM DIR...
#
# For each DIR: packs it with `hpak pack -l 3` (the real v1 pack + index), makes
# the .tar.zst, takes the catalogs' share of the v1 pack as (real v1 pack) -
# (v1 content as hpak-v2sim computes it), then prints hpak-v2sim's candidates
# with that catalog share added, each as a ratio to the .tar.zst and (for the
# 128-byte profile's target) to the floor = .tar.zst + 32 bytes per object.
# The catalog candidates of issue 32 (format 3) are bench/catalog-candidates.sh
# (hpak-v2sim --catalogs), which models format 2 exactly, catalogs included.
set -euo pipefail
# shellcheck source=bench/candidate_sizes.sh
source "$(dirname "$0")/candidate_sizes.sh"
candidates_args "$0" "$@"
for dir in "${dirs[@]}"; do
  real_sizes "$dir"
  est=$("$sim" --level 3 "$dir" | awk '$1 == "v1" { print $2 }')
  cat_bytes=$((real_pack - est))
  echo "## $dir: real v1 pack $real_pack + index $real_idx = $((real_pack + real_idx)); .tar.zst $tz; catalogs $cat_bytes"
  "$sim" --level 3 --catalog-bytes "$cat_bytes" "$dir" | awk -v tz="$tz" '
    /^#/ { print; n = $5 + 0; next }
    $1 == "candidate" { printf "%-16s %12s %12s %12s %8s %9s %9s\n", $1, $2, $3, $4, $5, "x tar.zst", "x floor"; next }
    { printf "%-16s %12d %12d %12d %8d %9.2f %9.2f\n", $1, $2, $3, $4, $5, $4 / tz, $4 / (tz + 32 * n) }'
  clean_sizes
done
