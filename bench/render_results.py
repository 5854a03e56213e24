#!/usr/bin/env python3
"""Render bench/RESULTS.md from the JSON of `hpak bench --save` (bench/run-all.sh).

  render_results.py --results results.json --tables tables.md [--commit C] [--args A]
                    [--real real.json --real-tables real.md --real-corpus TEXT]

Writes markdown on stdout: how to reproduce, the environment and load, the
targets, a compact table of the headline figures, the analysis, and the full
tables `hpak bench` printed.

Every figure is looked up by the stable id of its row or target
(`restore.fresh.tmpfs.hpak`, `pack_time.rcc`; hpak-bench(1), OUTPUT), never by
its label, so rewording a label cannot break or change the analysis. Every
fact about the machine and the media (CPUs, kernel, load, file system and
mount options, HPAK_FSYNC) is what the run recorded in its environment; a
figure the run lacks is shown as "–" or its sentence is left out.
"""
import argparse
import json
import math
import sys

FORMAT = 2  # the "hpak_bench" layout with row and target ids


def rid(*parts):
    """A row id: the non-empty parts joined by dots (as bench/suites.cpp row_id)."""
    return ".".join(p for p in parts if p)


# ---- the run ------------------------------------------------------------------


class Run:
    """One `hpak bench` result: rows and targets by id, the recorded environment."""

    def __init__(self, r, source):
        if r.get("hpak_bench", 1) < FORMAT or any("id" not in x for x in r["rows"]):
            sys.exit("render_results.py: %s has no row ids (written by an hpak bench before format %d): "
                     "rerun hpak bench" % (source, FORMAT))
        self.r = r
        self.env = r["environment"]
        self.rows = {x["id"]: x for x in r["rows"]}
        self.targets = r["targets"]

    def row(self, id):
        return self.rows.get(id)

    def med(self, id):
        x = self.row(id)
        if not x or x["median"] is None or x.get("error"):
            return None
        return x["median"]

    def metric(self, id, key):
        x = self.row(id)
        return x["metrics"].get(key) if x else None

    def cpu(self, id):
        """User + system CPU seconds (median) of a subprocess row."""
        u, sy = self.metric(id, "cpu_user_s"), self.metric(id, "cpu_sys_s")
        return None if u is None or sy is None else u + sy

    def label(self, id):
        x = self.row(id)
        return x["tool"] if x else "–"

    def rows_under(self, prefix):
        return [x for k, x in self.rows.items() if k.startswith(prefix + ".")]

    def media(self):
        return [m["name"] for m in self.env["media"]]

    def medium(self, name):
        for m in self.env["media"]:
            if m["name"] == name:
                return m
        return None

    def fstype(self, name):
        m = self.medium(name)
        return m["fstype"] if m else None

    def art_medium(self):
        """Where the corpora, packs and libraries were: disk when it was measured."""
        return "disk" if "disk" in self.media() else "tmpfs"

    def syscall_medium(self):
        """The medium of the strace rows (the first one measured)."""
        for m in self.media():
            if self.row(rid("restore", "syscalls", m, "hpak_fresh")):
                return m
        return None

    def corpus(self, name):
        for c in self.r["corpora"]:
            if c["name"] == name:
                return c
        return None

    def main_corpus(self):
        return self.corpus("rcc") or self.corpus("user")

    def threads(self):
        return self.env["threads"]

    def cpus(self):
        """The CPUs the run could use (nproc), else those online."""
        return self.env.get("cpus_usable") or self.env["cpus"]

    def load_mean(self):
        return (self.env["load_start"][0] + self.env["load_end"][0]) / 2

    def loaded(self):
        """Other work ran beside the bench: a mean 1-minute load above the CPUs."""
        return self.load_mean() > self.cpus() + 0.5

    def cores(self):
        """'2 CPUs' or '2 CPUs shared with other work (load 3.1)', as recorded."""
        txt = "%d CPU%s" % (self.cpus(), "" if self.cpus() == 1 else "s")
        return txt + (" shared with other work (mean load %.1f)" % self.load_mean() if self.loaded() else "")


def load(path):
    with open(path) as f:
        return Run(json.load(f), path)


# ---- numbers ------------------------------------------------------------------


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


def overlap_note(run, a, b):
    """'' or a note that the min–max ranges of rows a and b (ids) overlap."""
    ra, rb = run.row(a), run.row(b)
    if not ra or not rb or not ra["samples"] or not rb["samples"]:
        return ""
    if ra["min"] <= rb["max"] and rb["min"] <= ra["max"]:
        return ("the min–max ranges overlap (%s–%s s vs %s–%s s), so the ratio of medians is within this run's noise; "
                % (s(ra["min"], ""), s(ra["max"], ""), s(rb["min"], ""), s(rb["max"], "")))
    return ""


# ---- environment ----------------------------------------------------------------


def load_verdict(run):
    e = run.env
    if run.loaded():
        return ("more than the benchmark's own %d threads: other work was running; with %d CPUs, a load of %.0f means "
                "each runnable thread got roughly %.0f%% of a CPU"
                % (e["threads"], run.cpus(), run.load_mean(), 100 * run.cpus() / run.load_mean()))
    return ("no more than the benchmark's own %d threads (the 1-minute average at the start still counts the minute "
            "before it): the machine was otherwise quiet" % e["threads"])


def cpu_line(run):
    e = run.env
    usable = e.get("cpus_usable")
    cpus = "%d CPUs online" % e["cpus"] + ("" if usable is None else ", %d usable by the run" % usable)
    return "- CPU: %s, %s; %s; %.1f GiB RAM" % (e["cpu"], cpus, e["kernel"], e["mem_bytes"] / 2**30)


def load_line(run):
    ls, le = run.env["load_start"], run.env["load_end"]
    return ("- **load average** (1/5/15 min): %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end — %s"
            % (ls[0], ls[1], ls[2], le[0], le[1], le[2], load_verdict(run)))


