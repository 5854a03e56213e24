#!/usr/bin/env bash
# bench/trust.sh HPAK [FILES] [DIR]: the cost of trust on shared storage
# (issue 12, man/hpak-library.7 WHAT IS TRUSTED), as root. Times with
# hyperfine, arms interleaved by running them in one invocation:
#   1. steady state: a fresh restore from a private library vs from a shared
#      library whose pack another user owns (its verdict remembered);
#      target: shared <= 1.05x private;
#   2. the first restore after a new pack arrives: the same with the verdict
#      cache emptied before each run (the pack is verified, then restored).
# Needs hyperfine and build/bench/hpak-gencorpus beside HPAK. DIR defaults to
# a temp dir under /tmp (use /dev/shm for tmpfs).
set -euo pipefail
hpak=$(realpath "${1:?usage: bench/trust.sh HPAK [FILES] [DIR]}")
files=${2:-20000}
gen=$(dirname "$hpak")/bench/hpak-gencorpus
[ "$(id -u)" -eq 0 ] || { echo "trust.sh: needs root (chown of a pack to another user)" >&2; exit 2; }
w=$(mktemp -d "${3:-/tmp}/hpak-trust-bench-XXXXXX")
trap 'rm -rf "$w"' EXIT
"$gen" --profile rcc --files "$files" --seed 1 "$w/src" >/dev/null
"$hpak" init "$w/private" >/dev/null
"$hpak" init --shared "$w/shared" >/dev/null
"$hpak" pack -q "$w/src" --into "$w/private" --name env >/dev/null
"$hpak" pack -q "$w/src" --into "$w/shared" --name env >/dev/null
chown nobody "$w/shared"/packs/pack-* # another member's pack
export XDG_CACHE_HOME=$w/cache
"$hpak" restore -q "$w/shared" env "$w/warm" >/dev/null # verifies once, remembers
du -sh "$w/shared/packs" | sed 's/^/pack size: /'
hyperfine -N --warmup 2 --runs "${RUNS:-10}" \
  --prepare "rm -rf $w/t" -n private "$hpak restore -q $w/private env $w/t" \
  --prepare "rm -rf $w/t" -n "shared (verified before)" "$hpak restore -q $w/shared env $w/t" \
  --prepare "rm -rf $w/t $w/cache/hpak/trust" -n "shared, first restore (verifies)" "$hpak restore -q $w/shared env $w/t" \
  --export-markdown "$w/trust.md"
cat "$w/trust.md"
