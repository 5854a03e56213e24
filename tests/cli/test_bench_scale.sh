#!/usr/bin/env bash
# bench/scale.sh runs and reports (tiny K: it proves the script, not a speed;
# nothing here is timed): results.jsonl has one measurement per operation and
# checkpoint, scale.md a well-formed table of them, scale.svg is well-formed
# SVG with one curve per operation in each of its four panels, and at every
# checkpoint the dry run's figures equal the real gc's. Bad settings are
# one-line errors (exit 2).
# ctest runs: bash test_bench_scale.sh <hpak-binary> <source-root>.
. "$(dirname "$0")/cli_lib.sh" "$@"
bench=$src_root/bench/scale.sh
ops=(add restore gc-rollup gc-noop dry-run gc-rm verify)

echo "== KMAX=3 STEP=2: checkpoints 1, 2, 3"
HPAK=$hpak KMAX=3 STEP=2 GC_EVERY=2 BASE_FILES=30 NEW_FILES=5 WORK=$work/w OUT=$work/out \
  bash "$bench" >"$work/run.out" 2>"$work/run.err" || fail "scale.sh failed: $(cat "$work/run.err")"
for f in results.jsonl table.md scale.md scale.svg dry-equals-real.txt; do
  [ -s "$work/out/$f" ] || fail "scale.sh wrote no $f"
done
[ -z "$(ls -A "$work/w")" ] || fail "scale.sh left files in WORK: $(ls "$work/w")"

python3 - "$work/out" "${ops[@]}" <<'EOF' || fail "the report is not well formed (above)"
import json, re, sys
import xml.etree.ElementTree as ET
out, ops = sys.argv[1], sys.argv[2:]
ks = [1, 2, 3]
rows = [json.loads(l) for l in open(f"{out}/results.jsonl") if l.strip()]
got = sorted((r["op"], r["k"]) for r in rows)
want = sorted((op, k) for op in ops for k in ks)
assert got == want, f"measurements {got} != {want}"
numeric = ["seconds", "maxrss_kb", "anon_kb", "file_kb", "wchar", "write_bytes", "lib_bytes", "packs", "load1"]
for r in rows:
    for key in numeric:
        assert isinstance(r[key], (int, float)) and r[key] >= 0, f"{r['op']} K={r['k']}: {key} = {r.get(key)!r}"
    assert r["rc"] == 0, f"{r['op']} K={r['k']} exited {r['rc']}"
    assert r["maxrss_kb"] > 0, f"{r['op']} K={r['k']}: no max RSS"
adds = {r["k"]: r for r in rows if r["op"] == "add"}
assert adds[1]["wchar"] > 0, "the first add wrote nothing, says /proc/PID/io"
rm = {r["k"]: r for r in rows if r["op"] == "gc-rm"}
assert rm[1]["packs"] == 0, f"K=1: gc after removing the only catalog left {rm[1]['packs']} packs"

lines = [l for l in open(f"{out}/table.md").read().splitlines() if l.strip()]
assert lines[0].startswith("| operation | K | seconds |"), lines[0]
assert set(lines[1]) <= set("|-:") and lines[1].count("|") == 11, lines[1]
body = lines[2:]
assert len(body) == len(ops) * len(ks), f"{len(body)} table rows, expected {len(ops) * len(ks)}"
for line in body:
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert len(cells) == 10, f"row of {len(cells)} cells: {line}"
    for c in cells[1:]:
        assert re.fullmatch(r"[0-9]+(\.[0-9]+)?", c), f"not a number: {c!r} in {line}"
md = open(f"{out}/scale.md").read()
assert "| operation | K |" in md and "KMAX=3 STEP=2" in md, "scale.md lacks the table or the settings"

svg = ET.parse(f"{out}/scale.svg").getroot()
ns = "{http://www.w3.org/2000/svg}"
assert svg.tag == ns + "svg", svg.tag
lines = svg.findall(f"{ns}polyline")
for op in ops:
    curves = [p for p in lines if p.get("class") == op]
    assert len(curves) == 4, f"{op}: {len(curves)} curves, expected one per panel (4)"
    for p in curves:
        pts = [tuple(map(float, xy.split(","))) for xy in p.get("points").split()]
        assert len(pts) == len(ks), f"{op}: a curve of {len(pts)} points"
        w, h = float(svg.get("width")), float(svg.get("height"))
        assert all(0 <= x <= w and 0 <= y <= h for x, y in pts), f"{op}: a point outside the picture: {pts}"
        assert [x for x, _ in pts] == sorted(x for x, _ in pts), f"{op}: points not in K order"
texts = [t.text for t in svg.iter(f"{ns}text")]
assert "wall time" in texts and "peak RssAnon" in texts, f"panel titles missing: {texts[:5]}"
EOF
while read -r k answer; do
  [ "$answer" = yes ] || fail "K=$k: the dry run's figures differ from the real gc's: $answer"
done <"$work/out/dry-equals-real.txt"
[ "$(wc -l <"$work/out/dry-equals-real.txt")" -eq 3 ] || fail "dry-equals-real.txt: not one line per checkpoint"

echo "== bad settings"
mkdir -p "$work/full" && touch "$work/full/x"
for setting in KMAX=0 KMAX=x STEP=1 GC_EVERY=-3 HPAK=$work/no-such-hpak WORK=$work/full; do
  rc=0
  env HPAK="$hpak" KMAX=2 OUT="$work/bad-out" "$setting" bash "$bench" >"$work/bad.out" 2>"$work/bad.err" || rc=$?
  [ "$rc" -eq 2 ] || fail "$setting: exit $rc, expected 2: $(cat "$work/bad.err")"
  [ "$(wc -l <"$work/bad.err")" -eq 1 ] || fail "$setting: not a one-line error: $(cat "$work/bad.err")"
  grep -q '^scale.sh: ' "$work/bad.err" || fail "$setting: unclear error: $(cat "$work/bad.err")"
  echo "  $setting: $(cat "$work/bad.err")"
done
echo "test_bench_scale: ok"
