#!/usr/bin/env bash
# Exit statuses shared by all commands: 0 success, 1 the command ran and
# found a problem (corruption; objects not restored with --partial), 2 usage
# error or could not run. verify --json is valid JSON and lists bad objects
# with the paths they break.
. "$(dirname "$0")/cli_lib.sh" "$@"

src=$work/src
make_tree "$src" 30 5
mkdir "$work/src2"
echo "second tree" >"$work/src2/only-file"

# ---- 0 ----
run pack pack -q "$src" -o "$work/env.hpak" --pack-version 1 # format 1: the damage below costs one object
expect_rc pack 0
run pack2 pack -q "$work/src2" -o "$work/two.hpak" -n second
expect_rc pack2 0
for args in "verify $work/env.hpak" "verify $work/env.hpak $work/two.hpak" "ls $work/env.hpak" "ls -l $work/two.hpak" \
  "cat $work/two.hpak only-file" "index $work/env.hpak" "index --show --no-write $work/env.hpak" "--version" "--help" "verify --help"; do
  # shellcheck disable=SC2086
  run zero $args
  expect_rc zero 0
done
run unpack unpack -q "$work/env.hpak" "$work/out"
expect_rc unpack 0

# ---- verify --json of intact packs ----
run json verify --json "$work/env.hpak" "$work/two.hpak"
expect_rc json 0
python3 - "$work/json.out" <<'PY' || fail "verify --json of intact packs: $(out json)"
import json, sys
r = json.load(open(sys.argv[1]))
assert isinstance(r, list) and len(r) == 2, r
for p in r:
    assert p["ok"] is True and p["problems"] == [] and p["bad_objects"] == [], p
    assert p["objects"] >= 1 and p["catalogs"] == 1, p
PY

# ---- 1: damage ----
cp "$work/env.hpak" "$work/bad.hpak"
cp "$work/env.hidx" "$work/bad.hidx"
digest=$(sha256sum "$src/bin/python3.11" | cut -d' ' -f1)
run show index --show --no-write "$work/env.hpak"
read -r offset stored < <(awk -v d="$digest" '$1 == d { print $4, $5 }' "$work/show.out")
[ -n "$offset" ] || fail "no entry for bin/python3.11 in index --show"
python3 - "$work/bad.hpak" $((offset + 72 + stored - 1)) <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[int(sys.argv[2])] ^= 0xff
open(sys.argv[1], "wb").write(b)
PY
run bad verify "$work/bad.hpak"
expect_rc bad 1
run badmix verify "$work/env.hpak" "$work/bad.hpak"
expect_rc badmix 1
run badjson verify --json "$work/env.hpak" "$work/bad.hpak"
expect_rc badjson 1
python3 - "$work/badjson.out" "$digest" "$offset" <<'PY' || fail "verify --json of a damaged pack: $(out badjson)"
import json, sys
r = json.load(open(sys.argv[1]))
digest, offset = sys.argv[2], int(sys.argv[3])
assert [p["ok"] for p in r] == [True, False], r
bad = r[1]["bad_objects"]
assert len(bad) == 1, bad
b = bad[0]
assert b["digest"] == digest and b["offset"] == offset and b["kind"] == "blob" and b["lost"] is True, b
assert b["paths"] == ["src:bin/python3.11"], b
assert b["error"], b
assert any("trailer" in p for p in r[1]["problems"]), r[1]["problems"]
PY
run partial unpack -q --partial "$work/bad.hpak" "$work/partial"
expect_rc partial 1
grep -q "'bin/python3.11' not restored" "$work/partial.err" || fail "unpack --partial does not name the file: $(err partial)"
grep -q "1 of .* files not restored" "$work/partial.err" || fail "unpack --partial gives no count: $(err partial)"
[ ! -e "$work/partial/bin/python3.11" ] || fail "unpack --partial wrote the damaged file"
run noforce unpack -q "$work/bad.hpak" "$work/nopartial"
expect_rc noforce 2
# index on a damaged pack still writes the index, and says the pack is damaged.
cp "$work/env.hpak" "$work/hdr.hpak"
python3 - "$work/hdr.hpak" "$offset" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[int(sys.argv[2]) + 1] ^= 0xff  # the entry's magic
open(sys.argv[1], "wb").write(b)
PY
run idx index "$work/hdr.hpak"
expect_rc idx 1
grep -q "^hpak: warning: " "$work/idx.err" || fail "index on a damaged pack gives no warning: $(err idx)"
[ -f "$work/hdr.hidx" ] || fail "index on a damaged pack wrote no index"

# ---- 2: usage and could-not-run ----
: >"$work/empty.hpak"
for args in "" "verify" "unpack $work/env.hpak" "pack $src" "pack -l 20 $src -o $work/x.hpak" "verify --no-such-flag $work/env.hpak" \
  "nosuchcommand" "verify $work/missing.hpak" "verify $work/empty.hpak" "ls $work/empty.hpak" "cat $work/env.hpak no/such/path" \
  "cat $work/env.hpak 0000" "unpack $work/env.hpak $work/out"; do
  # shellcheck disable=SC2086
  run two $args
  expect_rc two 2
  one_line_error two
done
# --json of an unreadable pack: still exit 2, and what is printed is not half a JSON document on success.
run jsonmissing verify --json "$work/missing.hpak"
[ "$rc" -eq 2 ] || fail "verify --json of a missing pack: exit $rc"
echo "ok: $test_name"