def media_lines(run):
    return ["- %s: `%s` → %s on `%s` (%s; %s)" % (m["name"], m["root"], m["fstype"], m["mount_point"], m["device"],
                                                 m["options"]) for m in run.env["media"]]


def fsync_line(run):
    v = run.env.get("hpak_fsync")
    if v is None:
        return "- HPAK_FSYNC: not recorded by this run"
    if v == "":
        return "- HPAK_FSYNC: unset — hpak fsyncs the packs, indexes and library files it writes (pack, pack --into, gc)"
    return "- HPAK_FSYNC: `%s`" % v


def corpus_lines(run):
    return ["- corpus **%s**: %s files, %s dirs, %s symlinks, %s — `%s`"
            % (c["name"], n(c["files"]), n(c["dirs"]), n(c["symlinks"]), mb(c["bytes"]), c["origin"])
            for c in run.r["corpora"]]


def environment(run, label):
    e = run.env
    out = ["- **%s**: started %s, %d s in all" % (label, run.r["started"], run.r["seconds"]), cpu_line(run), load_line(run)]
    out += media_lines(run)
    out.append(fsync_line(run))
    out.append("- threads: %d for every tool that takes -j; runs: %d per arm, interleaved (rep *r* starts with arm *r* mod *n*)"
               % (e["threads"], e["runs"]))
    out.append("- hpak: `%s` (%s)" % (e["hpak"], (e["hpak_version"].splitlines() or [""])[0]))
    out += ["- %s: %s" % (k, v) for k, v in e["tools"].items()]
    out += corpus_lines(run)
    return "\n".join(out)


def real_environment(real, corpus_text):
    ls, le = real.env["load_start"], real.env["load_end"]
    return "\n".join([
        environment(real, "real environment").split("\n", 1)[0],
        "- real environment run: load %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end; %s"
        % (ls[0], ls[1], ls[2], le[0], le[1], le[2], real.env["cpu"] + ", " + real.env["kernel"]),
        "- corpus **user** (`bench/real-corpus.sh`): %s" % corpus_text])


# ---- targets and the headline table ----------------------------------------------------


def targets(run):
    out = ["| target | measured | limit | result | from |", "|:--|--:|--:|:--|:--|"]
    for t in run.targets:
        v = "–" if t["value"] is None else ("%.3g %s" % (t["value"], t["unit"]))
        res = "not measured" if not t["measured"] else ("pass" if t["pass"] else "**FAIL**")
        out.append("| %s | %s | %s %.3g | %s | %s |" % (t["name"], v, t["op"], t["limit"], res, t["detail"]))
    return "\n".join(out)


def headline_line(run, case, h, b, c=None, cname=""):
    """One row of the headline table from the ids of hpak's row, its baseline's and a ceiling or peer."""
    hv, bv = run.med(h), run.med(b)
    cv = run.med(c) if c else None
    base = s(bv, "") + (" (%s)" % run.label(b) if run.row(b) else "")
    other = (s(cv, "") + " (" + cname + ")") if c else "–"
    return "| %s | %s | %s | %s | %s | %s |" % (case, s(hv, ""), base, faster(bv, hv), other, x(ratio(hv, cv)) if c else "–")


def headline_restore(run, m):
    k = lambda case, arm: rid("restore", case, m, arm)
    out = [headline_line(run, "fresh restore, %s" % m, k("fresh", "hpak"), k("fresh", "rcc"), k("fresh", "ceiling"), "ceiling"),
           headline_line(run, "churn restore, %s" % m, k("churn", "hpak"), k("churn", "rcc"), k("churn", "ceiling"), "ceiling"),
           headline_line(run, "unpack into an empty dir, %s" % m, k("unpack", "hpak"), k("unpack", "tar"),
                         k("unpack", "hpak_no_verify"), "hpak --no-verify"),
           headline_line(run, "no-op restore, %s" % m, k("dirty0", "hpak"), k("dirty0", "rcc"), k("dirty0", "git_status"),
                         "git status")]
    for p in (1, 10):
        d = "dirty%d" % p
        out.append(headline_line(run, "%d%% dirty restore, %s" % (p, m), k(d, "hpak"), k(d, "rcc"), k(d, "git_checkout"),
                                 "git checkout -f"))
    return out


def headline_pack(run):
    am = run.art_medium()
    return [headline_line(run, "pack %s" % p, rid("pack", p, am, "hpak"), rid("pack", p, am, "tar"))
            for p in ("rcc", "user", "smallfile", "packfs") if run.row(rid("pack", p, am, "hpak"))]


def headline_reads(run):
    out = []
    for m in run.media():
        for p in ("packfs", "rcc", "user"):
            k = lambda arm: rid("read", "random_" + p, m, arm)
            if run.row(k("files")):
                out.append(headline_line(run, "random read %s, %s" % (p, m), k("pack"), k("files"), k("pack_no_sha256"),
                                         "pack, no SHA-256"))
    return out


def headline(run):
    """One compact table: case, hpak, baseline, ceiling/peer, ratios."""
    out = ["| case | hpak (median s) | baseline (median s) | hpak vs baseline | ceiling / peer | hpak vs it |",
           "|:--|--:|--:|--:|--:|--:|"]
    for m in run.media():
        out += headline_restore(run, m)
    out += headline_pack(run)
    out += headline_reads(run)
    if run.row("verify.sha256sum"):
        out.append(headline_line(run, "verify", "verify.hpak", "verify.sha256sum"))
    return "\n".join(out)


# ---- case by case: restore -----------------------------------------------------------


def syscalls_per_file(run, arm):
    m = run.syscall_medium()
    return run.metric(rid("restore", "syscalls", m, arm), "syscalls_per_file") if m else None


