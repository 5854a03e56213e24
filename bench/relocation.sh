#!/usr/bin/env bash
# bench/relocation.sh NEW_HPAK OLD_HPAK [DIR]: the cost of relocation by kind
# (issue 25: classifying the files that hold the packed path at pack time,
# deciding how each is relocated at restore time), NEW against OLD (an hpak
# built before it, e.g. 81e90c0) side by side. The tree is a Python
# environment whose files hold its own path: the stdlib of the python3 on
# PATH copied under DIR and compiled there (so every .pyc holds the tree's
# path, as in a real venv or conda env), and a venv with pip beside it.
# Each round runs every arm once, in a shuffled order; RUNS rounds (default
# 7); medians with min-max and the ratio NEW/OLD of medians. Arms:
#   pack --into a new library; a fresh restore into a path of the same
#   length (everything relocated) and of another length (NEW leaves the .pyc
#   as packed, OLD splices them); a no-op restore of an unchanged space.
# Times are from spawn to exit (python3 perf_counter around subprocess); CPU
# time (user + sys of the child) beside them. DIR defaults to /tmp (use
# /dev/shm for tmpfs).
set -euo pipefail
new=$(realpath "${1:?usage: bench/relocation.sh NEW_HPAK OLD_HPAK [DIR]}")
old=$(realpath "${2:?usage: bench/relocation.sh NEW_HPAK OLD_HPAK [DIR]}")
w=$(mktemp -d "${3:-/tmp}/hpak-reloc-bench-XXXXXX")
trap 'rm -rf "$w"' EXIT
py=$(command -v python3)
stdlib=$("$py" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
env=$w/env # the packed path (length L)
mkdir -p "$env/lib"
# The stdlib without its tests (large, and not what environments ship).
(cd "$(dirname "$stdlib")" && tar --exclude="$(basename "$stdlib")/test" --exclude='__pycache__' -cf - "$(basename "$stdlib")") | tar -xf - -C "$env/lib"
"$py" -m compileall -q -j 2 "$env/lib" >/dev/null || true
"$py" -m venv "$env/venv"
files=$(find "$env" -type f | wc -l)
holding=$(grep -rlF "$env" "$env" | wc -l)
echo "tree: $files files ($holding hold the packed path '$env'), $(du -sh "$env" | cut -f1); dir $w; load $(cut -d' ' -f1-3 /proc/loadavg)"
for arm in new old; do
  bin=$new
  [ $arm = old ] && bin=$old
  "$bin" pack -q "$env" --into "$w/lib-$arm" --name env >/dev/null
  "$bin" restore -q "$w/lib-$arm" env "$w/same-$arm" >/dev/null
done
"$new" pack "$env" -o "$w/probe.hpak" | grep '^relocation:' || true
python3 - "$new" "$old" "$w" "${RUNS:-7}" "${#env}" <<'PY'
import os, random, resource, shutil, statistics, subprocess, sys, time
new, old, w, runs, plen = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
same_len = w + "/" + "s" * (plen - len(w) - 1)   # a target path of the packed path's length
other_len = w + "/a-target-of-another-length/t"
assert len(same_len) == plen and len(other_len) != plen
def arm(bin, which, step):
    lib = f"{w}/lib-{which}"
    if step == "pack":
        return (lambda: shutil.rmtree(f"{w}/packlib", ignore_errors=True)), [bin, "pack", "-q", f"{w}/env", "--into", f"{w}/packlib", "--name", "env"]
    if step == "noop":
        return (lambda: None), [bin, "restore", "-q", lib, "env", f"{w}/same-{which}"]
    t = same_len if step == "same" else other_len
    return (lambda: shutil.rmtree(t, ignore_errors=True)), [bin, "restore", "-q", lib, "env", t]
steps = {"pack --into": "pack", "fresh restore, same length": "same", "fresh restore, another length": "other", "no-op restore": "noop"}
arms = {(s, b): arm(new if b == "new" else old, b, k) for s, k in steps.items() for b in ("new", "old")}
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
print(f"| step ({runs} interleaved rounds) | new wall median s (min-max) | old wall median s (min-max) | new/old | new CPU s | old CPU s | new/old CPU |")
print("|---|---|---|---|---|---|---|")
for s in steps:
    n, o = (s, "new"), (s, "old")
    print(f"| {s} | {med[n]:.3f} ({min(times[n]):.3f}-{max(times[n]):.3f}) | {med[o]:.3f} ({min(times[o]):.3f}-{max(times[o]):.3f}) "
          f"| {med[n] / med[o]:.2f}x | {cmed[n]:.3f} | {cmed[o]:.3f} | {cmed[n] / cmed[o]:.2f}x |")
PY
