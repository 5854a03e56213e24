#!/usr/bin/env python3
"""Crash states of a library: does what hpak reported stored survive a power loss?

Runs `pack --into` (into an existing library, over an existing name, and
creating a new library), `gc` and `repair` once each under the crashlog shim
(tests/faults/crashlog.c), which records every create, mkdir, rename, link,
unlink and fsync in the folder holding the library (and, at each fsync, the
file's content).
Then it enumerates every state a power loss could leave, under a pessimistic
persistence model:

  * The library as it was before the operation is durable.
  * Data: a file's content survives only as of its last fsync before the
    crash; a file never fsync'd is empty (its data was never written back)
    or, in a second variant of each state, truncated to half its length
    (part of it was written back).
  * Metadata (create, mkdir, rename, link, unlink) persists in order: the
    state keeps a prefix of the operation's metadata operations. A crash after
    k operations keeps any prefix of those k, but at least every operation on
    a directory that was fsync'd (fsync of the directory) before the crash,
    and with it every earlier operation. The library folder's own entry in
    its parent (a new library) is not ordered with them: it is durable only
    once the parent folder is fsync'd; until then a crash may keep it or not.
    A folder whose own entry is lost takes everything beneath it along.
  * Success is reported when the process exits 0: a crash "after" the
    operation (k = all) still keeps only the durable prefix.

Every distinct state is materialised in a scratch directory and checked: the
library passes `hpak verify`, or `hpak repair` fixes it (and `hpak verify`
passes after it); a state with no library marker and no name reported yet
must accept `hpak init` (what a re-run of the add starts with); then every
name that
restored before the operation (and the name an add reported, once reported)
restores exactly, and `hpak gc` finishes. The first failing state is printed
with the operations it kept.

usage: crash_states.py HPAK CRASHLOG_SO WORKDIR [SCENARIO...]
scenarios: add, add-replace, add-new, gc, repair (default: all)
"""
import concurrent.futures
import hashlib
import os
import shutil
import stat
import subprocess
import sys

HPAK, SHIM, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
WANT = sys.argv[4:] or ["add", "add-replace", "add-new", "gc", "repair"]
ENV = dict(os.environ)
ENV["ASAN_OPTIONS"] = (ENV.get("ASAN_OPTIONS", "") + ":detect_leaks=0:verify_asan_link_order=0").lstrip(":")
ENV.pop("HPAK_FSYNC", None)
JOBS = int(os.environ.get("CRASH_STATES_JOBS", "2"))


