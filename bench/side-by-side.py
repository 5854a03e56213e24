#!/usr/bin/env python3
"""bench/side-by-side.py RUNS OLD_HPAK NEW_HPAK WORKDIR TREE... - pack -o (level
3), unpack -j 2 and verify of each TREE by two hpak builds, runs alternated
(old first on even runs, new first on odd ones); each build reads its own pack.
Prints a markdown table of medians: wall and CPU (user + sys of the child,
wait4) in ms, and new/old ratios."""
import os, subprocess, sys, time, shutil, statistics
if len(sys.argv) < 6:
    sys.exit("usage: side-by-side.py RUNS OLD_HPAK NEW_HPAK WORKDIR TREE...")
runs = int(sys.argv[1]); trees = sys.argv[5:]
B = {"old": sys.argv[2], "new": sys.argv[3]}
W = os.path.join(sys.argv[4], "sbs"); shutil.rmtree(W, ignore_errors=True); os.makedirs(W)
def run(argv):
    t = time.perf_counter(); p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, st, ru = os.wait4(p.pid, 0); w = time.perf_counter() - t
    assert st == 0, argv
    return w * 1000, (ru.ru_utime + ru.ru_stime) * 1000
res = {}
for r in range(runs):
    for tree in trees:
        n = os.path.basename(tree.rstrip("/"))
        order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
        for b in order:
            p = f"{W}/{n}-{b}.hpak"
            for f in (p, p[:-5] + ".hidx"):
                if os.path.exists(f): os.unlink(f)
            res.setdefault((n, "pack", b), []).append(run([B[b], "-q", "pack", tree, "-o", p, "-l", "3"]))
        for b in order:
            d = f"{W}/{n}-{b}-out"; shutil.rmtree(d, ignore_errors=True)
            res.setdefault((n, "unpack -j 2", b), []).append(run([B[b], "-q", "unpack", "-j", "2", f"{W}/{n}-{b}.hpak", d]))
            shutil.rmtree(d)
        for b in order:
            res.setdefault((n, "verify", b), []).append(run([B[b], "-q", "verify", f"{W}/{n}-{b}.hpak"]))
print("| tree | job | old wall ms | new wall ms | new/old wall | old CPU ms | new CPU ms | new/old CPU |")
print("|---|---|--:|--:|--:|--:|--:|--:|")
keys = sorted({(k[0], k[1]) for k in res}, key=lambda x: (x[0], x[1]))
for n, job in keys:
    o = res[(n, job, "old")]; w = res[(n, job, "new")]
    ow = statistics.median(x[0] for x in o); nw = statistics.median(x[0] for x in w)
    oc = statistics.median(x[1] for x in o); nc = statistics.median(x[1] for x in w)
    print(f"| {n} | {job} | {ow:.0f} | {nw:.0f} | {nw/ow:.3f} | {oc:.0f} | {nc:.0f} | {nc/oc:.3f} |")
shutil.rmtree(W)
