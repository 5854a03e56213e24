#!/usr/bin/env bash
# hpak import: rcc hololibs (directory and hololib.zip, gzip/zstd/raw objects)
# built by tests/tools/make_rcc_hololib.py from a tree whose files embed the
# tree's own path; import + restore into a path of another length gives the
# tree back byte for byte (modes, symlinks, empty files and dirs), relocated;
# a re-import stores nothing, an import of a partly known space only the new
# objects, one after `hpak pack --into` of the same tree no object; one source
# may hold several catalogs; zip entries may be deflated; hostile hololibs
# (damaged objects, also ones found while the pack is written and ones two
# paths share, a catalog bomb) are refused (exit 1, one line, nothing named,
# no pack, no temp file).
# ctest runs: bash test_import.sh <hpak-binary> <source-root>.
. "$(dirname "$0")/cli_lib.sh" "$@"
gen="$src_root/tests/tools/make_rcc_hololib.py"
need_tool zstd

# The space the environment was "lifted" from, and restore targets of other lengths.
space=$work/holotree/h1a2b3c4_5d6e7f8a9b0c1dt
python3 "$gen" tree "$space"
cat_name=$(python3 "$gen" lift "$space" "$work/hololib")
[ "$cat_name" = 1a2b3c4d5e6f7a8bv12.linux_amd64 ] || fail "generator named the catalog '$cat_name'"
python3 "$gen" lift "$space" - --zip "$work/hololib.zip" >/dev/null
python3 "$gen" lift "$space" "$work/hololib-zstd" --compress zstd --name zstd-env >/dev/null
python3 "$gen" lift "$space" "$work/hololib-raw" --compress raw --name raw-env >/dev/null