def fresh_cpu_note(run, m, h, b):
    k = lambda arm: rid("restore", "fresh", m, arm)
    hc, cc, bc = run.cpu(k("hpak")), run.cpu(k("ceiling")), run.cpu(k("rcc"))
    if hc is None or cc is None:
        return ""
    txt = ("hpak used %s of CPU (user + system, all threads) per restore, the rcc-style restore %s; the "
           "ceiling's *whole process* used %s, most of it reading the corpus into memory, which its printed "
           "write-phase time excludes. " % (s(hc), s(bc), s(cc)))
    if bc is None or b is None or hc <= 0:
        return txt
    gap = abs(math.log((b / h) / (bc / hc)))
    verdict = "is close to" if gap < math.log(1.25) else "is not far from" if gap < math.log(1.5) else "differs from"
    txt += ("The wall-time ratio to the rcc-style restore (%s) %s the ratio of CPU spent (%s): on %s, a tool's "
            "time is mostly its CPU work divided by the share it gets. " % (x(ratio(b, h)), verdict, x(bc / hc), run.cores()))
    sr, sh = syscalls_per_file(run, "rcc_fresh"), syscalls_per_file(run, "hpak_fresh")
    if sr is not None and sh is not None:
        txt += ("The rcc-style restore's work is %.1f syscalls per file (see below) plus gunzip and SHA-256 of every "
                "file, hpak's %.2f syscalls per file plus zstd decoding and an XXH3 check of every object. " % (sr, sh))
    return txt


def fresh_parts_note(run, m):
    """What the gap to the ceiling is made of: --verify, the -l 0 library, the in-process CPU work."""
    nvr, raw = run.med(rid("restore", "fresh", m, "hpak_verify")), run.med(rid("restore", "fresh", m, "hpak_level0"))
    dec, sha, both = (run.med(rid("restore", "cpu_work", a)) for a in ("decode", "sha256", "decode_sha256"))
    txt = ""
    if nvr is not None or raw is not None:
        txt += ("With the SHA-256 check of every object added (`--verify`, what rcc does on every restore) %s; "
                "from a library stored uncompressed (`hpak init --level 0`, no decoding) %s. " % (s(nvr), s(raw)))
    if both is not None:
        txt += ("In-process on one thread, decoding every object of the pack takes %s, hashing the decoded bytes %s, "
                "both together (what restore does per object) %s — about %s per thread when spread over %d. " %
                (s(dec), s(sha), s(both), s(both / run.threads()), run.threads()))
    return txt


def medium_note(run, m):
    """What the medium's recorded file system means for the ceiling."""
    med = run.medium(m)
    if med is None:
        return ""
    if med["fstype"] == "tmpfs":
        return ("On tmpfs a write is a copy into the page cache, so the ceiling measures almost pure syscall cost, "
                "while hpak also decompresses every object with zstd, checks the XXH3 of its stored bytes, patches "
                "the relocated files, loads and checks the catalog and writes its state file. "
                "That is work the ceiling does not do. ")
    here, tmpfs = run.med(rid("restore", "fresh", m, "ceiling")), run.med(rid("restore", "fresh", "tmpfs", "ceiling"))
    txt = "On %s (%s on `%s`, mounted `%s`; a restore fsyncs nothing) " % (m, med["fstype"], med["device"], med["options"])
    if here is None or tmpfs is None:
        return txt + "the ceiling took %s. " % s(here)
    more = ratio(here, tmpfs) > 1.1
    return txt + "the ceiling took %s, %s its time on tmpfs%s. " % (
        s(here), x(ratio(here, tmpfs)), ": the difference is the file system's own work per file" if more else "")


def fresh_zstd_note(run, m, h, c):
    raw = run.med(rid("restore", "fresh", m, "hpak_level0"))
    if raw is None or c is None or h <= c:
        return ""
    share = max(0.0, min(1.0, (h - raw) / (h - c)))
    why = ("the restore on %s is CPU-bound on zstd decompression" % m if share >= 0.5 else
           "decoding and hashing are not most of it; the rest is hpak's fixed cost (process start, library and catalog "
           "loading, relocation, the state file) and per-file work on %s" % run.cores())
    return ("Of the %s between hpak and the ceiling, %.0f%% goes away without zstd (the `-l 0 library` row): %s. "
            % (s(h - c), 100 * share, why))


FRESH_TARGET_NOTE = ("The figure in the targets is `hpak restore` as shipped (stored checksums checked, object names "
                     "trusted: hpak named every object from its bytes when it was added; `--verify` re-checks them); the "
                     "ceiling bounds what any tool can do with bytes already decoded, and is not a like-for-like peer.")


def fresh_restore(run, m):
    k = lambda arm: rid("restore", "fresh", m, arm)
    h, b, c = run.med(k("hpak")), run.med(k("rcc")), run.med(k("ceiling"))
    if h is None:
        return None
    return ("**Fresh restore on %s.** `hpak restore` took %s against %s for the rcc-style restore (%s; the "
            "target is 5× faster) and %s for the ceiling (%s its time; the target is ≤ 1.3×). " %
            (m, s(h), s(b), faster(b, h), s(c), x(ratio(h, c)))
            + fresh_cpu_note(run, m, h, b) + fresh_parts_note(run, m) + medium_note(run, m)
            + fresh_zstd_note(run, m, h, c) + FRESH_TARGET_NOTE)


def unpack_cpu_note(run, u, t, cu, ct):
    if not (ratio(u, t) and ratio(u, t) > 0.5 and cu is not None and ct is not None):
        return ""
    if cu < ct and u > t:
        why = ("its longer wall time is waiting — for a CPU%s, or on the file system — which this run does not break "
               "down. " % (" on this loaded machine" if run.loaded() else ""))
    else:
        why = "on %s, the CPU each spends per byte decides more than the syscalls. " % run.cores()
    return "hpak used %s CPU than tar; %s" % ("less" if cu < ct else "more", why)


