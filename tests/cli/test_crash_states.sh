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
done_tests
