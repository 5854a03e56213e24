#!/usr/bin/env bash
# --json output is valid JSON (and valid UTF-8) whatever the file names:
# a quote, a newline, a 0x01 byte, a byte that is not UTF-8 (0xff), and bytes
# that look like UTF-8 but are not (an encoded surrogate, an overlong '/'),
# in the tree, in a symlink's target, in the pack's and the target's paths.
# Checked by parsing with python3 (strict UTF-8) for pack, ls, index, verify
# (a pack, a damaged pack naming the broken path, a library), restore and
# catalogs; names come back exactly (bytes that are not UTF-8 as \u00XX:
# each such byte read as Latin-1).
# ctest runs: bash test_json.sh <hpak-binary> <source-root>.
. "$(dirname "$0")/cli_lib.sh" "$@"

# json_ok NAME [lines]: stdout of NAME parses (one document, or one per line).
json_ok() {
  python3 - "$work/$1.out" "${2:-doc}" <<'EOF' || fail "$1: not valid JSON: $(head -c 2000 "$work/$1.out")"
import json, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")  # strict: invalid UTF-8 fails
if sys.argv[2] == "lines":
    assert text.endswith("\n")
    for line in text.splitlines():
        json.loads(line)
else:
    json.loads(text)
EOF
}

src=$work/src
mkdir -p "$src/d"
weird=$'we"ird\nname\x01.txt'
printf 'quote newline soh\n' >"$src/d/$weird"
printf 'not utf-8\n' >"$src/d/bad"$'\xff'"byte"
printf 'surrogate\n' >"$src/d/sur"$'\xed\xa0\x80'"rogate"
printf 'overlong\n' >"$src/d/over"$'\xc0\xaf'"long"
printf 'utf-8\n' >"$src/d/caf"$'\xc3\xa9'
ln -s $'tar"get\nx' "$src/d/link"

# python's view of the names (bytes not in valid UTF-8 as the code point of the byte)
cat >"$work/expect.py" <<'EOF'
want = {
    'd/we"ird\nname\x01.txt', 'd/bad\u00ffbyte', 'd/sur\u00ed\u00a0\u0080rogate',
    'd/over\u00c0\u00aflong', 'd/caf\u00e9', 'd/link',
}
EOF

pack=$work/$'pa"ck\n\x01.hpak'
run pack pack "$src" -o "$pack" -n env --json
expect_rc pack 0
json_ok pack
python3 - "$work/pack.out" "$pack" <<'EOF' || fail "pack: path not given back: $(out pack)"
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode())
assert d["pack"] == sys.argv[2], d["pack"]
EOF

run ls ls --json "$pack"
expect_rc ls 0
json_ok ls lines
python3 - "$work/ls.out" "$work/expect.py" <<'EOF' || fail "ls: names not given back exactly: $(out ls)"
import json, sys
exec(open(sys.argv[2]).read())
nodes = [json.loads(l) for l in open(sys.argv[1], "rb").read().decode().splitlines()]
paths = {n["path"] for n in nodes}
assert want <= paths, (want - paths, paths)
link = [n for n in nodes if n["path"] == "d/link"][0]
assert link["target"] == 'tar"get\nx', link
EOF

run index index --show --json --no-write "$pack"
expect_rc index 0
json_ok index lines

run verify verify --json "$pack"
expect_rc verify 0
json_ok verify
python3 - "$work/verify.out" "$pack" <<'EOF' || fail "verify: $(out verify)"
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode())
assert d[0]["pack"] == sys.argv[2] and d[0]["ok"] is True, d
EOF

# A damaged copy: the object of the weird file broken; verify names its path.
damaged=$work/$'dam"aged\n.hpak'
cp "$pack" "$damaged"
python3 - "$work/ls.out" "$work/index.out" "$damaged" <<'EOF' || fail "could not damage the pack"
import json, sys
nodes = [json.loads(l) for l in open(sys.argv[1], "rb").read().decode().splitlines()]
digest = [n for n in nodes if n["path"] == 'd/we"ird\nname\x01.txt'][0]["digest"]
recs = [json.loads(l) for l in open(sys.argv[2], "rb").read().decode().splitlines()]
off = [r for r in recs if r["digest"] == digest][0]["offset"]
with open(sys.argv[3], "r+b") as f:
    f.seek(off + 72 + 2)  # inside the stored bytes (after the 72-byte entry header)
    b = f.read(1)
    f.seek(off + 72 + 2)
    f.write(bytes([b[0] ^ 0x5a]))
EOF
run vbad verify --json "$damaged"
expect_rc vbad 1
json_ok vbad
python3 - "$work/vbad.out" "$damaged" <<'EOF' || fail "vbad: the broken path is not named: $(out vbad)"
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode())[0]
assert d["pack"] == sys.argv[2] and d["ok"] is False, d
paths = [p for b in d["bad_objects"] for p in b["paths"]]
assert 'env:d/we"ird\nname\x01.txt' in paths, paths  # catalog:path
EOF

# A library and a restore target with the same kind of names.
lib=$work/$'li"b\n'
run init init "$lib"
expect_rc init 0
run add pack "$src" --into "$lib" --name env --json
expect_rc add 0
json_ok add
run cats catalogs --json "$lib"
expect_rc cats 0
json_ok cats lines
run vlib verify --json "$lib" "$pack"
expect_rc vlib 0
json_ok vlib
target=$work/$'tar"get\n\x01'
run restore restore --json "$lib" env "$target"
expect_rc restore 0
json_ok restore
python3 - "$work/restore.out" "$target" <<'EOF' || fail "restore: $(out restore)"
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode())
assert d["target"] == sys.argv[2] and d["failed"] == 0, d
EOF
[ -f "$target/d/$weird" ] || fail "restore: '$weird' not restored"
echo "test_json: ok"