def unpack(run, m):
    k = lambda arm: rid("restore", "unpack", m, arm)
    u, nv, t = run.med(k("hpak")), run.med(k("hpak_no_verify")), run.med(k("tar"))
    if u is None or t is None:
        return None
    cu, cn, ct = run.cpu(k("hpak")), run.cpu(k("hpak_no_verify")), run.cpu(k("tar"))
    su, st = syscalls_per_file(run, "hpak_unpack"), syscalls_per_file(run, "tar_unpack")
    txt = ("**Unpack into an empty directory, %s**: `hpak unpack` %s, `hpak unpack --no-verify` %s, "
           "`tar --zstd -xf` %s (hpak: %s of tar's time; the target is ≤ 0.5×). " % (m, s(u), s(nv), s(t), x(ratio(u, t))))
    if cu is not None and ct is not None:
        txt += "CPU: hpak %s (%s without the SHA-256), tar + zstd %s. " % (s(cu), s(cn), s(ct))
    if su and st:
        txt += ("hpak makes %.2f syscalls per file to tar's %.2f, but both decode the same bytes at the same zstd level, "
                "and hpak hashes them too. " % (su, st))
    txt += unpack_cpu_note(run, u, t, cu, ct)
    ov = overlap_note(run, k("hpak"), k("tar"))
    return txt + ov.replace("the min–max", "The min–max").rstrip("; ") + ("." if ov else "")


def churn_verdict(run, m, worst, each):
    if worst >= 1.3:
        return ("Creating the files right after a tree was deleted took up to %.1f× the fresh time (churn / fresh: %s); "
                "restoring in place — a dirty restore — avoids the deletion altogether." % (worst, each))
    txt = "No churn penalty showed in this run (at most %.2f× the fresh time)." % worst
    if run.fstype(m) != "tmpfs":
        txt += (" Whatever the file system freed in the minutes before (earlier runs, other work on `%s`) weighs on "
                "fresh runs too, so read fresh and churn on %s as one regime in this run." % (run.medium(m)["root"], m))
    return txt


def churn(run, m):
    c_, f_ = (lambda arm: rid("restore", "churn", m, arm)), (lambda arm: rid("restore", "fresh", m, arm))
    h, hf, c, cf, b, bf = (run.med(g(a)) for a in ("hpak", "ceiling", "rcc") for g in (c_, f_))
    if h is None:
        return None
    worst = max([v for v in (ratio(h, hf), ratio(c, cf), ratio(b, bf)) if v is not None] or [0])
    each = "hpak %s, rcc-style %s, ceiling %s" % (x(ratio(h, hf)), x(ratio(b, bf)), x(ratio(c, cf)))
    return ("**Churn on %s** (the previous tree at the same path was `rm -rf`'d just before, and on disk `sync`'d): "
            "hpak %s (fresh: %s), rcc-style %s (fresh: %s), ceiling %s (fresh: %s). %s" %
            (m, s(h), s(hf), s(b), s(bf), s(c), s(cf), churn_verdict(run, m, worst, each)))


def dirty_noop_note(run, m, files):
    sh0, sg0 = syscalls_per_file(run, "hpak_noop"), syscalls_per_file(run, "git_status")
    ch0, cg0 = run.cpu(rid("restore", "dirty0", m, "hpak")), run.cpu(rid("restore", "dirty0", m, "git_status"))
    txt = ("Both sides stat every file: git against its index, hpak against its state file (readdir + fstatat "
           "per directory, in parallel)%s. " % (
               " — %.2f syscalls per file for the no-op restore, %.2f for git status" % (sh0, sg0) if sh0 and sg0 else ""))
    if ch0 is not None and cg0 is not None:
        txt += ("CPU: the no-op restore used %s, git status %s. hpak is a fresh process that opens the library, "
                "maps the pack index, decompresses and parses the catalog (%s files) and reads its state file "
                "before the first stat; git reads one index file. " % (s(ch0), s(cg0), n(files)))
    return txt


def dirty(run, m):
    k = lambda case, arm: run.med(rid("restore", case, m, arm))
    h0, gs, r1 = k("dirty0", "hpak"), k("dirty0", "git_status"), k("dirty1", "rcc")
    h1, g1, h10, g10 = k("dirty1", "hpak"), k("dirty1", "git_checkout"), k("dirty10", "hpak"), k("dirty10", "git_checkout")
    if h0 is None:
        return None
    corpus = run.main_corpus()
    txt = ("**Dirty targets on %s.** A no-op restore (nothing changed) took %s against %s for `git status` (%s); "
           "1%% changed: hpak %s, `git checkout -f` %s (%s), the rcc-style restore-over %s (it rewrites everything); "
           "10%% changed: hpak %s, git %s (%s). " %
           (m, s(h0), s(gs), x(ratio(h0, gs)), s(h1), s(g1), x(ratio(h1, g1)), s(r1), s(h10), s(g10), x(ratio(h10, g10))))
    txt += dirty_noop_note(run, m, corpus["files"] if corpus else None)
    if h10 is not None and g10 is not None:
        txt += ("With more files changed the rewrite work takes over: at 10%% hpak took %s of git's time%s." %
                (x(ratio(h10, g10)), ", its writes spread over threads" if h10 < g10 else ""))
    return txt


def syscalls(run):
    m = run.syscall_medium()
    rows = [r for r in run.rows_under(rid("restore", "syscalls", m)) if not r.get("error")] if m else []
    parts = ["%s %.2f" % (r["tool"], r["metrics"]["syscalls_per_file"]) for r in rows if "syscalls_per_file" in r["metrics"]]
    if not parts:
        return None
    corpus = run.main_corpus()
    return ("**Syscalls per file** (one `strace -f -c` run each on %s; every thread and child, process start-up, library "
            "and catalog loading, directory creation included; divided by the corpus's %s regular files): %s. "
            "A fresh hpak restore is openat + write + close per file plus one mkdirat per directory and a fixed "
            "start-up; the rcc-style restore adds read of the object, rename, chmod and utimensat per file." %
            (m, n(corpus["files"] if corpus else None), "; ".join(parts)))


