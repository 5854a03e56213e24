#!/usr/bin/env bash
# hpak restore never destroys what it did not write (issue 10, items 1, 2, 3,
# 5, 7, 13; man/hpak-restore.1 SAFETY, man/hpak-guarantees.7):
#   1  a target that is "/", or contains the library (also through a bind
#      mount of the library or of one of its parents), is refused: compared
#      by (st_dev, st_ino), in a chroot built from a temp dir (never the
#      machine's real /) and in a private mount namespace;
#   2  a non-empty target without a valid state file of its own is refused
#      unless --force (a state copied from another target does not count);
#   3  a target that is a symlink is refused (opened once with O_NOFOLLOW),
#      and one flipped to a symlink and back during restores is never followed;
#   5  a stray tree thousands of levels deep is removed with a few fds, a
#      stray symlink is removed (not followed), and a mount point in the
#      target stops the restore with its contents untouched;
#   7  without openat2 (ENOSYS: old kernel; EPERM: seccomp profile, through
#      tests/faults/no_openat2.c) fresh and dirty restores and unpack work,
#      still never through a symlink;
#   13 missing parents of the target are created like mkdir -p, never
#      through a symlink.
# ctest runs: bash test_restore_safety.sh <hpak-binary> <source-root>.
prefer_shm=1
source "$(dirname "$0")/../faults/lib.sh" "$@"

no_openat2=$build_dir/tests/hpak_no_openat2
mounts=()
cleanup_mounts() {
  local m
  for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null; done
  finish
}
trap cleanup_mounts EXIT

# refused NAME PATTERN COMMAND...: exits 2 with one 'hpak: error:' line matching PATTERN.
refused() {
  local what=$1 pattern=$2 rc=0
  shift 2
  "$@" >"$W/out.txt" 2>"$W/err.txt" </dev/null || rc=$?
  if [ "$rc" -ne 2 ]; then
    fail "$what: exit $rc, expected 2 ($(head -c 300 "$W/err.txt"))"
    return
  fi
  if [ "$(wc -l <"$W/err.txt")" -ne 1 ] || ! grep -q '^hpak: error: ' "$W/err.txt" || ! grep -qE -- "$pattern" "$W/err.txt"; then
    fail "$what: expected one error line matching /$pattern/, got: $(head -c 300 "$W/err.txt")"
    return
  fi
  ok "$what: $(sed "s|$W/||g" "$W/err.txt")"
}
# succeeds NAME COMMAND...: exits 0.
succeeds() {
  local what=$1 rc=0
  shift
  "$@" >"$W/out.txt" 2>"$W/err.txt" </dev/null || rc=$?
  if [ "$rc" -eq 0 ]; then ok "$what"; else fail "$what: exit $rc: $(head -c 300 "$W/err.txt")"; fi
}
# sig DIR: entries, types, modes, sizes, contents of DIR (to prove it unchanged).
sig() { (cd "$1" && find . -printf '%P|%y|%m|%s|%l\n' | sort && find . -type f -exec sha256sum {} + | sort -k2); }

lib=$W/lib
make_tree "$W/src/env" env 30
# No file holding the tree's own path: restores into different targets are
# then byte for byte the same tree (relocation is tested elsewhere).
rm "$W/src/env/bin/abs-link"
printf '#!/bin/sh\nexec python3 "$@"\n' >"$W/src/env/bin/run"
printf 'variant=env\n' >"$W/src/env/etc/env.conf"
"$hpak" -q pack "$W/src/env" --into "$lib" --name env >/dev/null || fail "pack --into"
"$hpak" -q pack "$W/src/env" -o "$W/env.hpak" >/dev/null || fail "pack -o"
succeeds "reference restore" "$hpak" -q restore "$lib" env "$W/ref"
# A copy, so a section that destroyed the library (as hpak before these
# checks did) does not hide what the later sections test.
cp -a "$lib" "$W/lib.pristine"
reset_lib() {
  if ! diff -r "$W/lib.pristine" "$lib" >/dev/null 2>&1; then
    fail "the library was changed; restoring it for the next section"
    rm -rf "$lib" && cp -a "$W/lib.pristine" "$lib"
  fi
}

