#!/usr/bin/env bash
# gc torture: for a fixed time, in parallel, 2 writers add environments that
# share most files (copies of one base tree, a random part changed) under new
# names and sometimes remove old names, 2 restorers restore random catalogs
# into their own targets and diff them against their sources, and gc runs in a
# loop with --grace 0 (no pack is protected by its age: only the writers'
# post-publish re-check and gc's re-check keep the objects a new name needs).
# Then every remaining catalog restores byte for byte and `hpak verify` passes.
#
# Allowed, because a name may vanish under a restore: a restore of a name that
# was removed (before or while it ran) fails. Anything else is a failure: a
# writer or gc error, a failed restore of a name that still exists, a restore
# that succeeds with a tree differing from its source.
# HPAK_TORTURE_SECONDS sets the run time (default 25).
# ctest runs: bash test_gc_torture.sh <hpak-binary> <source-root>.
hpak=${1:?usage: test_gc_torture.sh HPAK_BINARY SOURCE_ROOT}
root=${2:?usage: test_gc_torture.sh HPAK_BINARY SOURCE_ROOT}
hpak=$(cd "$(dirname "$hpak")" && pwd)/$(basename "$hpak")
source "$root/tests/cli/gc_helpers.sh"
duration=${HPAK_TORTURE_SECONDS:-25}
watchdog $((duration * 4 + 300))
t_start=$SECONDS
cd "$work" || exit 1
mkdir -p logs t src
: >logs/removed

mk_tree base 77 150
H init L >/dev/null || fail "init"
# A few names from the start, so the restorers have work at once.
for i in 0 1 2; do
  cp -a base "src/w0-$i"
  mutate "src/w0-$i" "$((900 + i))" 20
  add_env L "w0-$i" "src/w0-$i"
done

now() { echo $((SECONDS - t_start)); }
failure() { # WHO MESSAGE
  printf '[t=%ss] %s: %s\n' "$(now)" "$1" "$2" >>logs/failures
}
names() { find L/catalogs -maxdepth 1 -type f ! -name '.*' -printf '%f\n'; }

end=$((SECONDS + duration))

# Each writer adds, under a new name, one of: the base tree with a random part
# changed; a removed environment with a few files changed, or unchanged (its
# objects are garbage that gc may be collecting right now); and sometimes
# re-adds a removed name of its own from the same tree (the same catalog: the
# pack it writes is identical to the one gc may be deleting).
writer() { # ID
  local id=$1 j=0 name out victim from mode
  RANDOM=$id
  while [ "$SECONDS" -lt "$end" ]; do
    j=$((j + 1))
    name=w$id-$j
    from=$(shuf -n 1 logs/removed 2>/dev/null)
    mode=$((RANDOM % 10))
    [ -n "$from" ] || mode=0
    if [ "$mode" -eq 9 ] && [[ $from == w$id-* ]] && [ ! -e "L/catalogs/$from" ]; then
      name=$from # same name, same tree
    elif [ "$mode" -ge 8 ]; then
      cp -a "src/$from" "src/$name.tmp" && mv "src/$name.tmp" "src/$name"
    elif [ "$mode" -ge 5 ]; then
      cp -a "src/$from" "src/$name.tmp" && mutate "src/$name.tmp" "$((id * 10000 + j))" 5 && mv "src/$name.tmp" "src/$name"
    else
      cp -a base "src/$name.tmp" && mutate "src/$name.tmp" "$((id * 10000 + j))" $((5 + RANDOM % 30)) && mv "src/$name.tmp" "src/$name"
    fi
    if out=$(H pack "src/$name" --no-relocate --into L --name "$name" --json 2>&1); then
      echo "add $name (mode $mode${from:+, from $from}) ok: $out" >>"logs/writer$id"
    else
      failure "writer $id" "adding '$name' (mode $mode${from:+, from $from}) failed: $out"
    fi
    if [ $((RANDOM % 3)) -ne 0 ]; then
      victim=$(names | grep "^w$id-" | grep -vx "$name" | shuf -n 1)
      if [ -n "$victim" ]; then
        echo "$victim" >>logs/removed # first: a restore that fails from now on may blame it
        out=$(H catalogs rm L "$victim" 2>&1) || failure "writer $id" "catalogs rm '$victim' failed: $out"
        echo "rm $victim" >>"logs/writer$id"
      fi
    fi
  done
}

