#!/usr/bin/env bash
# bench/smallfile.sh HPAK [DIR]: the LayerFS seed's smallfile-style workload
# (issue 31), 4 threads over 4 KiB files, files/s per operation, side by side
# in one run on:
#   hpak:         the catalog mounted (read-only ops) and, for the write ops,
#                 the writable view (hpak mount --writable: overlayfs over it);
#   passthrough:  libfuse's passthrough_ll (example/passthrough_ll.c of
#                 Debian's fuse3 source package, `apt-get source fuse3`, built
#                 here with gcc against the system's libfuse3; its defaults:
#                 up to 10 threads, 1 s cache timeouts, writeback off; descriptors up to
#                 the hard limit) over a
#                 restore of the same catalog;
#   tmpfs:        the restored tree itself (DIR on tmpfs: /dev/shm).
# Needs root (overlayfs, FUSE), fusermount3, gcc, libfuse3-dev, a deb-src line
# for the mirror of /etc/apt/sources.list* (added if none is there).
# The tree: FILES (default 16,000) files of 4 KiB (random bytes: nothing to
# relocate, nothing compresses) in 4 directories of 100 subdirectories.
# Operations, each by 4 threads (a thread per top directory), timed as a whole:
#   read-only, on the catalog's files (fresh mounts each round: read is the
#   first read, decoding included): read (open, read all, close), stat,
#   readdir (list every subdirectory);
#   writes, as smallfile runs them, on FILES new files under new-ARM/: create
#   (open O_CREAT, write 4 KiB, close), read, append (4 KiB), stat, chmod,
#   rename (to *.r), delete-renamed; on hpak these go through the writable
#   view (its upper layer is on DIR, like the others' files).
# Rounds: RUNS (default 3), fresh mounts and trees each; medians of files/s.
# With OFF=LIST a fourth arm, hpak-off: the same mounts with HPAK_MOUNT_OFF=LIST
# (hpak-mount(1)), e.g. OFF=threads for one thread serving the mount.
# Figures: bench/RESULTS.md, "smallfile: hpak mount against passthrough_ll and tmpfs".
set -euo pipefail
hpak=$(realpath "${1:?usage: bench/smallfile.sh HPAK [DIR]}")
w=$(mktemp -d "${2:-/dev/shm}/hpak-smallfile-bench-XXXXXX")
files=${FILES:-16000}
# passthrough_ll keeps an O_PATH descriptor per inode it knows (every file once looked up): it fails with
# EMFILE past RLIMIT_NOFILE inodes. Raised to the hard limit (20,000 in these containers, which root cannot
# raise: no CAP_SYS_RESOURCE), hence FILES at most about 19,000, and passthrough_ll mounted afresh for the
# write ops.
ulimit -n $((2 * files + 4096)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"
runs=${RUNS:-3}
mounted() { awk -v w="$w" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r; }
cleanup() {
  local m
  for m in $(mounted); do umount -l "$m" 2>/dev/null || fusermount3 -u -z "$m" 2>/dev/null || true; done
  rm -rf "$w"
}
trap cleanup EXIT

# passthrough_ll from Debian's fuse3 source package.
pt=${PASSTHROUGH_LL:-}
if [ -z "$pt" ]; then
  if ! grep -rqs '^Types: deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >/etc/apt/sources.list.d/hpak-bench-src.sources
    apt-get update -q >/dev/null
  fi
  (cd "$w" && apt-get source -q fuse3 >/dev/null 2>&1)
  srcs=("$w"/fuse3-*/example)
  src=${srcs[0]}
  pt=$w/passthrough_ll
  read -ra fuse_flags <<<"$(pkg-config --cflags --libs fuse3)"
  gcc -O2 -o "$pt" "$src/passthrough_ll.c" "${fuse_flags[@]}" -lpthread
fi

python3 - "$w/env" "$files" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(7)
for i in range(n):
    d = os.path.join(root, f"t{i % 4}", f"d{(i // 4) % 100:02d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i}"), "wb") as f:
        f.write(rnd.randbytes(4096))
PY
"$hpak" pack -q "$w/env" --into "$w/lib" --name env >/dev/null
rm -rf "$w/env"
echo "tree: $files files of 4 KiB; dir $w ($(stat -f -c %T "$w")); passthrough_ll $pt; load $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$hpak" "$pt" "$w" "$runs" "${OFF:-}" <<'PY'
import os, shutil, statistics, subprocess, sys, threading, time
hpak, pt, w, runs, off = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
arms = ["hpak"] + (["hpak-off"] if off else []) + ["passthrough_ll", "tmpfs"]
lib = os.path.join(w, "lib")

def sh(*argv, env=None):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
OFF_ENV = dict(os.environ, HPAK_MOUNT_OFF=off)

def split(paths):  # a thread per top directory, as smallfile gives each thread its own
    parts = {}
    for p in paths:
        parts.setdefault(p.split(os.sep)[-3], []).append(p)
    return list(parts.values())

