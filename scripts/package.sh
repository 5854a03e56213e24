#!/usr/bin/env bash
# Builds the Debian package: set up (scripts/setup.sh --package: the build
# tools plus dpkg-dev and lintian), configure and build hpak in build/ (or $1),
# then CPack -> build/hpak_<version>-1_<arch>.deb, checked by lintian.
# Install it with:   sudo apt install ./build/hpak_*.deb
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build}
bash "$root/scripts/setup.sh" --package
command -v lintian >/dev/null || { echo "package: lintian is not installed (scripts/setup.sh --package installs it), so the package cannot be checked" >&2; exit 1; }
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$dir" hpak hpak_install_files >/dev/null
(cd "$dir" && cpack -G DEB >/dev/null)
deb=$(ls "$dir"/hpak_*.deb)
# lintian exits 2 when it reports an error, 1 when it failed to run.
rc=0
lintian --fail-on error --tag-display-limit 0 "$deb" || rc=$?
case $rc in
0) ;;
2) echo "package: lintian reports errors in $deb" >&2; exit 1 ;;
*) echo "package: lintian did not run (exit $rc)" >&2; exit 1 ;;
esac
echo "built $deb"
echo "install it with: sudo apt install $deb"