restorer() { # ID
  local id=$1 n=0 name out d target=t/r$1 mark
  RANDOM=$((id + 100))
  while [ "$SECONDS" -lt "$end" ]; do
    mark=$(cat logs/removed 2>/dev/null | wc -l)
    name=$(names | shuf -n 1)
    [ -n "$name" ] || continue
    n=$((n + 1))
    # Fresh and dirty restores (a dirty one turns the previous tree into this one).
    [ $((n % 2)) -eq 0 ] && rm -rf "$target"
    if out=$(H restore L "$name" "$target" 2>&1); then
      d=$(tree_diff "src/$name" "$target")
      if [ -n "$d" ]; then
        failure "restorer $id" "restore $n of '$name' exited 0 but differs from src/$name:
$d"
      else
        echo "restore $n $name ok" >>"logs/restorer$id"
      fi
    elif grep -qF "no catalog named '$name'" <<<"$out" ||
      grep -qx "$name" <<<"$(tail -n +"$((mark > 1 ? mark - 1 : 1))" logs/removed)"; then
      # Removed after we listed it (maybe re-added since): allowed. A writer
      # logs a name just before removing it, and has at most one such line not
      # yet removed: a name we listed has its line among the last two before
      # our count, or after it.
      echo "restore $n $name failed, allowed (name removed meanwhile): $out" >>"logs/restorer$id"
      echo "$out" | sed -n 1p >>"logs/allowed$id"
    else
      failure "restorer $id" "restore $n of '$name' (not removed meanwhile) failed: $out"
      rm -rf "$target"
    fi
  done
}

gc_loop() {
  local n=0 out
  while [ "$SECONDS" -lt "$end" ]; do
    n=$((n + 1))
    if out=$(H gc L --grace 0 2>&1); then
      echo "gc $n ok: $(tail -1 <<<"$out")" >>logs/gc
      grep -q "warning" <<<"$out" && echo "gc $n warnings: $(grep warning <<<"$out")" >>logs/gc
    else
      failure "gc" "gc $n failed: $out"
    fi
  done
}

echo "== $duration s: 2 writers, 2 restorers, gc --grace 0 in a loop"
writer 1 &
p1=$!
writer 2 &
p2=$!
restorer 1 &
p3=$!
restorer 2 &
p4=$!
gc_loop &
p5=$!
wait $p1 $p2 $p3 $p4 $p5

adds=$(cat logs/writer* 2>/dev/null | grep -c '^add .* ok')
rms=$(cat logs/writer* 2>/dev/null | grep -c '^rm ')
restores=$(cat logs/restorer* 2>/dev/null | grep -c ' ok$')
allowed=$(cat logs/allowed* 2>/dev/null | wc -l)
allowed_why=$(cat logs/allowed* 2>/dev/null | sed 's/[0-9a-f]\{64\}/<digest>/g; s/'"'"'[^'"'"']*'"'"'/<x>/g' | sort | uniq -c | sort -rn | sed -n 1,5p)
gcs=$(grep -c '^gc .* ok' logs/gc 2>/dev/null)
kept=$(grep -c 'kept: a catalog published during gc' logs/gc 2>/dev/null)
repairs=$(cat logs/writer* 2>/dev/null | grep -o '"repairs":[1-9][0-9]*' | wc -l)
echo "  $adds adds, $rms removals, $restores restores checked ($allowed of removed names failed, allowed), $gcs gcs"
[ -n "$allowed_why" ] && echo "$allowed_why" | sed 's/^/    allowed: /'
echo "  gc kept a condemned pack for a name published meanwhile $kept times; writers re-added vanished objects $repairs times"
if [ -s logs/failures ]; then
  echo "FAIL: $(grep -c '^\[t=' logs/failures) failures during the run:" >&2
  head -c 20000 logs/failures >&2
  exit 1
fi
[ "$adds" -gt 0 ] && [ "$restores" -gt 0 ] && [ "$gcs" -gt 0 ] || fail "the run did too little to mean anything"

echo "== afterwards: every catalog restores byte for byte, verify passes"
check_every() { # WHAT
  local n
  for n in $(names); do check_restore L "$n" "src/$n" "t/final-$n" "$1"; done
  verify_lib L "$1"
}
check_every "after the run"
no_condemned L "after the run"
H gc L --grace 0 >/dev/null 2>&1 || fail "a last gc failed"
no_condemned L "after a last gc"
check_every "after a last gc"
stop_watchdog
echo "test_gc_torture: ok ($(names | wc -l) catalogs, $(pack_count L) packs; $((SECONDS - t_start)) s)"
