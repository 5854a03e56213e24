#!/usr/bin/env bash
# Bad input to the real binary: every refusal is a non-zero exit with one
# 'hpak: error:' line on stderr, and nothing is written outside the target.
# Truncated packs, wrong magic, unsupported version, flipped bytes (verify
# names the object and the catalog paths it breaks), an index from another
# pack, unpack into a non-empty dir or onto a file, a fifo in the tree,
# missing files, unknown commands and options.
. "$(dirname "$0")/cli_lib.sh" "$@"

src=$work/src
make_tree "$src" 40 3
run pack pack -q "$src" -o "$work/env.hpak"
expect_rc pack 0
size=$(stat -c %s "$work/env.hpak")
mkdir "$work/cases"

# flip FILE OFFSET: xor one byte with 0xff, in place.
flip() {
  python3 - "$1" "$2" <<'PY'
import sys
p, off = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read())
b[off] ^= 0xff
open(p, "wb").write(b)
PY
}
# record OFFSET DIGEST PATH for the entry holding PATH's object (from ls --json and index --show).
run lsjson ls --json "$work/env.hpak"
expect_rc lsjson 0
run show index --show --no-write "$work/env.hpak"
expect_rc show 0

# ---- truncated packs ----
for len in 0 1 4 31 32 64 95 96 200 $((size / 2)) $((size - 33)) $((size - 32)) $((size - 1)); do
  p=$work/cases/trunc-$len.hpak
  head -c "$len" "$work/env.hpak" >"$p"
  run "trunc$len.verify" verify "$p"
  no_crash "trunc$len.verify"
  [ "$rc" -ne 0 ] || fail "verify accepted a pack truncated to $len of $size bytes"
  [ "$rc" -eq 1 ] && { grep -q "^BAD: " "$work/trunc$len.verify.out" || fail "truncated to $len: exit 1 without a BAD report"; }
  [ "$rc" -eq 2 ] && one_line_error "trunc$len.verify"
  target=$work/cases/trunc-$len.out
  mkdir "$target" # made here, so its parent's mtime stays out of the comparison
  before=$(snapshot "$work/cases" "$target")
  run "trunc$len.unpack" unpack -q "$p" "$target"
  no_crash "trunc$len.unpack"
  [ "$before" = "$(snapshot "$work/cases" "$target")" ] || fail "unpack of a truncated pack wrote outside its target"
  if [ "$rc" -eq 0 ]; then
    # Only the trailer or footer is gone: every object still proves itself.
    diff -r --no-dereference "$src" "$target" >/dev/null || fail "unpack of a pack truncated to $len succeeded with a wrong tree"
  else
    refused "trunc$len.unpack"
    [ -z "$(find "$target" -type f 2>/dev/null)" ] || [ "$len" -gt $((size / 3)) ] || fail "truncated to $len: files restored from a pack missing its catalog?"
  fi
  run "trunc$len.ls" ls "$p"
  no_crash "trunc$len.ls"
  [ "$rc" -eq 0 ] || refused "trunc$len.ls"
done

# ---- wrong magic ----
cp "$work/env.hpak" "$work/cases/magic.hpak"
printf 'XPAK' | dd of="$work/cases/magic.hpak" bs=1 conv=notrunc status=none
head -c 4 "$work/env.hpak" >/dev/null
printf 'just some text, not a pack at all\n%.0s' {1..20} >"$work/cases/text.hpak"
run magic.verify verify "$work/cases/text.hpak"
refused magic.verify "not an HPAK pack"
run magic.ls ls "$work/cases/text.hpak"
refused magic.ls "not an HPAK pack"
run magic.unpack unpack "$work/cases/text.hpak" "$work/cases/magic.out"
refused magic.unpack "not an HPAK pack"
[ ! -e "$work/cases/magic.out" ] || fail "unpack of a non-pack created its target"
# A pack whose magic alone is damaged is still recognised by its footer: damage, not refusal.
run magic1.verify verify "$work/cases/magic.hpak"
expect_rc magic1.verify 1
grep -q "bad magic" "$work/magic1.verify.out" || fail "verify does not report the damaged magic: $(out magic1.verify)"

# ---- unsupported version (pack and footer say 3: a future format) ----
python3 - "$work/env.hpak" "$work/cases/v2.hpak" <<'PY'
import hashlib, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
b[4:6] = struct.pack("<H", 3)
b[-64 + 4:-64 + 8] = struct.pack("<I", 3)
b[-32:] = hashlib.sha256(bytes(b[:-32])).digest()
open(sys.argv[2], "wb").write(b)
PY
for cmd in verify ls; do
  run "v2.$cmd" $cmd "$work/cases/v2.hpak"
  refused "v2.$cmd" "unsupported HPAK pack version 3"