# ---- case by case: pack, reads, verify, gc -------------------------------------------------


PACK_WHY = {
    "rcc": ("hpak hashes every file (SHA-256) to name it, compresses each distinct content on its own, scans "
            "every file for the environment's path (relocation), and writes an index and a catalog; tar streams "
            "one solid zstd frame. Independent objects cost size and buy random access, deduplication and "
            "per-object verification."),
    "smallfile": ("4 KiB files of generated text compress well *together* (tar's solid stream sees the shared "
                  "vocabulary across files) and poorly alone: per-object compression is where the size goes."),
    "packfs": ("128-byte files are the worst case for per-object storage: each carries an entry header, an index "
               "record and a digest, and 128 bytes do not compress alone; tar's 512-byte headers are mostly zeros "
               "and vanish in the solid stream."),
}
PACK_WHY["user"] = PACK_WHY["rcc"]


def pack_cpu_note(run, hc, tc, h, t):
    txt = ("CPU (user + system, children included): hpak %s, tar + zstd %s; on average hpak kept %.1f CPUs "
           "busy, tar + zstd %.1f. " % (s(hc), s(tc), hc / h["median"], tc / t["median"]))
    if hc <= 1.1 * tc:
        txt += ("hpak needs about tar's CPU (%.2f×) and %s by spreading it over its threads; 0.7× tar's time "
                "needs more than these %s, or less CPU per byte. " %
                (hc / tc, "wins time" if h["median"] < t["median"] else "still loses time", run.cores()))
    elif hc >= 0.7 * tc:
        txt += ("Needing %.2f× tar's CPU, hpak cannot reach 0.7× tar's time on %s: it does the "
                "same zstd work at the same level plus a SHA-256 of every byte, the relocation scan and the "
                "index; its lead has to come from spreading that over more CPUs than tar's one zstd process "
                "uses (-j), and this run had %d. " % (hc / tc, run.cores(), run.cpus()))
    return txt


def pack(run, p):
    am = run.art_medium()
    hid, tid = rid("pack", p, am, "hpak"), rid("pack", p, am, "tar")
    h, t = run.row(hid), run.row(tid)
    if run.med(hid) is None or run.med(tid) is None:
        return None
    hs, ts = h["metrics"].get("output_bytes"), t["metrics"].get("output_bytes")
    txt = ("**Pack %s** (%s files, %s): hpak %s (%.1f µs/file, %s MB/s), tar --zstd %s (%.1f µs/file): %s; "
           "size %s vs %s (%s). " %
           (p, n(h["count"]), mb(h["bytes"]), s(h["median"]), h["us_each"], n(h["mb_per_s"]), s(t["median"]), t["us_each"],
            x(ratio(h["median"], t["median"])) + " the time", mb(hs), mb(ts), x(ratio(hs, ts))))
    hc, tc = run.cpu(hid), run.cpu(tid)
    if hc is not None and tc is not None:
        txt += pack_cpu_note(run, hc, tc, h, t)
    return txt + PACK_WHY[p]


def second_env(run):
    f = run.row(rid("pack", "into", run.art_medium(), "second"))
    if not f or f["metrics"].get("written_vs_first") is None:
        return None
    return ("**Adding a second environment** that shares 90%% of its files with one already in the library wrote "
            "%s, %.1f%% of the first's %s (the target is ≤ 15%%): only the objects the library lacks, plus the catalog."
            % (mb(f["metrics"]["pack_bytes"]), 100 * f["metrics"]["written_vs_first"], mb(f["metrics"]["first_pack_bytes"])))


READ_WHY = {
    True: ("For 128-byte objects the pack avoids three syscalls and a path lookup per read; what remains is "
           "the index search, the XXH3 of the stored bytes and, when checked, one SHA-256 of 128 bytes."),
    False: ("A pack read is a binary search in the mapped index plus a zstd decode (and a hash) in user space; "
            "a file read is three syscalls and a path walk. Small objects favour the pack; large ones are "
            "bound by decompression, which the page-cache copy of a plain file does not pay."),
}


def random_reads(run, p, m):
    k = lambda arm: rid("read", "random_" + p, m, arm)
    h, nv, b = run.row(k("pack")), run.row(k("pack_no_sha256")), run.row(k("files"))
    if run.med(k("pack")) is None or run.med(k("files")) is None:
        return None
    return ("**Random reads, %s, %s**: through the pack %s reads/s with the SHA-256 check, %s without, against "
            "%s reads/s for open/read/close of the same files: %s (a pack read checks the entry header and the "
            "XXH3 of the stored bytes, decodes into a fresh buffer and, by default, hashes). %s" %
            (p, m, n(h["per_second"]), n(nv["per_second"]) if nv else "–", n(b["per_second"]),
             faster(b["median"], h["median"]), READ_WHY[p == "packfs"]))


def per_thread_mb_s(run):
    """Decode + SHA-256 MB/s of one thread during the run (the cpu_work rows), or None."""
    dec, sha = run.row(rid("restore", "cpu_work", "decode")), run.row(rid("restore", "cpu_work", "sha256"))
    if not dec or not sha or not dec["mb_per_s"] or not sha["mb_per_s"]:
        return None
    return dec["mb_per_s"], sha["mb_per_s"], 1 / (1 / dec["mb_per_s"] + 1 / sha["mb_per_s"])


def verify_scale_note(run):
    rates = per_thread_mb_s(run)
    if not rates:
        return ""
    dec, sha, per = rates
    th = run.threads()
    return ("For scale, in-process on one thread of this machine during the run: zstd decoding %s MB/s, SHA-256 "
            "%s MB/s, so decode + hash of one byte runs at %s MB/s per thread and at best %s MB/s on %d threads: "
            "≥ 1 GB/s needs about %d such threads%s."
            % (n(dec), n(sha), n(per), n(per * th), th, math.ceil(1000 / per),
               " — or idle CPUs, which this run did not have" if run.loaded() else ""))


