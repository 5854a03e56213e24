#!/usr/bin/env bash
# The multi-pack index (issue 28, item 5; issue 27; layers: issue 33): its
# files (packs/midx-<sha256>.midx layers, and the legacy packs/multi.midx) are
# disposable, so a bad one (random bytes, a FIFO, a symlink to /dev/zero)
# costs lookups nothing but speed, and `hpak verify LIB` reports it instead of
# "ok"; a valid but incomplete layer (every pack listed, digests missing) must
# not hide objects that the packs' own indexes hold: restores and gc work,
# verify reports the disagreement, repair rewrites it.
# ctest runs: bash test_midx.sh <hpak-binary> <source-root>.
source "$(dirname "$0")/../faults/lib.sh" "$@"
H() { "$hpak" -q "$@"; }
command -v mkfifo >/dev/null || { echo "$test_name: skipped: no mkfifo"; exit 125; }

# 9 adds: a layer once 4 packs are outside every layer, merged geometrically:
# one layer over the first 8 packs; the 9th searched in its own index.
L0=$W/lib0
for i in 1 2 3 4 5 6 7 8 9; do
  make_tree "$W/src/e$i" "e$i" 12
  H pack "$W/src/e$i" --no-relocate --into "$L0" --name "e$i" >/dev/null || fail "add e$i"
done
layers() { find "$1/packs" -maxdepth 1 -name 'midx-*.midx' -type f -printf '.'; }
largest_layer() { find "$1/packs" -maxdepth 1 -name 'midx-*.midx' -printf '%s %p\n' | sort -n | sed -n '$s/^[0-9]* //p'; }
expect_eq "the adds wrote 1 layer (8 packs)" 1 "$(layers "$L0" | wc -c)"
expect_eq "the 9th pack is outside it" 1 "$("$hpak" -v catalogs "$L0" 2>&1 | sed -n 's/.* \([0-9]*\) outside the midx.*/\1/p')"
check "and no legacy multi.midx" test ! -e "$L0/packs/multi.midx"
"$hpak" verify "$L0" >"$W/v0.out" 2>&1
expect_eq "a good midx: verify exits 0" 0 $?

