#!/usr/bin/env bash
# bench/real-corpus.sh — assemble a real Python environment (~13k files) to
# benchmark with `hpak bench --corpus OUTDIR`.
#
#   bench/real-corpus.sh OUTDIR
#
# Copies, preserving modes, symlinks and mtimes, into OUTDIR/lib/python3.X/:
#   - the standard library of /root/.pyenv/versions/3.11.7/lib/python3.11
#     (PYLIB=... to use another), without test/ and site-packages/;
#   - from its site-packages: jedi sympy networkx pip pygments IPython
#     docutils setuptools prompt_toolkit pydantic cryptography mpmath boto3
#     botocore (PACKAGES="..." to change; missing ones are skipped, named);
#   - never __pycache__/.
# Without pyenv it falls back to the newest /usr/lib/python3.* and the same
# packages from /usr/lib/python3/dist-packages (Debian) when present.
# OUTDIR must not exist or be empty. Prints a summary (files, dirs, symlinks,
# bytes) on stdout.
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
out=$1
if [[ -e $out && -n $(ls -A "$out" 2>/dev/null) ]]; then
  echo "real-corpus: '$out' exists and is not empty" >&2
  exit 2
fi

PACKAGES=${PACKAGES:-jedi sympy networkx pip pygments IPython docutils setuptools prompt_toolkit pydantic cryptography mpmath boto3 botocore}
pylib=${PYLIB:-/root/.pyenv/versions/3.11.7/lib/python3.11}
site=
if [[ -d $pylib ]]; then
  site=$pylib/site-packages
else
  pylib=$(ls -d /usr/lib/python3.[0-9]* 2>/dev/null | sort -V | tail -1 || true)
  [[ -n $pylib && -d $pylib ]] || { echo "real-corpus: no Python installation found (pyenv 3.11.7 or /usr/lib/python3.*)" >&2; exit 1; }
  [[ -d /usr/lib/python3/dist-packages ]] && site=/usr/lib/python3/dist-packages
fi
ver=$(basename "$pylib")
dest=$out/lib/$ver
mkdir -p "$dest/site-packages"

# Standard library: everything but test/, site-packages/ and __pycache__/.
tar -C "$pylib" --exclude=./test --exclude=./site-packages --exclude=./dist-packages --exclude=__pycache__ -cf - . |
  tar -C "$dest" -xf -

missing=()
for p in $PACKAGES; do
  if [[ -n $site && -e $site/$p ]]; then
    tar -C "$site" --exclude=__pycache__ -cf - "$p" | tar -C "$dest/site-packages" -xf -
  else
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] || echo "real-corpus: not installed, skipped: ${missing[*]}" >&2

files=$(find "$out" -type f | wc -l)
dirs=$(find "$out" -type d | wc -l)
links=$(find "$out" -type l | wc -l)
bytes=$(find "$out" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
echo "real-corpus: $out from $pylib${site:+ + $site}: files=$files dirs=$dirs symlinks=$links bytes=$bytes"
