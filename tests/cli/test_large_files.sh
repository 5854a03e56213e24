#!/usr/bin/env bash
# Large files (issue 18), on /dev/shm when it is writable: a tree of a 72 MiB
# incompressible file (above the packer's 64 MiB large-file threshold: read
# in windows, stored raw), a 69 MiB text file (compressed by zstd's workers),
# files around the copy thresholds, an empty and a one-byte file:
#  1. pack -j1 and -j2 write the same bytes; verify passes
#  2. unpack (verified and not) gives back the tree; so do unpack across file
#     systems and unpack with copy_file_range refused (ENOSYS, EXDEV, EINVAL,
#     EOPNOTSUPP through a seccomp filter: the pread/write fallback) of a
#     smaller tree of raw objects
#  3. restore and restore --verify from a library give back the tree
#  4. a byte flipped inside the large raw object: restore, restore --verify and
#     unpack fail with one line naming it, leave no file for it; verify reports it;
#     restore --trust-large-objects (the explicit fast path) copies it unread,
#     flipped byte and all, and with --verify still refuses it
#  5. on a loop-mounted XFS (mkfs.xfs -m reflink=1): a level-0 library whose
#     big object's payload sits at a 4 KiB offset (a padding file before it)
#     restores by sharing its blocks — used space grows by less than 10% of
#     the tree, fiemap shows the extents shared; the same tree unaligned (a v1
#     pack today) is reported, not checked (format v2 aligns it)
. "$(dirname "$0")/cli_lib.sh" "$@"
no_copy_range=$(dirname "$hpak")/tests/hpak_no_copy_range

base=$work
if [ -w /dev/shm ]; then
  base=$(mktemp -d /dev/shm/hpak-large-XXXXXX)
  trap 'rm -rf "$base"; cli_cleanup' EXIT
fi
src=$base/src
mkdir -p "$src/sub"
head -c $((72 << 20)) /dev/urandom >"$src/big.bin"
seq 1 9000000 >"$src/sub/text.txt"
head -c $(((8 << 20) + 1)) /dev/urandom >"$src/sub/window-plus-one"
head -c $(((1 << 20) - 1)) /dev/urandom >"$src/sub/just-below-copy"
head -c $((1 << 20)) /dev/urandom >"$src/sub/copy-threshold"
: >"$src/empty"
printf 1 >"$src/one"
# Content, types, modes, sizes and mtimes (a directory's size depends on its file system).
# (A restored target also holds restore's .hpak-state.)
listing() { (cd "$1" && find . -mindepth 1 -name .hpak-state -prune -o \( -type d -printf '%P d %m %T@\n' \) -o -printf '%P %y %m %s %T@ %l\n' | sort); }
same_tree() { diff -r -x .hpak-state "$1" "$2" >/dev/null && [ "$(listing "$1")" = "$(listing "$2")" ]; }

echo "== ($SECONDS s) 1: pack, deterministic across worker counts"
run pack1 pack -q -j 1 "$src" -o "$base/j1.hpak"
expect_rc pack1 0
run pack2 pack -q -j 2 "$src" -o "$base/j2.hpak"
expect_rc pack2 0
cmp -s "$base/j1.hpak" "$base/j2.hpak" || fail "packs written with -j1 and -j2 differ"
cmp -s "$base/j1.hidx" "$base/j2.hidx" || fail "indexes written with -j1 and -j2 differ"
size=$(stat -c %s "$base/j1.hpak")
[ "$size" -gt $((72 << 20)) ] && [ "$size" -lt $((100 << 20)) ] || fail "pack of $size bytes: the random file raw, the text compressed?"
run verify verify "$base/j1.hpak"
expect_rc verify 0

