#!/usr/bin/env bash
# gc's sweep of orphan packs (a pack whose index was never published: a writer
# killed between link and index) against an identical re-add (packs are
# deterministic: same content, same name). The re-add finds the orphan there
# (link: EEXIST), publishes the index and sets the name; a gc that chose the
# orphan before must not delete it then. gc is stopped (HPAK_TEST_GC_STOP_AT=
# sweep: SIGSTOP after it chose the orphans, before it removes them) while the
# add runs, so the interleaving is exact, not timed. Issue 11, item 2.
# ctest runs: bash test_gc_sweep_race.sh <hpak-binary> <source-root>.
hpak=${1:?usage: test_gc_sweep_race.sh HPAK_BINARY SOURCE_ROOT}
root=${2:?usage: test_gc_sweep_race.sh HPAK_BINARY SOURCE_ROOT}
hpak=$(cd "$(dirname "$hpak")" && pwd)/$(basename "$hpak")
source "$root/tests/cli/gc_helpers.sh"
watchdog 300
cd "$work" || exit 1

# proc_state PID: R, S, T (stopped), Z... or "gone".
proc_state() { awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null || echo gone; }
# wait_stopped PID: until PID is stopped (it stops itself) or has exited.
wait_stopped() {
  local s
  while :; do
    s=$(proc_state "$1")
    case "$s" in T | t) return 0 ;; gone | Z) return 1 ;; esac
    sleep 0.05
  done
}

# orphan_library LIB SRC: LIB where SRC's pack is an orphan: no index, no
# name (what a writer killed between link and index leaves), older than
# any grace period.
orphan_library() {
  H init "$1" >/dev/null || fail "init $1"
  add_env "$1" e1 "$2"
  rm -f "$1"/packs/pack-*.hidx "$1"/packs/*.midx
  H catalogs rm "$1" e1 >/dev/null || fail "catalogs rm"
  touch -h -d '3 hours ago' "$1"/packs/pack-*.hpak
}

tiny_tree src/e1 one
mk_tree src/e1/more 7 120

echo "== an orphan pack alone is swept (no writer)"
orphan_library A src/e1
orphan=$(basename "$(ls A/packs/pack-*.hpak)")
out=$(H gc A 2>&1) || fail "gc of A: $out"
[ ! -e "A/packs/$orphan" ] || fail "the orphan pack '$orphan' was not swept"
no_condemned A "sweep"
echo "ok: the orphan pack was swept"

echo "== a catalog name ending in .hpak is not an orphan pack"
H init C >/dev/null || fail "init C"
add_env C env.hpak src/e1
touch -h -d '3 hours ago' C/catalogs/env.hpak C/used/env.hpak
age_packs C
out=$(H gc C 2>&1) || fail "gc of C: $out"
[ -e C/catalogs/env.hpak ] || fail "gc removed the catalog name 'env.hpak' as if it were an orphan pack"
check_restore C env.hpak src/e1 t/env "after gc"
echo "ok: the name 'env.hpak' survived gc"

echo "== an identical re-add while gc has chosen the orphan"
orphan_library B src/e1
orphan=$(basename "$(ls B/packs/pack-*.hpak)")
HPAK_TEST_GC_STOP_AT=sweep "$hpak" -q gc B >gc.out 2>&1 &
gc_pid=$!
wait_stopped "$gc_pid" || fail "gc did not stop at 'sweep': $(cat gc.out)"
# The re-add: same tree, so the same pack; it must not wait for the stopped
# gc (which holds no lock yet a writer needs).
out=$(H pack src/e1 --no-relocate --into B --name e1 2>&1) || fail "re-add: $out"
[ -e "B/packs/${orphan%.hpak}.hidx" ] || fail "the re-add did not publish the index of '$orphan' (not the same pack?)"
kill -CONT "$gc_pid"
wait "$gc_pid"
rc=$?
[ "$rc" -eq 0 ] || fail "gc exited $rc: $(cat gc.out)"
[ -e "B/packs/$orphan" ] || fail "gc deleted the pack '$orphan' the re-add published (its index is there, the pack is gone)"
check_restore B e1 src/e1 t/e1 "after gc raced the re-add"
no_condemned B "after the race"
verify_lib B "after the race"
echo "ok: the re-added pack survived gc's sweep and e1 restores"

echo "== the next gc keeps it too"
out=$(H gc B 2>&1) || fail "second gc: $out"
check_restore B e1 src/e1 t/e1b "after a second gc"
echo "ok"

echo "== the orphan's index appears after gc condemned it: gc puts the pack back"
# A re-add that linked before gc's condemn (EEXIST: the orphan was there) and
# publishes the index after it; gc, stopped right after condemning the orphan
# (HPAK_TEST_GC_STOP_AT=orphan-condemned, under its exclusive publish lock),
# must find the index when it looks again and rename the pack back, not
# delete it. The index is put in place by hand: the re-add's own link would
# come after the condemn and make a new file, hiding the branch.
orphan_library D src/e1
orphan=$(basename "$(ls D/packs/pack-*.hpak)")
H init D2 >/dev/null || fail "init D2"
add_env D2 e1 src/e1
[ -e "D2/packs/${orphan%.hpak}.hidx" ] || fail "D2 has no index for '$orphan' (not the same pack?)"
HPAK_TEST_GC_STOP_AT=orphan-condemned "$hpak" -q gc D >gc.out 2>&1 &
gc_pid=$!
wait_stopped "$gc_pid" || fail "gc did not stop at 'orphan-condemned': $(cat gc.out)"
[ -e "D/packs/$orphan.condemned" ] && [ ! -e "D/packs/$orphan" ] ||
  fail "gc stopped, but '$orphan' is not condemned: $(ls D/packs)"
cp "D2/packs/${orphan%.hpak}.hidx" D/packs/ || fail "publishing the index by hand"
kill -CONT "$gc_pid"
wait "$gc_pid"
rc=$?
[ "$rc" -eq 0 ] || fail "gc exited $rc: $(cat gc.out)"
[ -e "D/packs/$orphan" ] || fail "gc deleted the orphan pack '$orphan' although its index appeared after the condemn"
no_condemned D "after the uncondemn"
out=$(H pack src/e1 --no-relocate --into D --name e1 2>&1) || fail "re-add into D: $out"
check_restore D e1 src/e1 t/e1d "after gc put the pack back"
verify_lib D "after the uncondemn"
echo "ok: gc put the pack back"

echo "test_gc_sweep_race: all passed"