echo "== ($SECONDS s) 2: a non-empty target hpak did not restore"
H=$W/home
mkdir -p "$H/Documents"
echo precious >"$H/Documents/thesis.tex"
refused "restore into a non-empty directory without a state" "target '$H' is not empty and holds no valid restore state.*--force" \
  "$hpak" -q restore "$lib" env "$H"
expect_eq "the thesis is still there" precious "$(cat "$H/Documents/thesis.tex" 2>&1)"
check "... and nothing was added" test "$(ls -A "$H")" = Documents
# A state copied from another space names that space: it does not count.
cp "$W/ref/.hpak-state" "$H/"
refused "a state copied from another target" "holds a restore state written for '$W/ref', not for this directory.*--force" \
  "$hpak" -q restore "$lib" env "$H"
expect_eq "the thesis is still there" precious "$(cat "$H/Documents/thesis.tex" 2>&1)"
# A damaged state is no state.
printf 'HPRS garbage' >"$H/.hpak-state"
refused "a damaged state" "holds no valid restore state" "$hpak" -q restore "$lib" env "$H"
# Its own state: a dirty restore repairs the space (and removes strays).
echo stray >"$W/ref/stray.txt"
echo changed >"$W/ref/README"
succeeds "a dirty restore of a space hpak restored" "$hpak" -q restore "$lib" env "$W/ref"
check "... removed the stray file" test ! -e "$W/ref/stray.txt"
# Only hpak's own leftovers (a state and temp states): restored as its own.
mkdir -p "$W/leftover" && : >"$W/leftover/.tmp.hpak-state-123"
succeeds "a target holding only a killed restore's temp state" "$hpak" -q restore "$lib" env "$W/leftover"
# --force: restores over it, deleting what the catalog does not name.
succeeds "--force restores into the non-empty directory" "$hpak" -q restore --force "$lib" env "$H"
check "... which now equals a restore of the catalog" same_tree "$W/ref" "$H"
check "... and the thesis is gone, as --force says" test ! -e "$H/Documents"
expect_eq "... and the state now names this target" "$H" "$(state_field "$H" target)"
succeeds "... after which a plain restore is fine" "$hpak" -q restore "$lib" env "$H"

echo "== ($SECONDS s) 3: the target is a symlink"
V=$W/victim
# Even a space hpak restored (its state names the victim).
"$hpak" -q restore "$lib" env "$V" >/dev/null 2>&1 || fail "restore of the victim"
echo "the victim's file" >"$V/mine.txt"
sig "$V" >"$W/victim.before"
ln -s "$V" "$W/link-to-victim"
refused "a target that is a symlink to a directory" "target '$W/link-to-victim' is a symlink \(not followed" \
  "$hpak" -q restore "$lib" env "$W/link-to-victim"
refused "the same with a trailing slash" "is a symlink" "$hpak" -q restore "$lib" env "$W/link-to-victim/"
refused "unpack into a symlink" "is a symlink" "$hpak" -q unpack --force "$W/env.hpak" "$W/link-to-victim"
check "the directory the symlink points to is unchanged" diff "$W/victim.before" <(sig "$V")

