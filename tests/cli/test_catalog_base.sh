#!/usr/bin/env bash
# Catalogs stored against a base (issue 32; hpak-format(5) "zstd-base"):
#  - `pack --into` of a tree sharing 90% of its files with a catalog of the
#    library stores the new catalog's first copy whole and its mirror against
#    that catalog (codec 3, the base's digest first), when that pays; an
#    unrelated tree's mirror is stored whole;
#  - the environment restores; with its first copy damaged it still restores
#    (the mirror, through the base), and verify names the damage as not lost;
#    with its base gone too, restore fails (exit 2) in one line naming both
#    copies' faults, the missing base among them;
#  - `catalogs rm` of the base's name then a gc: the base stays while a
#    mirror against it is left in place, and a full gc writes the mirror whole
#    and drops the base (the second copy restores with the first damaged,
#    after each); a base whose name
#    sorts after its catalog's keeps its files at gc; an environment updated
#    under its name is stored against its previous catalog;
#  - a pack file of the library read on its own (ls) finds the base through
#    the library it sits in;
#  - fetch from a published library: into an empty cache, and into one that
#    already holds the base; both restore and verify.
# ctest runs: bash test_catalog_base.sh <hpak-binary> <source-root>.
source "$(dirname "$0")/cli_lib.sh" "$@"
export HPAK_FSYNC=0 # throwaway libraries
H() { "$hpak" -q "$@"; }
cd "$work"

