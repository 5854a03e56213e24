#!/usr/bin/env bash
# Crash consistency (guarantee 4 of man/hpak-guarantees.7): real hpak
# processes are killed with SIGKILL at random moments of `pack --into` and of
# `restore` (fresh, dirty, switching environments), in a loop bounded by
# CRASH_SECONDS (default 25; with the fixtures, about 30 s in all). After every kill:
#   pack --into: `hpak verify LIB` passes (no half-written pack is visible,
#     no referenced object is lost), every named catalog restores to exactly
#     what was added under that name, and the same add, run again, completes;
#   restore: the target's state is incomplete or names a complete restore
#     that really is complete, and the next restore (of the same catalog, or
#     of another one) makes the target equal to a fresh restore.
# CRASH_SEED fixes the random delays (default: the PID; printed for replay).
#
# ctest runs: bash test_crash_restore.sh <hpak-binary> <source-root>.
prefer_shm=1
source "$(dirname "$0")/../faults/lib.sh" "$@"

budget=${CRASH_SECONDS:-25}
seed=${CRASH_SEED:-$$}
RANDOM=$seed
echo "$test_name: CRASH_SEED=$seed CRASH_SECONDS=$budget"

# ---- fixtures: four variants of an environment (CRASH_FILES, default 4000
# files each, so a run lasts long enough for kills to land all along it), a base
# library holding v0, a full library holding all four, and a fresh restore of
# each variant into the target path for reference.
TGT=$W/tgt
for v in 0 1 2 3; do make_tree "$W/src/v$v" "v$v" "${CRASH_FILES:-4000}"; done
"$hpak" -q pack "$W/src/v0" --into "$W/base-lib" --name v0 >/dev/null || fail "base library"
cp -a "$W/base-lib" "$W/full-lib"
for v in 1 2 3; do "$hpak" -q pack "$W/src/v$v" --into "$W/full-lib" --name "v$v" >/dev/null || fail "full library v$v"; done
for v in 0 1 2 3; do
  "$hpak" -q restore "$W/full-lib" "v$v" "$TGT" >/dev/null || fail "reference restore v$v"
  cp -a "$TGT" "$W/ref-v$v"
  rm_tree "$TGT"
done

# Durations of unkilled runs (ms), to spread the kills over the whole run.
ms_now() { date +%s%3N; }
t=$(ms_now)
cp -a "$W/base-lib" "$W/lib"
"$hpak" -q pack "$W/src/v1" --into "$W/lib" --name v1 >/dev/null
add_ms=$(($(ms_now) - t + 5))
t=$(ms_now)
"$hpak" -q restore "$W/full-lib" v1 "$TGT" >/dev/null
restore_ms=$(($(ms_now) - t + 5))
echo "$test_name: unkilled pack --into ${add_ms} ms, restore ${restore_ms} ms"

why=()
problem() { why+=("$*"); }

# run_killed DELAY_MS CMD...: starts CMD, SIGKILLs it after DELAY_MS; sets $rc.
run_killed() {
  local delay=$1 pid
  shift
  "$@" >/dev/null 2>"$W/err.txt" &
  pid=$!
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  kill -9 "$pid" 2>/dev/null
  { wait "$pid"; } 2>/dev/null # no "Killed" job notice
  rc=$?
}

# restores_to LIB NAME: restoring NAME into a scratch target gives what a
# restore of NAME from the full library gives there.
restores_to() {
  rm_tree "$W/chk"
  if ! "$hpak" -q restore "$1" "$2" "$W/chk" >"$W/r.out" 2>&1; then
    problem "restore $2 fails: $(head -n 2 "$W/r.out")"
  elif ! same_tree "$W/chk" "$W/chkref-$2" >"$W/r.out"; then
    problem "catalog $2 restores to something else: $(head -n 3 "$W/r.out")"
  fi
  rm_tree "$W/chk"
}
for v in 0 1 2 3; do
  "$hpak" -q restore "$W/full-lib" "v$v" "$W/chk" >/dev/null || fail "scratch reference v$v"
  cp -a "$W/chk" "$W/chkref-v$v"
  rm_tree "$W/chk"
done

