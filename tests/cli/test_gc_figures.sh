#!/usr/bin/env bash
# hpak gc's figures are the real run's: on two copies of one library (cp -a),
# `gc --dry-run --json` and `gc --json` report the same value for every field
# but the timings and dry_run, and the same text summary, in each of these
# cases: a roll-up of small packs, garbage over the threshold, a dead pack,
# --min-garbage 0, --full, --unused, --upgrade of format-1 packs, nothing to
# do. The counts are of distinct objects: copied_objects <= objects_kept <=
# the objects the library held, kept + dropped = held, and after the run kept
# = the objects the packs hold, bytes_after = their size. -q prints nothing.
# ctest runs: bash test_gc_figures.sh <hpak-binary> <source-root>.
hpak=${1:?usage: test_gc_figures.sh HPAK_BINARY SOURCE_ROOT}
root=${2:?usage: test_gc_figures.sh HPAK_BINARY SOURCE_ROOT}
hpak=$(cd "$(dirname "$hpak")" && pwd)/$(basename "$hpak")
source "$root/tests/cli/gc_helpers.sh"
command -v python3 >/dev/null || { echo "test_gc_figures: skipped: python3 is not installed"; exit 125; }
watchdog 900
cd "$work" || exit 1
export HPAK_FSYNC=0 # throwaway libraries

