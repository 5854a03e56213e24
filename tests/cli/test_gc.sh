#!/usr/bin/env bash
# hpak gc: --dry-run changes nothing; gc after `catalogs rm` frees exactly the
# removed environment's own objects and every remaining catalog still restores
# byte for byte; --unused; --grace; 200 small packs roll up into a handful;
# --json; a pack rewritten keeps no dead object, even in a block with live
# ones (and so a second gc has nothing to do); a second gc while the lock is
# held fails naming the holder.
# ctest runs: bash test_gc.sh <hpak-binary> <source-root>.
hpak=${1:?usage: test_gc.sh HPAK_BINARY SOURCE_ROOT}
root=${2:?usage: test_gc.sh HPAK_BINARY SOURCE_ROOT}
hpak=$(cd "$(dirname "$hpak")" && pwd)/$(basename "$hpak")
source "$root/tests/cli/gc_helpers.sh"
watchdog 600
t_start=$SECONDS
cd "$work" || exit 1

# Bytes of the packs and their indexes (what gc counts).
packs_bytes() { find "$1/packs" -maxdepth 1 \( -name 'pack-*.hpak' -o -name 'pack-*.hidx' \) -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
pack_blobs() { H index "$1" --show --no-write | awk '$2 == "blob" { print $1 }' | LC_ALL=C sort -u; }
# change_every DIR N TAG: a line appended to every Nth file of DIR (sorted order).
change_every() {
  local n=0 f
  while IFS= read -r f; do
    n=$((n + 1))
    [ $((n % $2)) -eq 0 ] && printf 'changed in %s %s\n' "$3" "$n" >>"$f"
  done < <(find "$1" -type f | LC_ALL=C sort)
}

# ---------------------------------------------------------------------------
echo "== dry run, then gc after 'catalogs rm'"
mk_tree src/a 1 150
mk_tree src/b 2 150
mk_tree src/c 3 150
# d shares most of a: a copy with a few files changed and one added.
cp -a src/a src/d
change_every src/d 10 d
echo "only in d" >src/d/only-in-d.txt
H init L >/dev/null || fail "init"
for e in a b c d; do add_env L "$e" "src/$e"; done
[ "$(pack_count L)" -eq 4 ] || fail "expected 4 packs after 4 adds, have $(pack_count L)"
# b's pack: the one holding a file only b has.
b_mark=$(file_digests src/b | comm -23 - <(file_digests src/a src/c src/d) | sed -n 1p)
b_pack=
for p in L/packs/pack-*.hpak; do
  if grep -qx "$b_mark" <<<"$(pack_blobs "$p")"; then b_pack=$p; fi
done
[ -n "$b_pack" ] || fail "cannot tell which pack holds b's objects"
H catalogs rm L b >/dev/null || fail "catalogs rm L b"
age_packs L
before=$(lib_listing L)
out=$(H_report gc L --dry-run 2>&1) || fail "gc --dry-run failed: $out"
echo "$out" | sed 's/^/  /'
for p in L/packs/pack-*.hpak; do
  short=$(basename "$p" | cut -c1-17)
  grep -q "$short" <<<"$out" || fail "gc --dry-run does not report pack $short:
$out"
done
grep -Eq "^(rewrite|delete) +$(basename "$b_pack" | cut -c1-17) " <<<"$out" ||
  fail "gc --dry-run does not plan to rewrite b's pack:
$out"
grep -Eq 'dry run: .*\(([1-9][0-9.]* [KMG]?i?B) freed\)' <<<"$out" || fail "gc --dry-run reports nothing to free:
$out"
H gc L --dry-run --json >dry.json 2>/dev/null || fail "gc --dry-run --json failed"
err=$(json_valid dry.json) || fail "gc --dry-run --json is not JSON: $err: $(cat dry.json)"
[ "$(json_get dry.json dry_run)" = True ] || [ "$(json_get dry.json dry_run)" = true ] || fail "dry_run is not true: $(cat dry.json)"
[ "$(json_get dry.json bytes_freed)" -gt 0 ] || fail "dry run frees nothing: $(cat dry.json)"
[ "$before" = "$(lib_listing L)" ] || fail "gc --dry-run changed the library:
$(diff <(echo "$before") <(lib_listing L) | sed -n 1,10p)"

# What b alone needed must go; everything a, c and d need must stay.
b_only=$(file_digests src/b | comm -23 - <(file_digests src/a src/c src/d))
[ -n "$b_only" ] || fail "b shares every file with the others: the test needs some of its own"
[ -n "$(lib_blobs L | comm -12 - <(echo "$b_only"))" ] || fail "b's own objects are not in the library before gc"
size_before=$(packs_bytes L)
H gc L --json >gc1.json 2>gc1.err || fail "gc failed: $(cat gc1.err)"
err=$(json_valid gc1.json) || fail "gc --json is not JSON: $err: $(cat gc1.json)"
for k in packs_before packs_after objects_kept objects_dropped bytes_freed bytes_before bytes_after; do
  v=$(json_get gc1.json "$k") || fail "gc --json lacks '$k': $(cat gc1.json)"
  [[ $v =~ ^[0-9]+$ ]] || fail "gc --json '$k' is not a count: $v"
done
[ "$(json_get gc1.json packs_before)" -eq 4 ] || fail "packs_before should be 4: $(cat gc1.json)"
[ "$(json_get gc1.json packs_after)" -eq "$(pack_count L)" ] || fail "packs_after $(json_get gc1.json packs_after) but $(pack_count L) packs are there"
[ "$(json_get gc1.json objects_dropped)" -ge "$(echo "$b_only" | wc -l)" ] || fail "objects_dropped is below b's own objects: $(cat gc1.json)"
[ "$(json_get gc1.json bytes_freed)" -eq $(($(json_get gc1.json bytes_before) - $(json_get gc1.json bytes_after))) ] ||
  fail "bytes_freed != bytes_before - bytes_after: $(cat gc1.json)"
[ "$(json_get gc1.json bytes_before)" -eq "$size_before" ] || fail "bytes_before $(json_get gc1.json bytes_before) != packs/ size $size_before"
[ "$(json_get gc1.json bytes_after)" -eq "$(packs_bytes L)" ] ||
  fail "bytes_after $(json_get gc1.json bytes_after) != the size of the packs now $(packs_bytes L)"
[ "$(json_get gc1.json bytes_freed)" -gt 0 ] || fail "gc freed nothing: $(cat gc1.json)"
left=$(lib_blobs L | comm -12 - <(echo "$b_only"))
[ -z "$left" ] || fail "objects only b used survived gc: $(echo "$left" | sed -n 1,3p)"
missing=$(file_digests src/a src/c src/d | comm -23 - <(lib_blobs L))
[ -z "$missing" ] || fail "objects a, c or d need are gone after gc: $(echo "$missing" | sed -n 1,3p)"
[ -e "$b_pack" ] && fail "b's old pack $b_pack is still there"
[ -n "$(find L/packs -name '*condemned*')" ] && fail "condemned files left after gc: $(ls L/packs)"
for e in a c d; do check_restore L "$e" "src/$e" "t/$e" "after gc"; done
verify_lib L "after gc"
H restore L b t/b >/dev/null 2>err.txt && fail "restore of the removed catalog b succeeded"
grep -q "no catalog named 'b'" err.txt || fail "restore of a removed catalog: unclear error: $(cat err.txt)"
# Nothing more to do: a second gc keeps everything.
H gc L --json >gc2.json 2>/dev/null || fail "second gc failed"
[ "$(json_get gc2.json objects_dropped)" -eq 0 ] || fail "second gc dropped objects: $(cat gc2.json)"
for e in a c d; do check_restore L "$e" "src/$e" "t/$e" "after a second gc"; done

# ---------------------------------------------------------------------------
echo "== --unused"
H init U >/dev/null
mk_tree src/u1 11 100
mk_tree src/u2 12 100
mk_tree src/u3 13 100
for e in u1 u2 u3; do add_env U "$e" "src/$e"; done
touch -d '40 days ago' U/used/u1 U/used/u2
touch -d '10 days ago' U/used/u3
check_restore U u2 src/u2 t/u2 "before --unused" # a restore counts as a use
out=$(H_report gc U --unused 30d --grace 0 2>&1) || fail "gc --unused 30d failed: $out"
grep -q "dropped catalog 'u1' (unused)" <<<"$out" || fail "gc --unused 30d did not report dropping u1: $out"
grep -q "'u2'" <<<"$out" && fail "gc --unused 30d dropped u2, restored a moment ago: $out"
[ "$(H catalogs U | awk '{print $1}' | tr '\n' ' ')" = "u2 u3 " ] || fail "after --unused 30d the catalogs are: $(H catalogs U)"
[ -z "$(file_digests src/u1 | comm -23 - <(file_digests src/u2 src/u3) | comm -12 - <(lib_blobs U))" ] ||
  fail "u1's objects survived gc --unused 30d"
check_restore U u2 src/u2 t/u2 "after --unused 30d"
check_restore U u3 src/u3 t/u3 "after --unused 30d"
touch -d '1 minute ago' U/used/u2 U/used/u3
out=$(H_report gc U --unused 0s --grace 0 --dry-run 2>&1) || fail "gc --unused 0s --dry-run failed: $out"
grep -q "would drop catalog 'u2'" <<<"$out" || fail "gc --unused 0s --dry-run: $out"
[ "$(H catalogs U | wc -l)" -eq 2 ] || fail "gc --unused 0s --dry-run dropped a catalog"
out=$(H_report gc U --unused 0s --grace 0 2>&1) || fail "gc --unused 0s failed: $out"
[ -z "$(H catalogs U)" ] || fail "gc --unused 0s left catalogs: $(H catalogs U)"
[ "$(pack_count U)" -eq 0 ] || fail "gc --unused 0s --grace 0 left $(pack_count U) packs"
verify_lib U "after --unused 0s"

# ---------------------------------------------------------------------------
echo "== --grace"
H init G >/dev/null
mk_tree src/g1 21 100
add_env G g1 src/g1
H catalogs rm G g1 >/dev/null
g_blobs=$(lib_blobs G)
out=$(H_report gc G 2>&1) || fail "gc (default grace) failed: $out"
grep -q '^young ' <<<"$out" || fail "gc with the default grace did not call the fresh pack young: $out"
[ "$(lib_blobs G)" = "$g_blobs" ] || fail "gc with the default grace dropped objects of a pack just added"
# The objects are still there: adding the same tree again stores nothing new.
out=$(H pack src/g1 --no-relocate --into G --name g1 --json 2>&1) || fail "re-adding g1: $out"
[ "$(pack_count G)" -eq 1 ] || fail "re-adding g1 after a default-grace gc wrote a pack: $out"
check_restore G g1 src/g1 t/g1 "after default-grace gc"
H catalogs rm G g1 >/dev/null
out=$(H_report gc G --grace 1h 2>&1) || fail "gc --grace 1h failed: $out"
[ "$(pack_count G)" -eq 1 ] || fail "gc --grace 1h removed a fresh pack"
out=$(H_report gc G --grace 0 2>&1) || fail "gc --grace 0 failed: $out"
[ "$(pack_count G)" -eq 0 ] || fail "gc --grace 0 kept the unreferenced pack: $out"
[ -z "$(find G/packs -name 'pack-*')" ] || fail "gc --grace 0 left pack files: $(ls G/packs)"
# A stale temp file of a dead writer goes once older than the grace period.
echo junk >G/tmp/.tmp-pack-deadwriter
touch -d '2 hours ago' G/tmp/.tmp-pack-deadwriter
echo junk >G/tmp/.tmp-pack-livewriter
H gc G >/dev/null 2>&1 || fail "gc with temp files failed"
[ -e G/tmp/.tmp-pack-deadwriter ] && fail "gc kept a temp file older than the grace period"
[ -e G/tmp/.tmp-pack-livewriter ] || fail "gc removed a fresh temp file"

# ---------------------------------------------------------------------------
echo "== 200 small packs roll up"
H init S >/dev/null
t0=$SECONDS
for i in $(seq 1 200); do
  tiny_tree "src/s$i" "env$i"
  add_env S "s$i" "src/s$i"
done
echo "  200 adds in $((SECONDS - t0)) s"
[ "$(pack_count S)" -eq 200 ] || fail "expected 200 packs, have $(pack_count S)"
check_restore S s17 src/s17 t/s17 "before the roll-up"
age_packs S
H gc S --json >s.json 2>s.err || fail "gc of 200 packs failed: $(cat s.err)"
err=$(json_valid s.json) || fail "gc --json: $err"
echo "  $(json_get s.json packs_before) packs -> $(json_get s.json packs_after)"
[ "$(json_get s.json packs_before)" -eq 200 ] || fail "packs_before: $(cat s.json)"
[ "$(pack_count S)" -le 3 ] || fail "gc left $(pack_count S) of 200 small packs (expected <= 3)"
[ "$(json_get s.json packs_after)" -eq "$(pack_count S)" ] || fail "packs_after $(json_get s.json packs_after) != $(pack_count S)"
[ "$(json_get s.json objects_dropped)" -eq 0 ] || fail "the roll-up dropped objects: $(cat s.json)"
for i in 1 2 57 100 143 199 200; do check_restore S "s$i" "src/s$i" "t/s$i" "after the roll-up"; done
verify_lib S "after the roll-up"
# And lookups keep working for environments added after the roll-up.
tiny_tree src/s201 env201
add_env S s201 src/s201
check_restore S s201 src/s201 t/s201 "added after the roll-up"
check_restore S s3 src/s3 t/s3 "after the roll-up and one more add"

# ---------------------------------------------------------------------------
echo "== blocks with dead members: a pack rewritten keeps no dead object, and the next gc has nothing to do"
mk_tree src/p 7 300
cp -a src/p src/q
change_every src/q 5 q
H init K >/dev/null || fail "init"
add_env K p src/p
add_env K q src/q
H catalogs rm K p >/dev/null
age_packs K
file_digests src/q >live.txt
dead_before=$(lib_blobs K | comm -23 - live.txt | wc -l)
H gc --grace 0 --min-garbage 1 K >/dev/null || fail "gc --min-garbage 1"
[ "$(lib_blobs K)" = "$(cat live.txt)" ] || fail "gc left dead objects in the packs it rewrote (or lost live ones): $(lib_blobs K | comm -3 - live.txt | sed -n 1,3p)"
age_packs K
H gc --grace 0 --min-garbage 1 --json K >again.json || fail "second gc"
rewrites=$(python3 -c 'import json,sys; print(sum(p["action"] == "rewrite" for p in json.load(open(sys.argv[1]))["packs"]))' again.json)
[ "$rewrites" = 0 ] || fail "a second gc rewrote $rewrites packs for garbage the first left: $(cat again.json)"
verify_lib K
check_restore K q src/q rq
echo "  $dead_before dead objects, most in blocks with live ones: none left; the second gc rewrote nothing"

# ---------------------------------------------------------------------------
echo "== lock: a second gc fails, naming the holder"
flock G/locks/gc.lock sleep 30 &
holder=$!
for _ in $(seq 100); do
  flock -n G/locks/gc.lock true 2>/dev/null || break
  sleep 0.05
done
flock -n G/locks/gc.lock true 2>/dev/null && fail "could not take the gc lock for the test"
for cmd in gc repair; do
  t0=$(date +%s%N)
  H $cmd G >out.txt 2>err.txt
  rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  [ "$rc" -ne 0 ] || fail "$cmd succeeded while another process holds the gc lock"
  grep -q "another gc or repair is running on 'G'" err.txt || fail "$cmd with the lock held: unclear message: $(cat err.txt)"
  grep -q "pid $holder\b" err.txt || fail "$cmd with the lock held does not name the holder (pid $holder): $(cat err.txt)"
  [ "$ms" -lt 5000 ] || fail "$cmd waited $ms ms for the lock instead of failing"
  echo "  $cmd: $(cat err.txt)"
done
kill $(pgrep -P "$holder") "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
H gc G >/dev/null 2>err.txt || fail "gc after the holder exited failed: $(cat err.txt)"

stop_watchdog
echo "test_gc: ok ($((SECONDS - t_start)) s)"
