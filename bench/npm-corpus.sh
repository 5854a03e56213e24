#!/usr/bin/env bash
# bench/npm-corpus.sh — assemble a real npm tree (node_modules of a typical
# front-end and build-tool project) to measure sizes and restores on.
#
#   bench/npm-corpus.sh OUTDIR [PACKAGE...]
#
# Runs `npm install` of PACKAGE... (default: the set below) into OUTDIR, a new
# or empty directory; the tree to measure is OUTDIR/node_modules. Needs node,
# npm and the npm registry. Prints the files and bytes of the tree.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 OUTDIR [PACKAGE...]" >&2; exit 2; }
out=$1
shift
pkgs=("$@")
[[ ${#pkgs[@]} -gt 0 ]] || pkgs=(typescript webpack webpack-cli @babel/core @babel/preset-env eslint jest react react-dom
  lodash express rxjs)
if [[ -e $out && -n $(ls -A "$out" 2>/dev/null) ]]; then
  echo "npm-corpus: '$out' exists and is not empty" >&2
  exit 2
fi
command -v npm >/dev/null || { echo "npm-corpus: npm not found" >&2; exit 1; }
mkdir -p "$out"
cd "$out"
npm init -y >/dev/null
npm install --no-audit --no-fund --loglevel=error "${pkgs[@]}" >/dev/null
printf 'npm-corpus: %s: %s files, %s bytes (%s)\n' "$out/node_modules" "$(find node_modules -type f | wc -l)" \
  "$(find node_modules -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')" "${pkgs[*]}"
