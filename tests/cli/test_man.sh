#!/usr/bin/env bash
# The man pages match the CLI and render without roff warnings
# (scripts/check-man.sh). ctest runs: bash test_man.sh <hpak-binary> <source-root>.
# Exit 125 (skipped) when groff is not installed.
set -uo pipefail
hpak=${1:?usage: test_man.sh HPAK_BINARY SOURCE_ROOT}
root=${2:?usage: test_man.sh HPAK_BINARY SOURCE_ROOT}
if ! command -v groff >/dev/null 2>&1; then
  echo "test_man: skipped: groff is not installed (apt-get install groff-base)"
  exit 125
fi
bash "$root/scripts/check-man.sh" "$hpak" "$root"
