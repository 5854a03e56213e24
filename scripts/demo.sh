#!/usr/bin/env bash
# The main job on a sample tree: set up, build, generate an rcc-like
# environment, pack it, verify the pack, unpack it, and compare with the source.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
bash scripts/build.sh build
work=$(mktemp -d /tmp/hpak-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
hpak=build/hpak
./build/bench/hpak-gencorpus --profile rcc --files ${FILES:-12000} "$work/env" >/dev/null
echo "== pack";   $hpak pack "$work/env" -o "$work/env.hpak"
echo "== verify"; $hpak verify "$work/env.hpak"
echo "== unpack"; /usr/bin/time -f "unpacked in %e s" $hpak unpack "$work/env.hpak" "$work/restored"
echo "== compare"; diff -r --no-dereference "$work/env" "$work/restored" && echo "identical: $(find "$work/restored" | wc -l) entries"