echo "== ($SECONDS s) 2: unpack, verified or not, across file systems, with copy_file_range refused"
run unpack unpack -q "$base/j1.hpak" "$base/out"
expect_rc unpack 0
same_tree "$src" "$base/out" || fail "unpack differs from the source"
run unpack_nv unpack -q --no-verify "$base/j1.hpak" "$base/out-nv"
expect_rc unpack_nv 0
same_tree "$src" "$base/out-nv" || fail "unpack --no-verify differs from the source"
# The fallbacks on a smaller tree (the raw files of src but the 72 MiB one,
# and a 20 MiB one: checked while copied), level 0 so all are raw objects.
small=$base/small
mkdir -p "$small"
cp -a "$src/sub" "$src/empty" "$src/one" "$small/"
rm "$small/sub/text.txt"
head -c $((20 << 20)) /dev/urandom >"$small/twenty"
run small pack -q -l 0 "$small" -o "$base/small.hpak"
expect_rc small 0
if [ "$base" != "$work" ]; then
  run unpack_x unpack -q "$base/small.hpak" "$work/cross"
  expect_rc unpack_x 0
  same_tree "$small" "$work/cross" || fail "unpack from /dev/shm into $work differs from the source"
  rm -rf "$work/cross"
fi
[ -x "$no_copy_range" ] || fail "no $no_copy_range"
"$no_copy_range" ENOSYS true || fail "the seccomp filter does not work here"
for e in ENOSYS EXDEV EINVAL EOPNOTSUPP; do
  for v in "" --no-verify; do
    rc=0
    "$no_copy_range" "$e" "$hpak" -q unpack $v "$base/small.hpak" "$base/out-$e" >"$work/nocfr.out" 2>"$work/nocfr.err" || rc=$?
    expect_rc nocfr 0
    same_tree "$small" "$base/out-$e" || fail "unpack $v with copy_file_range failing $e differs from the source"
    rm -rf "$base/out-$e"
  done
done
rm -rf "$base/out-nv"

echo "== ($SECONDS s) 3: restore from a library"
lib=$base/lib
run into pack -q --into "$lib" -n env "$src"
expect_rc into 0
run restore restore -q "$lib" env "$base/r1"
expect_rc restore 0
same_tree "$src" "$base/r1" || fail "restore differs from the source"
run restore_v restore -q --verify "$lib" env "$base/r2"
expect_rc restore_v 0
same_tree "$src" "$base/r2" || fail "restore --verify differs from the source"
rm -rf "$base/r1" "$base/r2"