def hpak(*args, check=True, env=None):
    r = subprocess.run([HPAK, "-q", *args], capture_output=True, text=True, env=env or ENV)
    if check and r.returncode != 0:
        raise RuntimeError(f"hpak {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


# ---- trees -----------------------------------------------------------------

def make_tree(root, seed, files=6, shared_with=None):
    """A small tree of every node type; `shared_with` files are copied in too."""
    os.makedirs(root)
    os.makedirs(f"{root}/sub/deep")
    for i in range(files):
        data = hashlib.sha256(f"{seed}-{i}".encode()).digest() * (20 + 37 * i)
        with open(f"{root}/{'sub/' if i % 2 else ''}f{seed}-{i}", "wb") as f:
            f.write(data)
    with open(f"{root}/sub/deep/x{seed}.sh", "w") as f:
        f.write(f"#!/bin/sh\necho {seed}\n")
    os.chmod(f"{root}/sub/deep/x{seed}.sh", 0o755)
    os.symlink(f"sub/deep/x{seed}.sh", f"{root}/link")
    if shared_with:
        for name, data in shared_with.items():
            with open(f"{root}/{name}", "wb") as f:
                f.write(data)


def tree_sig(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for n in sorted(dirnames + filenames):
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            if rel == ".hpak-state" or rel.startswith(".tmp.hpak-state"):
                continue
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out.append((rel, "l", os.readlink(p)))
            elif stat.S_ISDIR(st.st_mode):
                out.append((rel, "d", oct(st.st_mode & 0o7777)))
            else:
                with open(p, "rb") as f:
                    out.append((rel, "f", oct(st.st_mode & 0o7777), hashlib.sha256(f.read()).hexdigest()))
    return out


# ---- the library as files ---------------------------------------------------

def snapshot(root):
    """dirs, {path: content} of a directory tree (absolute paths)."""
    dirs, files = set(), {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirs.add(dirpath)
        for n in filenames:
            p = os.path.join(dirpath, n)
            with open(p, "rb") as f:
                files[p] = f.read()
    return dirs, files


def parent(p):
    return os.path.dirname(p)


METADATA = {"create", "mkdir", "rename", "link", "unlink", "rmdir"}


class Recording:
    """The operation log of one command over `base` (dirs, {path: content}),
    with each file's identity resolved (what a rename or link carries)."""

    def __init__(self, lib, base, final, log, blobs):
        self.lib = lib
        dirs, files = base
        self.base_dirs = set(dirs)
        self.base_files = {}  # id -> content
        ns = {}
        for p, data in files.items():
            ns[p] = len(ns) + 1
            self.base_files[ns[p]] = data
        self.base_ns = dict(ns)
        next_id = [len(ns)]

        def new_id():
            next_id[0] += 1
            return next_id[0]

        self.ops = []  # (kind, arg, extra, directories whose entries it changes)
        ino_id = {}
        for line in open(log).read().splitlines():
            f = line.split("\t")
            kind = f[0]
            if kind == "create":
                p, ino = f[1], f[2]
                if p not in ns:
                    ns[p] = new_id()
                    self.ops.append(("create", p, ns[p], {parent(p)}))
                ino_id[ino] = ns[p]
            elif kind == "mkdir":
                self.ops.append(("mkdir", f[1], None, {parent(f[1])}))
            elif kind in ("rename", "link"):
                a, b = f[1], f[2]
                i = ns.get(a)
                if i is None:
                    continue  # not a file of the library
                if kind == "rename":
                    del ns[a]
                ns[b] = i
                self.ops.append((kind, (a, b), i, {parent(a), parent(b)}))
            elif kind == "unlink":
                if f[1] in ns:
                    del ns[f[1]]
                    self.ops.append(("unlink", f[1], None, {parent(f[1])}))
            elif kind == "rmdir":
                self.ops.append(("rmdir", f[1], None, {parent(f[1])}))
            elif kind == "fsync":
                i = ino_id.get(f[2]) or ns.get(f[1])
                if i is not None:
                    with open(os.path.join(blobs, f[3]), "rb") as b:
                        self.ops.append(("fsync", f[1], (i, b.read()), set()))
            elif kind == "dsync":
                self.ops.append(("dsync", f[1], None, set()))
            elif kind == "sync":
                self.ops.append(("sync", None, None, set()))
        # What each file held when the command ended (its content at a crash
        # before any fsync, for the half-written variant), by identity.
        self.final_files = {ns[p]: c for p, c in final[1].items() if p in ns}

    def inner(self, op):
        """Does `op` change an entry inside the library (not its own entry)?"""
        return any(d == self.lib or d.startswith(self.lib + "/") for d in op[3])

    def crash_states(self):
        """Yields (k, kept metadata ops, state) for every crash point k, durable
        prefix, fate of the library's own entry and data variant."""
        meta = []   # indices into ops of metadata ops inside the library, in order
        lo = 0      # metadata ops [0, lo) are durable
        outer = []  # indices of ops on the library's own entry (in its parent)
        outer_durable = 0  # outer ops [0, outer_durable) are durable
        data = {}   # id -> content as of its last fsync
        n = len(self.ops)
        for k in range(n + 1):
            if k > 0:
                kind, arg, extra, touched = self.ops[k - 1]
                if kind in METADATA:
                    (meta if self.inner(self.ops[k - 1]) else outer).append(k - 1)
                elif kind == "fsync":
                    data[extra[0]] = extra[1]
                elif kind == "dsync":
                    for m in range(len(meta)):
                        if arg in self.ops[meta[m]][3]:
                            lo = max(lo, m + 1)
                    for m in range(len(outer)):
                        if arg in self.ops[outer[m]][3]:
                            outer_durable = max(outer_durable, m + 1)
                elif kind == "sync":
                    lo, outer_durable = len(meta), len(outer)
            for j in range(lo, len(meta) + 1):
                for o in sorted({outer_durable, len(outer)}):
                    kept = [self.ops[m] for m in sorted(meta[:j] + outer[:o])]
                    for half in (False, True):
                        yield k, j, self.state(kept, data, half)

    def state(self, kept, data, half):
        ns = dict(self.base_ns)
        dirs = set(self.base_dirs)
        for kind, arg, i, _ in kept:
            if kind == "create":
                ns[arg] = i
            elif kind == "mkdir":
                dirs.add(arg)
            elif kind == "rmdir":
                dirs.discard(arg)
            elif kind == "rename":
                ns[arg[1]] = ns.pop(arg[0])
            elif kind == "link":
                ns[arg[1]] = ns[arg[0]]
            elif kind == "unlink":
                ns.pop(arg, None)
        root = parent(self.lib)
        reachable = {root}
        for d in sorted(dirs, key=len):  # a folder whose entry is lost takes its contents along
            if parent(d) in reachable:
                reachable.add(d)
        dirs = reachable - {root}
        files = {}
        for p, i in ns.items():
            if parent(p) not in dirs:
                continue
            if i in data or i in self.base_files:
                files[p] = data.get(i, self.base_files.get(i))
            else:  # never fsync'd: nothing written back, or half of it
                c = self.final_files.get(i, b"") if half else b""
                files[p] = c[: len(c) // 2]
        return frozenset(dirs), tuple(sorted((p, hashlib.sha256(c).hexdigest()) for p, c in files.items())), files


def materialise(lib, dirs, files, dest):
    shutil.rmtree(dest, ignore_errors=True)
    for d in sorted(dirs, key=len):
        os.makedirs(dest + d[len(lib):], exist_ok=True)
    for p, c in files.items():
        with open(dest + p[len(lib):], "wb") as f:
            f.write(c)


def ignorable(lib, path):
    return any(path.startswith(f"{lib}/{d}/") for d in ("tmp", "used", "locks"))


def restores(lib, name, sigs, scratch):
    t = f"{scratch}/restore"
    shutil.rmtree(t, ignore_errors=True)
    r = hpak("restore", lib, name, t, check=False)
    if r.returncode != 0:
        return f"restore of '{name}' failed: {r.stderr.strip()}"
    if tree_sig(t) not in sigs:
        return f"'{name}' restores, but not as it was added"
    return None


def check_state(lib, required, scratch, broken_ok=()):
    """None if the library is fine (or repair makes it so), else why not.
    `broken_ok`: names the operation itself may leave broken (repair of a
    damaged object), dropped before verify checks the repaired library."""
    if not required and not os.path.exists(f"{lib}/HPAKLIB"):
        # Nothing reported yet and no library: a re-run of the add starts with init.
        i = hpak("init", lib, check=False)
        if i.returncode != 0:
            return f"init of what the crash left fails: {i.stderr.strip()}"
    v = hpak("verify", lib, check=False)
    if v.returncode != 0:
        hpak("repair", lib, check=False)
        for name in broken_ok:
            hpak("catalogs", "rm", lib, name, check=False)
        v2 = hpak("verify", lib, check=False)
        if v2.returncode != 0:
            said = (v2.stdout + v2.stderr).strip().splitlines()
            return f"verify fails after repair (exit {v2.returncode}): {' / '.join(said[:4])}"
    for name, sigs in required.items():
        why = restores(lib, name, sigs, scratch)
        if why:
            said = (v.stdout + v.stderr).strip().splitlines()
            return why + (f" (verify said: {' / '.join(said[:4])})" if v.returncode else "")
    g = hpak("gc", "--grace", "0", lib, check=False)
    if g.returncode != 0:
        return f"gc fails afterwards: {g.stderr.strip()}"
    for name, sigs in required.items():
        why = restores(lib, name, sigs, scratch)
        if why:
            return why + " (after gc)"
    return None


def run_scenario(name, setup, op, required_before, required_after, broken_ok=()):
    """setup(lib) builds the library; op(lib) is the command recorded."""
    base = f"{WORK}/{name}"
    lib = f"{base}/home/lib"  # home/ holds the library alone: its own entry is recorded too
    os.makedirs(f"{base}/home")
    setup(lib, base)
    log, blobs = f"{base}/ops.log", f"{base}/blobs"
    os.makedirs(blobs)
    rec_lib = os.path.realpath(lib)
    env = dict(ENV, LD_PRELOAD=SHIM, CRASHLOG_LOG=log, CRASHLOG_BLOBS=blobs, CRASHLOG_ROOT=parent(rec_lib))
    base_state = snapshot(rec_lib)  # durable: the state before the command
    open(log, "w").close()
    args, ok_codes = op(lib)
    r = subprocess.run([HPAK, "-q", *args], capture_output=True, text=True, env=env)
    if r.returncode not in ok_codes:
        raise RuntimeError(f"{name}: the recorded command failed (exit {r.returncode}): {r.stderr.strip()}")
    rec = Recording(rec_lib, base_state, snapshot(rec_lib), log, blobs)
    seen, points, todo = set(), 0, []
    n_ops = len(rec.ops)
    for k, j, (dirs, sig, files) in rec.crash_states():
        points += 1
        reported = k == n_ops
        # tmp/, used/ and locks/ change no check (temp files are invisible
        # until published, and gc removes only old ones): states differing
        # only there are one state.
        key = (frozenset(d for d in dirs if not ignorable(rec_lib, d + "/")),
               tuple(e for e in sig if not ignorable(rec_lib, e[0])), reported)
        if key in seen:
            continue
        seen.add(key)
        todo.append((k, j, dirs, files, required_after if reported else required_before))

    def check(item):
        n, (k, j, dirs, files, required) = item
        scratch = f"{base}/scratch-{n}"
        os.makedirs(scratch)
        materialise(rec_lib, dirs, files, f"{scratch}/lib")
        why = check_state(f"{scratch}/lib", required, scratch, broken_ok)
        if not why:
            shutil.rmtree(scratch)
        return k, j, why

    with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as pool:
        results = list(pool.map(check, enumerate(todo)))
    failures = [(k, j, why) for k, j, why in results if why]
    if failures:
        k, j, why = failures[0]
        kept = [o for o in rec.ops if o[0] in METADATA and rec.inner(o)][:j]
        print(f"  FAIL {name}: crash after {k} of {n_ops} operations, {j} metadata operations durable: {why}")
        for o in rec.ops[:k]:
            mark = "" if o[0] not in METADATA else ("  kept" if o in kept else "  lost" if rec.inner(o) else "  (library entry)")
            arg = o[1] if not isinstance(o[1], tuple) else " -> ".join(o[1])
            print(f"      {o[0]} {str(arg).replace(rec_lib, 'LIB')}{mark}")
    states = len(todo)
    fsyncs = sum(1 for o in rec.ops if o[0] in ("fsync", "dsync"))
    print(f"{name}: {n_ops} operations ({fsyncs} fsyncs), {points} crash points x prefixes, "
          f"{states} distinct crash states checked, {len(failures)} lose a name")
    return not failures


# ---- scenarios --------------------------------------------------------------

SHARED = {"common.txt": b"shared between trees\n" * 50}


def src(base, tag, seed, files=6):
    p = f"{base}/src-{tag}"
    make_tree(p, seed, files, SHARED)
    return p, [tree_sig(p)]


def main():
    os.makedirs(WORK, exist_ok=True)
    ok = True
    for name in WANT:
        trees = {}
        broken_ok = ()
        if name == "add":
            def setup(lib, base):
                hpak("init", lib)
                trees["a"], trees["sa"] = src(base, "a", 1)
                trees["b"], trees["sb"] = src(base, "b", 2)
                hpak("pack", trees["a"], "--into", lib, "--name", "a")
            op = lambda lib: (["pack", trees["b"], "--into", lib, "--name", "b"], [0])
            before = lambda: {"a": trees["sa"]}
            after = lambda: {"a": trees["sa"], "b": trees["sb"]}
        elif name == "add-replace":
            def setup(lib, base):
                hpak("init", lib)
                trees["a"], trees["sa"] = src(base, "a", 1)
                trees["b"], trees["sb"] = src(base, "b", 2)
                hpak("pack", trees["a"], "--into", lib, "--name", "env")
            op = lambda lib: (["pack", trees["b"], "--into", lib, "--name", "env"], [0])
            before = lambda: {"env": trees["sa"] + trees["sb"]}  # the old tree or the new one
            after = lambda: {"env": trees["sb"]}
        elif name == "add-new":
            def setup(lib, base):
                trees["a"], trees["sa"] = src(base, "a", 1)
            op = lambda lib: (["pack", trees["a"], "--into", lib, "--name", "a"], [0])  # creates the library
            before = lambda: {}
            after = lambda: {"a": trees["sa"]}
        elif name == "gc":
            def setup(lib, base):
                hpak("init", lib)
                for tag, seed in (("a", 1), ("g", 3), ("c", 4)):
                    trees[tag], trees["s" + tag] = src(base, tag, seed)
                    hpak("pack", trees[tag], "--into", lib, "--name", tag)
                hpak("catalogs", "rm", lib, "g")
            op = lambda lib: (["gc", "--grace", "0", lib], [0])
            before = after = lambda: {"a": trees["sa"], "c": trees["sc"]}
        elif name == "repair":
            def setup(lib, base):
                hpak("init", lib)
                # a: one pack; b: its own objects (one gets damaged); c: builds on b's other objects.
                trees["a"], trees["sa"] = src(base, "a", 1)
                trees["b"], trees["sb"] = src(base, "b", 2)
                p_c = f"{base}/src-c"
                shutil.copytree(trees["b"], p_c, symlinks=True)
                os.unlink(f"{p_c}/f2-0")
                with open(f"{p_c}/new.txt", "w") as f:
                    f.write("c only\n")
                trees["sc"] = [tree_sig(p_c)]
                # Format 1: the damage costs one object (in format 2 it costs its block).
                hpak("pack", trees["a"], "--into", lib, "--name", "a", "--pack-version", "1")
                hpak("pack", trees["b"], "--into", lib, "--name", "b", "--pack-version", "1")
                hpak("pack", p_c, "--into", lib, "--name", "c", "--pack-version", "1")
                damage(lib, trees["b"] + "/f2-0")
            op = lambda lib: (["repair", lib], [0, 1])  # 1: b lost an object
            before = after = lambda: {"a": trees["sa"], "c": trees["sc"]}
            broken_ok = ("b",)
        else:
            print(f"unknown scenario '{name}'")
            return 2
        ok &= run_scenario_lazy(name, setup, op, before, after, broken_ok)
    return 0 if ok else 1


def run_scenario_lazy(name, setup, op, before, after, broken_ok):
    holder = {}

    def setup2(lib, base):
        setup(lib, base)
        holder["before"], holder["after"] = before(), after()

    class Lazy(dict):
        def __init__(self, key):
            self.key = key

        def items(self):
            return holder[self.key].items()

    return run_scenario(name, setup2, op, Lazy("before"), Lazy("after"), broken_ok)


def damage(lib, path):
    """Flips the last stored byte of the object holding file `path`'s content."""
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    for p in sorted(os.listdir(f"{lib}/packs")):
        if not p.endswith(".hpak"):
            continue
        out = subprocess.run([HPAK, "index", f"{lib}/packs/{p}", "--show", "--no-write"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            f = line.split()  # digest kind codec offset stored_len raw_len
            if f and f[0] == digest:
                at = int(f[3]) + 72 + int(f[4]) - 1
                with open(f"{lib}/packs/{p}", "r+b") as pk:
                    pk.seek(at)
                    b = pk.read(1)
                    pk.seek(at)
                    pk.write(bytes([b[0] ^ 0xFF]))
                return
    raise RuntimeError(f"object of '{path}' not found")


if __name__ == "__main__":
    sys.exit(main())
