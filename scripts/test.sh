#!/usr/bin/env bash
# The whole test suite: set up (scripts/setup.sh --test: every tool the tests
# use), build, run the unit and CLI tests (the shell lint among them), then the
# same suite under ASan+UBSan, the concurrent tests under TSan, and each fuzz
# target briefly, and the Windows cross build with its unit tests under Wine
# (scripts/build-windows.sh). Exit non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh --test
jobs=$(nproc)

echo "== build (RelWithDebInfo)"
bash scripts/build.sh build
echo "== tests"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== build (ASan+UBSan)"
bash scripts/build.sh build-asan -DHPAK_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
echo "== tests under ASan+UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"

if [ -f scripts/test-extra.sh ]; then bash scripts/test-extra.sh; fi
bash scripts/test-fuzz.sh
echo "== Windows: cross build, unit tests under Wine"
bash scripts/build-windows.sh
echo "== all tests passed"
