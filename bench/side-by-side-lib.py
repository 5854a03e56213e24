#!/usr/bin/env python3
"""bench/side-by-side-lib.py RUNS OLD_HPAK NEW_HPAK WORKDIR TREE_A TREE_B - a
library's jobs by two hpak builds, runs alternated (old first on even runs),
each build on its own library (its own pack format):
  add A      pack TREE_A --into a new library
  add B      pack TREE_B --into it (B shares most of A's objects)
  restore    fresh restore of B (-j 2) into a new directory
  no-op      restore of B into that directory again
  dirty 1%   every 100th regular file (sorted) of the target appended to, then restore
  gc --full  after `catalogs rm a`, on a copy of the library (--grace 0)
Prints a markdown table of medians: wall and CPU (user + sys of the child,
wait4) in ms, and new/old ratios."""
import os, shutil, statistics, subprocess, sys, time

if len(sys.argv) != 7:
    sys.exit("usage: side-by-side-lib.py RUNS OLD_HPAK NEW_HPAK WORKDIR TREE_A TREE_B")
runs, trees = int(sys.argv[1]), sys.argv[5:7]
B = {"old": sys.argv[2], "new": sys.argv[3]}
W = os.path.join(sys.argv[4], "sbslib")


def run(argv):
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, st, ru = os.wait4(p.pid, 0)
    w = time.perf_counter() - t
    if st != 0:
        sys.exit(f"failed: {' '.join(argv)}")
    return w * 1000, (ru.ru_utime + ru.ru_stime) * 1000


def one_round(b, res):
    h, d = B[b], os.path.join(W, b)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    lib, tgt = os.path.join(d, "L"), os.path.join(d, "t")
    add = lambda job, argv: res.setdefault((job, b), []).append(run(argv))
    add("add A", [h, "-q", "pack", trees[0], "--into", lib, "--name", "a"])
    add("add B", [h, "-q", "pack", trees[1], "--into", lib, "--name", "b"])
    add("restore fresh", [h, "-q", "restore", lib, "b", tgt, "-j", "2"])
    add("restore no-op", [h, "-q", "restore", lib, "b", tgt, "-j", "2"])
    files = sorted(os.path.relpath(os.path.join(r, f), tgt) for r, _, fs in os.walk(tgt) for f in fs
                   if not os.path.islink(os.path.join(r, f)) and f != ".hpak-state")
    for f in files[99::100]:
        with open(os.path.join(tgt, f), "a") as fh:
            fh.write("# changed\n")
    add("restore dirty 1%", [h, "-q", "restore", lib, "b", tgt, "-j", "2"])
    g = os.path.join(d, "G")
    shutil.copytree(lib, g, symlinks=True)
    run([h, "-q", "catalogs", "rm", g, "a"])
    add("gc --full", [h, "-q", "gc", "--full", "--grace", "0", g])


res = {}
for r in range(runs):
    for b in (["old", "new"] if r % 2 == 0 else ["new", "old"]):
        one_round(b, res)
shutil.rmtree(W, ignore_errors=True)
print("| job | old wall ms | new wall ms | new/old wall | old CPU ms | new CPU ms | new/old CPU |")
print("|---|--:|--:|--:|--:|--:|--:|")
for job in ["add A", "add B", "restore fresh", "restore no-op", "restore dirty 1%", "gc --full"]:
    o, n = res[(job, "old")], res[(job, "new")]
    ow, nw = statistics.median(x[0] for x in o), statistics.median(x[0] for x in n)
    oc, nc = statistics.median(x[1] for x in o), statistics.median(x[1] for x in n)
    print(f"| {job} | {ow:.0f} | {nw:.0f} | {nw / ow:.3f} | {oc:.0f} | {nc:.0f} | {nc / oc:.3f} |")
