#!/usr/bin/env bash
# hpak repair: bytes flipped inside object payloads of a library pack;
# --dry-run changes nothing; repair exits 1, names each lost object and the
# catalog:path it breaks, moves the damaged pack to LIB/damaged/, and the new
# pack holds every intact object (every other file restores; restore --partial
# restores all but the broken files and exits 1); an object with an intact copy
# in another pack is not lost. Damage only in a .hidx: the index is rebuilt
# (exit 0). gc never copies a damaged entry into its new pack and keeps the
# damaged pack with a warning.
# ctest runs: bash test_repair.sh <hpak-binary> <source-root>.
hpak=${1:?usage: test_repair.sh HPAK_BINARY SOURCE_ROOT}
root=${2:?usage: test_repair.sh HPAK_BINARY SOURCE_ROOT}
hpak=$(cd "$(dirname "$hpak")" && pwd)/$(basename "$hpak")
source "$root/tests/cli/gc_helpers.sh"
watchdog 600
t_start=$SECONDS
cd "$work" || exit 1
# The cases below damage single entries (one object each): their packs are
# written in format 1, where every object is an entry. A damaged block of a
# format-2 pack is the last case.
ADD_ENV_ARGS="--pack-version 1"

# records PACK: "digest kind codec offset stored raw", one line per entry.
records() { H index "$1" --show --no-write; }
# damage PACK DIGEST: flips a byte in the middle of that object's payload.
damage() {
  local rec
  rec=$(records "$1" | awk -v d="$2" '$1 == d' | sed -n 1p)
  [ -n "$rec" ] || fail "no entry $2 in $1"
  set -- "$1" $rec
  flip "$1" $(($5 + 72 + $6 / 2))
}
# path_of SRC DIGEST: the first file of SRC with that content.
path_of() { (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | awk -v d="$2" '$1 == d && !found { print substr($0, 69); found = 1 }'); }
json_lost() { # FILE: "digest path..." lines of a repair --json report
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
for l in r["lost"]:
    print(l["digest"], " ".join(sorted(l["paths"])))' "$1"
}
command -v python3 >/dev/null || { echo "test_repair: skipped: python3 is needed to read --json reports"; exit 125; }

# ---------------------------------------------------------------------------
echo "== damaged object payloads"
mk_tree src/r1 31 120
mk_tree src/r2 32 120
H init L >/dev/null || fail "init"
add_env L r1 src/r1
p1=$(ls L/packs/pack-*.hpak)
add_env L r2 src/r2
# shellcheck disable=SC2010 # the names are hpak's own (pack-<hex>.hpak/.hidx): no odd characters to trip ls
p2=$(ls L/packs/pack-*.hpak | grep -vx "$p1")
# r1's blobs that r2 does not have, with a payload big enough to damage, each
# used by one file of r1 only (the temp dir's path is in the content, so which
# digests sort first, and which contents repeat, changes from run to run).
r2_digests=$(find src/r2 -type f -print0 | xargs -0 sha256sum | cut -c1-64 | LC_ALL=C sort -u)
r1_single=$(find src/r1 -type f -print0 | xargs -0 sha256sum | cut -c1-64 | LC_ALL=C sort | uniq -u)
mapfile -t own < <(records "$p1" | awk '$2 == "blob" && $5 >= 32 { print $1 }' | LC_ALL=C sort | comm -23 - <(echo "$r2_digests") |
  comm -12 - <(echo "$r1_single"))
[ "${#own[@]}" -ge 3 ] || fail "r1 has too few objects of its own"
lost1=${own[0]} lost2=${own[1]} twin=${own[2]}
lost1_path=$(path_of src/r1 "$lost1")
lost2_path=$(path_of src/r1 "$lost2")
twin_path=$(path_of src/r1 "$twin")
[ -n "$lost1_path" ] && [ -n "$lost2_path" ] && [ -n "$twin_path" ] || fail "cannot find the damaged objects' files"
# A third environment, packed into a library of its own, holds an intact copy
# of one of them (twin); its pack is then moved into L like any published pack.
mkdir -p src/dup
cp "src/r1/$twin_path" src/dup/twin
echo "dup's own file" >src/dup/own
H init L2 >/dev/null
add_env L2 dup src/dup
cp L2/packs/pack-*.hpak L2/packs/pack-*.hidx L/packs/
cp L2/catalogs/dup L/catalogs/
[ "$(pack_count L)" -eq 3 ] || fail "expected 3 packs, have $(pack_count L)"
check_restore L dup src/dup t/dup "before damage"

