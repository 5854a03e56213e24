#!/usr/bin/env python3
"""Render bench/RESULTS.md from the JSON of `hpak bench --save` (bench/run-all.sh).

  render_results.py --results results.json --tables tables.md [--commit C] [--args A]
                    [--real real.json --real-tables real.md --real-corpus TEXT]

Writes markdown on stdout: how to reproduce, the environment and load, the
targets, a compact table of the headline figures, the analysis (computed from
the numbers: every claim below is a sentence built from the medians of this
run, so it cannot drift from them), and the full tables `hpak bench` printed.
"""
import argparse
import json
import math
import sys


def load(p):
    with open(p) as f:
        return json.load(f)


class Run:
    def __init__(self, r):
        self.r = r
        self.rows = r["rows"]

    def row(self, suite, group, medium, tool):
        for x in self.rows:
            if x["suite"] == suite and x["group"] == group and x["medium"] == medium and x["tool"] == tool:
                return x
        return None

    def med(self, *k):
        x = self.row(*k)
        if not x or x["median"] is None or x.get("error"):
            return None
        return x["median"]

    def metric(self, key, *k):
        x = self.row(*k)
        if not x:
            return None
        return x["metrics"].get(key)

    def media(self):
        return [m["name"] for m in self.r["environment"]["media"]]

    def art_medium(self):
        return "disk" if "disk" in self.media() else "tmpfs"

    def corpus(self, name):
        for c in self.r["corpora"]:
            if c["name"] == name:
                return c
        return None


def s(v, unit=" s"):
    if v is None:
        return "–"
    if v < 0.01:
        return "%.4f%s" % (v, unit)
    if v < 1:
        return "%.3f%s" % (v, unit)
    return "%.2f%s" % (v, unit)


def x(v):
    return "–" if v is None else ("%.2f×" % v)


def n(v):
    return "–" if v is None else "{:,.0f}".format(v)


def mb(v):
    return "–" if v is None else ("%.1f MB" % (v / 1e6))


def faster(base, h):
    """'2.10× faster' / '1.30× slower': base time against hpak's."""
    if base is None or h is None or h == 0 or base == 0:
        return "–"
    return ("%.2f× faster" % (base / h)) if base >= h else ("%.2f× slower" % (h / base))


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def rng(run, *k):
    r = run.row(*k)
    if not r or not r["samples"] or r.get("error"):
        return "–"
    return "%s (%s–%s, n=%d)" % (s(r["median"], ""), s(r["min"], ""), s(r["max"], ""), r["n"])


def cpu(run, *k):
    u, sy = run.metric("cpu_user_s", *k), run.metric("cpu_sys_s", *k)
    if u is None:
        return None
    return u + sy


def environment(run, label):
    e = run.r["environment"]
    out = []
    out.append("- **%s**: started %s, %d s in all" % (label, run.r["started"], run.r["seconds"]))
    out.append("- CPU: %s, %d CPUs online; %s; %.1f GiB RAM" % (e["cpu"], e["cpus"], e["kernel"], e["mem_bytes"] / 2**30))
    ls, le = e["load_start"], e["load_end"]
    out.append("- **load average** (1/5/15 min): %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end — "
               "other engineers' builds and tests were running; with %d CPUs, a load of %.0f means each runnable "
               "thread got roughly %.0f%% of a CPU" % (ls[0], ls[1], ls[2], le[0], le[1], le[2], e["cpus"],
                                                       (ls[0] + le[0]) / 2, min(100, 100 * e["cpus"] / max(1, (ls[0] + le[0]) / 2))))
    for m in e["media"]:
        out.append("- %s: `%s` → %s on `%s` (%s; %s)" % (m["name"], m["root"], m["fstype"], m["mount_point"], m["device"], m["options"]))
    out.append("- threads: %d for every tool that takes -j; runs: %d per arm, interleaved (rep *r* starts with arm *r* mod *n*)"
               % (e["threads"], e["runs"]))
    out.append("- hpak: `%s` (%s)" % (e["hpak"], e["hpak_version"]))
    for k, v in e["tools"].items():
        out.append("- %s: %s" % (k, v))
    for c in run.r["corpora"]:
        out.append("- corpus **%s**: %s files, %s dirs, %s symlinks, %s — `%s`" % (c["name"], n(c["files"]), n(c["dirs"]),
                                                                               n(c["symlinks"]), mb(c["bytes"]), c["origin"]))
    return "\n".join(out)


