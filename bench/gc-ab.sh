#!/usr/bin/env bash
# bench/gc-ab.sh OLD_HPAK NEW_HPAK LIB [RUNS] [RM_NAME]: gc of one library by
# two hpak binaries, side by side (issue 33). Each run measures, for OLD then
# NEW (NEW then OLD on even runs, so neither always goes first):
#   noop   `hpak -q gc --grace 0 LIB`: gc with nothing to do (run `hpak gc
#          --grace 0 LIB` once first so that there is nothing to do)
#   rm     on a fresh `cp -a` of LIB (beside it, removed after),
#          `hpak -q catalogs rm COPY RM_NAME` (not measured), then
#          `hpak -q gc --json --grace 0 COPY`
# each with bench/scale_measure.py (wall seconds, user and system CPU, peak
# RssAnon). Prints the medians of RUNS (default 7) as a Markdown table, with
# the 1-minute load average before each run (min-max), and checks that both
# binaries' `--json` after the rm are equal but for the timings.
# Leaves the measurements in $OUT (default ./hpak-gc-ab-out): one JSON line
# per measurement in ab.jsonl.
set -euo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")" && pwd)
old=${1:?usage: gc-ab.sh OLD_HPAK NEW_HPAK LIB [RUNS] [RM_NAME]}
new=${2:?usage: gc-ab.sh OLD_HPAK NEW_HPAK LIB [RUNS] [RM_NAME]}
lib=${3:?usage: gc-ab.sh OLD_HPAK NEW_HPAK LIB [RUNS] [RM_NAME]}
runs=${4:-7}
rm_name=${5:-c500}
OUT=${OUT:-$PWD/hpak-gc-ab-out}
mkdir -p "$OUT"
: >"$OUT/ab.jsonl"
copy=${lib%/}.gc-ab-copy
trap 'rm -rf "$copy"' EXIT

# one RUN WHO BIN OP CMD...: measures CMD, appends its line to ab.jsonl.
one() {
  local run=$1 who=$2 op=$3 load
  shift 3
  load=$(cut -d' ' -f1 /proc/loadavg)
  python3 "$here/scale_measure.py" "$OUT/m.json" "$@" >"$OUT/$who-$op.out" || { echo "gc-ab.sh: $who $op failed" >&2; exit 1; }
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
d.update(run=int(sys.argv[2]), who=sys.argv[3], op=sys.argv[4], load1=float(sys.argv[5]))
print(json.dumps(d))' "$OUT/m.json" "$run" "$who" "$op" "$load" >>"$OUT/ab.jsonl"
}

both() {
  local run=$1 who bin
  for who in "${@:2}"; do
    if [ "$who" = old ]; then bin=$old; else bin=$new; fi
    one "$run" "$who" noop "$bin" -q gc --grace 0 "$lib"
    rm -rf "$copy" && cp -a "$lib" "$copy"
    "$bin" -q catalogs rm "$copy" "$rm_name" >/dev/null
    one "$run" "$who" rm "$bin" -q gc --json --grace 0 "$copy"
  done
}

for ((i = 1; i <= runs; i++)); do
  if ((i % 2)); then both "$i" old new; else both "$i" new old; fi
done

python3 - "$OUT/ab.jsonl" "$OUT/old-rm.out" "$OUT/new-rm.out" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
a, b = (json.load(open(p)) for p in sys.argv[2:4])
same = all(a.get(k) == b.get(k) for k in set(a) | set(b) if k not in ("seconds", "copy_seconds"))
med = lambda who, op, f: statistics.median(f(r) for r in rows if r["who"] == who and r["op"] == op)
loads = [r["load1"] for r in rows]
n = len(rows) // 4
print(f"| medians of {n} | old wall s | new wall s | old CPU s | new CPU s | old user+sys s | new user+sys s | old RssAnon MiB | new RssAnon MiB |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
names = {"noop": "gc, nothing to do", "rm": "gc after one `catalogs rm`"}
for op in ("noop", "rm"):
    cells = [f"{med(w, op, lambda r: r['seconds']):.3f}" for w in ("old", "new")]
    cells += [f"{med(w, op, lambda r: r['user'] + r['sys']):.2f}" for w in ("old", "new")]
    cells += [f"{med(w, op, lambda r: r['user']):.2f}+{med(w, op, lambda r: r['sys']):.2f}" for w in ("old", "new")]
    cells += [f"{med(w, op, lambda r: r['anon_kb']) / 1024:.1f}" for w in ("old", "new")]
    print(f"| {names[op]} | " + " | ".join(cells) + " |")
print()
print(f"load (1 min) {min(loads):.2f}-{max(loads):.2f}; old and new --json after the rm equal but for the timings: {'yes' if same else 'NO'}")
EOF