# catalog_entries PACK: one line per catalog entry: offset codec stored_len digest [base digest]
catalog_entries() {
  python3 - "$1" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
i = b.find(b"HPEn")
while i >= 0:
    kind, codec, eflags = b[i + 4], b[i + 5], struct.unpack_from("<H", b, i + 6)[0]
    stored = struct.unpack_from("<Q", b, i + 8)[0]
    if kind == 2 and codec <= 3 and eflags <= 3:
        line = f"{i} {codec} {stored} {b[i + 24:i + 56].hex()}"
        if codec == 3:
            line += " " + b[i + 72:i + 104].hex()
        print(line)
    i = b.find(b"HPEn", i + 4)
PY
}
digest_of() { sed -n 2p "$1/catalogs/$2"; }
pack_with() { # the pack of LIB holding catalog entry DIGEST
  local p
  for p in "$1"/packs/*.hpak; do [[ $(catalog_entries "$p" | awk '{ print $4 }') == *"$2"* ]] && { echo "$p"; return; }; done
  fail "no pack of $1 holds catalog $2"
}
flip_first_copy() { # LIB NAME: one byte of the payload of NAME's first (whole) catalog copy
  local d p off
  d=$(digest_of "$1" "$2")
  p=$(pack_with "$1" "$d")
  off=$(catalog_entries "$p" | awk -v d="$d" '$4 == d && !done { print $1; done = 1 }')
  chmod u+w "$p"
  printf '\xff' | dd of="$p" bs=1 seek=$((off + 72 + 40)) conv=notrunc status=none
}
same_tree() { diff -r --no-dereference --exclude=.hpak-state "$1" "$2" >/dev/null || fail "$2 differs from $1"; }

make_tree A 600 1
cp -a A B
find B -type f | sort | awk 'NR % 10 == 0' | while read -r f; do printf '# changed\n' >>"$f"; done
make_tree X 300 9

H init L
H pack A --into L --name a >/dev/null
H pack B --into L --name b >/dev/null
H pack X --into L --name x >/dev/null
da=$(digest_of L a) db=$(digest_of L b) dx=$(digest_of L x)

# b: the first copy whole (zstd), the mirror against a's catalog, smaller.
pb=$(pack_with L "$db")
mapfile -t rows < <(catalog_entries "$pb" | awk -v d="$db" '$4 == d')
[ "${#rows[@]}" -eq 2 ] || fail "b's pack holds ${#rows[@]} copies of b's catalog, not 2"
read -r _ c1 s1 _ <<<"${rows[0]}"
read -r _ c2 s2 _ base2 <<<"${rows[1]}"
[ "$c1" = 1 ] || fail "b's first catalog copy has codec $c1, not 1 (zstd, whole)"
[ "$c2" = 3 ] || fail "b's mirror has codec $c2, not 3 (zstd-base)"
[ "$base2" = "$da" ] || fail "b's mirror is stored against $base2, not a's catalog $da"
[ $((s2 * 2)) -lt "$s1" ] || fail "b's mirror takes $s2 bytes against $s1 whole: it does not pay"
# x shares nothing: both copies whole.
px=$(pack_with L "$dx")
[ "$(catalog_entries "$px" | awk -v d="$dx" '$4 == d { print $2 }' | sort -u)" = 1 ] || fail "x's catalog copies are not both stored whole"

H restore L b T1 >/dev/null
same_tree B T1
H verify L >/dev/null || fail "verify of the library failed"

# The first copy damaged: the mirror (through the base) restores b.
cp -a L L1
flip_first_copy L1 b
H restore L1 b T2 >/dev/null || fail "b did not restore from its mirror with its first copy damaged"
same_tree B T2
run verify verify L1
expect_rc verify 1
grep -q "bad catalog $db" "$work/verify.out" || fail "verify did not name b's damaged catalog copy"
grep -q "not lost" "$work/verify.out" || fail "verify did not say b's catalog is not lost"

# ... and the base gone too: one line naming the base.
pa=$(pack_with L1 "$da")
rm -f "$pa" "${pa%.hpak}.hidx"
run nobase restore L1 b T3
expect_rc nobase 2
one_line_error nobase
grep -q "base catalog $da" "$work/nobase.err" || fail "restore without the base did not name it: $(err nobase)"

# The base's name removed, a plain gc: every copy stays readable, and a's
# catalog object stays exactly while a mirror against it is left in place.
cp -a L L2
H catalogs rm L2 a >/dev/null
H gc --grace 0 L2 >/dev/null
H verify L2 >/dev/null || fail "verify after gc failed"
mirrors_of_b=$(for p in L2/packs/*.hpak; do catalog_entries "$p"; done | awk -v d="$db" '$4 == d && $2 == 3' | wc -l)
a_held=$(for p in L2/packs/*.hpak; do catalog_entries "$p"; done | awk -v d="$da" '$4 == d' | wc -l)
[ "$mirrors_of_b" -eq 0 ] || [ "$a_held" -gt 0 ] || fail "gc left b's mirror in place but dropped its base a"
cp -a L2 L2b
flip_first_copy L2b b
H restore L2b b T4 >/dev/null || fail "b's second copy did not restore after gc (its base dropped?)"
same_tree B T4

# ... and a full gc: b's mirror is written whole, and a's catalog, which no
# name needs, goes (before this, gc kept it as the mirror's base).
H gc --grace 0 --full L2 >/dev/null
H verify L2 >/dev/null || fail "verify after gc --full failed"
for p in L2/packs/*.hpak; do catalog_entries "$p"; done >entries.l2
[ "$(awk -v d="$da" '$4 == d' entries.l2 | wc -l)" -eq 0 ] || fail "gc --full kept a's catalog, which no name needs"
[ "$(awk -v d="$db" '$4 == d && $2 != 3' entries.l2 | wc -l)" -eq 2 ] || fail "b's two copies are not whole after gc --full: $(cat entries.l2)"
flip_first_copy L2 b
H restore L2 b T4b >/dev/null || fail "b's second (whole) copy did not restore after gc --full"
same_tree B T4b

# A base whose name sorts after the catalog stored against it: gc marks its
# files all the same (it is live as a base and as a name).
H init LZ
H pack A --into LZ --name z >/dev/null
H pack B --into LZ --name b >/dev/null
H gc --grace 0 --full LZ >/dev/null
H restore LZ z T7 >/dev/null || fail "z, the base of b, lost objects at gc"
same_tree A T7
H verify LZ >/dev/null || fail "verify after gc of a library whose base sorts last failed"

# An environment updated under its name, in a library merged into one pack
# with later, unrelated catalogs: the mirror is stored against the name's
# previous catalog.
make_tree X2 200 10
make_tree X3 200 11
H init LN
H pack A --into LN --name e >/dev/null
de=$(digest_of LN e)
H pack X --into LN --name x1 >/dev/null
H pack X2 --into LN --name x2 >/dev/null
H pack X3 --into LN --name x3 >/dev/null
H gc --grace 0 --full LN >/dev/null
H pack B --into LN --name e >/dev/null
dn=$(digest_of LN e)
base_n=$(catalog_entries "$(pack_with LN "$dn")" | awk -v d="$dn" '$4 == d && $2 == 3 { print $5 }')
[ "$base_n" = "$de" ] || fail "e's new mirror is stored against '$base_n', not e's previous catalog $de"
H restore LN e T8 >/dev/null
same_tree B T8

# A pack file of the library read on its own finds the base through its library.
cp -a L L3
flip_first_copy L3 b
"$hpak" ls "$(pack_with L3 "$db")" >ls.out || fail "ls of b's pack file did not read the mirror through the library"
grep -q "m10\." ls.out || fail "ls of b's pack file listed nothing"

# Fetch: into an empty cache (the base comes along when the first record
# fetched needs it; here the first copy is whole) and into one holding a.
H publish L pub >/dev/null
H fetch pub b --into C1 >/dev/null
H restore C1 b T5 >/dev/null
same_tree B T5
H verify C1 >/dev/null || fail "verify of the fetched cache failed"
H fetch pub a --into C2 >/dev/null
H fetch pub b --into C2 >/dev/null
H restore C2 b T6 >/dev/null
same_tree B T6
H verify C2 >/dev/null || fail "verify of the cache holding both failed"

echo "ok: $test_name"