def verify(run):
    v = run.row("verify.hpak")
    if not v or not v["median"]:
        return None
    sha, z = run.row("verify.sha256sum"), run.row("verify.zstd_t")
    txt = ("**Verify**: `hpak verify` checked %s of object content in %s (%s MB/s; the target is ≥ 1 GB/s): trailer, "
           "index, every object's XXH3, its zstd decoding and its SHA-256, and the catalog. " %
           (mb(v["bytes"]), s(v["median"]), n(v["mb_per_s"])))
    if sha and sha["median"]:
        txt += "sha256sum over the unpacked files (%s): %s (%s MB/s), with nothing to decompress. " % (
            mb(sha["bytes"]), s(sha["median"]), n(sha["mb_per_s"]))
    if z and z["median"]:
        txt += "`zstd -t` of the .tar.zst (frame checksums only): %s. " % s(z["median"])
    return txt + verify_scale_note(run)


def repack(run, p):
    am = run.art_medium()
    g, w = run.row(rid("gc", "repack_" + p, am, "copy")), run.row(rid("gc", "repack_" + p, am, "hpak_gc"))
    if not g or not g["samples"]:
        return None
    return ("**Repack, %s, 50%% garbage**: the verbatim copy of %s live objects (%s) took %s (min–max %s–%s): %s "
            "objects/s, %s µs each, %s MB/s (target for small objects: ≥ 1M/s, 1 µs each); the whole `hpak gc` "
            "command took %s. The copy moves stored bytes as they are (no recompression; the XXH3 of each entry is "
            "checked). `copy_seconds` as gc measures it spans listing and sorting every record of the source pack "
            "(dead ones too), the live-set lookups, the copy, and writing, hashing and publishing the new pack "
            "and its index; it is printed in milliseconds, which limits the precision for small libraries." %
            (p, n(g["count"]), mb(g["bytes"]), s(g["median"]), s(g["min"], ""), s(g["max"], ""), n(g["per_second"]),
             "%.2f" % g["us_each"] if g["us_each"] else "–", n(g["mb_per_s"]), s(w["median"] if w else None)))


def small_packs(run):
    k = lambda arm: run.row(rid("gc", "small_packs_lookups", run.art_medium(), arm))
    before, after, lo_b, lo_a = k("read_before"), k("read_after"), k("lookup_before"), k("lookup_after")
    if not before or not after:
        return None
    per_s = lambda r: n(r["per_second"] if r else None)
    return ("**Many small packs**: %s (%s outside the multi-pack index) became %s after gc (%s outside it). Random "
            "lookup + read: %s/s before, %s/s after; lookup alone: %s/s before, %s/s after." %
            (n(before["metrics"].get("packs")), n(before["metrics"].get("packs_outside_midx")),
             n(after["metrics"].get("packs")), n(after["metrics"].get("packs_outside_midx")),
             per_s(before), per_s(after), per_s(lo_b), per_s(lo_a)))


def analysis(run):
    """Case by case, one paragraph each, for what the run measured."""
    media = run.media()
    paras = [fresh_restore(run, m) for m in media] + [unpack(run, m) for m in media]
    paras += [churn(run, m) for m in media] + [dirty(run, m) for m in media]
    paras += [syscalls(run)] + [pack(run, p) for p in ("rcc", "user", "smallfile", "packfs")] + [second_env(run)]
    paras += [random_reads(run, p, m) for p in ("packfs", "rcc", "user") for m in media]
    paras += [verify(run)] + [repack(run, p) for p in ("packfs", "rcc", "user")] + [small_packs(run)]
    return "\n\n".join(p for p in paras if p)


# ---- why a target failed (by target id: kind.medium or kind.profile) ------------------------


def target_pair(run, kind, arg):
    """The ids of the two rows a target compares, for the overlap note."""
    am = run.art_medium()
    return {
        "unpack": (rid("restore", "unpack", arg, "hpak"), rid("restore", "unpack", arg, "tar")),
        "fresh_vs_rcc": (rid("restore", "fresh", arg, "hpak"), rid("restore", "fresh", arg, "rcc")),
        "noop_vs_git_status": (rid("restore", "dirty0", arg, "hpak"), rid("restore", "dirty0", arg, "git_status")),
        "dirty1_vs_git_checkout": (rid("restore", "dirty1", arg, "hpak"), rid("restore", "dirty1", arg, "git_checkout")),
        "pack_time": (rid("pack", arg, am, "hpak"), rid("pack", arg, am, "tar")),
    }.get(kind)


def why_unpack(run, m):
    cu, ct = run.cpu(rid("restore", "unpack", m, "hpak")), run.cpu(rid("restore", "unpack", m, "tar"))
    if not cu or not ct:
        return ""
    return ("hpak spent %s of CPU to tar's %s (both decode the same bytes at the same level; hpak also hashes "
            "them); %s" % (s(cu), s(ct),
                           "with less CPU than tar and a longer wall time, hpak's extra time is waiting — for a CPU or on "
                           "the file system — which this run does not break down" if cu < ct else
                           "on %s the CPU per byte decides, and the syscall savings cannot halve the time" % run.cores()))


def why_pack_time(run, p):
    am = run.art_medium()
    hc, tc = run.cpu(rid("pack", p, am, "hpak")), run.cpu(rid("pack", p, am, "tar"))
    if not hc or not tc:
        return ""
    if hc <= 1.1 * tc:
        return ("hpak uses about tar's CPU (%s: same zstd level, plus SHA-256 of every byte, relocation scan, "
                "index) and gains only by spreading it over %d threads; 0.7× needs more CPUs or less CPU per byte"
                % (x(hc / tc), run.threads()))
    return ("hpak needs %s tar's CPU (same zstd level, plus SHA-256 of every byte, relocation scan, index); "
            "on %s -j has no spare CPU to win the time back" % (x(hc / tc), run.cores()))


