#!/usr/bin/env bash
# A library on a file system without working locks (issue 11, item 3):
# flock(2) fails with ENOLCK, EOPNOTSUPP or ENOSYS (some FUSE and network
# file systems). (NFS mounted with nolock does not fail: its locks succeed
# but are local to the host; hpak detects and refuses that case, tested in
# tests/unit/test_core_store_lock_scope.cpp, since it needs an NFS mount.)
# Adds, gc and repair rely on
# locks/publish.lock and locks/gc.lock to run safely beside each other, so
# they must refuse at once with one line saying why -- an add before it
# writes anything, never after publishing a pack it then cannot name -- and
# restores, which need no lock, must keep working. The faultfs shim makes
# flock fail (tests/faults/faultfs.c, FAULT_CALL=flock).
# ctest runs: bash test_no_locks.sh <hpak-binary> <source-root>.
source "$(dirname "$0")/../faults/lib.sh" "$@"
[ -f "$faultfs" ] || { echo "$test_name: skipped: $faultfs is not built"; exit 125; }

# nolock ERRNO CMD...: hpak with every flock on a file of the library failing
# with ERRNO (the library's file system has no locks; targets are local and do).
nolock() {
  local e=$1
  shift
  env LD_PRELOAD="$faultfs" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    FAULT_CALL=flock FAULT_PATH_SUBSTR="$L/" FAULT_NTH=1 FAULT_PERSIST=1 FAULT_ERRNO="$e" "$hpak" "$@"
}
# one_line_about FILE PATTERN: stderr is one 'hpak: error:' line matching PATTERN.
one_line_about() {
  [ "$(wc -l <"$1")" -eq 1 ] && grep -q '^hpak: error: ' "$1" && grep -qE -- "$2" "$1"
}
lib_files() { (cd "$1" && find packs catalogs used tmp -mindepth 1 | LC_ALL=C sort); }

make_tree "$W/src" a
make_tree "$W/src2" b
L=$W/lib
"$hpak" -q init "$L" || { fail "init"; done_tests; }
"$hpak" -q pack "$W/src" --no-relocate --into "$L" --name env || { fail "first add"; done_tests; }

for e in ENOLCK EOPNOTSUPP ENOSYS; do
  echo "== flock fails with $e"
  before=$(lib_files "$L")
  rc=0
  nolock "$e" -q pack "$W/src2" --into "$L" --name new >"$W/add.out" 2>"$W/add.err" || rc=$?
  check "pack --into is refused ($e): exit $rc" [ "$rc" -ne 0 ]
  check "pack --into: one line naming flock and the lock file ($e): $(head -c 300 "$W/add.err")" \
    one_line_about "$W/add.err" "unable to lock '.*locks/publish.lock'.*flock"
  check "pack --into wrote nothing to the library ($e)" [ "$(lib_files "$L")" = "$before" ]
  check "no name 'new' ($e)" [ ! -e "$L/catalogs/new" ]
  check "no crash ($e)" no_crash_output "$W/add.err"

  rc=0
  nolock "$e" -q gc "$L" --grace 0 >"$W/gc.out" 2>"$W/gc.err" || rc=$?
  check "gc is refused ($e): exit $rc" [ "$rc" -ne 0 ]
  check "gc: one line naming flock, not 'another gc is running' ($e): $(head -c 300 "$W/gc.err")" \
    one_line_about "$W/gc.err" "unable to lock '.*locks/gc.lock'.*flock"
  check "gc deleted nothing ($e)" [ "$(lib_files "$L")" = "$before" ]

  rc=0
  nolock "$e" -q repair "$L" >"$W/repair.out" 2>"$W/repair.err" || rc=$?
  check "repair is refused ($e): exit $rc" [ "$rc" -ne 0 ]
  check "repair: one line naming flock ($e)" one_line_about "$W/repair.err" "locks/gc.lock'.*flock"

  rm_tree "$W/t"
  rc=0
  nolock "$e" -q restore "$L" env "$W/t" >"$W/restore.out" 2>"$W/restore.err" || rc=$?
  check "restore needs no lock ($e): exit $rc $(head -c 300 "$W/restore.err")" [ "$rc" -eq 0 ]
  check "restored tree equals its source ($e)" same_tree "$W/src" "$W/t"
done

echo "== with working locks the same add succeeds"
check "pack --into" "$hpak" -q pack "$W/src2" --into "$L" --name new
done_tests
