#!/usr/bin/env bash
# bench/trust.sh HPAK [FILES] [DIR]: the cost of trust on shared storage
# (issue 12, man/hpak-library.7 WHAT IS TRUSTED), as root. Each round runs
# every arm once, in a shuffled order (arms interleaved: a load spike hits
# them alike); RUNS rounds (default 7); medians with min-max, and the ratio of
# medians to the private arm:
#   1. steady state, fresh restore: from a private library vs from a shared
#      library whose pack another user owns (its verdict remembered);
#      target: shared <= 1.05x private;
#   2. steady state, unchanged space (the dirty restore that writes nothing):
#      the same two libraries;
#   3. the first restore after a new pack arrives: the shared arm with the
#      verdict cache emptied before the run (the pack is verified, then
#      restored).
# Each command is timed from spawn to exit (python3 perf_counter around
# subprocess), and its CPU time (user + system, getrusage of the child) is
# reported too: on a loaded machine the CPU ratio is the steadier figure. Needs build/bench/hpak-gencorpus beside HPAK. DIR defaults to
# a temp dir under /tmp (use /dev/shm for tmpfs).
set -euo pipefail
hpak=$(realpath "${1:?usage: bench/trust.sh HPAK [FILES] [DIR]}")
files=${2:-20000}
gen=$(dirname "$hpak")/bench/hpak-gencorpus
[ "$(id -u)" -eq 0 ] || { echo "trust.sh: needs root (chown of a pack to another user)" >&2; exit 2; }
w=$(mktemp -d "${3:-/tmp}/hpak-trust-bench-XXXXXX")
trap 'rm -rf "$w"' EXIT
"$gen" --profile rcc --files "$files" --seed 1 "$w/src" >/dev/null
"$hpak" init "$w/private" >/dev/null
"$hpak" init --shared "$w/shared" >/dev/null
"$hpak" pack -q "$w/src" --into "$w/private" --name env >/dev/null
"$hpak" pack -q "$w/src" --into "$w/shared" --name env >/dev/null
chown nobody "$w/shared"/packs/pack-* # another member's pack
export XDG_CACHE_HOME=$w/cache
"$hpak" restore -q "$w/shared" env "$w/warm" >/dev/null # verifies once, remembers
"$hpak" restore -q "$w/private" env "$w/same-private" >/dev/null
"$hpak" restore -q "$w/shared" env "$w/same-shared" >/dev/null
echo "corpus: $files files, $(du -sh "$w/src" | cut -f1); pack $(du -sh "$w/shared/packs" | cut -f1); dir $w; load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$hpak" "$w" "${RUNS:-7}" <<'PY'
import os, random, resource, shutil, statistics, subprocess, sys, time
hpak, w, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def restore(lib, target, clear_cache=False, fresh=True):
    def prep():
        if fresh:
            shutil.rmtree(f"{w}/t", ignore_errors=True)
        if clear_cache:
            shutil.rmtree(f"{w}/cache/hpak/trust", ignore_errors=True)
    return prep, [hpak, "restore", "-q", f"{w}/{lib}", "env", target]
arms = {
    "fresh, private": restore("private", f"{w}/t"),
    "fresh, shared (verdict remembered)": restore("shared", f"{w}/t"),
    "unchanged space, private": restore("private", f"{w}/same-private", fresh=False),
    "unchanged space, shared (verdict remembered)": restore("shared", f"{w}/same-shared", fresh=False),
    "fresh, shared, first after a new pack (verifies)": restore("shared", f"{w}/t", clear_cache=True),
}
times = {a: [] for a in arms}
cpu = {a: [] for a in arms}
for r in range(runs):
    order = list(arms)
    random.shuffle(order)
    for a in order:
        prep, cmd = arms[a]
        prep()
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times[a].append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[a].append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
med = {a: statistics.median(v) for a, v in times.items()}
cmed = {a: statistics.median(v) for a, v in cpu.items()}
ref_of = lambda a: "unchanged space, private" if a.startswith("unchanged") else "fresh, private"
print(f"| arm ({runs} interleaved rounds) | wall median s | min-max s | vs private | CPU median s (user+sys) | vs private |")
print("|---|---|---|---|---|---|")
for a, v in times.items():
    r = ref_of(a)
    print(f"| {a} | {med[a]:.3f} | {min(v):.3f}-{max(v):.3f} | {med[a] / med[r]:.2f}x | {cmed[a]:.3f} | {cmed[a] / cmed[r]:.2f}x |")
PY
