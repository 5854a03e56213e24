#!/usr/bin/env bash
# bench/mount.sh HPAK [DIR]: hpak mount against a fresh hpak restore of the
# same catalog (issue 31), side by side in one run. The tree is a Python
# stdlib (that of the python3 on PATH, tests left out, compiled to .pyc) in a
# library of level 3. Each round (RUNS, default 5), in a shuffled order:
#   mount:    hpak mount (background; returns once mounted) until it returns;
#   restore:  hpak restore into an empty directory;
#   py-cold:  python3 -S importing 30 stdlib modules from the tree, the first
#             run after the mount / the restore (mount: nothing decoded yet);
#   py-warm:  the same again (mount: the kernel's caches warm).
# Times from spawn to exit (perf_counter around subprocess); medians with
# min-max and the ratio mount/restore of medians. DIR defaults to /tmp.
# With OFF=LIST a third arm, mount-off, mounts with HPAK_MOUNT_OFF=LIST (some
# kernel caches off, hpak-mount(1)): e.g. OFF=prefill,no_opendir for the
# mount as it was before those two.
# Besides the stdlib, the mount time alone (mount against a fresh restore) of
# `hpak-gencorpus --profile rcc` environments of SIZES files (default
# "12000 25000", the sizes issue 31 names; "" for none), each in a library of
# its own; GENCORPUS is the generator (default build/bench/hpak-gencorpus).
# Figures: bench/RESULTS.md, "hpak mount against a fresh restore".
set -euo pipefail
hpak=$(realpath "${1:?usage: bench/mount.sh HPAK [DIR]}")
gencorpus=${GENCORPUS:-$(dirname "$0")/../build/bench/hpak-gencorpus}
sizes=${SIZES-12000 25000}
w=$(mktemp -d "${2:-/tmp}/hpak-mount-bench-XXXXXX")
# shellcheck source=bench/stdlib_env.sh
source "$(dirname "$0")/stdlib_env.sh"
cleanup() {
  unmount_views "$w"
  rm -rf "$w"
}
trap cleanup EXIT
stdlib_library "$hpak" "$w"
for n in $sizes; do
  "$gencorpus" --profile rcc --files "$n" "$w/rcc$n" >/dev/null
  "$hpak" pack -q "$w/rcc$n" --into "$w/lib$n" --name env >/dev/null
  rm -rf "$w/rcc$n"
done
python3 - "$hpak" "$w" "${RUNS:-5}" "$(basename "$stdlib")" "${OFF:-}" "$sizes" <<'PY'
import os, random, shutil, statistics, subprocess, sys, time
hpak, w, runs, ver, off, sizes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6].split()
mods = ("json csv textwrap difflib fractions dataclasses string email.message argparse logging pathlib "
        "typing enum decimal datetime collections.abc functools itertools re tempfile shutil subprocess "
        "http.client urllib.parse base64 hashlib zipfile tarfile inspect").split()
code = "import sys; sys.path.insert(0, sys.argv[1]); import " + ", ".join(mods)
def timed(argv, env=None):
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t
res = {}
def add(k, v): res.setdefault(k, []).append(v)
for r in range(runs):
    arms = ["mount", "restore"] + (["mount-off"] if off else [])
    random.shuffle(arms)
    for arm in arms:
        d = os.path.join(w, f"m{r}{arm}")
        os.mkdir(d)
        if arm.startswith("mount"):
            env = dict(os.environ, HPAK_MOUNT_OFF=off if arm == "mount-off" else "")
            add(arm, timed([hpak, "mount", "-q", os.path.join(w, "lib"), "env", d], env))
        else:
            add("restore", timed([hpak, "restore", "-q", os.path.join(w, "lib"), "env", d]))
        libdir = os.path.join(d, "lib", ver)
        add(f"py-cold.{arm}", timed([sys.executable, "-S", "-B", "-c", code, libdir]))
        add(f"py-warm.{arm}", timed([sys.executable, "-S", "-B", "-c", code, libdir]))
        if arm.startswith("mount"):
            subprocess.run([hpak, "umount", d], check=True)
        shutil.rmtree(d)
    for n in sizes:
        for arm in random.sample(["mount", "restore"], 2):
            d = os.path.join(w, f"m{r}{arm}{n}")
            os.mkdir(d)
            add(f"{arm}{n}", timed([hpak, arm, "-q", os.path.join(w, f"lib{n}"), "env", d]))
            if arm == "mount":
                subprocess.run([hpak, "umount", d], check=True)
            shutil.rmtree(d)
def row(label, k):
    v = res[k]
    return f"{label:24s} median {statistics.median(v)*1000:9.1f} ms  (min {min(v)*1000:.1f}, max {max(v)*1000:.1f}, n={len(v)})"
print(row("hpak mount", "mount"))
print(row("hpak restore (fresh)", "restore"))
print(f"  mount / restore: {statistics.median(res['mount'])/statistics.median(res['restore']):.3f}")
for n in sizes:
    print(row(f"hpak mount, rcc {n}", f"mount{n}"))
    print(row(f"hpak restore, rcc {n}", f"restore{n}"))
    print(f"  mount / restore: {statistics.median(res[f'mount{n}'])/statistics.median(res[f'restore{n}']):.3f}")
for t in ("py-cold", "py-warm"):
    print(row(f"{t} on mount", f"{t}.mount"))
    if off:
        print(row(f"{t} on mount-off", f"{t}.mount-off"))
    print(row(f"{t} on restored", f"{t}.restore"))
    print(f"  mount / restored: {statistics.median(res[t+'.mount'])/statistics.median(res[t+'.restore']):.3f}")
    if off:
        print(f"  mount-off / restored: {statistics.median(res[t+'.mount-off'])/statistics.median(res[t+'.restore']):.3f}"
              f" (HPAK_MOUNT_OFF={off})")
print(f"load after: {' '.join(open('/proc/loadavg').read().split()[:3])}")
PY
