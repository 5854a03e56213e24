#!/usr/bin/env bash
# Configures and builds hpak into build/ (or $1) with extra cmake args after it.
# HPAK_BUILD_TARGETS (space-separated) builds only those targets, not all.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build}
shift || true
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
# shellcheck disable=SC2086 # a list of target names
ninja -C "$dir" ${HPAK_BUILD_TARGETS:-} >/dev/null