# Distinct objects (any kind) the visible packs of a library hold.
lib_objects() {
  local p
  for p in "$1"/packs/pack-*.hpak; do
    [ -e "${p%.hpak}.hidx" ] || continue
    H index "$p" --show --no-write | awk '{ print $1 }'
  done | LC_ALL=C sort -u | wc -l
}
packs_bytes() { find "$1/packs" -maxdepth 1 \( -name 'pack-*.hpak' -o -name 'pack-*.hidx' \) -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

# same_figures DRY.json REAL.json: every field equal but the timings (a young
# pack's age among them) and dry_run.
same_figures() {
  python3 - "$1" "$2" <<'EOF'
import json, re, sys
dry, real = (json.load(open(p)) for p in sys.argv[1:3])
for doc in (dry, real):  # a young pack's age is a timing too
    for p in doc.get("packs", []):
        p["why"] = re.sub(r"\(\d+ s old\)", "(N s old)", p["why"])
if dry.get("dry_run") is not True or real.get("dry_run") is not False:
    sys.exit(f"dry_run fields: {dry.get('dry_run')!r} / {real.get('dry_run')!r}")
bad = []
for key in sorted(set(dry) | set(real)):
    if key in ("dry_run", "seconds", "copy_seconds"):
        continue
    if dry.get(key) != real.get(key):
        bad.append(f"{key}: dry run {dry.get(key)!r}, real run {real.get(key)!r}")
if bad:
    sys.exit("\n".join(bad))
EOF
}

# check_case NAME LIB [GC OPTIONS...]: copies LIB twice, runs the dry run
# (text and --json) on one copy and the real run (text and --json) on the
# other two, and compares.
check_case() {
  local name=$1 lib=$2 held before_bytes err
  shift 2
  echo "== $name"
  rm -rf "$name.dry" "$name.real" "$name.text"
  cp -a "$lib" "$name.dry" && cp -a "$lib" "$name.real" && cp -a "$lib" "$name.text" || fail "$name: copying the library"
  held=$(lib_objects "$lib")
  before_bytes=$(packs_bytes "$lib")
  "$hpak" gc "$name.dry" --dry-run --json "$@" >"$name.dry.json" 2>"$name.dry.err" || fail "$name: gc --dry-run --json failed: $(cat "$name.dry.err")"
  "$hpak" gc "$name.dry" --dry-run "$@" >"$name.dry.txt" 2>&1 || fail "$name: gc --dry-run failed: $(cat "$name.dry.txt")"
  "$hpak" gc "$name.real" --json "$@" >"$name.real.json" 2>"$name.real.err" || fail "$name: gc --json failed: $(cat "$name.real.err")"
  "$hpak" gc "$name.text" "$@" >"$name.real.txt" 2>&1 || fail "$name: gc failed: $(cat "$name.real.txt")"
  err=$(same_figures "$name.dry.json" "$name.real.json") || fail "$name: the dry run's figures are not the real run's:
$err"
  # The text summaries say the same but for the first word and the time.
  local d
  local untimed='s/\([0-9]+ s old\)/(N s old)/; s/^(dry run|gc): (.*), [0-9.]+ s$/\2/'
  d=$(diff <(sed -E "s/^would drop /dropped /; $untimed" "$name.dry.txt") <(sed -E "$untimed" "$name.real.txt"))
  [ -z "$d" ] || fail "$name: the dry run's text differs from the real run's:
$d"
  grep -E '^(dry run): ' "$name.dry.txt" | sed 's/^/  /'
  local kept dropped copied
  kept=$(json_get "$name.real.json" objects_kept)
  dropped=$(json_get "$name.real.json" objects_dropped)
  copied=$(json_get "$name.real.json" copied_objects)
  [ "$copied" -le "$kept" ] || fail "$name: copied_objects $copied > objects_kept $kept"
  [ "$kept" -le "$held" ] || fail "$name: objects_kept $kept > the $held objects the library held"
  [ $((kept + dropped)) -eq "$held" ] || fail "$name: objects_kept $kept + objects_dropped $dropped != the $held objects held"
  [ "$kept" -eq "$(lib_objects "$name.real")" ] || fail "$name: objects_kept $kept, but the packs hold $(lib_objects "$name.real")"
  [ "$(json_get "$name.real.json" bytes_before)" -eq "$before_bytes" ] || fail "$name: bytes_before != the packs' size $before_bytes"
  [ "$(json_get "$name.real.json" bytes_after)" -eq "$(packs_bytes "$name.real")" ] ||
    fail "$name: bytes_after $(json_get "$name.real.json" bytes_after) != the packs' size $(packs_bytes "$name.real")"
  [ "$(json_get "$name.real.json" packs_after)" -eq "$(pack_count "$name.real")" ] || fail "$name: packs_after != $(pack_count "$name.real")"
  [ "$(lib_objects "$name.dry")" -eq "$held" ] || fail "$name: the dry run changed the library"
  rm -rf "$name.dry" "$name.real" "$name.text"
}

H init L >/dev/null || fail "init"
for i in $(seq 1 8); do
  mk_tree "src/e$i" "$((200 + i))" 150
  add_env L "e$i" "src/e$i"
done
# e9 shares most of e1: changed copies of some of its files, in a pack of its own.
cp -a src/e1 src/e9 && mutate src/e9 9 30
add_env L e9 src/e9
for i in $(seq 1 12); do
  tiny_tree "src/t$i" "tiny$i"
  add_env L "t$i" "src/t$i"
done
age_packs L
check_case rollup L --grace 0

H gc L >/dev/null 2>&1 || fail "gc (roll-up)"
# Beside the large pack: e10 and a changed copy of it (e11), a tiny pack, and
# a young one (added now: younger than the grace period).
mk_tree src/e10 210 150
add_env L e10 src/e10
cp -a src/e10 src/e11 && mutate src/e11 11 30
add_env L e11 src/e11
tiny_tree src/t13 tiny13
add_env L t13 src/t13
age_packs L
tiny_tree src/t14 tiny14
add_env L t14 src/t14
# e1: a little garbage in the large pack; e10: 30% of its pack; t13: all of its pack.
H catalogs rm L e1 e10 t13 t3 t4 >/dev/null
check_case mixed L
check_case min0 L --min-garbage 0
check_case full L --full
H catalogs rm L e2 e3 e4 >/dev/null
check_case over-threshold L
touch -d '40 days ago' L/used/e5 L/used/t5
check_case unused L --unused 30d
H gc L --full >/dev/null 2>&1 || fail "gc --full"
age_packs L
check_case nothing L

H init V >/dev/null
ADD_ENV_ARGS="--pack-version 1"
for i in 1 2 3; do add_env V "v$i" "src/e$((i + 5))"; done
ADD_ENV_ARGS=
add_env V v4 src/e9
age_packs V
check_case upgrade V --upgrade --min-garbage 100

echo "== -q prints nothing on success"
cp -a L Q
H catalogs rm Q e5 e6 >/dev/null
age_packs Q
for args in "-n" "--min-garbage 0" ""; do
  # shellcheck disable=SC2086 # the options, word-split on purpose
  "$hpak" gc Q $args >loud.txt 2>&1 || fail "gc $args failed: $(cat loud.txt)"
  grep -q '^\(dry run\|gc\): ' loud.txt || fail "without -q, gc $args prints no summary: $(cat loud.txt)"
  cp -a L Q2 && H catalogs rm Q2 e5 e6 >/dev/null && age_packs Q2
  # shellcheck disable=SC2086 # the options, word-split on purpose
  "$hpak" -q gc Q2 $args >quiet.out 2>quiet.err || fail "gc -q $args failed: $(cat quiet.err)"
  [ ! -s quiet.out ] || fail "gc -q $args printed on stdout: $(cat quiet.out)"
  [ ! -s quiet.err ] || fail "gc -q $args printed on stderr: $(cat quiet.err)"
  rm -rf Q2
done
"$hpak" -q gc Q --json >quiet.json 2>quiet.err || fail "gc -q --json failed: $(cat quiet.err)"
json_valid quiet.json >/dev/null || fail "gc -q --json does not print its JSON: $(cat quiet.json)"
"$hpak" -q gc Q --full --min-garbage 1 >quiet.out 2>quiet.err && fail "gc -q with a usage error succeeded"
[ "$(wc -l <quiet.err)" -eq 1 ] || fail "gc -q with a usage error: not one line on stderr: $(cat quiet.err)"

stop_watchdog
echo "test_gc_figures: ok"