# restored_ok NAME LIB CATALOG TARGET [SPACE [RESTORE-OPTIONS...]]: restore, then
# compare with the tree made afresh at TARGET (its binary patched in place, as
# a restore of the tree lifted from SPACE, default $space, writes it).
restored_ok() {
  local name=$1 lib=$2 cat=$3 target=$4 from=${5:-$space}
  shift $(($# < 5 ? $# : 5))
  mkdir -p "$(dirname "$target")"
  # --preserve-setid: the tree has set-uid/set-gid modes, compared exactly.
  run "$name" restore --preserve-setid "$@" "$lib" "$cat" "$target"
  expect_rc "$name" 0
  mv "$target" "$target.restored"
  python3 "$gen" tree "$target" --packed-at "$from"
  python3 "$gen" compare "$target.restored" "$target" 2>"$work/$name.cmp" ||
    fail "$name: restored tree differs from the original relocated to '$target': $(head -c 2000 "$work/$name.cmp")"
  rm -rf "$target" "$target.restored"
}
packs() { find "$1/packs" -name 'pack-*.hpak' | wc -l; }
json_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"; }
# new_objects A B: how many distinct file contents tree B has that tree A has not.
new_objects() {
  python3 -c '
import hashlib, os, sys
def objects(root):
    out = set()
    for d, _, files in os.walk(root):  # directory links are not followed
        for f in files:
            p = os.path.join(d, f)
            if not os.path.islink(p):
                with open(p, "rb") as fh:
                    out.add(hashlib.sha256(fh.read()).hexdigest())
    return out
print(len(objects(sys.argv[2]) - objects(sys.argv[1])))' "$1" "$2"
}

# ---- directory source: import, restore shorter and longer than the space path
run dir import "$work/lib" "$work/hololib" --json
expect_rc dir 0
[ "$(json_field "$work/dir.out" objects_written)" -gt 10 ] || fail "dir: too few objects written: $(out dir)"
[ "$(packs "$work/lib")" -eq 1 ] || fail "dir: expected one pack, got $(packs "$work/lib")"
[ -f "$work/lib/catalogs/$cat_name" ] || fail "dir: catalog name '$cat_name' not set"
restored_ok r-short "$work/lib" "$cat_name" "$work/s"
# Longer: its binary (NUL-terminated strings) cannot take the path: refused, or left as packed.
long_target=$work/a/much/longer/restore/target/path/than/the/space/was
run r-long-refused restore "$work/lib" "$cat_name" "$long_target"
refused r-long-refused "'bin/python' holds the packed path in NUL-terminated strings"
[ ! -e "$long_target" ] || fail "r-long-refused: the refused restore made its target"
restored_ok r-long "$work/lib" "$cat_name" "$long_target" "$space" --keep-unrelocated
# Shadow entries (under the symlinked directories) are links, not real files.
run ls ls "$(find "$work/lib/packs" -name 'pack-*.hpak')" --catalog "$cat_name"
expect_rc ls 0
grep -q 'share/pkg-link' "$work/ls.out" || fail "ls: share/pkg-link missing: $(out ls)"
if grep -qE 'share/pkg-link/|lib64/' "$work/ls.out"; then fail "ls: entries under symlinked directories were imported: $(out ls)"; fi

# ---- re-import: nothing new stored
run again import "$work/lib" "$work/hololib" --json
expect_rc again 0
[ "$(json_field "$work/again.out" objects_written)" -eq 0 ] || fail "re-import wrote objects: $(out again)"
[ -z "$(json_field "$work/again.out" pack)" ] || fail "re-import named a pack: $(out again)"
[ "$(packs "$work/lib")" -eq 1 ] || fail "re-import added a pack"

# ---- the zip export, renamed; same objects: nothing new, catalog same tree
run zip import "$work/lib" "$work/hololib.zip" --name from-zip --json
expect_rc zip 0
[ "$(json_field "$work/zip.out" objects_written)" -eq 0 ] || fail "zip: objects already imported were stored again: $(out zip)"
restored_ok r-zip "$work/lib" from-zip "$work/z"
# ... and into a fresh library
run zip2 import "$work/lib-zip" "$work/hololib.zip"
expect_rc zip2 0
restored_ok r-zip2 "$work/lib-zip" "$cat_name" "$work/zz"

# ---- another space: some objects already in the library, only the new ones written
other=$work/holotree/another_space_of_another_length
python3 "$gen" tree "$other"
python3 "$gen" lift "$other" "$work/hololib-b" --name env-b >/dev/null
want=$(new_objects "$space" "$other")
before=$(packs "$work/lib")
run partial import "$work/lib" "$work/hololib-b" --json
expect_rc partial 0
written=$(json_field "$work/partial.out" objects_written)
present=$(json_field "$work/partial.out" objects_present)
unique=$(json_field "$work/partial.out" unique_objects)
[ "$want" -gt 0 ] && [ "$written" -eq "$want" ] || fail "partial: wrote $written objects, the new ones are $want: $(out partial)"
[ "$present" -gt 0 ] && [ "$present" -eq $((unique - want)) ] || fail "partial: $present of $unique present, expected $((unique - want)): $(out partial)"
[ "$(packs "$work/lib")" -eq $((before + 1)) ] || fail "partial: expected one more pack than $before, got $(packs "$work/lib")"
restored_ok r-partial "$work/lib" env-b "$work/pb" "$other"
restored_ok r-partial-a "$work/lib" "$cat_name" "$work/pa"

# ---- one source holding two catalogs: both names set, one pack
python3 "$gen" lift "$space" "$work/hololib-two" --name env-a >/dev/null
python3 "$gen" lift "$other" "$work/hololib-two" --name env-b >/dev/null
run two import "$work/lib-two" "$work/hololib-two" --json
expect_rc two 0
[ "$(packs "$work/lib-two")" -eq 1 ] || fail "two: expected one pack, got $(packs "$work/lib-two")"
[ -f "$work/lib-two/catalogs/env-a" ] && [ -f "$work/lib-two/catalogs/env-b" ] || fail "two: names set: $(ls "$work/lib-two/catalogs")"
[ "$(json_field "$work/two.out" unique_objects)" -eq "$(json_field "$work/two.out" objects_written)" ] || fail "two: not every object written: $(out two)"
restored_ok r-two-a "$work/lib-two" env-a "$work/ta"
restored_ok r-two-b "$work/lib-two" env-b "$work/tb" "$other"

# ---- a zip whose entries are deflated (rcc stores them; other zip tools deflate)
python3 "$gen" lift "$space" - --zip "$work/hololib-deflate.zip" --zip-deflate 1 >/dev/null
python3 -c 'import sys, zipfile; sys.exit(any(i.compress_type != zipfile.ZIP_DEFLATED for i in zipfile.ZipFile(sys.argv[1]).infolist()))' \
  "$work/hololib-deflate.zip" || fail "deflate: the generator stored some entries"
run deflate import "$work/lib-deflate" "$work/hololib-deflate.zip"
expect_rc deflate 0
restored_ok r-deflate "$work/lib-deflate" "$cat_name" "$work/df"

# ---- the same tree packed by hpak first: the import stores no object again
# (only its catalog, which differs from the packed one: rcc's modes and times)
run packed pack "$space" --into "$work/lib-packed" --name packed
expect_rc packed 0
run after-pack import "$work/lib-packed" "$work/hololib" --json
expect_rc after-pack 0
[ "$(json_field "$work/after-pack.out" objects_written)" -eq 0 ] || fail "after-pack: objects stored again: $(out after-pack)"
[ "$(json_field "$work/after-pack.out" raw_written)" -eq 0 ] || fail "after-pack: object bytes stored again: $(out after-pack)"
restored_ok r-after-pack "$work/lib-packed" "$cat_name" "$work/ap"

# ---- zstd'd and raw objects, two sources in one import (one pack)
run multi import "$work/lib-multi" "$work/hololib-zstd" "$work/hololib-raw" --json
expect_rc multi 0
[ "$(packs "$work/lib-multi")" -eq 1 ] || fail "multi: expected one pack"
restored_ok r-zstd "$work/lib-multi" zstd-env "$work/zs"
restored_ok r-raw "$work/lib-multi" raw-env "$work/rw"
run multi-name import "$work/lib-multi" "$work/hololib-zstd" "$work/hololib-raw" --name x
expect_rc multi-name 2
one_line_error multi-name 'single catalog'

# ---- a bare space name (a prompt: no path to relocate) is left as it is, as
# hpak's own packs leave it, and counted; the space path beside it is relocated.
rm -rf "$work/hb" && python3 "$gen" lift "$space" "$work/hb" --damage bare-name --name bare-env >/dev/null
run bare import "$work/lib-bare" "$work/hb" --json
expect_rc bare 0
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["catalogs"][0]["space_names_kept"])' "$work/bare.out")" -eq 1 ] ||
  fail "bare: expected one bare space name kept: $(out bare)"
run bare-restore restore --preserve-setid "$work/lib-bare" bare-env "$work/b/another-length"
expect_rc bare-restore 0
bare_file=$(grep -rlF "PS1=(h1a2b3c4_5d6e7f8a9b0c1dt" "$work/b/another-length") || fail "bare: the bare name was not kept"
grep -qF "$space" "$bare_file" && fail "bare: '$bare_file' still holds the old space path"
grep -qF "$work/b/another-length" "$bare_file" || fail "bare: '$bare_file' was not relocated"

# ---- hostile hololibs: exit 1, one line, nothing named or stored
# hostile NAME DAMAGE PATTERN [zip|dir [more generator options]]
hostile() {
  local name=$1 damage=$2 pattern=$3 kind=${4:-dir} src
  shift 4 || shift $#
  rm -rf "$work/h"
  if [ "$kind" = zip ]; then
    src=$work/h.zip
    rm -f "$src"
    python3 "$gen" lift "$space" - --zip "$src" --damage "$damage" "$@" >/dev/null
  else
    src=$work/h
    python3 "$gen" lift "$space" "$src" --damage "$damage" "$@" >/dev/null
  fi
  run "$name" import "$work/lib-h" "$src"
  expect_rc "$name" 1
  one_line_error "$name" "$pattern"
  [ -z "$(ls -A "$work/lib-h/catalogs")" ] || fail "$name: a catalog was named: $(ls "$work/lib-h/catalogs")"
  [ "$(packs "$work/lib-h")" -eq 0 ] || fail "$name: a pack was published"
  [ -z "$(ls -A "$work/lib-h/tmp")" ] || fail "$name: temp files left: $(ls "$work/lib-h/tmp")"
}
hostile bad-digest bad-digest "is damaged: its SHA-256 is [0-9a-f]{64}; used by '$cat_name:bin/pip'"
hostile wrong-size wrong-size "is damaged: it holds [0-9]+ bytes, its catalog says"
hostile missing missing-object "rcc object 'library/../../../[0-9a-f]{64}' in '.*' is missing; used by '$cat_name:bin/pip'"
hostile json malformed-json "rcc catalog '.*' is malformed"
hostile size-lie size-lie "larger than its catalog allows"
hostile siphash siphash "SipHash"
hostile other-path other-path "ends a path other than the space path"
hostile dotdot dotdot-entry "names a parent directory" zip
hostile absolute absolute-entry "has an absolute name" zip
hostile symlink symlink-entry "is a symlink" zip
hostile zip-digest bad-digest "is damaged: its SHA-256" zip
# Damage to files without rewrite offsets is found while the pack is written:
# still nothing named or left. An object two paths share names both.
hostile shared bad-digest=lib/pkg/sub/same.txt \
  "is damaged: its SHA-256 is [0-9a-f]{64}; used by '$cat_name:lib/pkg/same-too.txt', '$cat_name:lib/pkg/sub/same.txt'; nothing imported\$"
hostile plain bad-digest=share/doc/README "is damaged: its SHA-256 is [0-9a-f]{64}; used by '$cat_name:share/doc/README'; nothing imported\$"
hostile plain-zip bad-digest=share/doc/README "is damaged: its SHA-256 is [0-9a-f]{64}; used by '$cat_name:share/doc/README'; nothing imported\$" zip
# A catalog of a few hundred KiB that gunzips past the 256 MiB cap.
hostile catalog-bomb catalog-bomb "rcc catalog '.*/catalog/$cat_name': decodes to more than 256 MiB: refused; nothing imported\$"
hostile catalog-bomb-zip catalog-bomb "rcc catalog '.*/catalog/$cat_name': decodes to more than 256 MiB: refused; nothing imported\$" zip
# A catalog size far below its object's: the object is refused by its stored
# size (raw) or while decoding (gzip), reported like any damage.
data_use="used by '$cat_name:lib/pkg/sub/data.bin'; nothing imported\$"
hostile shrunk-raw shrunk-size "rcc object 'library/../../../[0-9a-f]{64}' in '.*' is damaged: .*1000.*; $data_use" dir --compress raw
hostile shrunk-gzip shrunk-size "rcc object 'library/../../../[0-9a-f]{64}' in '.*' is damaged: .*1000.*; $data_use"
hostile shrunk-zip shrunk-size "rcc object 'library/../../../[0-9a-f]{64}' in '.*' is damaged: .*1000.*; $data_use" zip --compress raw
# A library made with rcc's compress.no
rm -rf "$work/h" && python3 "$gen" lift "$space" "$work/h" >/dev/null && touch "$work/h/catalog/compress.no"
run compress-no import "$work/lib-h" "$work/h"
expect_rc compress-no 1
one_line_error compress-no "compress.no.*SipHash"
# Neither a hololib nor a zip
mkdir -p "$work/empty"
run not-rcc import "$work/lib-h" "$work/empty"
expect_rc not-rcc 2
one_line_error not-rcc "not an rcc hololib"
echo "$test_name: all passed"
