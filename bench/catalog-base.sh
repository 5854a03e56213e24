#!/usr/bin/env bash
# bench/catalog-base.sh — catalogs stored against a base (issue 32), side by
# side: two hpak binaries on the same two trees (B sharing most of A's files),
# runs alternated, medians of CPU (user + sys of the child) and wall time.
#
#   bench/catalog-base.sh OLD_HPAK NEW_HPAK TREE_A TREE_B WORKDIR [RUNS]
#
# Jobs, each on a library of its own binary holding A (then B):
#   add B       `pack TREE_B --into L --name b` (L holding A: B's catalog is
#               the one stored against A's)
#   restore b   fresh restore of b into an empty directory
#   no-op b     restore of b over its own restore
#   verify      `verify L` (reads both copies of each catalog: the mirror
#               through its base)
#   gc          `catalogs rm a` then `gc --grace 0 --full` (a copy of L)
# and the library's bytes (every file under it). Prints a markdown table.
set -euo pipefail
[[ $# -ge 5 ]] || { echo "usage: $0 OLD_HPAK NEW_HPAK TREE_A TREE_B WORKDIR [RUNS]" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2") a=$3 b=$4 work=$5 runs=${6:-7}
tmp=$(mktemp -d "$work/catbase.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export HPAK_FSYNC=0
python3 - "$old" "$new" "$a" "$b" "$tmp" "$runs" <<'PY'
import os, resource, shutil, statistics, subprocess, sys, time
old, new, a, b, tmp, runs = sys.argv[1:6] + [int(sys.argv[6])]
bins = {"old": old, "new": new}

def run(args):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), wall

def lib_of(k):
    return os.path.join(tmp, k, "L")

def size_of(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)

results = {}  # (job, k) -> [(cpu, wall)]
def add(job, k, m):
    results.setdefault((job, k), []).append(m)

for k, h in bins.items():
    os.makedirs(os.path.join(tmp, k))
    subprocess.run([h, "-q", "init", lib_of(k)], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([h, "-q", "pack", a, "--into", lib_of(k), "--name", "a"], check=True, stdout=subprocess.DEVNULL)
    shutil.copytree(lib_of(k), lib_of(k) + ".a", symlinks=True)

for i in range(runs):
    for k in (("old", "new") if i % 2 == 0 else ("new", "old")):
        h, L, d = bins[k], lib_of(k), os.path.join(tmp, k)
        shutil.rmtree(L)
        shutil.copytree(L + ".a", L, symlinks=True)
        add("add B", k, run([h, "-q", "pack", b, "--into", L, "--name", "b"]))
        t = os.path.join(d, "t")
        shutil.rmtree(t, ignore_errors=True)
        add("restore b (fresh)", k, run([h, "-q", "restore", L, "b", t]))
        add("restore b (no-op)", k, run([h, "-q", "restore", L, "b", t]))
        add("verify", k, run([h, "-q", "verify", L]))
        g = L + ".gc"
        shutil.rmtree(g, ignore_errors=True)
        shutil.copytree(L, g, symlinks=True)
        subprocess.run([h, "-q", "catalogs", "rm", g, "a"], check=True, stdout=subprocess.DEVNULL)
        add("gc --full after rm a", k, run([h, "-q", "gc", "--grace", "0", "--full", g]))

print(f"{runs} alternated runs each; medians; CPU = user + sys of the child; load at the end: {os.getloadavg()[0]:.1f}")
print()
print("| job | old CPU ms | new CPU ms | new/old CPU | old wall ms | new wall ms | new/old wall |")
print("|---|--:|--:|--:|--:|--:|--:|")
jobs = []
for (job, _) in results:
    if job not in jobs:
        jobs.append(job)
for job in jobs:
    o, n = results[(job, "old")], results[(job, "new")]
    oc, nc = statistics.median(x[0] for x in o) * 1e3, statistics.median(x[0] for x in n) * 1e3
    ow, nw = statistics.median(x[1] for x in o) * 1e3, statistics.median(x[1] for x in n) * 1e3
    print(f"| {job} | {oc:.1f} | {nc:.1f} | {nc / oc:.3f} | {ow:.1f} | {nw:.1f} | {nw / ow:.3f} |")
print()
so, sn = size_of(lib_of("old")), size_of(lib_of("new"))
print(f"library holding a and b: old {so:,} bytes, new {sn:,} bytes ({sn - so:+,})")
PY
