#!/usr/bin/env bash
# Regenerates the checked-in seed corpus tests/fuzz/corpus/<target>/: small
# valid packs, indexes, a multi-pack index, catalogs and restore states made
# with the real binary, the seeds hpak_fuzz_seeds builds (dictionary entries,
# raw catalogs, two catalogs in one pack), and a few damaged copies
# (a flipped byte, a truncation). Total size stays well under 2 MB.
# Files named regress-* (inputs that once made a target fail), named-table-*
# (a pack and index of the old block tables that named each member, made
# before 2026-12-06: hpak reads them forever) and the merged fuzzing finds
# (named by SHA-1) stay.
#
#   tests/fuzz/make_corpus.sh [HPAK_BINARY [SEEDS_BINARY]]
#   defaults: build/hpak and build-fuzz/tests/fuzz/hpak_fuzz_seeds
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
hpak=$(realpath "${1:-$root/build/hpak}")
seeds=$(realpath "${2:-$root/build-fuzz/tests/fuzz/hpak_fuzz_seeds}")
out=$root/tests/fuzz/corpus
W=$(mktemp -d "${TMPDIR:-/tmp}/hpak-corpus-XXXXXX")
trap 'chmod -R u+rwx "$W"; rm -rf "$W"' EXIT
export LC_ALL=C

# Kept: regression inputs (regress-*: inputs that once made a target fail)
# and inputs merged from fuzzing runs (named by their SHA-1, as libFuzzer
# names them; add more with: build-fuzz/tests/fuzz/T -merge=1 -max_len=4096
# tests/fuzz/corpus/T build-fuzz/corpus/T, keeping the corpus under 2 MB).
find "$out" -regextype posix-extended -type f ! -name 'regress-*' ! -name 'named-table-*' ! -regex '.*/[0-9a-f]{40}' -delete 2>/dev/null || true
mkdir -p "$out"/{fuzz_pack_entry,fuzz_index,fuzz_catalog,fuzz_midx,fuzz_unpack,fuzz_restore_state,fuzz_mount_tree}
"$seeds" "$out"

# flip FILE OFFSET OUT: a copy of FILE with the byte at OFFSET inverted.
flip() {
  cp "$1" "$3"
  local b
  b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "$(printf '\\%03o' $((255 - b)))" | dd of="$3" bs=1 seek="$2" conv=notrunc status=none
}
# truncate_to FILE BYTES OUT
truncate_to() { head -c "$2" "$1" >"$3"; }

# make_tree DIR VARIANT: a small tree with every node type; some files hold
# DIR's own path (relocations).
make_tree() {
  local d=$1 v=$2
  mkdir -p "$d/bin" "$d/lib/python/site" "$d/etc" "$d/share/empty"
  printf '#!/bin/sh\nexec %s/bin/python "$@"\n' "$d" >"$d/bin/run"
  chmod 755 "$d/bin/run"
  ln "$d/bin/run" "$d/bin/run-again"
  ln -s run "$d/bin/alias"
  ln -s "$d/lib" "$d/bin/lib-abs"
  printf 'prefix=%s\nvariant=%s\n' "$d" "$v" >"$d/etc/env.conf"
  chmod 600 "$d/etc/env.conf"
  : >"$d/etc/empty"
  for i in 1 2 3; do
    printf 'def f%d():\n    return "%s %d"\n' "$i" "$v" "$i" >"$d/lib/python/site/mod$i.py"
  done
  head -c 2000 /dev/zero >"$d/lib/zeros.bin"
  printf 'variant %s\n' "$v" >"$d/README"
  chmod 555 "$d/share"
}

# ---- a pack and its index, made by `hpak pack -o`
make_tree "$W/tree" 0
"$hpak" -q pack "$W/tree" -o "$W/small.hpak" --name small >/dev/null
cp "$W/small.hpak" "$out/fuzz_unpack/cli-small.hpak"
cp "$W/small.hpak" "$out/fuzz_pack_entry/cli-small.hpak"
cp "$W/small.hidx" "$out/fuzz_index/cli-small.hidx"
"$hpak" -q pack "$W/tree" -o "$W/norel.hpak" --name norel --no-relocate --no-mtime -l 19 >/dev/null
cp "$W/norel.hpak" "$out/fuzz_unpack/cli-norel.hpak"
size=$(stat -c %s "$W/small.hpak")
flip "$W/small.hpak" $((size / 2)) "$out/fuzz_pack_entry/cli-small-flipped.hpak"
flip "$W/small.hpak" $((size - 40)) "$out/fuzz_unpack/cli-small-flipped-footer.hpak"
truncate_to "$W/small.hpak" $((size * 2 / 3)) "$out/fuzz_pack_entry/cli-small-truncated.hpak"
truncate_to "$W/small.hpak" $((size - 50)) "$out/fuzz_unpack/cli-small-truncated.hpak"
isize=$(stat -c %s "$W/small.hidx")
flip "$W/small.hidx" $((isize - 100)) "$out/fuzz_index/cli-small-flipped.hidx"

# ---- the raw catalog, through `hpak index --show` and `hpak cat`
cat_digest=$("$hpak" index "$W/small.hpak" --show --no-write | awk '$2 == "catalog" && !found {print $1; found = 1}')
"$hpak" cat "$W/small.hpak" "$cat_digest" >"$out/fuzz_catalog/cli-small.cat"
csize=$(stat -c %s "$out/fuzz_catalog/cli-small.cat")
truncate_to "$out/fuzz_catalog/cli-small.cat" $((csize - 7)) "$out/fuzz_catalog/cli-small-truncated.cat"

# ---- a library of ten small packs: each pack --into writes a midx layer, merged geometrically
lib=$W/lib
for v in 1 2 3 4 5 6 7 8 9 10; do
  make_tree "$W/env$v" "$v"
  "$hpak" -q pack "$W/env$v" --into "$lib" --name "env$v" >/dev/null
done
# The largest layer (the 8 first packs merged).
layer=$(find "$lib/packs" -maxdepth 1 -name 'midx-*.midx' -printf '%s %p\n' | sort -n | sed -n '$s/^[0-9]* //p')
[ -n "$layer" ] || { echo "make_corpus.sh: no midx layer was written" >&2; exit 1; }
cp "$layer" "$out/fuzz_midx/cli-lib.midx"
msize=$(stat -c %s "$layer")
flip "$layer" $((msize / 2)) "$out/fuzz_midx/cli-lib-flipped.midx"

# ---- restore states: after a complete restore, and an incomplete one (--partial past a missing object)
"$hpak" -q restore "$lib" env1 "$W/target" >/dev/null
cp "$W/target/.hpak-state" "$out/fuzz_restore_state/cli-complete.state"
ssize=$(stat -c %s "$W/target/.hpak-state")
flip "$W/target/.hpak-state" $((ssize / 2)) "$out/fuzz_restore_state/cli-flipped.state"
"$hpak" -q restore "$lib" env2 "$W/target" >/dev/null
cp "$W/target/.hpak-state" "$out/fuzz_restore_state/cli-switched.state"

# fuzz_mount_tree starts from the small catalog seeds.
find "$out/fuzz_catalog" -type f -size -4k -exec cp -t "$out/fuzz_mount_tree" {} +

total=$(du -sb "$out" | cut -f1)
echo "corpus: $(find "$out" -type f | wc -l) files, $total bytes"
[ "$total" -lt 2000000 ] || { echo "make_corpus.sh: corpus is larger than 2 MB" >&2; exit 1; }
