#!/usr/bin/env bash
# The main job, as users run it: set up, build, generate an rcc-like
# environment (12,000 files), pack it into a library, restore it into a space
# (fresh), change the space, restore again (dirty: only what differs is
# touched; see its summary), and verify the library and the space's files.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
bash scripts/build.sh build
work=$(mktemp -d /tmp/hpak-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
hpak=build/hpak
./build/bench/hpak-gencorpus --profile rcc --files ${FILES:-12000} --reloc-path "$work/env" "$work/env" >/dev/null
echo "== hpak init LIB";                  $hpak init "$work/lib"
echo "== hpak pack ENV --into LIB --name py311"
$hpak pack "$work/env" --into "$work/lib" --name py311
echo "== hpak catalogs LIB";              $hpak catalogs "$work/lib"
echo "== hpak restore LIB py311 SPACE (fresh)"
$hpak restore "$work/lib" py311 "$work/space"
echo "== change the space: edit a file, delete a directory, add a stray file, chmod a file"
f=$(find "$work/space" -type f -size +1k | sort | head -1)
echo "local edit" >>"$f"
rm -rf "$(find "$work/space" -mindepth 2 -type d | sort | head -1)"
echo stray >"$work/space/stray.txt"
chmod 600 "$(find "$work/space" -type f -perm -444 | sort | tail -1)"
echo "== hpak restore LIB py311 SPACE (dirty: only what differs is rewritten)"
$hpak restore "$work/lib" py311 "$work/space"
echo "== hpak restore again (nothing differs: nothing written)"
$hpak restore "$work/lib" py311 "$work/space"
echo "== hpak verify LIB";                $hpak verify "$work/lib"
echo "== the space is the environment relocated to its own path"
[ ! -e "$work/space/stray.txt" ] && echo "stray file removed"
echo "$(find "$work/space" ! -name .hpak-state | wc -l) entries in the space (besides restore's .hpak-state), $(find "$work/env" | wc -l) in the environment"