def why_pack_size(run, p):
    if p == "packfs":
        return "128-byte objects: per-entry header, index record and digest outweigh the content, which does not compress alone"
    return "each object is compressed on its own, so redundancy across files is lost (tar compresses one solid stream)"


def why_verify(run, _):
    rates = per_thread_mb_s(run)
    if not rates:
        return ""
    return ("decode + SHA-256 ran at %s MB/s per thread during the run, so %d threads give at most %s MB/s"
            % (n(rates[2]), run.threads(), n(rates[2] * run.threads())))


def why_fresh_vs_rcc(run, m):
    hc, bc = run.cpu(rid("restore", "fresh", m, "hpak")), run.cpu(rid("restore", "fresh", m, "rcc"))
    if not hc or not bc:
        return ""
    return ("both are CPU-bound on %s; the rcc-style restore spent %s the CPU of hpak's (%s vs %s)"
            % (run.cores(), x(bc / hc), s(bc), s(hc)))


def why_fresh_vs_ceiling(run, m):
    k = lambda arm: run.med(rid("restore", "fresh", m, arm))
    h, c, raw = k("hpak"), k("ceiling"), k("hpak_level0")
    if not (h and c and raw and h > c):
        return ""
    return ("%.0f%% of the gap to the ceiling goes away without zstd (from a `hpak init --level 0` "
            "library: %s), work the ceiling does not do" % (100 * max(0, min(1, (h - raw) / (h - c))), s(raw)))


def why_syscalls(run, m):
    r, c = run.row(rid("restore", "syscalls", m, "hpak_fresh")), run.main_corpus()
    if not r or not c or "syscalls" not in r["metrics"]:
        return ""
    return ("the count includes start-up and one mkdirat per directory (%s dirs for %s files): without those, "
            "%.2f per file" % (n(c["dirs"]), n(c["files"]), (r["metrics"]["syscalls"] - c["dirs"]) / c["files"]))


def why_noop(run, m):
    ch, cg = run.cpu(rid("restore", "dirty0", m, "hpak")), run.cpu(rid("restore", "dirty0", m, "git_status"))
    sh, sg = syscalls_per_file(run, "hpak_noop"), syscalls_per_file(run, "git_status")
    if not ch or not cg:
        return ""
    return ("%shpak loads the library, the catalog and its state before the first stat: %s of CPU against "
            "git's %s" % ("%.2f syscalls per file against git's %.2f; " % (sh, sg) if sh and sg else "", s(ch), s(cg)))


def why_dirty1(run, m):
    h0, g1 = run.med(rid("restore", "dirty0", m, "hpak")), run.med(rid("restore", "dirty1", m, "git_checkout"))
    if not h0 or not g1:
        return ""
    return ("hpak's no-op restore alone takes %s, git's whole 1%% repair %s: hpak's fixed cost (process, library, "
            "catalog, state) decides small changes" % (s(h0), s(g1)))


def why_repack(run, _):
    g = run.row(rid("gc", "repack_packfs", run.art_medium(), "copy"))
    if not g or not g["us_each"]:
        return ""
    return ("%.2f µs per live object inside gc's copy_seconds, which also covers listing and sorting every "
            "record, writing, hashing and publishing the new pack" % g["us_each"])


WHY = {
    "unpack": why_unpack, "pack_time": why_pack_time, "pack_size": why_pack_size, "verify_rate": why_verify,
    "fresh_vs_rcc": why_fresh_vs_rcc, "fresh_vs_ceiling": why_fresh_vs_ceiling, "syscalls_per_entry": why_syscalls,
    "noop_vs_git_status": why_noop, "dirty1_vs_git_checkout": why_dirty1, "repack_small": why_repack,
}


def why(run, t):
    """Data-driven sentences on why a target failed (details in the case-by-case section)."""
    kind, _, arg = t["id"].partition(".")
    pair = target_pair(run, kind, arg)
    note = overlap_note(run, *pair) if pair else ""
    return note + (WHY[kind](run, arg) if kind in WHY else "")


def wins_losses(run):
    win, lose = [], []
    for t in run.targets:
        if not t["measured"]:
            continue
        line = "%s: %.3g %s (limit %s %.3g) — %s" % (t["name"], t["value"], t["unit"], t["op"], t["limit"], t["detail"])
        w = "" if t["pass"] else why(run, t)
        if w:
            line += ". *Why:* " + w + "."
        (win if t["pass"] else lose).append(line)
    return win, lose


# ---- the document -------------------------------------------------------------------


def title(args):
    return ("# hpak benchmark results\n\n"
            "Generated by `bench/run-all.sh` (which ran `hpak bench%s` and, for the real environment, "
            "`hpak bench --corpus … --suite restore,pack,verify`) at commit %s. Do not edit by hand: rerun the script. "
            "The analysis below is built from this run's rows and recorded environment.\n"
            % ((" " + args.args) if args.args else "", args.commit or "?"))


def reproduce(run):
    return ("## Reproduce\n\n"
            "```sh\nbench/run-all.sh                 # Release build in /tmp/build-bench, rewrites this file (this run: %d min)\n"
            "hpak bench                       # the same suites, tables on stdout\n"
            "hpak bench --corpus DIR -s restore   # on your own tree\n"
            "hpak bench --json > result.json  # for dashboards; rows keyed by id (hpak-bench(1))\n"
            "bench/peers.sh DIR               # tar/squashfs/cp/rsync/git on one tree\n```\n"
            % math.ceil(run.r["seconds"] / 60))


def environment_section(run, real, real_corpus):
    out = ["## Environment and load\n", environment(run, "generated corpora")]
    if real:
        out.append(real_environment(real, real_corpus))
    return "\n".join(out)


def fsync_sentence(run):
    v = run.env.get("hpak_fsync")
    if v == "":
        return ("Page cache warm; restored and unpacked trees are not fsync'd, while `hpak pack`, `pack --into` and "
                "`gc` fsync what they write (HPAK_FSYNC was unset), which tar and cp do not.")
    if v is None:
        return "Page cache warm; whether hpak fsync'd its packs (HPAK_FSYNC) was not recorded."
    return "Page cache warm; HPAK_FSYNC was `%s` for every command." % v