echo "== ($SECONDS s) 3: the target flipped to a symlink and back during restores"
if [ -x "$swap_race" ]; then
  C=$W/canary
  "$hpak" -q restore "$lib" env "$C" >/dev/null 2>&1 || fail "restore of the canary"
  mkdir -p "$C/sub" "$W/hold"
  echo "canary: must never change" >"$C/file"
  echo "canary sub" >"$C/sub/file"
  sig "$C" >"$W/canary.before"
  T=$W/tgt
  "$hpak" -q restore "$lib" env "$T" >/dev/null || fail "first restore of the raced target"
  "$swap_race" "${RACE_SECONDS:-3}" "$W/hold" "$C" "$T" >"$W/swap.out" 2>&1 &
  swapper=$!
  bg_pids+=("$swapper")
  n=0 crashed=0
  while kill -0 "$swapper" 2>/dev/null; do
    "$hpak" -q restore "$lib" env "$T" >/dev/null 2>"$W/race.err"
    no_crash_output "$W/race.err" || crashed=$((crashed + 1))
    n=$((n + 1))
  done
  wait "$swapper"
  expect_eq "no restore crashed ($n restores against $(cat "$W/swap.out"))" 0 "$crashed"
  check "the canary the target was flipped to is unchanged" diff "$W/canary.before" <(sig "$C")
  expect_eq "the raced target's state names the target" "$T" "$(state_field "$T" target)"
else
  echo "skipped: no $swap_race"
fi

echo "== ($SECONDS s) 13: missing parents"
succeeds "restore into a/b/c creates the missing parents" "$hpak" -q restore "$lib" env "$W/p/a/b/c"
check "... and the tree is there" same_tree "$W/ref" "$W/p/a/b/c"
expect_eq "... relocated to its real path" "$W/p/a/b/c" "$(state_field "$W/p/a/b/c" target)"
succeeds "a relative target with missing parents" bash -c "cd '$W' && '$hpak' -q restore '$lib' env rel/x/y"
check "... is there" same_tree "$W/ref" "$W/rel/x/y"
succeeds "unpack creates missing parents too" "$hpak" -q unpack "$W/env.hpak" "$W/u/a/b"
check "... and the tree is there" test -f "$W/u/a/b/README"
ln -s "$W/nowhere" "$W/dangling"
refused "a missing parent that is a dangling symlink" "'$W/dangling' is not a directory.*not followed" \
  "$hpak" -q restore "$lib" env "$W/dangling/t"
check "... is not followed (nothing created where it points)" test ! -e "$W/nowhere"
mkdir -p "$W/realdir"
ln -s "$W/realdir" "$W/symparent"
succeeds "an existing parent that is a symlink is followed, as by mkdir -p" "$hpak" -q restore "$lib" env "$W/symparent/new/t"
expect_eq "... and the state names the real path" "$W/realdir/new/t" "$(state_field "$W/realdir/new/t" target)"
echo file >"$W/afile"
refused "a parent that is a file" "afile" "$hpak" -q restore "$lib" env "$W/afile/t"
refused "a target inside the library, with missing parents" "inside the library" "$hpak" -q restore "$lib" env "$lib/x/y/z"
check "... creates nothing in the library" test ! -e "$lib/x"

echo "== ($SECONDS s) 5: deep stray trees, stray symlinks, mount points"
D=$W/deep-target
"$hpak" -q restore "$lib" env "$D" >/dev/null || fail "restore of the deep target"
mkdir -p "$W/outside"
echo "outside" >"$W/outside/keep.txt"
python3 - "$D/stray" "$W/outside" <<'PY'
import os, sys
root, outside = sys.argv[1], sys.argv[2]
os.mkdir(root)
fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
for i in range(3000):
    if i % 500 == 0:
        with open(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("x")
        os.symlink(outside, "link", dir_fd=fd)
        os.mkdir("side", dir_fd=fd)
    os.mkdir("d", dir_fd=fd)
    nfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd)
    fd = nfd