adds=0 restores=0 killed=0 completed=0 iter=0
mid_restore=0 mid_add=0 # kills that left a restore incomplete / an add half done
start=$SECONDS
current="" # catalog the target holds after the last unkilled restore
while [ $((SECONDS - start)) -lt "$budget" ]; do
  iter=$((iter + 1))
  why=()
  if [ $((RANDOM % 2)) -eq 0 ]; then
    # ---- pack --into, killed
    adds=$((adds + 1))
    v=$((1 + RANDOM % 3))
    rm_tree "$W/lib"
    cp -a "$W/base-lib" "$W/lib"
    delay=$((RANDOM % (add_ms + add_ms / 4 + 1)))
    what="pack --into v$v killed after ${delay} ms"
    run_killed "$delay" "$hpak" -q pack "$W/src/v$v" --into "$W/lib" --name "v$v"
    if [ "$rc" -eq 137 ]; then killed=$((killed + 1)); elif [ "$rc" -eq 0 ]; then completed=$((completed + 1)); else problem "exit $rc: $(head -n 2 "$W/err.txt")"; fi
    if [ "$rc" -eq 137 ] && { [ -n "$(ls -A "$W/lib/tmp")" ] || [ "$(ls "$W/lib/packs" | wc -l)" -gt 2 ]; }; then
      mid_add=$((mid_add + 1))
    fi
    "$hpak" -q verify "$W/lib" >"$W/v.out" 2>&1 || problem "hpak verify LIB fails: $(grep -m 3 . "$W/v.out")"
    for p in "$W"/lib/packs/pack-*.hidx; do
      [ -e "$p" ] || continue
      [ -f "${p%.hidx}.hpak" ] || problem "index without its pack: $(basename "$p")"
    done
    restores_to "$W/lib" v0
    [ ! -f "$W/lib/catalogs/v$v" ] || restores_to "$W/lib" "v$v"
    # The add, run again unkilled, completes over whatever the kill left.
    if "$hpak" -q pack "$W/src/v$v" --into "$W/lib" --name "v$v" >"$W/r.out" 2>&1; then
      restores_to "$W/lib" "v$v"
    else
      problem "the add after the kill fails: $(head -n 2 "$W/r.out")"
    fi
  else
    # ---- restore (fresh or dirty, same or another catalog), killed
    restores=$((restores + 1))
    v=$((RANDOM % 4))
    if [ $((RANDOM % 4)) -eq 0 ]; then rm_tree "$TGT"; fi # sometimes fresh
    delay=$((RANDOM % (restore_ms + restore_ms / 4 + 1)))
    what="restore v$v (target held '${current:-nothing}') killed after ${delay} ms"
    run_killed "$delay" "$hpak" -q restore "$W/full-lib" "v$v" "$TGT"
    if [ "$rc" -eq 137 ]; then killed=$((killed + 1)); elif [ "$rc" -eq 0 ]; then completed=$((completed + 1)); else problem "exit $rc: $(head -n 2 "$W/err.txt")"; fi
    complete=$(state_field "$TGT" complete)
    if [ "$complete" = 1 ]; then
      # A complete state must tell the truth about the tree.
      name=$(state_field "$TGT" name)
      same_tree "$TGT" "$W/ref-$name" >"$W/r.out" || problem "state says complete '$name' but the tree differs: $(head -n 3 "$W/r.out")"
    elif [ "$complete" = 0 ]; then
      mid_restore=$((mid_restore + 1))
    elif [ "$complete" = bad ]; then
      problem "state file unreadable"
    fi
    # The next restore repairs: usually the same catalog, sometimes another.
    [ $((RANDOM % 3)) -eq 0 ] && v=$((RANDOM % 4))
    if "$hpak" -q restore "$W/full-lib" "v$v" "$TGT" >"$W/r.out" 2>&1; then
      same_tree "$TGT" "$W/ref-v$v" >"$W/r.out" || problem "the next restore of v$v does not repair the target: $(head -n 3 "$W/r.out")"
      [ "$(state_field "$TGT" complete)" = 1 ] || problem "the next restore leaves the state incomplete"
      current=v$v
    else
      problem "the next restore fails: $(head -n 2 "$W/r.out")"
    fi
  fi
  if [ ${#why[@]} -gt 0 ]; then
    fail "iteration $iter: $what:"
    printf '      %s\n' "${why[@]}"
  fi
done
ok "$iter iterations in $((SECONDS - start)) s: $adds adds, $restores restores; $killed killed, $completed finished first"

# kill_mid_restore: a fresh restore killed once it has written its state and
# some files, not at a random moment: on slow builds (ASan) few iterations
# fit the budget and every random kill may land before the work starts.
kill_mid_restore() {
  local pid
  for _ in 1 2 3 4 5; do
    rm_tree "$TGT"
    "$hpak" -q restore "$W/full-lib" v1 "$TGT" >/dev/null 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
      if [ -e "$TGT/.hpak-state" ] && [ "$(ls -A "$TGT" 2>/dev/null | wc -l)" -gt 2 ]; then
        kill -9 "$pid" 2>/dev/null
        break
      fi
      sleep 0.002
    done
    { wait "$pid"; } 2>/dev/null
    [ "$(state_field "$TGT" complete)" = 0 ] && return 0
  done
  return 1
}
if [ $((mid_add + mid_restore)) -eq 0 ]; then
  why=()
  if kill_mid_restore; then
    mid_restore=$((mid_restore + 1))
    if "$hpak" -q restore "$W/full-lib" v1 "$TGT" >"$W/r.out" 2>&1; then
      same_tree "$TGT" "$W/ref-v1" >"$W/r.out" || problem "the next restore does not repair the target: $(head -n 3 "$W/r.out")"
    else
      problem "the next restore fails: $(head -n 2 "$W/r.out")"
    fi
  fi
  [ ${#why[@]} -eq 0 ] || { fail "restore killed mid-way:"; printf '      %s\n' "${why[@]}"; }
fi
ok "kills that left an add half done (temp file or pack without its name): $mid_add; a restore incomplete: $mid_restore"
# Evidence the kills land mid-way, not only before or after the work (both
# kinds usually show up; one is enough not to flake on slow, e.g. ASan, builds).
check "kills landed in the middle of the work" test $((mid_add + mid_restore)) -gt 0
done_tests
