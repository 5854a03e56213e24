#!/usr/bin/env bash
# The whole test suite: set up (scripts/setup.sh --test: every tool the tests
# use), build, run the unit and CLI tests (the shell lint among them), then the
# same suite under ASan+UBSan, the concurrent tests under TSan, and each fuzz
# target briefly, and the Windows cross build with its unit tests under Wine
# (scripts/build-windows.sh; its libraries build in the background from the
# start, at the lowest priority). Exit non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh --test
jobs=$(nproc)

# The Windows libraries (scripts/build-windows-deps.sh, ~15 min of compiling)
# build at the lowest priority beside the stages below, on the CPU their tests
# leave idle; the Windows stage at the end waits for them. In a process group
# of its own, ended with this script.
win_cache=$(realpath -m "${HPAK_WIN_CACHE:-$root/.cache/win64}")
win_out=$(mktemp /tmp/hpak-win-deps.XXXXXX)
win_err=$(mktemp /tmp/hpak-win-deps.XXXXXX)
setsid nice -n 19 bash scripts/build-windows-deps.sh "$win_cache" >"$win_out" 2>"$win_err" &
win_deps=$!
trap 'kill -- -"$win_deps" 2>/dev/null || true; rm -f "$win_out" "$win_err"' EXIT

echo "== build (RelWithDebInfo)"
bash scripts/build.sh build
echo "== tests"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== build (ASan+UBSan)"
bash scripts/build.sh build-asan -DHPAK_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
# Every test of hpak's engine, but not those of text made from the command
# table or measured (the completion scripts, the man pages against --help,
# bench's rendering), the lints of the sources (shellcheck, the os seam, the
# rooms' layering) nor the Debian package's build and lintian: all run in the
# stage above. The kill-and-check loops take the TSan stage's shorter rounds.
echo "== tests under ASan+UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  HPAK_GC_CRASH_ROUNDS=${HPAK_GC_CRASH_ROUNDS:-5} HPAK_TORTURE_SECONDS=${HPAK_TORTURE_SECONDS:-15} \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" \
  -E '^(shellcheck|os_seam|os_seam_selftest|layering|cli_test_(package|completion|man|bench_render))$'

if [ -f scripts/test-extra.sh ]; then bash scripts/test-extra.sh; fi
bash scripts/test-fuzz.sh
echo "== Windows: cross build, unit tests under Wine"
if ! wait "$win_deps"; then
  cat "$win_out"
  tail -n 40 "$win_err" >&2
  echo "test: scripts/build-windows-deps.sh failed (its last lines above)" >&2
  exit 1
fi
cat "$win_out" # what was built from which source (the compilers' warnings stay in $win_err)
HPAK_WIN_CACHE=$win_cache bash scripts/build-windows.sh
echo "== all tests passed"
