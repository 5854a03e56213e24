#!/usr/bin/env bash
# Cross-builds hpak for Windows (x86_64) with Debian's mingw-w64 toolchain
# (issue 30) and runs its unit tests under Wine.
#
#   scripts/build-windows.sh [BUILD_DIR]     default: build-win64 of the checkout
#
# The libraries come from scripts/build-windows-deps.sh (built from Debian's
# source packages into .cache/win64, once; HPAK_WIN_CACHE moves the cache).
# What builds is said in cmake/windows.cmake: hpak.exe (every room but mount,
# every command but mount, umount and commit; hpak-gencorpus.exe for its bench) and the unit tests of base and
# formats, hpak_win_tests.exe; then tests/windows/test_wine_cli.sh drives
# hpak.exe under Wine (with build/hpak of the checkout, when built, for the
# Linux <-> Windows compatibility part), tests/windows/test_wine_hostile.sh
# runs the Windows hostile corpus (names, a link inside the target, paths past
# MAX_PATH), and tests/windows/test_wine_calls.sh
# counts the NT calls per file of a fresh restore (at most 5). Exit non-zero
# when the build or a test fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath -m "${1:-$root/build-win64}")
cache=$(realpath -m "${HPAK_WIN_CACHE:-$root/.cache/win64}")

bash "$root/scripts/build-windows-deps.sh" "$cache"

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
# Debian's wine64 package puts its loader in /usr/lib/wine (the `wine` package adds the wrapper in PATH).
if ! [ "$(dpkg-query -W -f='${Status}' wine64 2>/dev/null)" = "install ok installed" ]; then
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -qq --no-install-recommends wine64 >/dev/null
fi
wine=$(command -v wine64 || echo /usr/lib/wine/wine64)

echo "== hpak for Windows into $dir"
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$cache/mingw.cmake" -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$dir" >/dev/null

echo "== unit tests under Wine ($("$wine" --version))"
# A private Wine prefix in the build tree: no state shared with the user's ~/.wine.
# Its first start creates the prefix (and says so on stderr; kept out of the test output).
export WINEPREFIX=$dir/wineprefix WINEDEBUG=-all
[ -d "$WINEPREFIX" ] || "$wine" cmd /c exit 0 >/dev/null 2>&1 || true
"$wine" "$dir/hpak_win_tests.exe"

echo "== hpak.exe under Wine (tests/windows/test_wine_cli.sh)"
WINE=$wine bash "$root/tests/windows/test_wine_cli.sh" "$dir/hpak.exe"

echo "== the Windows hostile corpus under Wine (tests/windows/test_wine_hostile.sh)"
WINE=$wine bash "$root/tests/windows/test_wine_hostile.sh" "$dir/hpak.exe"

echo "== NT calls per restored file, Wine's relay trace (tests/windows/test_wine_calls.sh)"
WINE=$wine bash "$root/tests/windows/test_wine_calls.sh" "$dir/hpak.exe"
