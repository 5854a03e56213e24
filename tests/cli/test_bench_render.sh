#!/usr/bin/env bash
# bench/render_results.py on a tiny `hpak bench` run (--quick, tmpfs only):
# every row and target of the JSON has a unique, well-formed id; the rendered
# markdown takes its figures from the rows by id (the headline's medians are
# the JSON's) and its machine facts from the recorded environment (CPUs,
# kernel, load, file system and mount options, HPAK_FSYNC), and claims no
# machine it did not record; renaming every label changes no figure and no
# sentence; a row the run lacks renders as "–"; results without ids (an older
# hpak bench) are refused with a message. No timing is asserted.
# ctest runs: bash test_bench_render.sh <hpak-binary> <source-root>.
. "$(dirname "$0")/cli_lib.sh" "$@"

bindir=$(dirname "$hpak")
for t in hpak-gencorpus hpak-rccbase hpak-ceiling; do
  if [ ! -x "$bindir/$t" ] && [ ! -x "$bindir/bench/$t" ] && ! command -v "$t" >/dev/null; then
    echo "test_bench_render: skipped: $t is not built next to $hpak"
    exit 125
  fi
done
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" # strace rows: see test_bench.sh
tmpfs=/dev/shm
[ -d "$tmpfs" ] && [ -w "$tmpfs" ] || tmpfs=$work
mkdir -p "$work/disk"
render=$src_root/bench/render_results.py

echo "== hpak bench --quick --suite restore,pack,verify"
run bench bench --quick --suite restore,pack,verify --tmpfs "$tmpfs" --disk "$work/disk" --save "$work/r.json"
expect_rc bench 0

echo "== ids in the JSON"
python3 - "$work/r.json" <<'EOF' || fail "ids: $(head -c 2000 "$work/r.json")"
import json, re, sys
r = json.load(open(sys.argv[1]))
assert r["hpak_bench"] == 2, r["hpak_bench"]
ids = [x["id"] for x in r["rows"]]
assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
for x in r["rows"]:
    assert re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+)+", x["id"]) and x["id"].startswith(x["suite"] + "."), x["id"]
for want in ["restore.fresh.tmpfs.hpak", "restore.fresh.tmpfs.rcc", "restore.fresh.tmpfs.ceiling",
             "restore.fresh.tmpfs.hpak_level0", "restore.unpack.tmpfs.hpak", "restore.dirty0.tmpfs.hpak",
             "restore.dirty1.tmpfs.rcc", "restore.churn.tmpfs.hpak", "restore.cpu_work.decode_sha256",
             "pack.rcc.tmpfs.hpak", "pack.packfs.tmpfs.hpak", "pack.into.tmpfs.second", "verify.hpak"]:
    assert want in ids, want
tids = [t["id"] for t in r["targets"]]
assert len(tids) == len(set(tids)) and "fresh_vs_rcc.tmpfs" in tids and "verify_rate" in tids, tids
env = r["environment"]
assert env["cpus_usable"] >= 1 and "hpak_fsync" in env, env
assert [m["name"] for m in env["media"]] == ["tmpfs"] and env["media"][0]["fstype"], env["media"]
EOF

echo "== render"
python3 "$render" --results "$work/r.json" --tables "$work/bench.out" --commit test --args=--quick \
  >"$work/r.md" 2>"$work/render.err" || fail "render_results.py failed: $(cat "$work/render.err")"
[ -s "$work/render.err" ] && fail "render_results.py wrote to stderr: $(cat "$work/render.err")"
python3 - "$work/r.json" "$work/r.md" "$render" <<'EOF' || fail "rendered markdown: $(head -c 4000 "$work/r.md")"
import importlib.util, json, sys
sys.dont_write_bytecode = True  # nothing written into the source tree
r, md = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
spec = importlib.util.spec_from_file_location("render", sys.argv[3])
render = importlib.util.module_from_spec(spec)
spec.loader.exec_module(render)
rows = {x["id"]: x for x in r["rows"]}
def line(case):
    hits = [l for l in md.splitlines() if l.startswith("| %s |" % case)]
    assert len(hits) == 1, (case, hits)
    return [c.strip() for c in hits[0].split("|")[1:-1]]
