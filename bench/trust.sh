#!/usr/bin/env bash
# bench/trust.sh HPAK [FILES] [DIR]: the cost of trust on shared storage
# (issues 12 and 27, man/hpak-library.7 WHAT IS TRUSTED), as root. Each round runs
# every arm once, in a shuffled order (arms interleaved: a load spike hits
# them alike); RUNS rounds (default 7); medians with min-max, and the ratio of
# medians to the private arm:
#   1. steady state, fresh restore: from a private library vs from a shared
#      library whose pack another user owns (its verdict remembered; issue
#      12's target, shared <= 1.05x private, predates the check of every
#      byte read from such a pack, issue 27: about restore --verify's cost);
#   2. steady state, unchanged space (the dirty restore that writes nothing):
#      the same two libraries;
#   3. the first restore after a new pack arrives: the shared arm with the
#      verdict cache emptied before the run (the pack is verified, then
#      restored);
#   4. gc of a library of four packs of equal size (all rolled up into one,
#      every object copied): private vs shared with the packs another
#      user's, its verdicts remembered (issue 27: every object copied out of
#      another member's pack has its SHA-256 checked first). Each run starts
#      from a fresh copy of the library (not timed; the shared copy's
#      verdicts are taken by a gc --dry-run, not timed either).
# In a shared library every object read from another member's pack is
# checked against its SHA-256 as it is read (issue 27), so the shared
# restore arms include that check.
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
# gc: four packs of equal size, in a private and a shared library.
"$hpak" init "$w/gc-private" >/dev/null
"$hpak" init --shared "$w/gc-shared" >/dev/null
for seed in 1 2 3 4; do
  "$gen" --profile rcc --files $((files / 4)) --seed $((seed + 10)) "$w/gcsrc$seed" >/dev/null
  "$hpak" pack -q "$w/gcsrc$seed" --into "$w/gc-private" --name "env$seed" >/dev/null
  "$hpak" pack -q "$w/gcsrc$seed" --into "$w/gc-shared" --name "env$seed" >/dev/null
  rm -rf "$w/gcsrc$seed"
done
chown nobody "$w/gc-shared"/packs/pack-*
touch -d '2 hours ago' "$w"/gc-*/packs/*.hidx # past the default grace
export XDG_CACHE_HOME=$w/cache
"$hpak" restore -q "$w/shared" env "$w/warm" >/dev/null # verifies once, remembers
"$hpak" restore -q "$w/private" env "$w/same-private" >/dev/null
"$hpak" restore -q "$w/shared" env "$w/same-shared" >/dev/null
echo "corpus: $files files, $(du -sh "$w/src" | cut -f1); pack $(du -sh "$w/shared/packs" | cut -f1); dir $w; load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$hpak" "$w" "${RUNS:-7}" <<'PY'
import os, random, resource, shutil, statistics, subprocess, sys, time
hpak, w, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def gc(lib):
    def prep():
        shutil.rmtree(f"{w}/gcrun", ignore_errors=True)
        subprocess.run(["cp", "-a", f"{w}/{lib}", f"{w}/gcrun"], check=True)
        if lib == "gc-shared":  # its verdicts remembered, as for the restore arms (a dry run verifies the packs)
            subprocess.run([hpak, "gc", "-q", "--dry-run", f"{w}/gcrun"], check=True, stdout=subprocess.DEVNULL)
    return prep, [hpak, "gc", "-q", f"{w}/gcrun"]
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
    "gc, private": gc("gc-private"),
    "gc, shared (verdicts remembered)": gc("gc-shared"),
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
ref_of = lambda a: "unchanged space, private" if a.startswith("unchanged") else "gc, private" if a.startswith("gc") else "fresh, private"
print(f"| arm ({runs} interleaved rounds) | wall median s | min-max s | vs private | CPU median s (user+sys) | vs private |")
print("|---|---|---|---|---|---|")
for a, v in times.items():
    r = ref_of(a)
    print(f"| {a} | {med[a]:.3f} | {min(v):.3f}-{max(v):.3f} | {med[a] / med[r]:.2f}x | {cmed[a]:.3f} | {cmed[a] / cmed[r]:.2f}x |")
PY