echo "== ($SECONDS s) 4: a damaged large object is found by restore, restore --verify, unpack and verify"
# Flip a byte 40 MiB into big.bin wherever its bytes sit in the library pack and the pack.
flip() {
  python3 - "$1" "$src/big.bin" <<'PY'
import mmap, sys
with open(sys.argv[2], "rb") as f:
    f.seek(40 << 20)
    needle = f.read(64)
with open(sys.argv[1], "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
    at = m.find(needle)
    assert at >= 0 and m.find(needle, at + 1) < 0, "big.bin's bytes not found once"
    m[at + 10] ^= 0x40
PY
}
libpack=$(ls "$lib"/packs/*.hpak)
[ "$(echo "$libpack" | wc -l)" -eq 1 ] || fail "expected one pack in the library: $libpack"
chmod u+w "$libpack"
flip "$libpack"
for v in "" --verify; do
  run bad restore -q $v "$lib" env "$base/bad$v"
  [ "$rc" -ne 0 ] || fail "restore $v of a damaged large object exited 0"
  one_line_error bad "big.bin' not restored: .*fail their checksum"
  [ ! -e "$base/bad$v/big.bin" ] || fail "restore $v left a big.bin from a damaged object"
done
run trusted restore -q --trust-large-objects "$lib" env "$base/trusted"
expect_rc trusted 0
diffs=$( (cmp -l "$src/big.bin" "$base/trusted/big.bin" || true) | wc -l)
[ "$diffs" -eq 1 ] || fail "restore --trust-large-objects: $diffs bytes differ from the source, expected the 1 flipped"
cmp -s "$src/sub/text.txt" "$base/trusted/sub/text.txt" || fail "trusted restore changed sub/text.txt"
run trustedv restore -q --trust-large-objects --verify "$lib" env "$base/bad-trustedv"
[ "$rc" -ne 0 ] || fail "restore --trust-large-objects --verify of a damaged large object exited 0"
one_line_error trustedv "big.bin' not restored: "
rm -rf "$base/trusted"
flip "$base/j1.hpak"
run badunpack unpack -q "$base/j1.hpak" "$base/bad-unpack"
[ "$rc" -ne 0 ] || fail "unpack of a damaged large object exited 0"
one_line_error badunpack "fail their checksum"
[ ! -e "$base/bad-unpack/big.bin" ] || fail "unpack left a big.bin from a damaged object"
run badverify verify "$base/j1.hpak"
[ "$rc" -ne 0 ] || fail "verify of a damaged pack exited 0"
rm -rf "$base/out" "$base/bad"* "$lib" "$base"/j*.hpak "$base"/j*.hidx

echo "== ($SECONDS s) 5: reflink restore on XFS"
command -v mkfs.xfs >/dev/null && command -v xfs_io >/dev/null || fail "no mkfs.xfs/xfs_io (xfsprogs: scripts/setup.sh --test)"
img=$work/xfs.img
mnt=$work/xfs
mkdir -p "$mnt"
truncate -s 320M "$img"
mkfs.xfs -q -m reflink=1 "$img" || fail "mkfs.xfs -m reflink=1 failed"
if ! mount -o loop "$img" "$mnt" 2>"$work/mount.err"; then
  [ "$(id -u)" -ne 0 ] || fail "cannot loop-mount an XFS image as root: $(cat "$work/mount.err")"
  echo "$test_name: the XFS part needs root (loop mount); not run"
  exit 0
fi
trap 'umount "$mnt" 2>/dev/null; rm -rf "$base"; cli_cleanup' EXIT
used() { sync -f "$mnt" && df -B1 --output=used "$mnt" | tail -1; }
# Extents of file $1 with FIEMAP_EXTENT_SHARED (0x2000) set.
shared_extents() {
  local n=0 line flags
  while read -r line; do
    flags=${line##* }
    case $flags in 0x*) (((flags & 0x2000) != 0)) && n=$((n + 1)) ;; esac
  done < <(xfs_io -r -c 'fiemap -v' "$1" | tail -n +3)
  echo "$n"
}
for kind in aligned unaligned; do
  t=$mnt/tree-$kind
  mkdir -p "$t"
  head -c $((40 << 20)) /dev/urandom >"$t/big.bin"
  # v1 level-0 pack: a 32-byte header, 72-byte entry headers, objects in path
  # order: a 3920-byte object first puts big.bin's payload at 32+72+3920+72 = 4096.
  [ $kind = unaligned ] || head -c 3920 /dev/zero | tr '\0' p >"$t/a-pad"
  run xlib pack -q -l 0 --into "$mnt/lib-$kind" -n env "$t"
  expect_rc xlib 0
  tree_bytes=$(du -sb --apparent-size "$t" | cut -f1)
  u0=$(used)
  run xrestore restore -q "$mnt/lib-$kind" env "$mnt/r-$kind"
  expect_rc xrestore 0
  u1=$(used)
  same_tree "$t" "$mnt/r-$kind" || fail "XFS restore ($kind) differs from the source"
  grew=$((u1 - u0))
  shared=$(shared_extents "$mnt/r-$kind/big.bin")
  echo "  $kind: used space grew by $grew bytes for a tree of $tree_bytes; big.bin has $shared shared extent(s)"
  if [ $kind = aligned ]; then
    [ "$grew" -le $((tree_bytes / 10)) ] || fail "aligned XFS restore grew the used space by $grew bytes (tree $tree_bytes)"
    [ "$shared" -ge 1 ] || fail "aligned XFS restore: big.bin shares no extent: $(xfs_io -r -c 'fiemap -v' "$mnt/r-$kind/big.bin")"
    run xrestore_v restore -q --verify "$mnt/lib-$kind" env "$mnt/rv-$kind"
    expect_rc xrestore_v 0
    [ "$(shared_extents "$mnt/rv-$kind/big.bin")" -ge 1 ] || fail "aligned XFS restore --verify: big.bin shares no extent"
  fi
  rm -rf "$t"
done
echo "ok"