def targets(run):
    out = ["| target | measured | limit | result | from |", "|:--|--:|--:|:--|:--|"]
    for t in run.r["targets"]:
        v = "–" if t["value"] is None else ("%.3g %s" % (t["value"], t["unit"]))
        res = "not measured" if not t["measured"] else ("pass" if t["pass"] else "**FAIL**")
        out.append("| %s | %s | %s %.3g | %s | %s |" % (t["name"], v, t["op"], t["limit"], res, t["detail"]))
    return "\n".join(out)


def headline(run):
    """One compact table: case, hpak, baseline, ceiling/peer, ratios."""
    out = ["| case | hpak (median s) | baseline (median s) | hpak vs baseline | ceiling / peer | hpak vs it |",
           "|:--|--:|--:|--:|--:|--:|"]

    def line(case, h, b, c=None, cname=""):
        hv, bv = run.med(*h), run.med(*b) if b else None
        cv = run.med(*c) if c else None
        sp = faster(bv, hv)
        out.append("| %s | %s | %s | %s | %s | %s |" % (case, s(hv, ""), s(bv, "") + (" (%s)" % b[3] if b else ""), sp,
                                                      (s(cv, "") + " (" + cname + ")") if c else "–", x(ratio(hv, cv)) if c else "–"))

    for m in run.media():
        line("fresh restore, %s" % m, ("restore", "fresh", m, "hpak restore"), ("restore", "fresh", m, "rcc-style restore"),
             ("restore", "fresh", m, "ceiling (write only)"), "ceiling")
        line("churn restore, %s" % m, ("restore", "churn", m, "hpak restore"), ("restore", "churn", m, "rcc-style restore"),
             ("restore", "churn", m, "ceiling (write only)"), "ceiling")
        line("unpack into an empty dir, %s" % m, ("restore", "unpack", m, "hpak unpack"), ("restore", "unpack", m, "tar --zstd -xf"),
             ("restore", "unpack", m, "hpak unpack --no-verify"), "hpak --no-verify")
        line("no-op restore, %s" % m, ("restore", "dirty 0%", m, "hpak restore"), ("restore", "dirty 0%", m, "rcc-style restore-over"),
             ("restore", "dirty 0%", m, "git status"), "git status")
        for p in (1, 10):
            line("%d%% dirty restore, %s" % (p, m), ("restore", "dirty %d%%" % p, m, "hpak restore"),
                 ("restore", "dirty %d%%" % p, m, "rcc-style restore-over"), ("restore", "dirty %d%%" % p, m, "git checkout -f"),
                 "git checkout -f")
    am = run.art_medium()
    for p in ("rcc", "user", "smallfile", "packfs"):
        if run.row("pack", "pack " + p, am, "hpak pack"):
            line("pack %s" % p, ("pack", "pack " + p, am, "hpak pack"), ("pack", "pack " + p, am, "tar --zstd -cf"))
    for m in run.media():
        for p in ("packfs", "rcc", "user"):
            if run.row("read", "random read " + p, m, "raw fs: open/read/close"):
                line("random read %s, %s" % (p, m), ("read", "random read " + p, m, "pack: find + read (SHA-256 checked)"),
                     ("read", "random read " + p, m, "raw fs: open/read/close"),
                     ("read", "random read " + p, m, "pack: find + read, no SHA-256"), "pack, no SHA-256")
    sha = [r for r in run.rows if r["suite"] == "verify" and r["role"] == "baseline"]
    if sha:
        line("verify", ("verify", "verify", "", "hpak verify"), ("verify", "verify", "", sha[0]["tool"]))
    return "\n".join(out)


