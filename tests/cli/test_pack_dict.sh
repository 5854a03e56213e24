#!/usr/bin/env bash
# pack -o trains a zstd dictionary for its blocks when it pays (issue 32):
# written on a tree of many similar small files, smaller than --no-dict, read
# back by verify, unpack, cat, ls and a rebuilt index (byte-identical), the
# same bytes at any -j; single entries below 256 KiB made with it, larger
# ones not; none for a tree of few small bytes and none in a library pack; gc
# of a library holding such a pack stores its objects again without it (no
# object lost); a damaged dictionary copy costs nothing while its mirror is
# intact, and both copies damaged fail loudly, naming the dictionary.
. "$(dirname "$0")/cli_lib.sh" "$@"

src=$work/src
# 2,400 small "modules" that share boilerplate, as npm and site-packages do.
python3 "$(dirname "$0")/../tools/similar_modules.py" "$src" 60 40
# Two files too large for a block, each a single entry: one below 256 KiB
# (made with the dictionary), one above (made without).
cat "$src"/node_modules/pkg0[01]/lib/*.js >"$src/mid.js"
cat "$src"/node_modules/pkg[01]*/lib/*.js >"$src/big.js"
pack_json() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$work/$1.out" "$2"; }

# ---- written when it pays, smaller than without ----
run dict pack "$src" -o "$work/d.hpak" --json
expect_rc dict 0
run nodict pack "$src" -o "$work/n.hpak" --json --no-dict
expect_rc nodict 0
dbytes=$(pack_json dict dictionary_bytes)
[ "$dbytes" -gt 0 ] || fail "no dictionary written for a tree of similar small files: $(out dict)"
[ "$(pack_json nodict dictionary_bytes)" -eq 0 ] || fail "--no-dict wrote a dictionary: $(out nodict)"
dsize=$(pack_json dict pack_bytes) nsize=$(pack_json nodict pack_bytes)
[ "$dsize" -lt "$nsize" ] || fail "the pack with its dictionary ($dsize bytes) is not smaller than without ($nsize)"
echo "# a dictionary of $dbytes bytes: pack $dsize bytes against $nsize without"

# ---- single entries: with the dictionary below 256 KiB ----
codec_of() { "$hpak" index --show "$work/d.hpak" | awk -v d="$(sha256sum "$src/$1" | cut -c1-64)" '$1 == d && $7 == "" { print $3 }'; }
[ "$(codec_of mid.js)" = zstd-dict ] || fail "a 45 KB single entry is not made with the dictionary: '$(codec_of mid.js)'"
[ "$(codec_of big.js)" = zstd ] || fail "a 455 KB single entry is not plain zstd: '$(codec_of big.js)'"

# ---- every reader reads it ----
run verify verify "$work/d.hpak"
expect_rc verify 0
run unpack unpack -q "$work/d.hpak" "$work/out"
expect_rc unpack 0
diff -r --no-dereference "$src" "$work/out" >"$work/diff.txt" 2>&1 || fail "unpacked tree differs: $(head -5 "$work/diff.txt")"
run cat cat "$work/d.hpak" node_modules/pkg07/lib/m13.js
expect_rc cat 0
cmp -s "$work/cat.out" "$src/node_modules/pkg07/lib/m13.js" || fail "cat of a dictionary-compressed member differs"
run catmid cat "$work/d.hpak" mid.js
expect_rc catmid 0
cmp -s "$work/catmid.out" "$src/mid.js" || fail "cat of a dictionary-compressed single entry differs"
run ls ls "$work/d.hpak"
expect_rc ls 0
cp "$work/d.hidx" "$work/orig.hidx"
rm "$work/d.hidx"
run index index "$work/d.hpak"
expect_rc index 0
cmp -s "$work/orig.hidx" "$work/d.hidx" || fail "the index rebuilt from a pack with a dictionary differs from the one pack wrote"
run j1 pack -q -j 1 "$src" -o "$work/j1.hpak"
expect_rc j1 0
cmp -s "$work/j1.hpak" "$work/d.hpak" || fail "-j 1 and the default -j wrote different packs"

# ---- none when there is little to gain, none in a library ----
mkdir -p "$work/small"
for i in $(seq 1 50); do echo "small file $i" >"$work/small/f$i.txt"; done
run small pack "$work/small" -o "$work/s.hpak" --json
expect_rc small 0
[ "$(pack_json small dictionary_bytes)" -eq 0 ] || fail "a dictionary for 50 tiny files: $(out small)"
run into pack -q "$src" --into "$work/L" --name env
expect_rc into 0
# entry kinds: the byte after each "HPEn" magic (3: dictionary)
dict_entries() { python3 "$(dirname "$0")/../tools/pack_entries.py" count-dict "$1"; }
[ "$(dict_entries "$work/d.hpak")" -eq 2 ] || fail "pack -o did not write its dictionary twice (entry and mirror)"
for p in "$work"/L/packs/pack-*.hpak; do
  [ "$(dict_entries "$p")" -eq 0 ] || fail "a library pack holds a dictionary: gc and fetch do not carry them"
done

# ---- gc of a library holding a pack made with a dictionary ----
# gc's packs carry no dictionary: it must store such objects again, never
# copy them as stored (before, a gc --full lost every block of such a pack).
run ginit init -q "$work/G"
expect_rc ginit 0
psum=$(sha256sum "$work/d.hpak" | cut -c1-64)
cp "$work/d.hpak" "$work/G/packs/pack-$psum.hpak"
cp "$work/orig.hidx" "$work/G/packs/pack-$psum.hidx"
printf 'hpak-catalog 1\n%s\n' "$(pack_json dict catalog_digest)" >"$work/G/catalogs/env"
run gc gc --full --grace 0 "$work/G"
expect_rc gc 0
run gverify verify "$work/G"
expect_rc gverify 0
for p in "$work"/G/packs/pack-*.hpak; do
  [ "$(dict_entries "$p")" -eq 0 ] || fail "gc wrote a dictionary into a library pack"
done
run grestore restore -q "$work/G" env "$work/gt"
expect_rc grestore 0
diff -r --no-dereference -x .hpak-state "$src" "$work/gt" >"$work/gdiff.txt" 2>&1 || fail "restored after gc, the tree differs: $(head -5 "$work/gdiff.txt")"

# ---- damaged dictionary copies ----
flip() { printf '\377\377\377\377' | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
dict_payload() { python3 "$(dirname "$0")/../tools/pack_entries.py" dict-payload "$1" "$2"; }
cp "$work/d.hpak" "$work/one.hpak"
cp "$work/orig.hidx" "$work/one.hidx"
flip "$work/one.hpak" "$(dict_payload "$work/one.hpak" 1)"
run unpack1 unpack -q "$work/one.hpak" "$work/out1"
expect_rc unpack1 0
diff -r --no-dereference "$src" "$work/out1" >/dev/null 2>&1 || fail "one damaged dictionary copy (its mirror intact) changed the unpacked tree"
cp "$work/d.hpak" "$work/two.hpak"
cp "$work/orig.hidx" "$work/two.hidx"
flip "$work/two.hpak" "$(dict_payload "$work/two.hpak" 1)"
flip "$work/two.hpak" "$(dict_payload "$work/two.hpak" 2)"
run verify2 verify "$work/two.hpak"
[ "$rc" -ne 0 ] || fail "verify passed a pack whose dictionary copies are both damaged"
no_crash verify2
grep -qi "dictionary" "$work/verify2.out" "$work/verify2.err" || fail "verify did not name the dictionary: $(out verify2) $(err verify2)"
run unpack2 unpack -q "$work/two.hpak" "$work/out2"
[ "$rc" -ne 0 ] || fail "unpack succeeded without the dictionary its blocks need"
no_crash unpack2
grep -qi "dictionary" "$work/unpack2.err" || fail "unpack did not say the dictionary is missing: $(err unpack2)"
echo "ok: $test_name"
