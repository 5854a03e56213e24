#!/usr/bin/env python3
"""The cost of the library's fsync protocol (hpak-library(7), DURABILITY).

Times `hpak pack --into` (a first environment into an empty library) and
`hpak gc --grace 0` (rewriting a pack of two environments, one of which
was removed), with fsync on (the default) and off (HPAK_FSYNC=0), on a small
tree and a large one, on a disk file system and on tmpfs. Arms run
interleaved; medians (min-max) of RUNS runs; the page cache is warm; every
run gets a fresh copy of its library (copying is not timed). Also counts the
fsync calls of each command (strace -f -c), which must not grow with the
number of files, and the wall-clock time inside them (strace -c -w). The
third tree is 8 files of 64 MiB (a 512 MiB pack): the data must reach the disk
once, so its fsync is where the protocol costs most.

usage: bench/fsync_cost.py HPAK [RUNS] [DISK_DIR] [TMPFS_DIR]
prints a Markdown section for bench/RESULTS.md
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HPAK = os.path.realpath(sys.argv[1])
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
DISK = sys.argv[3] if len(sys.argv) > 3 else "/var/tmp"
TMPFS = sys.argv[4] if len(sys.argv) > 4 else "/dev/shm"


def make_tree(root, files, size, seed):
    os.makedirs(root)
    per_dir = 100
    for i in range(files):
        d = f"{root}/d{i // per_dir}"
        os.makedirs(d, exist_ok=True)
        with open(f"{d}/f{i}", "wb") as f:
            f.write((f"{seed}:{i}:".encode() + os.urandom(size // 2)) * 2)


def run(args, env):
    t = time.perf_counter()
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def fsyncs(args, env):
    """(calls, wall-clock seconds inside them) of fsync/fdatasync, from strace -c -w."""
    r = subprocess.run(["strace", "-f", "-c", "-w", "-e", "trace=fsync,fdatasync", *args], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    n, secs = 0, 0.0
    for line in r.stderr.splitlines():
        f = line.split()
        if f and f[-1] in ("fsync", "fdatasync"):
            n += int(f[3])
            secs += float(f[1])
    return n, secs


def fs_of(path):
    return subprocess.run(["df", "--output=fstype", path], capture_output=True, text=True).stdout.split()[-1]


def main():
    env_on = dict(os.environ)
    env_on.pop("HPAK_FSYNC", None)
    env_off = dict(env_on, HPAK_FSYNC="0")
    trees = [("small", 200, 4096), ("large", 10000, 4096), ("large files", 8, 64 << 20)]
    rows = []
    for where in (DISK, TMPFS):
        w = tempfile.mkdtemp(prefix="hpak-fsync-", dir=where)
        try:
            for tname, files, size in trees:
                a, b = f"{w}/src-{tname}-a", f"{w}/src-{tname}-b"
                make_tree(a, files, size, 1)
                make_tree(b, files, size, 2)
                # gc template: one pack holding envs a and b, of which only a
                # stays named: gc rewrites it (copies a's objects to a new pack).
                ab = f"{w}/src-{tname}-ab"
                os.makedirs(ab)
                shutil.copytree(a, f"{ab}/a")
                shutil.copytree(b, f"{ab}/b")
                tmpl = f"{w}/gc-{tname}"
                subprocess.run([HPAK, "-q", "init", tmpl], check=True)
                subprocess.run([HPAK, "-q", "pack", ab, "--into", tmpl, "--name", "ab", "-j", "2"], check=True)
                subprocess.run([HPAK, "-q", "pack", a, "--into", tmpl, "--name", "a", "-j", "2"], check=True)
                subprocess.run([HPAK, "-q", "catalogs", "rm", tmpl, "ab"], check=True)
                subprocess.run(["sync"])
                times = {("pack", "on"): [], ("pack", "off"): [], ("gc", "on"): [], ("gc", "off"): []}
                for r in range(RUNS):
                    arms = [("on", env_on), ("off", env_off)]
                    if r % 2:
                        arms.reverse()
                    for mode, env in arms:
                        lib = f"{w}/lib-{tname}-{mode}"
                        shutil.rmtree(lib, ignore_errors=True)
                        subprocess.run([HPAK, "-q", "init", lib], check=True, stdout=subprocess.DEVNULL)
                        times[("pack", mode)].append(run([HPAK, "-q", "pack", a, "--into", lib, "--name", "a", "-j", "2"], env))
                        shutil.rmtree(lib)
                        shutil.copytree(tmpl, lib, symlinks=True)
                        subprocess.run(["sync"])
                        times[("gc", mode)].append(run([HPAK, "-q", "gc", "--grace", "0", lib], env))
                        shutil.rmtree(lib)
                # fsync counts (one strace run each, fsync on).
                lib = f"{w}/lib-count"
                subprocess.run([HPAK, "-q", "init", lib], check=True, stdout=subprocess.DEVNULL)
                n_pack = fsyncs([HPAK, "-q", "pack", a, "--into", lib, "--name", "a", "-j", "2"], env_on)
                shutil.rmtree(lib)
                shutil.copytree(tmpl, lib, symlinks=True)
                n_gc = fsyncs([HPAK, "-q", "gc", "--grace", "0", lib], env_on)
                shutil.rmtree(lib)
                mb = files * size / 1e6
                for op, n in (("pack --into", n_pack), ("gc", n_gc)):
                    key = "pack" if op != "gc" else "gc"
                    on, off = times[(key, "on")], times[(key, "off")]
                    rows.append((fs_of(w), tname, files, mb, op, on, off, n))
        finally:
            shutil.rmtree(w, ignore_errors=True)

    def fmt(v):
        return "%.3f s (%.3f–%.3f)" % (statistics.median(v), min(v), max(v))

    print("| file system | tree | command | fsync on | HPAK_FSYNC=0 | cost | fsync calls | time inside them |")
    print("|---|---|---|---|---|---|---|---|")
    for fs, tname, files, mb, op, on, off, (n, secs) in rows:
        d = statistics.median(on) - statistics.median(off)
        print("| %s | %s (%d files, %.0f MB) | %s | %s | %s | %+.3f s (%+.0f%%) | %d | %.3f s |" %
              (fs, tname, files, mb, op, fmt(on), fmt(off), d, 100 * d / statistics.median(off), n, secs))
    print()
    print("load average at the end: %s; %d runs per arm, interleaved." % (" ".join("%.2f" % x for x in os.getloadavg()), RUNS))


if __name__ == "__main__":
    main()