done
run v2.unpack unpack "$work/cases/v2.hpak" "$work/cases/v2.out"
refused v2.unpack "unsupported HPAK pack version 3"
[ ! -e "$work/cases/v2.out" ] || fail "unpack of a version-3 pack created its target"
run v2.cat cat "$work/cases/v2.hpak" bin/secret
refused v2.cat "unsupported HPAK pack version 3"

# ---- flipped bytes in an object: verify names it and the paths it breaks ----
# The byte flipped is in the object's stored bytes: its entry's payload, or in
# a format-2 pack its block's payload (which costs the block's members).
read -r digest offset at lost < <(python3 - "$work/lsjson.out" "$work/show.out" "$work/env.hpak" <<'PY'
import json, sys
paths = {}
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["type"] == "file":
        paths.setdefault(e["digest"], []).append(e["path"])
lic = [d for d, p in paths.items() if "share/doc/LICENSE" in p][0]
for l in open(sys.argv[2]):
    d, kind, codec, off, stored, raw = l.split()[:6]
    if d != lic:
        continue
    off, stored = int(off), int(stored)
    if len(l.split()) == 6:
        print(d, off, off + 72 + stored // 2, 1)
    else:
        with open(sys.argv[3], "rb") as f:
            f.seek(off); h = f.read(48)
        flags = int.from_bytes(h[6:8], "little")
        count, bstored = int.from_bytes(h[8:12], "little"), int.from_bytes(h[16:20], "little")
        member = 4 if flags & 1 else 36  # a table of lengths only, or of digests and lengths
        print(d, off, off + 48 + member * count + bstored // 2, count)
    break
PY
)
[ -n "$digest" ] || fail "could not find the LICENSE object"
cp "$work/env.hpak" "$work/cases/flip.hpak"
cp "$work/env.hidx" "$work/cases/flip.hidx"
flip "$work/cases/flip.hpak" "$at"
run flip.verify verify "$work/cases/flip.hpak"
expect_rc flip.verify 1
grep -q "bad blob $digest at offset $offset" "$work/flip.verify.out" || fail "verify does not name the bad object: $(out flip.verify)"
grep -q "breaks src:share/doc/LICENSE" "$work/flip.verify.out" || fail "verify does not name share/doc/LICENSE: $(out flip.verify)"
grep -q "breaks src:lib/python3.11/site-packages/numpy/LICENSE.txt" "$work/flip.verify.out" || fail "verify does not name the duplicate's path: $(out flip.verify)"
grep -Eq "^  $lost objects? lost" "$work/flip.verify.out" || fail "verify does not count $lost lost object(s): $(out flip.verify)"
mkdir "$work/cases/flip.out"
before=$(snapshot "$work/cases" "$work/cases/flip.out")
run flip.unpack unpack -q "$work/cases/flip.hpak" "$work/cases/flip.out"
refused flip.unpack "$digest|LICENSE|bytes of the block"
[ "$before" = "$(snapshot "$work/cases" "$work/cases/flip.out")" ] || fail "unpack of a damaged pack wrote outside its target"
[ ! -e "$work/cases/flip.out/share/doc/LICENSE" ] || fail "unpack left the damaged file behind"
run flip.partial unpack -q --partial "$work/cases/flip.hpak" "$work/cases/flip.partial"
expect_rc flip.partial 1
grep -q "not restored" "$work/flip.partial.err" || fail "unpack --partial does not say what was not restored"
[ ! -e "$work/cases/flip.partial/share/doc/LICENSE" ] || fail "unpack --partial wrote the damaged file"
cmp -s "$src/bin/python3.11" "$work/cases/flip.partial/bin/python3.11" || fail "unpack --partial did not restore the intact files"
run flip.cat cat "$work/cases/flip.hpak" share/doc/LICENSE
refused flip.cat

# A flipped byte in an entry header: the object is still named, with its paths.
cp "$work/env.hpak" "$work/cases/hflip.hpak"
flip "$work/cases/hflip.hpak" $((offset + 30))
run hflip.verify verify "$work/cases/hflip.hpak"
expect_rc hflip.verify 1
grep -q "$digest" "$work/hflip.verify.out" || fail "verify does not name the object whose header is damaged: $(out hflip.verify)"
grep -q "breaks src:share/doc/LICENSE" "$work/hflip.verify.out" || fail "verify does not name the path behind a damaged header: $(out hflip.verify)"

# ---- an index from another pack ----
mkdir "$work/other"
echo "other" >"$work/other/x"
run other pack -q "$work/other" -o "$work/cases/other.hpak"
expect_rc other 0
cp "$work/env.hpak" "$work/cases/foreign.hpak"
cp "$work/cases/other.hidx" "$work/cases/foreign.hidx"
run foreign.verify verify "$work/cases/foreign.hpak"
expect_rc foreign.verify 1
grep -q "does not belong to this pack" "$work/foreign.verify.out" || fail "verify does not report the foreign index: $(out foreign.verify)"
run foreign.unpack unpack -q "$work/cases/foreign.hpak" "$work/cases/foreign.out"
expect_rc foreign.unpack 0 # the index is derived data: the pack is scanned instead
diff -r --no-dereference "$src" "$work/cases/foreign.out" >/dev/null || fail "unpack with a foreign index restored a wrong tree"
run foreign.index index "$work/cases/foreign.hpak"
expect_rc foreign.index 0
cmp -s "$work/cases/foreign.hidx" "$work/env.hidx" || fail "hpak index did not rebuild the right index"
run foreign.verify2 verify "$work/cases/foreign.hpak"
expect_rc foreign.verify2 0

# ---- unpack into a non-empty dir, onto a file ----
mkdir -p "$work/cases/full/bin"
echo "mine" >"$work/cases/full/bin/keep"
echo "mine" >"$work/cases/full/lib64"
before=$(snapshot "$work/cases")
run nonempty unpack -q "$work/env.hpak" "$work/cases/full"
refused nonempty "not empty.*would overwrite.*'bin'.*'lib64'.*--force"
[ "$before" = "$(snapshot "$work/cases")" ] || fail "a refused unpack into a non-empty dir changed something"
echo "a file" >"$work/cases/afile"
before=$(snapshot "$work/cases")
run onfile unpack -q "$work/env.hpak" "$work/cases/afile"
refused onfile "not a directory"
[ "$before" = "$(snapshot "$work/cases")" ] || fail "unpack onto a file changed something"
run noparent unpack -q "$work/env.hpak" "$work/cases/no/such/parent"
expect_rc noparent 0 # missing parents are created, like mkdir -p
[ -d "$work/cases/no/such/parent/bin" ] || fail "unpack into missing parents wrote no tree"
rm -rf "$work/cases/no"
ln -s "$work/nowhere" "$work/cases/dangling"
run danglingparent unpack -q "$work/env.hpak" "$work/cases/dangling/parent"
refused danglingparent "not a directory.*not followed"
[ ! -e "$work/nowhere" ] || fail "unpack created a directory through a dangling symlink"
rm "$work/cases/dangling"

# ---- a fifo in the tree ----
mkdir -p "$work/fifo/sub"
echo a >"$work/fifo/a"
mkfifo "$work/fifo/sub/pipe"
mkdir "$work/fifo-out"
run fifo pack -q "$work/fifo" -o "$work/fifo-out/f.hpak"
refused fifo "sub/pipe.*special file.*--skip-special"
[ -z "$(ls -A "$work/fifo-out")" ] || fail "a refused pack left files: $(ls -A "$work/fifo-out")"
run fifo2 pack -q --skip-special "$work/fifo" -o "$work/fifo-out/f.hpak"
expect_rc fifo2 0
grep -q "skipped special file 'sub/pipe'" "$work/fifo2.err" || fail "--skip-special does not say what it skipped: $(err fifo2)"
run fifo3 ls "$work/fifo-out/f.hpak"
expect_rc fifo3 0
[ "$(out fifo3)" = "$(printf 'a\nsub/')" ] || fail "the fifo is in the pack: $(out fifo3)"

# ---- missing files ----
run miss.pack pack -q "$work/nope" -o "$work/cases/nope.hpak"
refused miss.pack
run miss.pack2 pack -q "$src" -o "$work/no/such/dir/x.hpak"
refused miss.pack2
for cmd in verify ls index; do
  run "miss.$cmd" $cmd "$work/cases/missing.hpak"
  refused "miss.$cmd" "missing.hpak"
done
run miss.unpack unpack "$work/cases/missing.hpak" "$work/cases/missing.out"
refused miss.unpack "missing.hpak"
[ ! -e "$work/cases/missing.out" ] || fail "unpack of a missing pack created its target"
run miss.cat cat "$work/cases/missing.hpak" x
refused miss.cat "missing.hpak"
run miss.catpath cat "$work/env.hpak" no/such/file
refused miss.catpath "no/such/file"
run dirpack verify "$work/cases"
refused dirpack

# ---- unknown commands and options ----
run unk unpak "$work/env.hpak"
refused unk "'unpak' is not an hpak command; did you mean 'unpack'\\?"
run unk2 vrify "$work/env.hpak"
refused unk2 "did you mean 'verify'"
run unk3 frobnicate
refused unk3 "is not an hpak command"
run badopt verify --bogus "$work/env.hpak"
refused badopt "bogus"
run noargs unpack
refused noargs
run badlevel pack -q -l 99 "$src" -o "$work/cases/l.hpak"
refused badlevel
[ ! -e "$work/cases/l.hpak" ] || fail "pack with a bad level wrote a pack"
echo "ok: $test_name"
