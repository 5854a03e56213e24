#!/usr/bin/env bash
# Builds the Debian package: set up (apt-get), configure and build hpak in
# build/ (or $1), then CPack -> build/hpak_<version>-1_<arch>.deb, checked by
# lintian. Install it with:   sudo apt install ./build/hpak_*.deb
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build}
bash "$root/scripts/setup.sh"
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$dir" hpak hpak_install_files >/dev/null
(cd "$dir" && cpack -G DEB >/dev/null)
deb=$(ls "$dir"/hpak_*.deb)
if command -v lintian >/dev/null; then
  out=$(lintian --tag-display-limit 0 "$deb" 2>&1 || true)
  [ -z "$out" ] || echo "$out"
  if grep -q '^E: ' <<<"$out"; then echo "package: lintian reports errors" >&2; exit 1; fi
fi
echo "built $deb"
echo "install it with: sudo apt install $deb"
