#!/usr/bin/env bash
# CI step (called by scripts/test.sh, before the Windows stage): builds the libFuzzer targets
# and runs each for HPAK_FUZZ_SECONDS (default 20 s; 7 targets -> 2.3 min, within
# the 4 min budget) from the checked-in corpus, which includes every input
# that once made a target fail (tests/fuzz/corpus/*/regress-*). Fails on any
# crash, sanitizer report, leak, timeout or out-of-memory.
# Skipped (exit 0, with a note) when clang or its libFuzzer runtime is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${HPAK_FUZZ_SECONDS:-20}
if ! command -v clang++ >/dev/null; then
  echo "== fuzz: skipped (clang++ not installed)"
  exit 0
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' |
  clang++ -x c++ -fsanitize=fuzzer,address,undefined - -o /dev/null 2>/dev/null; then
  echo "== fuzz: skipped (clang cannot link -fsanitize=fuzzer; install libclang-rt-dev)"
  exit 0
fi
echo "== fuzz (${secs}s per target)"
exec bash "$root/scripts/fuzz.sh" "$secs"