fresh() { rm_tree "$W/lib"; cp -a "$L0" "$W/lib"; L=$W/lib; rm -f "$L"/packs/*.midx; }
restores_all() {
  local i
  for i in 1 2 3 4 5 6 7 8 9; do
    rm_tree "$W/t"
    H restore "$L" "e$i" "$W/t" >/dev/null 2>"$W/r.err" || { echo "e$i: $(cat "$W/r.err")"; return 1; }
    same_tree "$W/src/e$i" "$W/t" >/dev/null || { echo "e$i differs"; return 1; }
  done
}

for kind in random fifo zero; do
  echo "== packs/multi.midx: $kind"
  fresh
  case $kind in
  random) head -c 4096 /dev/urandom >"$L/packs/multi.midx" ;;
  fifo) mkfifo "$L/packs/multi.midx" ;;
  zero) ln -s /dev/zero "$L/packs/multi.midx" ;;
  esac
  timeout 60 "$hpak" verify "$L" >"$W/v.out" 2>&1
  rc=$?
  expect_eq "verify exits 1 (BAD)" 1 "$rc"
  check "and names the midx as a problem: $(grep problem "$W/v.out" | cut -c1-300)" \
    grep -qE "^  problem: .*'$L/packs/multi\.midx'" "$W/v.out"
  check "restores still work" restores_all
  "$hpak" repair "$L" >"$W/rep.out" 2>&1
  check "repair rewrites it: $(grep multi-pack "$W/rep.out")" grep -q "^rewrote the multi-pack index: " "$W/rep.out"
  check "the legacy file goes" test ! -e "$L/packs/multi.midx" -a ! -L "$L/packs/multi.midx"
  expect_eq "one layer, a regular file" 1 "$(layers "$L" | wc -c)"
  "$hpak" verify "$L" >"$W/v2.out" 2>&1
  rc=$?
  expect_eq "verify after repair: exit 0 ($(grep -v '^ok' "$W/v2.out" | cut -c1-300))" 0 "$rc"
done

echo "== a valid layer that lists its packs but misses digests"
fresh
# The largest layer rewritten without the digests of pack id 0 (fanout and
# trailer recomputed), under the name its trailer gives: a well-formed layer
# that misses every object held only by that pack.
python3 - "$(largest_layer "$L0")" "$L/packs" <<'PY'
import hashlib, struct, sys
b = open(sys.argv[1], "rb").read()
assert b[:4] == b"HMIX"
version, npacks, reserved, count = struct.unpack_from("<IIIQ", b, 4)
head = 24 + 32 * npacks
assert len(b) == head + 1024 + 36 * count + 32, "unexpected midx layout"
digests = [b[head + 1024 + 32 * i: head + 1024 + 32 * (i + 1)] for i in range(count)]
ids = list(struct.unpack_from("<%dI" % count, b, head + 1024 + 32 * count))
keep = [(d, i) for d, i in zip(digests, ids) if i != 0]
assert len(keep) < count
fan, acc = [0] * 256, 0
for d, _ in keep:
    fan[d[0]] += 1
out = bytearray(b[:16]) + struct.pack("<Q", len(keep)) + b[24:head]
for i in range(256):
    acc += fan[i]
    out += struct.pack("<I", acc)
for d, _ in keep:
    out += d
for _, i in keep:
    out += struct.pack("<I", i)
trailer = hashlib.sha256(out).digest()
out += trailer
open(f"{sys.argv[2]}/midx-{trailer.hex()}.midx", "wb").write(out)
print(f"midx: {count} -> {len(keep)} digests")
PY
check "every name restores (lookups fall back to the packs' indexes)" restores_all
"$hpak" verify "$L" >"$W/v3.out" 2>&1
expect_eq "verify exits 1" 1 $?
check "and says the midx misses an object a pack it covers holds: $(grep problem "$W/v3.out" | cut -c1-300)" \
  grep -qE "^  problem: multi-pack index '$L/packs/midx-[0-9a-f]{64}\.midx' does not list object [0-9a-f]{64}, which pack [0-9a-f]{64} it covers holds" "$W/v3.out"
check "no object is reported lost" grep -q "0 objects lost" "$W/v3.out"
H catalogs rm "$L" e9 >/dev/null
H gc "$L" --grace 0 >"$W/gc.out" 2>"$W/gc.err"
expect_eq "gc runs ($(head -c 300 "$W/gc.err"))" 0 $?
check "and rewrites the midx" bash -c '"$1" verify "$2" >/dev/null 2>&1' _ "$hpak" "$L"

echo "== repair rewrites an incomplete layer (and a legacy multi.midx)"
fresh
python3 - "$L/packs/multi.midx" "$(largest_layer "$L0")" <<'PY'
import hashlib, struct, sys, os
b = open(sys.argv[2], "rb").read()
version, npacks, reserved, count = struct.unpack_from("<IIIQ", b, 4)
head = 24 + 32 * npacks
# Drop the last digest: fanout bucket and count shrink by one.
d_last = b[head + 1024 + 32 * (count - 1): head + 1024 + 32 * count]
fan = list(struct.unpack_from("<256I", b, head))
fan = [f - 1 if i >= d_last[0] else f for i, f in enumerate(fan)]
out = bytearray(b[:16]) + struct.pack("<Q", count - 1) + b[24:head] + struct.pack("<256I", *fan)
out += b[head + 1024: head + 1024 + 32 * (count - 1)]
out += b[head + 1024 + 32 * count: head + 1024 + 32 * count + 4 * (count - 1)]
out += hashlib.sha256(out).digest()
open(sys.argv[1], "wb").write(out)
PY
"$hpak" repair "$L" >"$W/rep2.out" 2>&1
check "repair: $(grep multi-pack "$W/rep2.out")" grep -q "^rewrote the multi-pack index: multi-pack index '$L/packs/multi.midx' does not list object" "$W/rep2.out"
"$hpak" verify "$L" >/dev/null 2>&1
expect_eq "verify after it: exit 0" 0 $?
check "every name restores" restores_all
check "the legacy file is gone" test ! -e "$L/packs/multi.midx"
expect_eq "one layer" 1 "$(layers "$L" | wc -c)"

done_tests
