#!/usr/bin/env bash
# bench/mount-cache.sh HPAK [DIR]: what each of hpak mount's kernel caches buys
# (issue 31). The tree is bench/mount.sh's (the python3 stdlib on PATH, tests
# left out, compiled to .pyc) in a library of level 3 on DIR (default /tmp).
# Arms: all caches on, and each switched off in turn through HPAK_MOUNT_OFF
# (hpak-mount(1)): timeouts (entry/attr 0), no_open (opens answered by the
# server), no_opendir (the same for directories), no_open+keep_cache (answered opens drop the file's pages),
# cache_readdir, cache_symlinks, readdirplus, splice, threads (libfuse's
# single-threaded loop), prefill (no bytes stored into the kernel's cache
# when Python's open asks isatty), own_loop (libfuse's multi-threaded loop
# instead of hpak's), async_read, readahead (max_readahead 0), max_read (4 KiB
# per read request). Each round (RUNS, default 3) mounts every arm afresh,
# in a shuffled order, and times from spawn to exit:
#   py-cold:   python3 -S importing bench/mount.sh's 30 modules, first run;
#   py-warm:   the same again;
#   stat-warm: find DIR -printf '%s\n', the second of two passes;
#   readdir:   find DIR, after them (every listing made before);
#   read-cold: cat of every regular file at most two levels below the stdlib
#              directory (about 900 files, 78 MB), the first pass (decoded);
#   read-warm: the same, the second pass.
# Medians with min-max, and each arm's median over all on's. The arms limited
# to a subset: ARMS="on timeouts ...".
# Figures: bench/RESULTS.md, "What each kernel cache of hpak mount buys".
set -euo pipefail
hpak=$(realpath "${1:?usage: bench/mount-cache.sh HPAK [DIR]}")
w=$(mktemp -d "${2:-/tmp}/hpak-mount-cache-XXXXXX")
# shellcheck source=bench/stdlib_env.sh
source "$(dirname "$0")/stdlib_env.sh"
cleanup() {
  unmount_views "$w"
  rm -rf "$w"
}
trap cleanup EXIT
stdlib_library "$hpak" "$w"
rm -rf "$w/env"
python3 - "$hpak" "$w" "${RUNS:-3}" "$(basename "$stdlib")" "${ARMS:-}" <<'PY'
import os, random, statistics, subprocess, sys, time
hpak, w, runs, ver, arms = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5].split()
off = {"on": "", "timeouts": "timeouts", "no_open": "no_open", "no_opendir": "no_opendir", "keep_cache": "no_open,keep_cache",
       "cache_readdir": "cache_readdir", "cache_symlinks": "cache_symlinks", "readdirplus": "readdirplus",
       "splice": "splice", "threads": "threads", "prefill": "prefill", "own_loop": "own_loop",
       "async_read": "async_read", "readahead": "readahead", "max_read": "max_read"}
arms = arms or list(off)
mods = ("json csv textwrap difflib fractions dataclasses string email.message argparse logging pathlib "
        "typing enum decimal datetime collections.abc functools itertools re tempfile shutil subprocess "
        "http.client urllib.parse base64 hashlib zipfile tarfile inspect").split()
code = "import sys; sys.path.insert(0, sys.argv[1]); import " + ", ".join(mods)
def timed(argv, env=None):
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t
def read_all(d):
    return ["sh", "-c", 'find "$1" -maxdepth 2 -type f -exec cat {} + >/dev/null', "sh", d]
res = {}
def add(k, v): res.setdefault(k, []).append(v)
for r in range(runs):
    order = list(arms)
    random.shuffle(order)
    for arm in order:
        d = os.path.join(w, f"m{r}{arm}")
        os.mkdir(d)
        env = dict(os.environ, HPAK_MOUNT_OFF=off[arm])
        subprocess.run([hpak, "mount", "-q", os.path.join(w, "lib"), "env", d], check=True, env=env)
        libdir = os.path.join(d, "lib", ver)
        add(("py-cold", arm), timed([sys.executable, "-S", "-B", "-c", code, libdir]))
        add(("py-warm", arm), timed([sys.executable, "-S", "-B", "-c", code, libdir]))
        stat = ["find", d, "-printf", "%s\n"]
        timed(stat)
        add(("stat-warm", arm), timed(stat))
        add(("readdir", arm), timed(["find", d]))
        add(("read-cold", arm), timed(read_all(libdir)))
        add(("read-warm", arm), timed(read_all(libdir)))
        subprocess.run([hpak, "umount", d], check=True)
        os.rmdir(d)
cols = ("py-cold", "py-warm", "stat-warm", "readdir", "read-cold", "read-warm")
print(f"{runs} rounds; load after {open('/proc/loadavg').read().split()[:3]}")
print(f"| off | " + " | ".join(cols) + " |")
print("|---|" + "---|" * len(cols))
for arm in arms:
    cells = []
    for t in cols:
        v = res[(t, arm)]
        m = statistics.median(v)
        ratio = m / statistics.median(res[(t, "on")]) if "on" in arms else float("nan")
        cells.append(f"{m*1000:.1f} ms ({min(v)*1000:.1f}-{max(v)*1000:.1f}) {ratio:.2f}x")
    print(f"| {off[arm] or '(all on)'} | " + " | ".join(cells) + " |")
PY