damage "$p1" "$lost1"
damage "$p1" "$lost2"
damage "$p1" "$twin"
before=$(lib_listing L)
H repair L --dry-run --json >dry.json 2>dry.err
rc=$?
[ "$rc" -eq 1 ] || fail "repair --dry-run exited $rc, not 1: $(cat dry.json dry.err)"
[ "$before" = "$(lib_listing L)" ] || fail "repair --dry-run changed the library:
$(diff <(echo "$before") <(lib_listing L) | sed -n 1,10p)"
[ "$(json_lost dry.json | cut -d' ' -f1 | LC_ALL=C sort | tr '\n' ' ')" = "$(printf '%s\n' "$lost1" "$lost2" | LC_ALL=C sort | tr '\n' ' ')" ] ||
  fail "repair --dry-run does not report exactly the two lost objects: $(cat dry.json)"

H repair L >out.txt 2>err.txt
rc=$?
sed 's/^/  /' out.txt
[ "$rc" -eq 1 ] || fail "repair of a pack with lost objects exited $rc, not 1: $(cat out.txt err.txt)"
for pair in "$lost1 $lost1_path" "$lost2 $lost2_path"; do
  set -- $pair
  grep -q "LOST object $1" out.txt || fail "repair does not name lost object $1: $(cat out.txt)"
  grep -qF "breaks r1:$2" <<<"$(grep -A3 "LOST object $1" out.txt)" || fail "repair does not say lost object $1 breaks r1:$2: $(cat out.txt)"
done
grep -q "$twin" out.txt && fail "repair reports $twin lost, but dup's pack holds an intact copy: $(cat out.txt)"
grep -q "catalog 'r1' cannot be fully restored" out.txt || fail "repair does not name the broken catalog r1: $(cat out.txt)"
grep -Eq "catalog '(r2|dup)'" out.txt && fail "repair calls an intact catalog broken: $(cat out.txt)"
[ -e "L/damaged/$(basename "$p1")" ] || fail "the damaged pack is not in L/damaged: $(ls L L/damaged 2>&1)"
[ -e "$p1" ] && fail "the damaged pack is still in L/packs"
[ -e "${p1%.hpak}.hidx" ] && fail "the damaged pack's index is still in L/packs"
# Every intact object of the damaged pack is in the library again.
intact=$(records "L/damaged/$(basename "$p1")" | awk '$2 == "blob" { print $1 }' | LC_ALL=C sort -u | grep -vx -e "$lost1" -e "$lost2")
missing=$(comm -23 <(echo "$intact") <(lib_blobs L))
[ -z "$missing" ] || fail "intact objects of the damaged pack are gone after repair: $(echo "$missing" | sed -n 1,3p)"
grep -qx -e "$lost1" -e "$lost2" <<<"$(lib_blobs L)" && fail "a damaged object was copied into the library"
check_restore L r2 src/r2 t/r2 "after repair"
check_restore L dup src/dup t/dup "after repair"
rm -rf t/r1
H restore L r1 t/r1 >/dev/null 2>err.txt && fail "restore of r1 succeeded with two objects lost"
rm -rf t/r1
H restore --partial L r1 t/r1 >/dev/null 2>err.txt
rc=$?
[ "$rc" -eq 1 ] || fail "restore --partial of r1 exited $rc, not 1: $(cat err.txt)"
grep -qF "$lost1_path" err.txt && grep -qF "$lost2_path" err.txt || fail "restore --partial does not name the files it could not restore: $(cat err.txt)"
d=$(diff -r --no-dereference -x .hpak-state src/r1 t/r1 2>&1 | grep -v -F -e "Only in src/r1/$(dirname "$lost1_path"): $(basename "$lost1_path")" -e "Only in src/r1/$(dirname "$lost2_path"): $(basename "$lost2_path")")
[ -z "$d" ] || fail "restore --partial of r1 differs beyond the two lost files:
$d"
for f in "$lost1_path" "$lost2_path"; do [ -e "t/r1/$f" ] && fail "restore --partial wrote '$f', whose object is lost"; done
# Another repair finds nothing damaged.
H repair L --json >again.json 2>/dev/null
[ "$(json_get again.json packs_rewritten)" -eq 0 ] || fail "a second repair rewrote packs: $(cat again.json)"

