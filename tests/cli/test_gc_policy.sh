#!/usr/bin/env bash
# hpak gc's default policy (hpak-gc(1), POLICY): a library of one large pack,
# after `catalogs rm` of one name in it (about 5% of its bytes) and of a small
# name in a pack of its own: gc deletes the small pack, leaves the large one as
# it is (same file) and writes little (measured: write(2) bytes of the process,
# bench/scale_measure.py); --min-garbage 0 and --full rewrite the large pack;
# a second gc has nothing to do; bad option values are one-line errors.
# ctest runs: bash test_gc_policy.sh <hpak-binary> <source-root>.
hpak=${1:?usage: test_gc_policy.sh HPAK_BINARY SOURCE_ROOT}
root=${2:?usage: test_gc_policy.sh HPAK_BINARY SOURCE_ROOT}
hpak=$(cd "$(dirname "$hpak")" && pwd)/$(basename "$hpak")
source "$root/tests/cli/gc_helpers.sh"
command -v python3 >/dev/null || { echo "test_gc_policy: skipped: python3 is not installed"; exit 125; }
watchdog 600
cd "$work" || exit 1
export HPAK_FSYNC=0 # a throwaway library

measure() { python3 "$root/bench/scale_measure.py" "$@"; }
the_pack() { find "$1/packs" -maxdepth 1 -name 'pack-*.hpak' -printf '%f\n'; }
# pack_field JSON PACK KEY: a field of one pack's entry in gc --json's "packs".
pack_field() {
  python3 -c 'import json,sys
for p in json.load(open(sys.argv[1]))["packs"]:
    if p["pack"] == sys.argv[2]: print(p[sys.argv[3]])' "$1" "$2" "$3"
}

echo "== a library of one large pack"
H init L >/dev/null || fail "init"
for i in $(seq 1 20); do
  mk_tree "src/e$i" "$((100 + i))" 200
  add_env L "e$i" "src/e$i"
done
age_packs L
H gc L >/dev/null 2>err.txt || fail "the first gc (roll-up of 20 packs) failed: $(cat err.txt)"
[ "$(pack_count L)" -eq 1 ] || fail "20 packs rolled up into $(pack_count L), not 1"
big=$(the_pack L)
big_bytes=$(stat -c %s "L/packs/$big")
echo "  $big: $big_bytes bytes"
tiny_tree src/small small-catalog
add_env L small src/small
small_pack=$(the_pack L | grep -vx "$big")
small_bytes=$(stat -c %s "L/packs/$small_pack")
H catalogs rm L small e7 >/dev/null || fail "catalogs rm L small e7"
age_packs L
cp -a L L_min0
cp -a L L_full
big_inode=$(stat -c %i "L/packs/$big")
big_sum=$(sha256sum <"L/packs/$big")

echo "== default policy: the small pack goes, the large one stays as it is"
H_report gc L -n >dry.txt 2>&1 || fail "gc -n failed: $(cat dry.txt)"
sed 's/^/  /' dry.txt
grep -Eq "^keep +${big:0:17} .*\(garbage below threshold \([0-9.]+% of its bytes dead, --min-garbage 10\)\)$" dry.txt ||
  fail "gc -n does not keep the large pack for garbage below the threshold:
$(cat dry.txt)"
grep -Eq "^delete +${small_pack:0:17} " dry.txt || fail "gc -n does not delete the small pack:
$(cat dry.txt)"
measure gc.m.json "$hpak" -q gc L --json >gc.json 2>err.txt || fail "gc --json failed: $(cat err.txt)"
[ "$(json_get gc.json copied_objects)" -eq 0 ] || fail "gc copied objects: $(cat gc.json)"
[ "$(json_get gc.json copied_bytes)" -eq 0 ] || fail "gc copied bytes: $(cat gc.json)"
[ "$(pack_field gc.json "$big" action)" = keep ] || fail "the large pack's action is not keep: $(cat gc.json)"
[ "$(pack_field gc.json "$small_pack" action)" = delete ] || fail "the small pack's action is not delete: $(cat gc.json)"
dead=$(pack_field gc.json "$big" dead_bytes)
[ "$dead" -gt 0 ] && [ $((dead * 100)) -lt $((big_bytes * 10)) ] ||
  fail "the large pack's dead_bytes $dead is not between 0 and 10% of its $big_bytes bytes"
