#!/usr/bin/env bash
# hpak bench: the harness works. `hpak bench --quick` (tiny corpora, one run)
# exits 0, its --json parses and holds every suite with measured rows, the
# targets and the environment; the table output has a section per suite; a
# user --corpus is measured as "user"; a bad suite is a usage error (2).
# No timing is asserted: the figures of a --quick run mean nothing.
# ctest runs: bash test_bench.sh <hpak-binary> <source-root>.
. "$(dirname "$0")/cli_lib.sh" "$@"

bindir=$(dirname "$hpak")
for t in hpak-gencorpus hpak-rccbase hpak-ceiling; do
  if [ ! -x "$bindir/$t" ] && [ ! -x "$bindir/bench/$t" ] && ! command -v "$t" >/dev/null; then
    echo "test_bench: skipped: $t is not built next to $hpak"
    exit 125
  fi
done
# The bench runs hpak under strace to count syscalls; LeakSanitizer cannot run
# under ptrace (ASan build), so leak checking is off for this harness test
# (every other test keeps it).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# tmpfs runs go to /dev/shm when it is usable, else to the work directory.
tmpfs=/dev/shm
[ -d "$tmpfs" ] && [ -w "$tmpfs" ] || tmpfs=$work
mkdir -p "$work/disk"

echo "== hpak bench --quick --json (all suites)"
run quick bench --quick --json --tmpfs "$tmpfs" --disk "$work/disk" --save "$work/saved.json"
expect_rc quick 0
python3 - "$work/quick.out" "$work/saved.json" <<'EOF' || fail "bench --quick --json: $(head -c 3000 "$work/quick.out")"
import json, sys
r = json.load(open(sys.argv[1]))
saved = json.load(open(sys.argv[2]))
assert saved == r, "--save wrote something else than --json printed"
want = ["restore", "pack", "read", "verify", "gc"]
assert r["suites"] == want, r["suites"]
assert r["quick"] is True and r["failed"] is False
env = r["environment"]
for k in ("cpu", "cpus", "kernel", "load_start", "load_end", "media", "threads", "runs", "tools"):
    assert k in env, k
assert [m["name"] for m in env["media"]] == ["tmpfs"], env["media"]
rows = r["rows"]
for s in want:
    mine = [x for x in rows if x["suite"] == s and x["samples"]]
    assert mine, "no measured rows for suite " + s
    for x in mine:
        assert x["n"] == len(x["samples"]) >= 1 and x["median"] >= 0, x
for x in rows:
    if x["role"] == "hpak":
        assert x["error"] is None, x
groups = {(x["suite"], x["group"]) for x in rows}
for g in [("restore", "fresh"), ("restore", "churn"), ("restore", "unpack"), ("restore", "dirty 0%"),
          ("restore", "dirty 1%"), ("restore", "dirty 10%"), ("pack", "pack rcc"), ("pack", "pack smallfile"),
          ("pack", "pack packfs"), ("read", "random read packfs"), ("verify", "verify"),
          ("gc", "repack 50% garbage packfs")]:
    assert g in groups, g
tools = {(x["group"], x["tool"]) for x in rows}
for t in [("fresh", "hpak restore"), ("fresh", "rcc-style restore"), ("fresh", "ceiling (write only)")]:
    assert t in tools, t
assert r["targets"] and all({"name", "value", "limit", "pass", "measured"} <= set(t) for t in r["targets"])
assert any(c["name"] == "rcc" for c in r["corpora"])
print("json ok: %d rows, %d targets" % (len(rows), len(r["targets"])))
EOF

echo "== tables, one suite, a user corpus"
mkdir -p "$work/env/lib/pkg" "$work/env/bin"
for i in $(seq 1 60); do printf 'print(%d)\n' "$i" >"$work/env/lib/pkg/m$i.py"; done
printf '#!/bin/sh\necho hi\n' >"$work/env/bin/tool" && chmod 755 "$work/env/bin/tool"
ln -s tool "$work/env/bin/alias"
run table bench --quick --suite verify,pack --corpus "$work/env" --tmpfs "$tmpfs" --disk "$work/disk"
expect_rc table 0
grep -q '^## pack' "$work/table.out" || fail "no pack section: $(head -c 2000 "$work/table.out")"
grep -q '^## verify' "$work/table.out" || fail "no verify section"
grep -q '^## restore' "$work/table.out" && fail "restore ran though not asked for"
grep -q '^### pack user' "$work/table.out" || fail "the user corpus is not measured as 'user': $(grep '^###' "$work/table.out")"
grep -q '^## targets' "$work/table.out" || fail "no targets section"

echo "== usage errors"
run badsuite bench --suite nope
expect_rc badsuite 2
run badruns bench --runs 0
expect_rc badruns 2
echo "test_bench: ok"
