#!/usr/bin/env python3
"""Helper of bench/scale.sh (issue 33). Three subcommands:

  scale.py tree DIR K BASE NEW
      Makes DIR the tree of the K-th add: BASE files shared by every add
      (written once: DIR/lib/...), and NEW files of its own (DIR/new/...,
      replaced on each call). Deterministic: the same K gives the same bytes.
  scale.py table RESULTS.jsonl OUT.md
      A markdown table of the measurements (one row per operation and K).
  scale.py svg RESULTS.jsonl OUT.svg
      The curves, drawn by hand as SVG text: wall time, peak RssAnon, peak
      RssFile+RssShmem and bytes written against K, one line per operation
      (log scales; a value below the axis' floor is drawn on it).

RESULTS.jsonl holds one object per measurement: bench/scale_measure.py's
fields plus k, op, lib_bytes, packs and load1 (the 1-minute load average
just before it; written by scale.sh).
"""
import json
import math
import os
import random
import shutil
import sys

OPS = [
    ("add", "K-th add"),
    ("restore", "restore of one catalog"),
    ("gc-rollup", "gc after the add (roll-up)"),
    ("gc-noop", "gc, nothing to do"),
    ("dry-run", "gc --dry-run after one catalogs rm"),
    ("gc-rm", "gc after one catalogs rm"),
    ("verify", "verify"),
]
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
MIB = 1024 * 1024


# ---- trees -----------------------------------------------------------------

def vocabulary():
    rng = random.Random(33)
    letters = "abcdefghijklmnopqrstuvwxyz_"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(2, 10))) for _ in range(800)]


def file_text(rng, words):
    """Source-like text of 1 to 24 KiB (compresses about as code does)."""
    target = rng.randint(1024, 24 * 1024)
    lines, size = [], 0
    while size < target:
        indent = "    " * rng.randint(0, 3)
        line = indent + " ".join(rng.choices(words, k=rng.randint(3, 12))) + "\n"
        lines.append(line)
        size += len(line)
    return "".join(lines).encode()


