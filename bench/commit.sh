#!/usr/bin/env bash
# bench/commit.sh HPAK [DIR]: hpak commit of a writable view where 1% of the
# files changed, against a full `hpak pack --into` of the same merged tree
# (issue 31), side by side in one run. Needs root (overlayfs) and fusermount3.
# The tree: the stdlib of the python3 on PATH (tests and __pycache__ left
# out), packed at level 3 into a library; a copy of that library takes the
# full packs. Each round (RUNS, default 5): 1% of the files (every STEP-th,
# default 100, in a fixed order) get a line appended that names the round; then
#   commit:  hpak commit VIEW --name rN (reads and hashes the upper layer only);
#   pack:    hpak pack of a plain copy of the view (made untimed) --into the
#            library copy (hashes every file, writes the objects it lacks).
# Both write the same new objects each round. Times from spawn to exit,
# medians with min-max. DIR defaults to /tmp.
# Figures: bench/RESULTS.md, "hpak commit against a full pack --into".
set -euo pipefail
hpak=$(realpath "${1:?usage: bench/commit.sh HPAK [DIR]}")
w=$(mktemp -d "${2:-/tmp}/hpak-commit-bench-XXXXXX")
cleanup() {
  if mountpoint -q "$w/view" 2>/dev/null; then "$hpak" umount -q --discard "$w/view" || umount -l "$w/view" || true; fi
  if mountpoint -q "$w/.view.hpak-ws/lower" 2>/dev/null; then fusermount3 -u -z "$w/.view.hpak-ws/lower" || true; fi
  rm -rf "$w"
}
trap cleanup EXIT
# shellcheck source=bench/stdlib_env.sh
source "$(dirname "$0")/stdlib_env.sh"
env=$w/env
stdlib_env "$env"
"$hpak" pack -q "$env" --into "$w/lib" --name env >/dev/null
cp -a "$w/lib" "$w/lib-full"
mkdir "$w/view"
"$hpak" mount -q --writable "$w/lib" env "$w/view"
files=$(find "$env" -type f | wc -l)
echo "tree: $files files, $(du -sh "$env" | cut -f1); dir $w; load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$hpak" "$w" "${RUNS:-5}" "${STEP:-100}" <<'PY'
import os, shutil, statistics, subprocess, sys, time
hpak, w, runs, step = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
view = os.path.join(w, "view")
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(view) for f in fs)
changed = files[::step]
def timed(argv):
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t
t = {"commit": [], "pack": []}
for r in range(runs):
    for f in changed:
        with open(f, "a") as fh:
            fh.write(f"# round {r}\n")
    plain = os.path.join(w, f"plain{r}")
    shutil.copytree(view, plain, symlinks=True)
    subprocess.run(["sync"], check=True)
    t["commit"].append(timed([hpak, "commit", "-q", view, "--name", f"r{r}"]))
    t["pack"].append(timed([hpak, "pack", "-q", plain, "--into", os.path.join(w, "lib-full"), "--name", f"r{r}"]))
    shutil.rmtree(plain)
print(f"{len(changed)} of {len(files)} files changed per round, {runs} rounds")
print("| arm | median | min-max |")
print("|---|---|---|")
for k, label in (("commit", "`hpak commit` of the view"), ("pack", "`hpak pack --into` of the same tree")):
    v = t[k]
    print(f"| {label} | {statistics.median(v)*1000:.1f} ms | {min(v)*1000:.1f}-{max(v)*1000:.1f} |")
print(f"ratio pack/commit of medians: {statistics.median(t['pack'])/statistics.median(t['commit']):.2f}")
PY