# ---------------------------------------------------------------------------
echo "== damage only in an index"
idx2=${p2%.hpak}.hidx
cp "$idx2" good.hidx
chmod u+w "$idx2"
flip "$idx2" $(($(stat -c %s "$idx2") / 2))
cmp -s "$idx2" good.hidx && fail "the index did not change"
before=$(lib_listing L)
H repair L --dry-run >out.txt 2>&1
rc=$?
[ "$rc" -eq 0 ] || fail "repair --dry-run of a damaged index exited $rc: $(cat out.txt)"
[ "$before" = "$(lib_listing L)" ] || fail "repair --dry-run changed the library (index damage)"
H repair L >out.txt 2>&1
rc=$?
sed 's/^/  /' out.txt
[ "$rc" -eq 0 ] || fail "repair of a damaged index exited $rc, not 0: $(cat out.txt)"
grep -q "rebuilt the index of '$(basename "$p2")'" out.txt || fail "repair does not say it rebuilt the index: $(cat out.txt)"
cmp -s "$idx2" good.hidx || fail "the rebuilt index differs from the original"
[ -e "$p2" ] || fail "repair moved a pack whose only damage was its index"
check_restore L r2 src/r2 t/r2 "after the index rebuild"

# ---------------------------------------------------------------------------
echo "== gc never copies a damaged entry"
H init G >/dev/null
mk_tree src/ga 41 120
cp -a src/ga src/gb && mutate src/gb 42 20
add_env G ga src/ga
pa=$(ls G/packs/pack-*.hpak)
add_env G gb src/gb
H catalogs rm G ga >/dev/null
# A live object (gb uses it) in ga's pack, which gc will rewrite for its garbage.
gb_digests=$(find src/gb -type f -print0 | xargs -0 sha256sum | cut -c1-64 | LC_ALL=C sort -u)
bad=$(records "$pa" | awk '$2 == "blob" && $5 >= 32 { print $1 }' | LC_ALL=C sort | comm -12 - <(echo "$gb_digests") | sed -n 1p)
[ -n "$bad" ] || fail "no object of ga's pack is used by gb"
bad_path=$(path_of src/gb "$bad")
damage "$pa" "$bad"
age_packs G
# --min-garbage 0: ga's pack is rewritten for any garbage (the default waits for 10% of its bytes).
H gc G --min-garbage 0 >out.txt 2>err.txt || fail "gc of a library with a damaged pack failed: $(cat err.txt)"
sed 's/^/  /' err.txt
grep -q "damaged entry not copied" err.txt || fail "gc does not warn about the damaged entry: $(cat err.txt)"
grep -q "pack '$(basename "$pa")' kept" err.txt || fail "gc does not say it kept the damaged pack: $(cat err.txt)"
[ -e "$pa" ] && [ -e "${pa%.hpak}.hidx" ] || fail "gc removed the pack holding the only (damaged) copy of a live object"
# shellcheck disable=SC2010 # the names are hpak's own (pack-<hex>.hpak/.hidx): no odd characters to trip ls
new=$(ls G/packs/pack-*.hpak | grep -vx "$pa" | xargs -r ls -t | sed -n 1p)
[ -n "$new" ] || fail "gc wrote no new pack"
for p in G/packs/pack-*.hpak; do
  [ "$p" = "$pa" ] && continue
  grep -qx "$bad" <<<"$(records "$p" | awk '{ print $1 }')" && fail "gc copied the damaged object $bad into $(basename "$p")"