def analysis(run):
    P = []
    media = run.media()
    rcc = run.corpus("rcc") or run.corpus("user")
    files = rcc["files"] if rcc else 0

    # ---- fresh restore
    for m in media:
        h = run.med("restore", "fresh", m, "hpak restore")
        b = run.med("restore", "fresh", m, "rcc-style restore")
        c = run.med("restore", "fresh", m, "ceiling (write only)")
        if h is None:
            continue
        hc = cpu(run, "restore", "fresh", m, "hpak restore")
        cc = cpu(run, "restore", "fresh", m, "ceiling (write only)")
        bc = cpu(run, "restore", "fresh", m, "rcc-style restore")
        u = run.med("restore", "unpack", m, "hpak unpack")
        nv = run.med("restore", "unpack", m, "hpak unpack --no-verify")
        t = run.med("restore", "unpack", m, "tar --zstd -xf")
        txt = ("**Fresh restore on %s.** `hpak restore` took %s against %s for the rcc-style restore (%s; the "
               "target is 5× faster) and %s for the ceiling (%s its time; the target is ≤ 1.3×). " %
               (m, s(h), s(b), faster(b, h), s(c), x(ratio(h, c))))
        if hc is not None and cc is not None:
            txt += ("hpak used %s of CPU (user + system, both threads) per restore; the ceiling's *whole process* used %s "
                    "— and most of that is reading the corpus into memory, which its printed write-phase time excludes. " %
                    (s(hc), s(cc)))
        nvr = run.med("restore", "fresh", m, "hpak restore --no-verify")
        raw = run.med("restore", "fresh", m, "hpak restore --no-verify, -l 0 library")
        dec = run.med("restore", "CPU work per restore (1 thread)", "", "zstd decode of every object")
        sha = run.med("restore", "CPU work per restore (1 thread)", "", "SHA-256 of every object")
        both = run.med("restore", "CPU work per restore (1 thread)", "", "decode + SHA-256 (what restore does per object)")
        if nvr is not None or raw is not None:
            txt += ("Taking the work away piece by piece: without the SHA-256 check (`--no-verify`) %s; without it and "
                    "from a library stored uncompressed (`pack -l 0`) %s. " % (s(nvr), s(raw)))
        if both is not None:
            txt += ("In-process on one thread, decoding every object of the pack takes %s, hashing the decoded bytes %s, "
                    "both together (what restore does per object) %s — about %s per thread when spread over %d. " %
                    (s(dec), s(sha), s(both), s(both / run.r["environment"]["threads"]), run.r["environment"]["threads"]))
        if m == "tmpfs":
            txt += ("On tmpfs a write is a copy into the page cache, so the ceiling measures almost pure syscall cost, "
                    "while hpak also decompresses every object with zstd, computes its SHA-256 (the restore verifies "
                    "by default), patches the relocated files, loads and checks the catalog and writes its state file. "
                    "That is work the ceiling does not do. ")
            if raw is not None and h > c:
                share = max(0.0, min(1.0, (h - raw) / (h - c)))
                txt += ("Of the %s between hpak and the ceiling, %.0f%% goes away with neither SHA-256 nor zstd (the "
                        "`-l 0 --no-verify` row): %s. " %
                        (s(h - c), 100 * share,
                         "the restore on tmpfs is CPU-bound on zstd decompression + SHA-256 verification"
                         if share >= 0.5 else
                         "decoding and hashing are not most of it; the rest is hpak's fixed cost (process start, library "
                         "and catalog loading, relocation, the state file) and per-file work on 2 loaded cores"))
            txt += (
                    "The figure in the targets is `hpak restore` as shipped, verification included; the ceiling bounds "
                    "what any tool can do with bytes already decoded and trusted, and is not a like-for-like peer. ")
            if nv and u:
                txt += ("The same split shows in the unpack rows: `hpak unpack` %s, `--no-verify` %s, "
                        "`tar --zstd -xf` %s. " % (s(u), s(nv), s(t)))
        else:
            txt += ("On ext4 (no journal, mounted with `discard`, no fsync by anyone) the kernel's own work per file — "
                    "inode and block allocation, directory insertion — is larger, so the ceiling is further from zero and "
                    "hpak's decoding overlaps with it across 2 threads.")
        P.append(txt)

    # ---- churn
    for m in media:
        h = run.med("restore", "churn", m, "hpak restore")
        hf = run.med("restore", "fresh", m, "hpak restore")
        c = run.med("restore", "churn", m, "ceiling (write only)")
        cf = run.med("restore", "fresh", m, "ceiling (write only)")
        b = run.med("restore", "churn", m, "rcc-style restore")
        if h is None:
            continue
        P.append("**Churn on %s** (the previous tree at the same path was `rm -rf`'d just before, and on disk `sync`'d): hpak %s (fresh: %s), "
                 "rcc-style %s, ceiling %s (fresh: %s). %s" %
                 (m, s(h), s(hf), s(b), s(c), s(cf),
                  "On ext4 every tool pays for creating inodes right after freeing many (the reference notes 5–6 s for "
                  "18k files there); restoring in place — a dirty restore — avoids the deletion altogether."
                  if m == "disk" else "tmpfs has no such penalty: churn and fresh are the same within the noise."))

    # ---- dirty
    for m in media:
        h0 = run.med("restore", "dirty 0%", m, "hpak restore")
        gs = run.med("restore", "dirty 0%", m, "git status")
        h1 = run.med("restore", "dirty 1%", m, "hpak restore")
        g1 = run.med("restore", "dirty 1%", m, "git checkout -f")
        h10 = run.med("restore", "dirty 10%", m, "hpak restore")
        g10 = run.med("restore", "dirty 10%", m, "git checkout -f")
        r1 = run.med("restore", "dirty 1%", m, "rcc-style restore-over")
        if h0 is None:
            continue
        txt = ("**Dirty targets on %s.** A no-op restore (nothing changed) took %s against %s for `git status` (%s); "
               "1%% changed: hpak %s, `git checkout -f` %s (%s), the rcc-style restore-over %s (it rewrites everything); "
               "10%% changed: hpak %s, git %s (%s). " %
               (m, s(h0), s(gs), x(ratio(h0, gs)), s(h1), s(g1), x(ratio(h1, g1)), s(r1), s(h10), s(g10), x(ratio(h10, g10))))
        txt += ("Both sides stat every file: git against its index, hpak against its state file "
                "(readdir + fstatat per directory, in parallel). hpak is a fresh process that opens the library, maps "
                "the pack index and loads and checks the catalog (%s files) before the first stat, so on a small change "
                "its fixed cost dominates; git's is reading one index file. As the change grows, the per-file rewrite "
                "cost takes over and hpak's parallel writes pull ahead." % n(files))
        P.append(txt)

    # ---- syscalls
    sc = [r for r in run.rows if r["group"] == "syscalls" and not r.get("error")]
    if sc:
        parts = ["%s %.2f" % (r["tool"], r["metrics"]["syscalls_per_file"]) for r in sc if "syscalls_per_file" in r["metrics"]]
        P.append("**Syscalls per file** (one `strace -f -c` run each; every thread and child, process start-up, library "
                 "and catalog loading, directory creation included; divided by the corpus's %s regular files): %s. "
                 "A fresh hpak restore is openat + write + close per file plus one mkdirat per directory and a fixed "
                 "start-up; the rcc-style restore adds read of the object, rename, chmod and utimensat per file." %
                 (n(files), "; ".join(parts)))

    # ---- pack
    am = run.art_medium()
    for p in ("rcc", "user", "smallfile", "packfs"):
        h = run.row("pack", "pack " + p, am, "hpak pack")
        t = run.row("pack", "pack " + p, am, "tar --zstd -cf")
        if not h or not t or h["median"] is None or t["median"] is None:
            continue
        hs, ts = h["metrics"].get("output_bytes"), t["metrics"].get("output_bytes")
        txt = ("**Pack %s** (%s files, %s): hpak %s (%.1f µs/file, %s MB/s), tar --zstd %s (%.1f µs/file): %s; "
               "size %s vs %s (%s). " %
               (p, n(h["count"]), mb(h["bytes"]), s(h["median"]), h["us_each"], n(h["mb_per_s"]), s(t["median"]), t["us_each"],
                x(ratio(h["median"], t["median"])) + " the time", mb(hs), mb(ts), x(ratio(hs, ts))))
        hc = cpu(run, "pack", "pack " + p, am, "hpak pack")
        tc = cpu(run, "pack", "pack " + p, am, "tar --zstd -cf")
        if hc is not None and tc is not None:
            txt += "CPU: hpak %s, tar + zstd %s. " % (s(hc), s(tc))
        if p in ("rcc", "user"):
            txt += ("hpak hashes every file (SHA-256) to name it, compresses each distinct content on its own, scans "
                    "every file for the environment's path (relocation), and writes an index and a catalog; tar streams "
                    "one solid zstd frame. Independent objects cost size (the reference measured 1.20× for per-file "
                    "zstd -3 on a similar corpus) and buy random access, deduplication and per-object verification.")
        elif p == "smallfile":
            txt += ("4 KiB files of generated text compress well *together* (tar's solid stream sees the shared "
                    "vocabulary across files) and poorly alone: per-object compression is where the size goes.")
        else:
            txt += ("128-byte files are the worst case for per-object storage: each carries an entry header, an index "
                    "record (40 B) and a digest (32 B), and 128 bytes do not compress alone; tar's 512-byte headers are "
                    "mostly zeros and vanish in the solid stream. LayerFS's commit of the same kind of tree costs 104 µs/file.")
        P.append(txt)
    f = run.row("pack", "pack --into, second env sharing 90%", am, "hpak pack --into (second env, 90% shared)")
    if f and f["metrics"].get("written_vs_first") is not None:
        P.append("**Adding a second environment** that shares 90%% of its files with one already in the library wrote "
                 "%s, %.1f%% of the first's %s (the target is ≤ 15%%): only the objects the library lacks, plus the catalog."
                 % (mb(f["metrics"]["pack_bytes"]), 100 * f["metrics"]["written_vs_first"], mb(f["metrics"]["first_pack_bytes"])))

    # ---- read
    for p in ("packfs", "rcc", "user"):
        for m in media:
            h = run.row("read", "random read " + p, m, "pack: find + read (SHA-256 checked)")
            nv = run.row("read", "random read " + p, m, "pack: find + read, no SHA-256")
            b = run.row("read", "random read " + p, m, "raw fs: open/read/close")
            if not h or not b or h["median"] is None or b["median"] is None:
                continue
            P.append("**Random reads, %s, %s**: through the pack %s reads/s with the SHA-256 check, %s without, against "
                     "%s reads/s for open/read/close of the same files (PackFS measured 2.4M vs 121K for 128-byte "
                     "entries). %s" %
                     (p, m, n(h["per_second"]), n(nv["per_second"]) if nv else "–", n(b["per_second"]),
                      "A pack read is a binary search in the mapped index plus a zstd decode (and a hash) in user space; "
                      "a file read is three syscalls and a path walk. Small objects favour the pack; large ones are "
                      "bound by decompression, which the page-cache copy of a plain file does not pay."
                      if p != "packfs" else
                      "For 128-byte objects the pack avoids three syscalls and a path lookup per read; what remains is "
                      "the index search, the XXH3 of the stored bytes and, when checked, one SHA-256 of 128 bytes."))

    # ---- verify
    v = run.row("verify", "verify", "", "hpak verify")
    if v and v["median"]:
        sha = [r for r in run.rows if r["suite"] == "verify" and r["role"] == "baseline" and r["median"]]
        z = run.row("verify", "verify", "", "zstd -t (.tar.zst)")
        txt = ("**Verify**: `hpak verify` checked %s of object content in %s (%s MB/s; the target is ≥ 1 GB/s): trailer, "
               "index, every object's XXH3, its zstd decoding and its SHA-256, and the catalog. " %
               (mb(v["bytes"]), s(v["median"]), n(v["mb_per_s"])))
        if sha:
            txt += "sha256sum over the unpacked files (%s): %s (%s MB/s), with nothing to decompress. " % (
                mb(sha[0]["bytes"]), s(sha[0]["median"]), n(sha[0]["mb_per_s"]))
        if z and z["median"]:
            txt += "`zstd -t` of the .tar.zst (frame checksums only): %s. " % s(z["median"])
        dec = run.row("restore", "CPU work per restore (1 thread)", "", "zstd decode of every object")
        sha1 = run.row("restore", "CPU work per restore (1 thread)", "", "SHA-256 of every object")
        if dec and sha1 and dec["mb_per_s"] and sha1["mb_per_s"]:
            txt += ("For scale, in-process on one thread of this machine during the run: zstd decoding %s MB/s, SHA-256 "
                    "%s MB/s; verify needs both for every byte, over %d threads, on cores shared with the load."
                    % (n(dec["mb_per_s"]), n(sha1["mb_per_s"]), run.r["environment"]["threads"]))
        P.append(txt)

    # ---- gc
    for p in ("packfs", "rcc", "user"):
        g = run.row("gc", "repack 50% garbage " + p, am, "verbatim copy (gc copy phase)")
        w = run.row("gc", "repack 50% garbage " + p, am, "hpak gc")
        if not g or not g["samples"]:
            continue
        P.append("**Repack, %s, 50%% garbage**: the verbatim copy of %s live objects (%s) took %s: %s objects/s, %s MB/s "
                 "(target for small objects: ≥ 1M/s); the whole `hpak gc` command took %s. The copy moves stored bytes "
                 "as they are (no recompression, no rehash: the XXH3 of each entry is checked), so it runs at memory "
                 "speed; `copy_seconds` is printed in milliseconds, which limits the precision for small libraries." %
                 (p, n(g["count"]), mb(g["bytes"]), s(g["median"]), n(g["per_second"]), n(g["mb_per_s"]), s(w["median"] if w else None)))
    for r in run.rows:
        if r["suite"] == "gc" and r["group"].endswith("small packs: lookups") and r["role"] == "baseline":
            grp = r["group"]
            a = [q for q in run.rows if q["group"] == grp and q["role"] == "hpak"]
            lo_b = run.row("gc", grp, r["medium"], "lookup only, before gc")
            lo_a = run.row("gc", grp, r["medium"], "lookup only, after gc")
            if a:
                P.append("**Many small packs**: %s (%s outside the multi-pack index) became %s after gc. Random lookup + "
                         "read: %s/s before, %s/s after; lookup alone: %s/s before, %s/s after. The library folds packs "
                         "into the midx once more than 8 are outside it, so lookups stay O(log n) before gc too; gc "
                         "reduces files, mappings and per-pack overhead." %
                         (n(r["metrics"].get("packs")), n(r["metrics"].get("packs_outside_midx")), n(a[0]["metrics"].get("packs")),
                          n(r["per_second"]), n(a[0]["per_second"]), n(lo_b["per_second"] if lo_b else None),
                          n(lo_a["per_second"] if lo_a else None)))
    return "\n\n".join(P)


