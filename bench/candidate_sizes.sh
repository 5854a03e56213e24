#!/usr/bin/env bash
# bench/candidate_sizes.sh — sourced by bench/v2-candidates.sh and
# bench/catalog-candidates.sh, the steps both take for each tree:
#   candidates_args "$0" "$@"  HPAK V2SIM DIR... -> hpak, sim, dirs (array), tmp
#                              (a new directory, removed at exit)
#   real_sizes DIR             real_pack, real_idx: what `hpak pack -l 3` writes
#                              for DIR; tz: the size of its .tar.zst (zstd level 3)
#   clean_sizes                removes what real_sizes wrote
# shellcheck disable=SC2034 # sim and dirs are read by the sourcing script
candidates_args() {
  local me=$1
  shift
  [[ $# -ge 3 ]] || { echo "usage: $me HPAK V2SIM DIR..." >&2; exit 2; }
  hpak=$1 sim=$2
  shift 2
  dirs=("$@")
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
}

# shellcheck disable=SC2034 # real_pack, real_idx and tz are read by the sourcing script
real_sizes() {
  local dir=$1
  "$hpak" -q pack "$dir" -o "$tmp/p.hpak" -l 3 >/dev/null
  real_pack=$(stat -c %s "$tmp/p.hpak") real_idx=$(stat -c %s "$tmp/p.hidx")
  tar --zstd -cf "$tmp/t.tar.zst" -C "$(dirname "$dir")" "$(basename "$dir")"
  tz=$(stat -c %s "$tmp/t.tar.zst")
}

clean_sizes() { rm -f "$tmp"/p.* "$tmp/t.tar.zst"; }