def how_to_read(run):
    return ("\n**How to read the figures.** Every measured command is a subprocess timed from spawn to exit (start-up "
            "included), hpak as much as the baselines. Arms of one comparison run interleaved, so a load spike hits all "
            "of them alike; medians of %d runs with min–max. %s The absolute times depend on the load (see above); the "
            "ratios between interleaved arms are the figures to trust.\n" % (run.env["runs"], fsync_sentence(run)))


def targets_section(run, real):
    out = ["## The targets (issues 2 and 3)\n", targets(run) + "\n"]
    if real:
        out += ["Real environment:\n", targets(real) + "\n"]
    return "\n".join(out)


def headline_section(run, real, real_corpus):
    out = ["## Headline figures\n", headline(run) + "\n"]
    if real:
        out += ["Real environment (%s):\n" % real_corpus, headline(real) + "\n"]
    return "\n".join(out)


def bullets(lines, none):
    return "\n".join("- " + t for t in lines) if lines else "- " + none


def findings_section(run, real):
    win, lose = wins_losses(run)
    out = ["## What the numbers mean\n", "### Where hpak meets its targets\n", bullets(win, "none in this run")]
    rw, rl = wins_losses(real) if real else ([], [])
    if real:
        out.append("\nReal environment: " + ("; ".join(t.split(":")[0] for t in rw) if rw else "none") + ".")
    out += ["\n### Where hpak falls short, and why\n", bullets(lose, "none in this run")]
    if real:
        out += ["\nReal environment:\n", bullets(rl, "none")]
    return "\n".join(out)


def case_by_case_section(run, real):
    out = ["\n### Case by case (generated corpora)\n", analysis(run) + "\n"]
    if real:
        out += ["### Case by case (real environment)\n", analysis(real) + "\n"]
    return "\n".join(out)


def load_caveat(run):
    if run.loaded():
        return ("- **Load.** The runs had %s (see the load averages above). CPU-bound arms (hpak's decode + hash, "
                "tar's zstd, sha256sum) stretch with the load more than syscall-bound ones, so hpak's ratios to the "
                "ceiling are pessimistic here; compare with a run on a quiet machine before drawing absolute "
                "conclusions.\n" % run.cores())
    return ("- **Load.** The load averages above stayed within the run's own threads on %s; a later run on a busier "
            "machine will show longer absolute times.\n" % run.cores())


def media_caveat(run):
    lines = []
    for m in run.env["media"]:
        if m["fstype"] != "tmpfs":
            lines.append("- **%s** (`%s`) is %s on `%s`, mounted `%s` (as recorded at the start of the run); "
                         "`sync` (untimed) runs before each sample there. The fresh, unpack and dirty trees on disk are "
                         "kept until the end of the run so no measurement follows a mass deletion; churn runs last.\n"
                         % (m["name"].capitalize(), m["root"], m["fstype"], m["device"], m["options"]))
    return "".join(lines)


METHOD_CAVEATS = (
    "- **The rcc-style baseline is a model** (`bench/rcc_baseline.cpp`): gzip-1 loose objects and the per-file "
    ".part/rename/chmod/utime dance of rcc's holotree, not rcc itself. Its restore-over rewrites every file (it has no "
    "change detection), and its symlinks are removed before each dirty run because it recreates them with symlink(2).\n"
    "- **The ceiling** writes from memory and reports only its write phase; it does not decompress, hash, relocate, "
    "keep mtimes or hardlinks. It bounds what is possible; it is not a peer.\n"
    "- **git** runs on the same tree committed in a repository inside it; `git checkout -f` does not restore mtimes. "
    "git keeps ctimes in whole seconds: a same-size edit with the mtime put back *in the same second* as the index "
    "entry goes unseen; the bench starts changing files a second after `git add`.\n")

COUNT_CAVEATS = (
    "- **Syscall counts** come from one run under strace each and include process start-up and library loading, "
    "which matters for small corpora.\n"
    "- **In-process rows** (random read, library lookups) are single-threaded loops in the bench process after one "
    "warm-up pass; they measure the pack format and the reader, not process start-up.\n")


def caveats_section(run):
    return "### Read with care\n\n" + load_caveat(run) + METHOD_CAVEATS + media_caveat(run) + COUNT_CAVEATS


def demote(md):
    """The tables hpak bench printed, headings pushed down two levels."""
    return "\n".join(("##" + line) if line.startswith("#") else line for line in md.splitlines())


def full_tables_section(args):
    with open(args.tables) as f:
        out = ["## Full tables: generated corpora\n", demote(f.read()) + "\n"]
    if args.real and args.real_tables:
        with open(args.real_tables) as f:
            out += ["## Full tables: real environment\n", args.real_corpus + "\n", demote(f.read()) + "\n"]
    return "\n".join(out)


def document(args, run, real):
    return "\n".join([
        title(args), reproduce(run), environment_section(run, real, args.real_corpus), how_to_read(run),
        targets_section(run, real), headline_section(run, real, args.real_corpus), findings_section(run, real),
        case_by_case_section(run, real), caveats_section(run), full_tables_section(args)])


def parse_args():
    ap = argparse.ArgumentParser(description="Render bench/RESULTS.md from hpak bench --save JSON.")
    ap.add_argument("--results", required=True)
    ap.add_argument("--tables", required=True)
    ap.add_argument("--commit", default="")
    ap.add_argument("--args", default="")
    ap.add_argument("--real")
    ap.add_argument("--real-tables")
    ap.add_argument("--real-corpus", default="")
    return ap.parse_args()


def main():
    args = parse_args()
    run = load(args.results)
    real = load(args.real) if args.real else None
    sys.stdout.write(document(args, run, real))


if __name__ == "__main__":
    main()