[ "$(the_pack L)" = "$big" ] || fail "after gc the packs are $(the_pack L | tr '\n' ' '), not just $big"
[ "$(stat -c %i "L/packs/$big")" = "$big_inode" ] || fail "the large pack was replaced (new inode)"
[ "$(sha256sum <"L/packs/$big")" = "$big_sum" ] || fail "the large pack's bytes changed"
wrote=$(json_get gc.m.json wchar)
midx_bytes=$(find L -maxdepth 2 -name '*.midx' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
limit=$((midx_bytes + 5 * small_bytes + 65536))
echo "  gc wrote $wrote bytes (multi-pack index $midx_bytes, limit $limit; the large pack is $big_bytes)"
[ "$wrote" -le "$limit" ] || fail "gc wrote $wrote bytes to drop a $small_bytes-byte pack (limit $limit)"
[ "$wrote" -lt $((big_bytes / 10)) ] || fail "gc wrote $wrote bytes, 10% of the large pack or more"
check_restore L e1 src/e1 t/e1 "after the default gc"
check_restore L e20 src/e20 t/e20 "after the default gc"
H restore L small t/small >/dev/null 2>&1 && fail "the removed catalog 'small' still restores"
verify_lib L "after the default gc"
H gc L --json >gc2.json 2>err.txt || fail "a second gc failed: $(cat err.txt)"
[ "$(json_get gc2.json copied_bytes)" -eq 0 ] || fail "a second gc copied bytes: $(cat gc2.json)"
[ "$(json_get gc2.json objects_dropped)" -eq 0 ] || fail "a second gc dropped objects: $(cat gc2.json)"
[ "$(the_pack L)" = "$big" ] || fail "a second gc changed the packs"

echo "== --min-garbage 0 rewrites the large pack for its garbage"
e7_only=$(comm -23 <(file_digests src/e7) <(for i in $(seq 1 20); do [ "$i" -eq 7 ] || file_digests "src/e$i"; done | LC_ALL=C sort -u))
[ -n "$e7_only" ] || fail "e7 shares every file with the others: the test needs some of its own"
[ -n "$(lib_blobs L_min0 | comm -12 - <(echo "$e7_only"))" ] || fail "e7's own objects are not in the library"
measure min0.m.json "$hpak" -q gc L_min0 --min-garbage 0 --json >min0.json 2>err.txt || fail "gc --min-garbage 0 failed: $(cat err.txt)"
[ "$(pack_field min0.json "$big" action)" = rewrite ] || fail "--min-garbage 0 does not rewrite the large pack: $(cat min0.json)"
[ "$(pack_count L_min0)" -eq 1 ] || fail "--min-garbage 0 left $(pack_count L_min0) packs"
[ "$(the_pack L_min0)" != "$big" ] || fail "--min-garbage 0 left the large pack as it was"
[ -z "$(lib_blobs L_min0 | comm -12 - <(echo "$e7_only"))" ] || fail "--min-garbage 0 kept objects only e7 used"
new_bytes=$(stat -c %s "L_min0/packs/$(the_pack L_min0)")
[ "$(json_get min0.m.json wchar)" -ge "$new_bytes" ] || fail "--min-garbage 0 wrote $(json_get min0.m.json wchar) bytes, less than its new pack"
check_restore L_min0 e20 src/e20 t/e20 "after --min-garbage 0"

echo "== --full repacks everything into one pack"
measure full.m.json "$hpak" -q gc L_full --full --json >full.json 2>err.txt || fail "gc --full failed: $(cat err.txt)"
[ "$(pack_count L_full)" -eq 1 ] || fail "--full left $(pack_count L_full) packs"
[ "$(the_pack L_full)" != "$big" ] || fail "--full left the large pack as it was"
[ "$(json_get full.json copied_bytes)" -gt $((big_bytes / 2)) ] || fail "--full copied too little: $(cat full.json)"
[ -z "$(lib_blobs L_full | comm -12 - <(echo "$e7_only"))" ] || fail "--full kept objects only e7 used"
check_restore L_full e1 src/e1 t/e1f "after --full"
verify_lib L_full "after --full"
# A library in one clean pack: --full has nothing left to do.
age_packs L_full
H gc L_full --full --json >full2.json 2>err.txt || fail "a second gc --full failed: $(cat err.txt)"
[ "$(json_get full2.json copied_bytes)" -eq 0 ] || fail "a second --full copied bytes again: $(cat full2.json)"

echo "== bad values: one-line errors"
for args in "--full --min-garbage 5" "--min-garbage 101" "--min-garbage x"; do
  # shellcheck disable=SC2086 # the options, word-split on purpose
  "$hpak" gc L $args >out.txt 2>err.txt
  rc=$?
  [ "$rc" -eq 2 ] || fail "gc $args: exit $rc, expected 2"
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "gc $args: not a one-line error: $(cat err.txt)"
  grep -q '^hpak: error: .*--min-garbage' err.txt || fail "gc $args: the error does not name the option: $(cat err.txt)"
  echo "  gc $args: $(cat err.txt)"
done

stop_watchdog
echo "test_gc_policy: ok"
