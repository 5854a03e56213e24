#!/usr/bin/env bash
# hpak gc's mark on one worker and on several gives the same gc: on copies of
# one library of eight catalogs (cp -a), one of them removed and one whose
# first copy in its pack is damaged (gc reads its mirror copy), `gc --json
# -j 1` and `gc --json -j 2` (and -j 3) report the same figures but the
# timings, and leave the same packs holding the same objects: with the
# default policy (the small packs rolled up, c2's objects dropped: the mark
# runs again under the publish lock), with --full, and again on the result
# (nothing to do). A catalog whose every
# copy is damaged stops gc with the same message on any number of workers,
# and nothing in the library changes.
# ctest runs: bash test_gc_threads.sh <hpak-binary> <source-root>.
hpak=${1:?usage: test_gc_threads.sh HPAK_BINARY SOURCE_ROOT}
root=${2:?usage: test_gc_threads.sh HPAK_BINARY SOURCE_ROOT}
hpak=$(cd "$(dirname "$hpak")" && pwd)/$(basename "$hpak")
source "$root/tests/cli/gc_helpers.sh"
command -v python3 >/dev/null || { echo "test_gc_threads: skipped: python3 is not installed"; exit 125; }
watchdog 600
cd "$work" || exit 1
export HPAK_FSYNC=0 # throwaway libraries

records() { H index "$1" --show --no-write; }
# Offsets of the copies of catalog object DIGEST in PACK ("offset stored_len" lines, pack order).
catalog_copies() { records "$1" | awk -v d="$2" '$1 == d && $2 == "catalog" { print $4, $5 }' | sort -n; }
# The catalog object a name holds (its file under catalogs/ names it by digest).
catalog_digest() { H catalogs "$1" --json | python3 -c 'import json, sys; print({c["name"]: c["digest"] for c in map(json.loads, sys.stdin)}[sys.argv[1]])' "$2"; }
# Distinct objects the visible packs hold, one digest a line.
held_objects() {
  local p
  for p in "$1"/packs/pack-*.hpak; do
    [ -e "${p%.hpak}.hidx" ] || continue
    records "$p" | awk '{ print $1 }'
  done | LC_ALL=C sort -u
}
# same_json A.json B.json: every field equal but the timings (bench/gc_same_figures.py, which bench/scale.sh uses too).
same_json() {
  local out
  out=$(python3 "$root/bench/gc_same_figures.py" "$1" "$2") || { echo "$out" >&2; return 1; }
}
# damage_copy PACK OFFSET STORED_LEN: flips a byte in the middle of that entry's stored bytes.
damage_copy() { flip "$1" $(($2 + 72 + $3 / 2)); }

H init L >/dev/null
mk_tree src/base 61 120
for i in 1 2 3 4 5 6 7 8; do
  rm -rf "src/c$i" && cp -a src/base "src/c$i" && mutate "src/c$i" "$((70 + i))" 25
  add_env L "c$i" "src/c$i"
done
H catalogs rm L c2 >/dev/null
d5=$(catalog_digest L c5)
[ -n "$d5" ] || fail "no digest for c5"
p5=
for p in L/packs/pack-*.hpak; do [ -n "$(catalog_copies "$p" "$d5")" ] && p5=$p; done
[ -n "$p5" ] || fail "no pack holds c5's catalog"
[ "$(catalog_copies "$p5" "$d5" | wc -l)" -eq 2 ] || fail "c5's catalog is not stored twice in $p5: $(catalog_copies "$p5" "$d5")"
read -r off len < <(catalog_copies "$p5" "$d5" | sed -n 1p)
damage_copy "$p5" "$off" "$len"
age_packs L
H catalogs L --names >names.txt 2>err.txt || fail "catalogs --names with a damaged copy: $(cat err.txt)"

# check_case NAME LIB [GC OPTIONS...]: gc of copies of LIB on 1, 2 and 3 workers.
check_case() {
  local name=$1 lib=$2 j
  shift 2
  echo "== $name"
  for j in 1 2 3; do
    rm -rf "$name.j$j" && cp -a "$lib" "$name.j$j" || fail "$name: copying the library"
    H gc --json --grace 0 -j "$j" "$@" "$name.j$j" >"$name.j$j.json" 2>"$name.j$j.err" || fail "$name: gc -j $j failed: $(cat "$name.j$j.err")"
    held_objects "$name.j$j" >"$name.j$j.held"
    (cd "$name.j$j/packs" && ls) >"$name.j$j.packs"
  done
  for j in 2 3; do
    same_json "$name.j1.json" "$name.j$j.json" 2>diff.txt || fail "$name: gc -j 1 and -j $j report different figures: $(cat diff.txt)"
    cmp -s "$name.j1.held" "$name.j$j.held" || fail "$name: gc -j 1 and -j $j leave different objects: $(diff "$name.j1.held" "$name.j$j.held" | sed -n 1,5p)"
    cmp -s "$name.j1.packs" "$name.j$j.packs" || fail "$name: gc -j 1 and -j $j leave different packs: $(diff "$name.j1.packs" "$name.j$j.packs")"
  done
  # The damaged catalog's objects are kept: c5 restores.
  rm -rf "t.$name" && H restore "$name.j2" c5 "t.$name" >/dev/null 2>err.txt || fail "$name: restore of c5 after gc -j 2: $(cat err.txt)"
  diff -r --no-dereference -x .hpak-state "src/c5" "t.$name" >/dev/null || fail "$name: c5 differs from its source after gc -j 2"
}
check_case default L
[ "$(json_get default.j2.json objects_dropped)" -gt 0 ] || fail "default: c2's objects were not dropped: $(cat default.j2.json)"
check_case full L --full
check_case nothing-to-do default.j1
[ "$(json_get nothing-to-do.j2.json copied_objects)" -eq 0 ] || fail "nothing-to-do: gc copied objects: $(cat nothing-to-do.j2.json)"

echo "== every copy of a catalog damaged"
read -r off len < <(catalog_copies "$p5" "$d5" | sed -n 2p)
damage_copy "$p5" "$off" "$len"
for j in 1 2 3; do
  rm -rf "bad.j$j" && cp -a L "bad.j$j" || fail "copying the library"
  before=$(lib_listing "bad.j$j")
  H gc --grace 0 --min-garbage 0 -j "$j" "bad.j$j" >/dev/null 2>"bad.j$j.err"
  rc=$?
  [ "$rc" -ne 0 ] || fail "gc -j $j of a library whose catalog c5 is unreadable succeeded"
  grep -q "catalog 'c5' is unreadable" "bad.j$j.err" || fail "gc -j $j does not name the unreadable catalog: $(cat "bad.j$j.err")"
  grep -q "nothing deleted" "bad.j$j.err" || fail "gc -j $j does not say nothing was deleted: $(cat "bad.j$j.err")"
  [ "$before" = "$(lib_listing "bad.j$j")" ] || fail "gc -j $j changed a library it could not mark"
  sed "s/bad\.j$j/bad.jN/g" "bad.j$j.err" >"bad.j$j.msg"
done
cmp -s bad.j1.msg bad.j2.msg && cmp -s bad.j1.msg bad.j3.msg || fail "gc's message differs with the worker count: $(cat bad.j1.msg bad.j2.msg)"
echo "test_gc_threads: ok"