# The headline's figures are the medians of the rows with these ids.
fresh = line("fresh restore, tmpfs")
assert fresh[1] == render.s(rows["restore.fresh.tmpfs.hpak"]["median"], ""), fresh
assert fresh[2].startswith(render.s(rows["restore.fresh.tmpfs.rcc"]["median"], "") + " ("), fresh
assert fresh[4].startswith(render.s(rows["restore.fresh.tmpfs.ceiling"]["median"], "") + " (ceiling)"), fresh
noop = line("no-op restore, tmpfs")
assert noop[1] == render.s(rows["restore.dirty0.tmpfs.hpak"]["median"], ""), noop
pack = line("pack rcc")
assert pack[1] == render.s(rows["pack.rcc.tmpfs.hpak"]["median"], ""), pack
assert "**Fresh restore on tmpfs.**" in md and "**Pack rcc**" in md and "**Verify**" in md
# The machine as recorded.
e = r["environment"]
assert "%d CPUs online, %d usable by the run" % (e["cpus"], e["cpus_usable"]) in md
assert e["kernel"] in md and e["cpu"] in md
ls = e["load_start"]
assert "%.2f %.2f %.2f at the start" % (ls[0], ls[1], ls[2]) in md
for m in e["media"]:
    assert "→ %s on `%s` (%s; %s)" % (m["fstype"], m["mount_point"], m["device"], m["options"]) in md, m
assert "HPAK_FSYNC" in md
# No machine facts it did not record.
recorded = " ".join(m["fstype"] + " " + m["options"] for m in e["media"])
for claim in ("2 cores", "2-core", "without a journal", "no journal", "nothing fsync'd", "nothing is fsync'd"):
    assert claim not in md, claim
for word in ("ext4", "discard"):
    assert word not in md.split("## Full tables")[0] or word in recorded, word
EOF

echo "== labels renamed: the same document but for the labels"
python3 - "$work/r.json" "$work/renamed.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for x in r["rows"]:
    x["tool"] += " ~renamed~"
    x["group"] += " ~renamed~"
for t in r["targets"]:
    t["name"] += " ~renamed~"
json.dump(r, open(sys.argv[2], "w"))
EOF
python3 "$render" --results "$work/renamed.json" --tables "$work/bench.out" --commit test --args=--quick \
  >"$work/renamed.md" 2>"$work/renamed.err" || fail "render of renamed labels failed: $(cat "$work/renamed.err")"
grep -q '~renamed~' "$work/renamed.md" || fail "the renamed labels are not shown"
sed 's/ ~renamed~//g' "$work/renamed.md" | cmp -s - "$work/r.md" ||
  fail "renaming labels changed the document: $(sed 's/ ~renamed~//g' "$work/renamed.md" | diff "$work/r.md" - | sed -n 1,20p)"

echo "== a row the run lacks"
python3 - "$work/r.json" "$work/lacks.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
r["rows"] = [x for x in r["rows"] if x["id"] != "restore.fresh.tmpfs.rcc"]
json.dump(r, open(sys.argv[2], "w"))
EOF
python3 "$render" --results "$work/lacks.json" --tables "$work/bench.out" >"$work/lacks.md" 2>"$work/lacks.err" ||
  fail "render without a row failed: $(cat "$work/lacks.err")"
grep -q '^| fresh restore, tmpfs | [0-9.]* | – | – |' "$work/lacks.md" ||
  fail "a missing baseline row is not shown as –: $(grep '^| fresh restore, tmpfs' "$work/lacks.md")"

echo "== results without ids"
python3 - "$work/r.json" "$work/old.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
r["hpak_bench"] = 1
for x in r["rows"]:
    del x["id"]
json.dump(r, open(sys.argv[2], "w"))
EOF
rc=0
python3 "$render" --results "$work/old.json" --tables "$work/bench.out" >"$work/old.md" 2>"$work/old.err" || rc=$?
[ "$rc" -ne 0 ] || fail "results without ids were rendered"
grep -q 'old.json has no row ids' "$work/old.err" || fail "no message for results without ids: $(cat "$work/old.err")"
echo "test_bench_render: ok"