done
# The library's only bad copy is the one in the kept pack.
H verify G --json >v.json 2>/dev/null
python3 -c '
import json, sys
rep = json.load(open(sys.argv[1]))
rep = rep[0] if isinstance(rep, list) else rep
bad = [(b["digest"], c["pack"]) for b in rep.get("bad_objects", []) for c in b.get("bad_copies", [])]
assert bad == [(sys.argv[2], sys.argv[3])], bad' v.json "$bad" "$(basename "$pa")" 2>err.txt ||
  fail "after gc, verify finds bad copies other than the one damaged entry: $(cat err.txt)"
rm -rf t/gb
H restore --partial G gb t/gb >/dev/null 2>err.txt
[ $? -eq 1 ] || fail "restore --partial of gb should fail on the one damaged file: $(cat err.txt)"
# Every file with the damaged content is left out (a tree may hold it twice).
d=$(diff -r --no-dereference -x .hpak-state src/gb t/gb 2>&1 |
  grep -vxF -f <(cd src/gb && find . -type f -print0 | xargs -0 sha256sum | awk -v d="$bad" '$1 == d { p = substr($0, 69); sub(/^\.\//, "", p); n = split(p, a, "/"); f = a[n]; dir = substr(p, 1, length(p) - length(f) - 1); print "Only in src/gb" (dir == "" ? "" : "/" dir) ": " f }'))
[ -z "$d" ] || fail "gb differs beyond its one damaged file after gc:
$d"
# repair then moves the damaged pack aside; the next gc has nothing damaged left.
H repair G >out.txt 2>&1
[ $? -eq 1 ] || fail "repair after gc: $(cat out.txt)"
grep -qF "breaks gb:$bad_path" out.txt || fail "repair does not name gb:$bad_path: $(cat out.txt)"
H gc G --grace 0 >out.txt 2>err.txt || fail "gc after repair failed: $(cat err.txt)"
grep -q "damaged" err.txt && fail "gc after repair still sees damage: $(cat err.txt)"
no_condemned G

# ---------------------------------------------------------------------------
echo "== a damaged block (pack format 2): its members are lost, nothing else"
ADD_ENV_ARGS=
mk_tree src/v2 41 120
H init V >/dev/null || fail "init V"
add_env V v2 src/v2
pv=$(ls V/packs/pack-*.hpak)
# The block holding the first blob member: flip a byte in its payload.
brec=$(records "$pv" | awk '$2 == "blob" && $7 ~ /^block:/' | sed -n 1p)
[ -n "$brec" ] || fail "the format-2 pack has no block: $(records "$pv" | sed -n 1,3p)"
boff=$(awk '{ print $4 }' <<<"$brec")
members=$(records "$pv" | awk -v o="$boff" '$4 == o && $7 ~ /^block:/ { print $1 }' | LC_ALL=C sort -u)
others=$(records "$pv" | awk -v o="$boff" '$2 == "blob" && $4 != o { print $1 }' | LC_ALL=C sort -u)
[ "$(wc -l <<<"$members")" -ge 2 ] || fail "the block holds fewer than 2 objects"
count=$(python3 -c 'import sys; b = open(sys.argv[1], "rb").read()[int(sys.argv[2]) + 8:int(sys.argv[2]) + 12]; print(int.from_bytes(b, "little"))' "$pv" "$boff")
flip "$pv" $((boff + 48 + 36 * count + 4))
H repair V --json >v2.json 2>v2.err
rc=$?
[ "$rc" -eq 1 ] || fail "repair of a damaged block exited $rc, not 1: $(cat v2.json v2.err)"
[ "$(json_lost v2.json | cut -d' ' -f1 | LC_ALL=C sort -u)" = "$members" ] ||
  fail "repair does not report exactly the block's members lost: $(json_lost v2.json | sed -n 1,3p)"
missing=$(comm -23 <(echo "$others") <(lib_blobs V))
[ -z "$missing" ] || fail "objects outside the damaged block are gone after repair: $(echo "$missing" | sed -n 1,3p)"

stop_watchdog
echo "test_repair: ok ($((SECONDS - t_start)) s)"
