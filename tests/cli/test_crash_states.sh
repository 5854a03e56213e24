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
  rm -f "$L"/packs/pack-*.hidx "$L"/packs/*.midx || fail "setting up a library with an orphan pack"
: >"$W/ops.log"
mkdir -p "$W/blobs"
env LD_PRELOAD="$crashlog" CRASHLOG_LOG="$W/ops.log" CRASHLOG_BLOBS="$W/blobs" CRASHLOG_ROOT="$L" \
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$hpak" -q pack "$W/src" --into "$L" --name env ||
  fail "the re-add"
check "the re-add fsyncs the orphan pack it found before relying on it" \
  grep -qE "^fsync	$L/packs/pack-[0-9a-f]{64}\.hpak	" "$W/ops.log"
check "and restores" "$hpak" -q restore "$L" env "$W/t"

# A removed name must not come back after a power loss without its objects
# (issue 28, item 6): `catalogs rm` syncs catalogs/ after the unlink, before it
# reports the removal; gc syncs catalogs/ after it read the names and before
# it condemns (renames to .condemned) what they no longer need, so that a
# removal another process has not synced yet is durable first.
L=$W/rmlib
make_tree "$W/src2" b
"$hpak" -q pack "$W/src" --into "$L" --name keep >/dev/null && "$hpak" -q pack "$W/src2" --into "$L" --name gone >/dev/null ||
  fail "setting up a library with two names"
record() { # record LOG CMD...: CMD's operations under $L into LOG
  : >"$1"
  local log=$1
  shift
  env LD_PRELOAD="$crashlog" CRASHLOG_LOG="$log" CRASHLOG_BLOBS="$W/blobs" CRASHLOG_ROOT="$L" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$@"
}
record "$W/rm.log" "$hpak" -q catalogs rm "$L" gone >/dev/null || fail "catalogs rm"
check "catalogs rm: the unlink of the name, then an fsync of catalogs/" \
  python3 -c '
import sys
ops = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
at = [i for i, o in enumerate(ops) if o[0] == "unlink" and o[1] == sys.argv[2] + "/catalogs/gone"]
assert at, ops
assert any(o[:2] == ["dsync", sys.argv[2] + "/catalogs"] for o in ops[at[0]:]), ops' "$W/rm.log" "$L"
# An older hpak's removal, not synced: gc makes it durable before condemning.
record "$W/gc.log" "$hpak" -q gc "$L" --grace 0 >/dev/null || fail "gc"
check "gc: catalogs/ synced before the first pack is condemned" \
  python3 -c '
import sys
ops = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
cond = [i for i, o in enumerate(ops) if o[0] == "rename" and o[2].endswith(".condemned")]
assert cond, "nothing condemned: %r" % ops
assert any(o[:2] == ["dsync", sys.argv[2] + "/catalogs"] for o in ops[:cond[0]]), ops' "$W/gc.log" "$L"
check "keep restores after the gc" "$hpak" -q restore "$L" keep "$W/t-keep"
done_tests
