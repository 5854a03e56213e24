#!/usr/bin/env bash
# CI step (called by scripts/test.sh when present): the concurrent tests under
# ThreadSanitizer. Builds build-tsan (-DHPAK_TSAN=ON, Debug) and runs the CLI
# tests named in $tsan_tests (gc, its crash and torture tests, the restore
# tests: the ones that run hpak's threads against each other; the newer
# single-purpose suites run under ASan only, to keep TSan within its budget) with TSAN_OPTIONS=halt_on_error=1, so a data race
# reported in any hpak process fails its test. TSan makes hpak ~5-10x slower,
# so the time-bounded tests are tuned for it: a shorter gc torture, fewer gc
# kill rounds, and smaller trees over a longer loop for test_crash_restore so
# that enough kills land mid-work (each default below can be overridden from
# the environment); the whole
# ctest run is capped at HPAK_TSAN_BUDGET seconds (default 540, within the
# 10 min budget).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
budget=${HPAK_TSAN_BUDGET:-540}

echo "== build (TSan)"
# Only what its tests run (not the unit tests, not the other bench tools).
HPAK_BUILD_TARGETS="hpak hpak-gencorpus" bash scripts/build.sh build-tsan -DHPAK_TSAN=ON -DCMAKE_BUILD_TYPE=Debug
tsan_tests="^cli_test_(gc|gc_crash|gc_torture|restore|crash_restore)$"
echo "== concurrent tests under TSan ($tsan_tests, at most ${budget} s)"
t0=$SECONDS
# second_deadlock_stack: full reports for lock-order inversions too.
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
  HPAK_TORTURE_SECONDS=${HPAK_TORTURE_SECONDS:-15} HPAK_GC_CRASH_ROUNDS=${HPAK_GC_CRASH_ROUNDS:-5} \
  CRASH_SECONDS=${CRASH_SECONDS:-40} CRASH_FILES=${CRASH_FILES:-1500} \
  timeout -k 10 "$budget" ctest --test-dir build-tsan --output-on-failure -R "$tsan_tests" -j "$(nproc)" --timeout "$budget"
echo "== TSan tests passed in $((SECONDS - t0)) s"