def timed(parts, op):
    def run(ps):
        for p in ps:
            op(p)
    ts = [threading.Thread(target=run, args=(ps,)) for ps in parts]
    t = time.perf_counter()
    for x in ts: x.start()
    for x in ts: x.join()
    return sum(map(len, parts)) / (time.perf_counter() - t)

def rd(p):
    fd = os.open(p, os.O_RDONLY)
    while os.read(fd, 65536): pass
    os.close(fd)
def create(p):
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, BLOCK)
    os.close(fd)
def append(p):
    fd = os.open(p, os.O_WRONLY | os.O_APPEND)
    os.write(fd, BLOCK)
    os.close(fd)
BLOCK = os.urandom(4096)

def catalog_files(top):
    out = []
    for t in sorted(x for x in os.listdir(top) if x.startswith("t")):  # not the restore's .hpak-state
        for d in sorted(os.listdir(os.path.join(top, t))):
            out += [os.path.join(top, t, d, f) for f in sorted(os.listdir(os.path.join(top, t, d)))]
    return out

res = {}
def add(arm, op, v): res.setdefault((arm, op), []).append(v)

def read_ops(arm, top, names):
    paths = [os.path.join(top, n) for n in names]
    parts = split(paths)
    add(arm, "read", timed(parts, rd))
    add(arm, "stat", timed(parts, os.stat))
    dirs = sorted({os.path.dirname(p) for p in paths})
    dparts = split([os.path.join(d, "x") for d in dirs])
    add(arm, "readdir", timed([[os.path.dirname(p) for p in ps] for ps in dparts], os.listdir) * len(paths) / len(dirs))

def write_ops(arm, top, names):
    paths = [os.path.join(top, "new-" + arm, n) for n in names]  # passthrough_ll and tmpfs share the restored tree
    for d in {os.path.dirname(p) for p in paths}: os.makedirs(d)
    parts = split(paths)
    add(arm, "create", timed(parts, create))
    add(arm, "read-new", timed(parts, rd))
    add(arm, "append", timed(parts, append))
    add(arm, "stat-new", timed(parts, os.stat))
    add(arm, "chmod", timed(parts, lambda p: os.chmod(p, 0o600)))
    add(arm, "rename", timed(parts, lambda p: os.rename(p, p + ".r")))
    add(arm, "delete-renamed", timed(parts, lambda p: os.unlink(p + ".r")))

def order(r):  # hpak and hpak-off take turns going first
    return arms if r % 2 == 0 or not off else [arms[1], arms[0]] + arms[2:]

names = None
for r in range(runs):
    base = os.path.join(w, f"r{r}")
    restored, ptm, ro, view, ro_off, view_off = (os.path.join(base, x) for x in ("restored", "pt", "ro", "view", "ro-off", "view-off"))
    for d in (ptm, ro, view, ro_off, view_off): os.makedirs(d)
    sh(hpak, "restore", "-q", lib, "env", restored)
    if names is None:
        names = [os.path.relpath(p, restored) for p in catalog_files(restored)]
    sh(pt, "-o", f"source={restored}", ptm)
    sh(hpak, "mount", "-q", lib, "env", ro)
    if off: sh(hpak, "mount", "-q", lib, "env", ro_off, env=OFF_ENV)
    tops = {"hpak": ro, "hpak-off": ro_off, "passthrough_ll": ptm, "tmpfs": restored}
    for arm in order(r):
        read_ops(arm, tops[arm], names)
    sh(hpak, "umount", ro)
    if off: sh(hpak, "umount", ro_off)
    sh("fusermount3", "-u", ptm)  # forgets the inodes (and their descriptors) of the read ops
    sh(pt, "-o", f"source={restored}", ptm)
    sh(hpak, "mount", "-q", "--writable", lib, "env", view)
    if off: sh(hpak, "mount", "-q", "--writable", lib, "env", view_off, env=OFF_ENV)
    tops = {"hpak": view, "hpak-off": view_off, "passthrough_ll": ptm, "tmpfs": restored}
    for arm in order(r):
        write_ops(arm, tops[arm], names)
    sh(hpak, "umount", "-q", "--discard", view)
    if off: sh(hpak, "umount", "-q", "--discard", view_off)
    sh("fusermount3", "-u", ptm)
    shutil.rmtree(base)

ops = ("read", "stat", "readdir", "create", "read-new", "append", "stat-new", "chmod", "rename", "delete-renamed")
print(f"{len(names)} files, {runs} rounds, 4 threads; files/s, medians" + (f"; hpak-off: HPAK_MOUNT_OFF={off}" if off else "")
      + f"; load after {open('/proc/loadavg').read().split()[:3]}")
print("| operation | " + " | ".join(arms) + " | hpak ÷ passthrough_ll |" + (" hpak-off ÷ passthrough_ll |" if off else ""))
print("|---|" + "---|" * (len(arms) + 1 + bool(off)))
for op in ops:
    m = {a: statistics.median(res[(a, op)]) for a in arms}
    print(f"| {op} | " + " | ".join(f"{m[a]:,.0f}" for a in arms) + f" | {m['hpak']/m['passthrough_ll']:.2f}× |"
          + (f" {m['hpak-off']/m['passthrough_ll']:.2f}× |" if off else ""))
PY
