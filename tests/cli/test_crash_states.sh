#!/usr/bin/env bash
# Power loss during `pack --into`, `gc` and `repair`: every state a crash can
# leave (pessimistic model: un-fsync'd data lost, metadata kept in order up to
# the last directory sync or any later point) passes `hpak verify` or is fixed
# by `hpak repair`, and every name reported stored restores exactly.
# The operations are recorded by the crashlog shim; tests/faults/crash_states.py
# enumerates and checks the states (its header documents the model).
# ctest runs: bash test_crash_states.sh <hpak-binary> <source-root>.
prefer_shm=1
source "$(dirname "$0")/../faults/lib.sh" "$@"
crashlog=$build_dir/tests/crashlog.so
[ -f "$crashlog" ] || { echo "$test_name: skipped: $crashlog is not built"; exit 125; }

if python3 "$src_root/tests/faults/crash_states.py" "$hpak" "$crashlog" "$W/states"; then
  ok "no crash state of pack --into, gc or repair loses a name"
else
  fail "a crash state loses a name (see above)"
fi

# A pack already there (same name and size: an orphan left by an add killed
# before its own fsync, or run with HPAK_FSYNC=0) is fsync'd before an
# identical re-add relies on it: the crash model above takes the library
# before the command as durable, so this is checked on the recorded
# operations. (An index already there is fsync'd the same way; that needs
# another writer publishing it between the re-add's link and its index.)
make_tree "$W/src" a
L=$W/relib
"$hpak" -q init "$L" && "$hpak" -q pack "$W/src" --into "$L" --name env && "$hpak" -q catalogs rm "$L" env >/dev/null &&
  rm -f "$L"/packs/pack-*.hidx "$L"/packs/multi.midx || fail "setting up a library with an orphan pack"
: >"$W/ops.log"
mkdir -p "$W/blobs"
env LD_PRELOAD="$crashlog" CRASHLOG_LOG="$W/ops.log" CRASHLOG_BLOBS="$W/blobs" CRASHLOG_ROOT="$L" \
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$hpak" -q pack "$W/src" --into "$L" --name env ||
  fail "the re-add"
check "the re-add fsyncs the orphan pack it found before relying on it" \
  grep -qE "^fsync	$L/packs/pack-[0-9a-f]{64}\.hpak	" "$W/ops.log"
check "and restores" "$hpak" -q restore "$L" env "$W/t"
done_tests