def write_files(root, prefix, count, seed, words):
    for i in range(count):
        rng = random.Random(f"{seed}/{i}")
        d = os.path.join(root, prefix, f"pkg{i // 20:03d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"mod{i % 20:02d}.py"), "wb") as f:
            f.write(file_text(rng, words))


def make_tree(dest, k, base, new):
    words = vocabulary()
    base_root = os.path.join(dest, "lib")
    last = os.path.join(base_root, f"pkg{(base - 1) // 20:03d}", f"mod{(base - 1) % 20:02d}.py")
    if base > 0 and not os.path.exists(last):
        write_files(dest, "lib", base, "base", words)
    shutil.rmtree(os.path.join(dest, "new"), ignore_errors=True)
    write_files(dest, "new", new, f"add{k}", words)


# ---- results ---------------------------------------------------------------

def load(path):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise SystemExit(f"scale.py: {path}:{n}: not JSON ({e.msg})")
    if not rows:
        raise SystemExit(f"scale.py: {path}: no measurements")
    return rows


def mib(n):
    return f"{n / MIB:.1f}"


def table(rows):
    out = ["| operation | K | seconds | RssAnon MiB | RssFile+Shmem MiB | max RSS MiB | written MiB | library MiB | packs | load |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    labels = dict(OPS)
    for op, _ in OPS:
        for r in sorted((r for r in rows if r["op"] == op), key=lambda r: r["k"]):
            out.append(f"| {labels[op]} | {r['k']} | {r['seconds']:.3f} | {mib(r['anon_kb'] * 1024)} | {mib(r['file_kb'] * 1024)} | "
                       f"{mib(r['maxrss_kb'] * 1024)} | {mib(r['wchar'])} | {mib(r['lib_bytes'])} | {r['packs']} | "
                       f"{r.get('load1', 0):.2f} |")
    return "\n".join(out) + "\n"


# ---- SVG -------------------------------------------------------------------

PANEL_W, PANEL_H, MARGIN_L, MARGIN_T, MARGIN_B, GAP = 300, 220, 56, 30, 40, 30


def log_range(values):
    lo = min(values)
    hi = max(values)
    lo_exp = math.floor(math.log10(lo))
    hi_exp = math.ceil(math.log10(hi))
    if hi_exp == lo_exp:
        hi_exp += 1
    return lo_exp, hi_exp


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def tick_label(exp):
    v = 10.0 ** exp
    if exp >= 0:
        return f"{int(v)}"
    return f"{v:g}"


def panel(x0, y0, title, unit, series, kmax):
    """One panel at (x0, y0): series = {op: [(k, value)]}, log x (K) and log y."""
    parts = []
    values = [v for pts in series.values() for _, v in pts]
    if not values:
        return parts
    y_lo, y_hi = log_range(values)
    x_hi = max(1, math.ceil(math.log10(max(kmax, 2))))

    def px(k):
        return x0 + MARGIN_L + PANEL_W * (math.log10(k) / x_hi)

    top = y0 + MARGIN_T

    def py(v):
        return top + PANEL_H * (1 - (math.log10(v) - y_lo) / (y_hi - y_lo))

    parts.append(f'<text x="{x0 + MARGIN_L + PANEL_W / 2:.1f}" y="{y0 + 18}" text-anchor="middle" font-weight="bold">{esc(title)}</text>')
    parts.append(f'<rect x="{x0 + MARGIN_L}" y="{top}" width="{PANEL_W}" height="{PANEL_H}" fill="none" stroke="#888"/>')
    for e in range(y_lo, y_hi + 1):
        y = py(10.0 ** e)
        parts.append(f'<line x1="{x0 + MARGIN_L}" y1="{y:.1f}" x2="{x0 + MARGIN_L + PANEL_W}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{x0 + MARGIN_L - 4}" y="{y + 4:.1f}" text-anchor="end">{tick_label(e)}</text>')
    for e in range(0, x_hi + 1):
        x = px(10 ** e)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + PANEL_H}" stroke="#ddd"/>')
        parts.append(f'<text x="{x:.1f}" y="{top + PANEL_H + 14}" text-anchor="middle">{10 ** e}</text>')
    parts.append(f'<text x="{x0 + MARGIN_L + PANEL_W / 2:.1f}" y="{top + PANEL_H + 32}" text-anchor="middle">K (catalogs)</text>')
    parts.append(f'<text x="{x0 + 12}" y="{top + PANEL_H / 2:.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 {x0 + 12} {top + PANEL_H / 2:.1f})">{esc(unit)}</text>')
    for (op, _), color in zip(OPS, COLORS):
        pts = series.get(op)
        if not pts:
            continue
        coords = " ".join(f"{px(k):.1f},{py(v):.1f}" for k, v in pts)
        parts.append(f'<polyline class="{op}" fill="none" stroke="{color}" stroke-width="2" points="{coords}"/>')
        for k, v in pts:
            parts.append(f'<circle cx="{px(k):.1f}" cy="{py(v):.1f}" r="2.5" fill="{color}"/>')
    return parts


def svg(rows):
    kmax = max(r["k"] for r in rows)
    metrics = [
        ("wall time", "seconds", lambda r: r["seconds"]),
        ("peak RssAnon", "MiB", lambda r: r["anon_kb"] / 1024),
        ("peak RssFile + RssShmem (mapped files)", "MiB", lambda r: r["file_kb"] / 1024),
        ("bytes written (write(2))", "MiB", lambda r: r["wchar"] / MIB),
    ]
    floor = {"seconds": 0.001, "MiB": 0.01}
    cell_w, cell_h = MARGIN_L + PANEL_W + GAP, MARGIN_T + PANEL_H + MARGIN_B
    width = 2 * cell_w
    legend_y = 2 * cell_h + 20
    height = legend_y + 20 * ((len(OPS) + 1) // 2) + 24
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             'font-family="sans-serif" font-size="11">',
             f'<rect width="{width}" height="{height}" fill="white"/>']
    for i, (title, unit, get) in enumerate(metrics):
        series = {}
        for op, _ in OPS:
            pts = sorted((r["k"], max(get(r), floor[unit])) for r in rows if r["op"] == op)
            if pts:
                series[op] = pts
        parts += panel((i % 2) * cell_w, (i // 2) * cell_h, title, unit, series, kmax)
    for i, ((op, label), color) in enumerate(zip(OPS, COLORS)):
        x = 20 + (i % 2) * cell_w
        y = legend_y + 20 * (i // 2)
        parts.append(f'<line x1="{x}" y1="{y - 4}" x2="{x + 24}" y2="{y - 4}" stroke="{color}" stroke-width="2"/>')
        parts.append(f'<text x="{x + 30}" y="{y}">{esc(label)}</text>')
    parts.append(f'<text x="20" y="{height - 8}" fill="#555">Log scales; values under 0.001 s or 0.01 MiB (0 included) '
                 'are drawn at that floor. bench/scale.sh</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main(argv):
    usage = "usage: scale.py tree DIR K BASE NEW | table RESULTS.jsonl OUT.md | svg RESULTS.jsonl OUT.svg"
    if len(argv) < 2:
        raise SystemExit(usage)
    cmd, args = argv[1], argv[2:]
    if cmd == "tree" and len(args) == 4:
        try:
            k, base, new = (int(a) for a in args[1:])
        except ValueError:
            raise SystemExit(f"scale.py tree: K, BASE and NEW must be whole numbers, not {' '.join(args[1:])}")
        make_tree(args[0], k, base, new)
    elif cmd in ("table", "svg") and len(args) == 2:
        rows = load(args[0])
        text = table(rows) if cmd == "table" else svg(rows)
        with open(args[1], "w") as f:
            f.write(text)
    else:
        raise SystemExit(usage)


if __name__ == "__main__":
    main(sys.argv)