os.close(fd)
PY
ln -s "$W/outside" "$D/stray-link"
# 256 fds: the old recursion needed one per level and died at ~200.
succeeds "a dirty restore removes a stray tree 3000 levels deep with 256 fds" bash -c "ulimit -n 256 && exec '$hpak' -q restore '$lib' env '$D'"
check "... the stray tree is gone" test ! -e "$D/stray"
check "... the stray symlink is gone" test ! -e "$D/stray-link" -a ! -L "$D/stray-link"
expect_eq "... and nothing it pointed to was touched" "outside" "$(cat "$W/outside/keep.txt" 2>&1)"
check "... the target equals a fresh restore" same_tree "$W/ref" "$D"
# A directory with subdirectories (each opened by the scan beneath the nearest
# directory already open) replaced by a symlink to a copy of itself outside:
# neither it nor anything under it is followed, on one thread or two.
for j in 1 2; do
  pkg=lib/python3/site-packages/pkg
  rm -rf "$W/pkg-copy-$j" && cp -a "$D/$pkg" "$W/pkg-copy-$j" && echo changed >"$W/pkg-copy-$j/sub0/mod1.py"
  before=$(sig "$W/pkg-copy-$j")
  chmod -R u+w "$D/$pkg" && rm -rf "${D:?}/$pkg" && ln -s "$W/pkg-copy-$j" "$D/$pkg"
  succeeds "-j $j: a dirty restore where a directory with subdirectories is a symlink to a copy outside" "$hpak" -q restore -j "$j" "$lib" env "$D"
  check "... the copy it pointed to is untouched" test "$(sig "$W/pkg-copy-$j")" = "$before"
  check "... the target equals a fresh restore" same_tree "$W/ref" "$D"
done

if command -v unshare >/dev/null && unshare --mount --propagation private true 2>/dev/null; then
  mkdir -p "$W/precious/inner" "$D/mnt"
  echo "mounted data" >"$W/precious/inner/data.txt"
  echo "mounted data" >"$W/precious/top.txt"
  sig "$W/precious" >"$W/precious.before"
  rc=0
  unshare --mount --propagation private bash -c "mount --bind '$W/precious' '$D/mnt' && exec '$hpak' -q restore '$lib' env '$D'" \
    >"$W/out.txt" 2>"$W/err.txt" || rc=$?
  expect_eq "a bind mount inside the target stops the restore (exit 2)" 2 "$rc"
  check "... saying it is a mount point" grep -q "'$D/mnt' is a mount point" "$W/err.txt"
  check "... and nothing in the mounted directory was removed" diff "$W/precious.before" <(sig "$W/precious")
  rmdir "$D/mnt"

  echo "== ($SECONDS s) 1: the library through a bind mount"
  mkdir -p "$W/view" "$W/outer-view" "$W/view-parent"
  sig "$lib" >"$W/lib.before"
  rc=0
  unshare --mount --propagation private bash -c "
    mount --bind '$lib' '$W/view' || exit 99
    mount --bind '$W' '$W/outer-view' || exit 99
    '$hpak' -q restore '$lib' env '$W/view' 2>'$W/e1'; echo \$? >'$W/rc1'
    '$hpak' -q restore '$lib' env '$W/outer-view' 2>'$W/e2'; echo \$? >'$W/rc2'
    '$hpak' -q restore '$lib' env '$W/outer-view/lib' 2>'$W/e3'; echo \$? >'$W/rc3'
  " || rc=$?
  expect_eq "the mount namespace ran" 0 "$rc"
  expect_eq "restore into a bind mount of the library exits 2" 2 "$(cat "$W/rc1")"
  check "... saying it is the library" grep -q "target '$W/view' is the library" "$W/e1"
  expect_eq "restore into a bind mount of the library's parent exits 2" 2 "$(cat "$W/rc2")"
  check "... saying it contains the library" grep -q "target '$W/outer-view' contains the library" "$W/e2"
  expect_eq "restore into the library reached through a bind mount of its parent exits 2" 2 "$(cat "$W/rc3")"
  check "the library is unchanged" diff "$W/lib.before" <(sig "$lib")
else
  echo "skipped: no mount namespaces (unshare --mount)"
fi

echo "== ($SECONDS s) 1: target / (in a chroot built from a temp dir)"
R=$W/chroot
# Never the machine's real root: R is a fresh directory under the scratch dir.
if [ "$(stat -c %d:%i "$R" 2>/dev/null)" = "$(stat -c %d:%i /)" ]; then
  fail "refusing to run: the chroot would be the real /"
