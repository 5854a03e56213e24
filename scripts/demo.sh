#!/usr/bin/env bash
# The main job, as users run it: set up (only what building needs), build,
# generate an rcc-like environment (12,000 files; FILES=N for another size),
# pack it into a library, restore it into a space (fresh), change the space,
# restore again (dirty: only what differs is touched; see its summary), again
# (nothing differs: nothing is written), and verify the library. Then checks
# that the space holds exactly what it held before it was changed; exit 0 only
# if every step worked.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
bash scripts/build.sh build
work=$(mktemp -d /tmp/hpak-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
hpak=build/hpak
export LC_ALL=C

# first_found FIND-ARGS... / last_found FIND-ARGS...: the first or last path find
# prints, in byte order; fails if it prints none. sort reads the whole list and
# the pick is made by the shell: a `| head` would exit after one line, and under
# pipefail the SIGPIPE that kills sort would end the demo (issue 26).
found() { local all; all=$(find "$@" | sort) || return; [ -n "$all" ] || { echo "demo: nothing matches 'find $*'" >&2; return 1; }; printf '%s\n' "$all"; }
first_found() { local all; all=$(found "$@") || return; printf '%s\n' "${all%%$'\n'*}"; }
last_found() { local all; all=$(found "$@") || return; printf '%s\n' "${all##*$'\n'}"; }
# check WHAT COMMAND...: prints "ok: WHAT", or "FAILED: WHAT" and ends the demo.
check() {
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what" >&2; exit 1; fi
}

./build/bench/hpak-gencorpus --profile rcc --files "${FILES:-12000}" --reloc-path "$work/env" "$work/env" >/dev/null
echo "== hpak init LIB";                  $hpak init "$work/lib"
echo "== hpak pack ENV --into LIB --name py311"
$hpak pack "$work/env" --into "$work/lib" --name py311
echo "== hpak catalogs LIB";              $hpak catalogs "$work/lib"
echo "== hpak restore LIB py311 SPACE (fresh)"
$hpak restore "$work/lib" py311 "$work/space"
cp -a "$work/space" "$work/fresh" # what the space holds, to compare with after the dirty restore

echo "== change the space: edit a file, delete a directory, add a stray file, chmod a file"
# (Picked among the environment's files: not restore's own .hpak-state.)
edited=$(first_found "$work/space" -type f -size +1k ! -name .hpak-state)
echo "local edit" >>"$edited"
deleted=$(first_found "$work/space" -mindepth 2 -type d)
rm -rf "$deleted"
chmodded=$(last_found "$work/space" -type f -perm -444 ! -name .hpak-state)
chmod 600 "$chmodded"
echo stray >"$work/space/stray.txt"
echo "   edited ${edited#"$work"/}, deleted ${deleted#"$work"/}/, chmod 600 ${chmodded#"$work"/}, added space/stray.txt"

echo "== hpak restore LIB py311 SPACE (dirty: only what differs is rewritten)"
$hpak restore "$work/lib" py311 "$work/space"
echo "== hpak restore again (nothing differs: nothing written)"
$hpak restore "$work/lib" py311 "$work/space"
echo "== hpak verify LIB";                $hpak verify "$work/lib"

echo "== the space is the environment relocated to its own path, as restored fresh"
check "stray file removed" test ! -e "$work/space/stray.txt"
check "edited file restored" cmp -s "$edited" "$work/fresh/${edited#"$work/space/"}"
check "deleted directory restored" test -d "$deleted"
check "mode restored ($(stat -c %a "$chmodded"))" test "$(stat -c %a "$chmodded")" = "$(stat -c %a "$work/fresh/${chmodded#"$work/space/"}")"
check "the space matches the fresh restore" diff -r --no-dereference -x .hpak-state "$work/space" "$work/fresh"
echo "$(find "$work/space" ! -name .hpak-state | wc -l) entries in the space (besides restore's .hpak-state), $(find "$work/env" | wc -l) in the environment"