def wins_losses(run):
    win, lose = [], []
    for t in run.r["targets"]:
        if not t["measured"]:
            continue
        (win if t["pass"] else lose).append("%s: %.3g %s (limit %s %.3g) — %s" % (t["name"], t["value"], t["unit"], t["op"], t["limit"], t["detail"]))
    return win, lose


def demote(md):
    """The tables hpak bench printed, headings pushed down two levels."""
    out = []
    for line in md.splitlines():
        if line.startswith("#"):
            line = "##" + line
        out.append(line)
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--tables", required=True)
    ap.add_argument("--commit", default="")
    ap.add_argument("--args", default="")
    ap.add_argument("--real")
    ap.add_argument("--real-tables")
    ap.add_argument("--real-corpus", default="")
    a = ap.parse_args()
    run = Run(load(a.results))
    real = Run(load(a.real)) if a.real else None
    o = []
    w = o.append
    w("# hpak benchmark results\n")
    w("Generated by `bench/run-all.sh` (which ran `hpak bench%s` and, for the real environment, "
      "`hpak bench --corpus … --suite restore,pack,verify`) at commit %s. Do not edit by hand: rerun the script. "
      "The analysis below is built from this run's medians.\n" % ((" " + a.args) if a.args else "", a.commit or "?"))
    w("## Reproduce\n")
    w("```sh\nbench/run-all.sh                 # Release build in /tmp/build-bench, ~30 min, rewrites this file\n"
      "hpak bench                       # the same suites, tables on stdout\n"
      "hpak bench --corpus DIR -s restore   # on your own tree\n"
      "hpak bench --json > result.json  # for dashboards\n"
      "bench/peers.sh DIR               # tar/squashfs/cp/rsync/git on one tree\n```\n")
    w("## Environment and load\n")
    w(environment(run, "generated corpora"))
    if real:
        w(environment(real, "real environment").split("\n", 1)[0])
        e = real.r["environment"]
        w("- real environment run: load %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end" %
          tuple(e["load_start"] + e["load_end"]))
    w("\n**How to read the figures.** Every measured command is a subprocess timed from spawn to exit (start-up "
      "included), hpak as much as the baselines. Arms of one comparison run interleaved, so a load spike hits all of "
      "them alike; medians of %d runs with min–max. Page cache warm, nothing fsync'd. The machine was shared and "
      "busy: absolute times are inflated and noisy, the ratios between interleaved arms are the figures to trust.\n"
      % run.r["environment"]["runs"])
    w("## The targets (issues 2 and 3)\n")
    w(targets(run) + "\n")
    if real:
        w("Real environment:\n")
        w(targets(real) + "\n")
    w("## Headline figures\n")
    w(headline(run) + "\n")
    if real:
        w("Real environment (%s):\n" % a.real_corpus)
        w(headline(real) + "\n")
    w("## What the numbers mean\n")
    win, lose = wins_losses(run)
    w("### Where hpak meets its targets\n")
    w("\n".join("- " + t for t in win) if win else "- none in this run")
    w("\n### Where hpak falls short, and why\n")
    w("\n".join("- " + t for t in lose) if lose else "- none in this run")
    w("\n### Case by case (generated corpora)\n")
    w(analysis(run) + "\n")
    if real:
        w("### Case by case (real environment)\n")
        w(analysis(real) + "\n")
    w("### Read with care\n")
    w("- **Load.** See the load averages above: the runs shared 2 CPUs with other work. CPU-bound arms (hpak's "
      "decode + hash, tar's zstd, sha256sum) stretch with the load more than syscall-bound ones, so hpak's ratios to "
      "the ceiling are pessimistic here; compare with `/work/shared/reference/peer-baseline.md`-style quiet-machine runs "
      "before drawing absolute conclusions.\n"
      "- **The rcc-style baseline is a model** (`bench/rcc_baseline.cpp`): gzip-1 loose objects and the per-file "
      ".part/rename/chmod/utime dance of rcc's holotree, not rcc itself. Its restore-over rewrites every file (it has no "
      "change detection), and its symlinks are removed before each dirty run because it recreates them with symlink(2).\n"
      "- **The ceiling** writes from memory and reports only its write phase; it does not decompress, hash, relocate, "
      "keep mtimes or hardlinks. It bounds what is possible; it is not a peer.\n"
      "- **git** runs on the same tree committed in a repository inside it; `git checkout -f` does not restore mtimes. "
      "git keeps ctimes in whole seconds: a same-size edit with the mtime put back *in the same second* as the index "
      "entry goes unseen; the bench starts changing files a second after `git add`.\n"
      "- **Disk** is ext4 without a journal, mounted with `discard`; nothing is fsync'd by any tool, and `sync` (untimed) "
      "runs before each disk sample. The fresh, unpack and dirty trees on disk are kept until the end of the run so no "
      "measurement follows a mass deletion; churn runs last.\n"
      "- **Syscall counts** come from one run under strace each and include process start-up and library loading, "
      "which matters for small corpora.\n"
      "- **In-process rows** (random read, library lookups) are single-threaded loops in the bench process after one "
      "warm-up pass; they measure the pack format and the reader, not process start-up.\n")
    w("## Full tables: generated corpora\n")
    w(demote(open(a.tables).read()) + "\n")
    if real and a.real_tables:
        w("## Full tables: real environment\n")
        w(a.real_corpus + "\n")
        w(demote(open(a.real_tables).read()) + "\n")
    sys.stdout.write("\n".join(o))


if __name__ == "__main__":
    main()