elif command -v chroot >/dev/null && command -v ldd >/dev/null; then
  mkdir -p "$R/bin" "$R/etc" "$R/home/user" "$R/srv"
  cp "$hpak" "$R/bin/hpak"
  for so in $(ldd "$hpak" | grep -oE '/[^ ]+\.so[^ ]*'); do cp --parents -L "$so" "$R/" 2>/dev/null; done
  echo "root:x:0:0::/root:/bin/sh" >"$R/etc/passwd"
  echo "my thesis" >"$R/home/user/thesis.tex"
  cp -a "$W/lib.pristine" "$R/srv/lib"
  sig "$R" >"$W/chroot.before"
  if [ "$(stat -c %d:%i "$R")" != "$(stat -c %d:%i /)" ] && chroot "$R" /bin/hpak --help >/dev/null 2>&1; then
    refused "restore into / (the library is below it)" "target '/' contains the library '/srv/lib'" chroot "$R" /bin/hpak -q restore /srv/lib env /
    refused "restore into '//' (\"\$SPACE/\" with SPACE unset)" "contains the library" chroot "$R" /bin/hpak -q restore /srv/lib env //
    refused "restore into /srv/.." "contains the library" chroot "$R" /bin/hpak -q restore /srv/lib env /srv/..
    refused "restore into the library's parent" "target '/srv' contains the library" chroot "$R" /bin/hpak -q restore /srv/lib env /srv
    refused "restore into the library" "is the library" chroot "$R" /bin/hpak -q restore /srv/lib env /srv/lib/.
    check "nothing in the chroot changed" diff "$W/chroot.before" <(sig "$R")
  else
    echo "skipped: the chroot does not run hpak"
  fi
else
  echo "skipped: no chroot or ldd"
fi

echo "== ($SECONDS s) 7: no openat2 (ENOSYS: before Linux 5.6; EPERM: a seccomp profile)"
if [ -x "$no_openat2" ] && "$no_openat2" ENOSYS true 2>/dev/null; then
  reset_lib
  for e in ENOSYS EPERM; do
    T=$W/no-openat2-$e
    succeeds "$e: fresh restore" "$no_openat2" "$e" "$hpak" -q restore "$lib" env "$T"
    check "$e: ... equals a restore with openat2" same_tree "$W/ref" "$T"
    # Dirty: every repair path in subdirectories (rewrite, mode, stray, missing dir).
    echo changed >"$T/lib/python3/site-packages/pkg/sub0/mod1.py"
    chmod 600 "$T/bin/run"
    echo stray >"$T/share/stray"
    mkdir -p "$T/lib/stray-dir/deeper" && echo x >"$T/lib/stray-dir/deeper/f"
    rm -rf "$T/lib/python3/site-packages/pkg/sub0"
    # A catalog directory replaced by a symlink to the outside is not followed.
    mkdir -p "$W/out-$e" && echo "keep" >"$W/out-$e/keep"
    chmod -R u+w "$T/share/doc" && rm -rf "$T/share/doc" && ln -s "$W/out-$e" "$T/share/doc"
    succeeds "$e: dirty restore of a tree with subdirectories" "$no_openat2" "$e" "$hpak" -q restore "$lib" env "$T"
    check "$e: ... equals a restore with openat2" same_tree "$W/ref" "$T"
    check "$e: ... and the directory a symlink pointed to is untouched" test "$(ls -A "$W/out-$e")" = keep
    succeeds "$e: unpack" "$no_openat2" "$e" "$hpak" -q unpack "$W/env.hpak" "$W/unpack-$e"
    check "$e: ... equals the source" same_tree "$W/src/env" "$W/unpack-$e"
    succeeds "$e: unpack --force over it" "$no_openat2" "$e" "$hpak" -q unpack --force "$W/env.hpak" "$W/unpack-$e"
  done
else
  echo "skipped: no $no_openat2 or no seccomp"
fi
done_tests
