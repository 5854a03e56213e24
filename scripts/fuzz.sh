#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang into build-fuzz and runs
# each for SECONDS (default 60), starting from the checked-in seed corpus
# tests/fuzz/corpus/<target> plus what earlier runs found (build-fuzz/corpus).
# Prints, per target, the executions, final coverage (libFuzzer's `cov:` and
# `ft:`), exec/s and peak RSS. Exits non-zero if any target crashed, leaked,
# timed out or ran out of memory; the reproducer is kept under
# build-fuzz/artifacts/<target>/ (replay: build-fuzz/tests/fuzz/<target> FILE).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#   HPAK_FUZZ_BUILD=DIR       build directory (default build-fuzz)
#   HPAK_FUZZ_ARGS="..."      extra libFuzzer flags (e.g. -jobs=2 -workers=2)
#   HPAK_FUZZ_NO_BUILD=1      use an existing build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift || true
all=(fuzz_pack_entry fuzz_index fuzz_catalog fuzz_midx fuzz_unpack fuzz_restore_state fuzz_mount_tree)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
dir=${HPAK_FUZZ_BUILD:-$root/build-fuzz}

# -max_len per target: room for the seeds and some growth, small enough for
# many executions per second.
max_len() {
  case $1 in
  fuzz_pack_entry | fuzz_index) echo 65536 ;;
  fuzz_unpack) echo 32768 ;;
  *) echo 16384 ;;
  esac
}

for t in "${targets[@]}"; do
  case " ${all[*]} " in *" $t "*) ;; *) echo "fuzz.sh: unknown target '$t' (known: ${all[*]})" >&2; exit 2 ;; esac
done
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is needed (apt-get install clang libclang-rt-dev)" >&2; exit 2; }

if [ -z "${HPAK_FUZZ_NO_BUILD:-}" ]; then
  echo "== build fuzz targets ($dir)"
  CC=clang CXX=clang++ cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHPAK_FUZZ=ON >/dev/null
  ninja -C "$dir" "${targets[@]}" >/dev/null
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
summary=()
for t in "${targets[@]}"; do
  bin=$dir/tests/fuzz/$t
  seeds=$root/tests/fuzz/corpus/$t
  work=$dir/corpus/$t
  art=$dir/artifacts/$t
  log=$dir/logs/$t.log
  mkdir -p "$work" "$art" "$(dirname "$log")" "$seeds"
  echo "== $t: ${secs}s, -max_len=$(max_len "$t")"
  rc=0
  # New inputs go to $work (the first corpus dir); the seeds are only read.
  # shellcheck disable=SC2086
  "$bin" -max_total_time="$secs" -max_len="$(max_len "$t")" -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -print_final_stats=1 -dict="$root/tests/fuzz/hpak.dict" -artifact_prefix="$art/" ${HPAK_FUZZ_ARGS:-} \
    "$work" "$seeds" >"$log" 2>&1 || rc=$?
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true)
  [ -n "$done_line" ] || done_line=$(grep -E '^#[0-9]+[[:space:]]+(pulse|NEW|REDUCE|INITED)' "$log" | tail -n 1 || true)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$done_line")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$done_line")
  corp=$(sed -nE 's/.* corp: ([0-9]+)\/.*/\1/p' <<<"$done_line")
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -n 1)
  eps=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log" | tail -n 1)
  rss=$(sed -nE 's/^stat::peak_rss_mb: *([0-9]+)/\1/p' "$log" | tail -n 1)
  echo "   ${done_line:-no final line}"
  line=$(printf '%-20s execs %10s  exec/s %6s  cov %5s  ft %6s  corpus %5s  rss %5s MB' "$t" "${execs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "${rss:-?}")
  if [ "$rc" -ne 0 ]; then
    line="$line  FAILED (exit $rc)"
    failed+=("$t")
    echo "   FAILED (exit $rc); log: $log"
    grep -E 'ERROR: |FUZZ_CHECK|SUMMARY|runtime error|Test unit written' "$log" | sed -n 's/^/   /; 1,12p'
  fi
  summary+=("$line")
done

echo "== fuzz summary (${secs}s per target)"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
