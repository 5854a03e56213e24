#!/usr/bin/env bash
# hpak mount --writable / hpak commit / hpak umount of a writable view (issue 31):
# kernel overlayfs over the read-only FUSE view, changes in a workspace,
# committed back as a new catalog.
# - edits in the view (modify, add, delete, chmod, mkdir, rm -r and rename of a
#   base directory, a symlink, new hard links, a write to the first of two
#   hard links of the base) are
#   committed; a restore of the new catalog equals a plain restore of the base
#   with the same edits (contents, symlinks, modes);
# - python3 imports a module written in the view;
# - commit --into another library gives the same catalog; a commit of the
#   unmounted, kept workspace gives the same digest;
# - umount keeps the workspace and says where; a second mount resumes it;
#   umount --discard removes it (also after an umount cut short); a name
#   moved since does not move the view's base;
# - one-line errors: a user without CAP_SYS_ADMIN (nothing mounted or made),
#   --writable with a pack, a workspace of another catalog, commit of a
#   directory that is not a writable view, of a read-only mount or of an
#   overlay hpak did not make (which umount refuses too), umount of the
#   view's lower layer alone;
# - a workspace is a gc root: after catalogs rm and gc --grace 0, the view
#   (mounted, then kept and mounted again) still reads and commits; umount
#   --discard removes the root, and gc drops the root of a workspace removed
#   by hand; a kept workspace whose base was collected before it was a root
#   is refused, naming the catalog.
# Every mount is undone on exit and /proc/mounts is checked for leftovers.
# ctest runs: bash test_mount_writable.sh <hpak-binary> <source-root>.
. "$(dirname "$0")/cli_lib.sh" "$@"
need_tool fusermount3
need_tool setpriv
if [ ! -e /dev/fuse ]; then
  [ "${CI:-}" = true ] && fail "/dev/fuse is missing"
  echo "$test_name: skipped: no /dev/fuse"
  exit 125
fi
make_member hpakw # needs root: overlayfs needs CAP_SYS_ADMIN

# Undo every mount below $work (the overlay before the FUSE mount under it), then make sure none is left.
leftovers() { awk -v w="$work" 'index($2, w) == 1 { print $2 }' /proc/mounts; }
writable_cleanup() {
  local status=$? m
  for m in $(leftovers | sort -r); do umount -l "$m" 2>/dev/null || fusermount3 -u -z "$m" 2>/dev/null || true; done
  if [ -n "$(leftovers)" ]; then
    echo "FAIL: mounts left behind: $(leftovers)"
    status=1
  fi
  userdel "$member" 2>/dev/null
  groupdel "$group" 2>/dev/null
  (exit "$status")
  cli_cleanup
}
trap writable_cleanup EXIT

fails=0
bad() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
ok() { echo "ok: $*"; }

# The base: a small env with relocated text, a package, hard links, two directories to remove and rename.
src=$work/src/env
make_tree "$src" 60 7
mkdir -p "$src/bin" "$src/etc" "$src/old/deep" "$src/moving/sub" "$src/pkg"
printf '#!%s/bin/python\nprint("hi")\n' "$src" >"$src/bin/tool"
chmod 0755 "$src/bin/tool"
printf 'home = %s\n' "$src" >"$src/etc/env.cfg"
printf 'first\n' >"$src/etc/a2"
ln -f "$src/etc/a2" "$src/etc/b2"
printf 'gone\n' >"$src/old/deep/x"
printf 'kept\n' >"$src/moving/sub/y"
printf 'VALUE = 1\n' >"$src/pkg/basemod.py"
lib=$work/lib
run pack pack "$src" --into "$lib" --name base
expect_rc pack 0

# edits DIR VIEW: the same changes, made in the view (VIEW=1) or in a plain restore (VIEW=0).
edits() {
  local d=$1
  printf 'changed\n' >>"$d/etc/env.cfg"
  printf 'prefix = %s/lib\n' "$d" >"$d/etc/new.cfg"
  rm "$d/old/deep/x" "$d/pkg/basemod.py"
  chmod 0700 "$d/bin/tool"
  mkdir -p "$d/newdir/sub"
  printf 'x\n' >"$d/newdir/sub/f"
  printf 'linked\n' >"$d/newdir/l1"
  ln "$d/newdir/l1" "$d/newdir/l2"
  rm -r "$d/old"
  mv "$d/moving" "$d/moved"
  ln -s ../etc/new.cfg "$d/bin/newlink"
  ln -s "$d/etc/new.cfg" "$d/bin/abslink"
  mkdir "$d/pkgnew"
  printf 'VALUE = 42\n' >"$d/pkgnew/mod_w.py"
  if [ "$2" = 0 ]; then # a plain tree shares the hard link; overlayfs copies the written one up alone
    cp -p "$d/etc/a2" "$d/etc/a2.tmp"
    mv "$d/etc/a2.tmp" "$d/etc/a2"
  fi
  printf 'second\n' >>"$d/etc/a2"
}

# listing DIR: path, type, mode and link target of everything (the restore's state file aside).
listing() { (cd "$1" && find . -mindepth 1 -path ./.hpak-state -prune -o -printf '%P %y %m %l\n' | sort); }

# A user without CAP_SYS_ADMIN: refused before anything is made.
view=$work/view
mkdir "$view"
chmod 0755 "$work"
rc=0
as_member "$hpak" mount --writable "$lib" base "$view" >"$work/member.out" 2>"$work/member.err" || rc=$?
refused member 'CAP_SYS_ADMIN'
[ -e "$work/.view.hpak-ws" ] && bad "the refused mount made a workspace"
[ -z "$(leftovers)" ] || bad "the refused mount left a mount: $(leftovers)"
chmod 0700 "$work"

run mount-w mount --writable "$lib" base "$view"
expect_rc mount-w 0
ws=$work/.view.hpak-ws
mountpoint -q "$view" || fail "mount --writable returned but '$view' is not mounted"
mountpoint -q "$ws/lower" || fail "the lower layer '$ws/lower' is not mounted"
grep -q "changes go to '$ws/upper'" "$work/mount-w.out" || bad "mount did not say where changes go: $(out mount-w)"
[ "$(stat -c %a "$ws")" = 700 ] || bad "workspace mode $(stat -c %a "$ws"), expected 700"
grep -q "^digest " "$ws/state" || bad "no digest in the state: $(cat "$ws/state")"
grep -q "^#!$view/bin/python" "$view/bin/tool" || bad "the view is not relocated to its own path: $(sed -n 1p "$view/bin/tool")"

edits "$view" 1
[ -z "$(find "$ws/upper/etc" -maxdepth 1 -name 'b2')" ] || bad "b2 was copied up without being written"
got=$(cd "$view" && python3 -c 'import sys; sys.path.insert(0, "pkgnew"); import mod_w; print(mod_w.VALUE)') || true
[ "$got" = 42 ] && ok "python3 imports a module written in the view" || bad "import from the view gave '$got'"
[ "$(cat "$view/etc/b2")" = first ] || bad "b2 changed with a2 in the view"

run commit commit "$view" --name new --json
expect_rc commit 0
python3 - "$work/commit.out" <<'PY' || bad "commit summary: $(out commit)"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["name"] == "new" and j["files_hashed"] >= 5 and j["removed"] >= 3 and j["added"] >= 5, j
assert j["files_hashed"] < 20, j  # only what the upper layer holds
PY
digest_new=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["digest"])' "$work/commit.out")

# The reference: a plain restore of the base with the same edits, copied aside; then the new catalog restored at that same path.
cmp=$work/cmp
run restore-base restore "$lib" base "$cmp"
expect_rc restore-base 0
edits "$cmp" 0
cp -a "$cmp" "$work/ref"
rm -rf "$cmp"
run restore-new restore "$lib" new "$cmp"
expect_rc restore-new 0
if diff -r --no-dereference -x .hpak-state "$work/ref" "$cmp" >"$work/tree.diff"; then ok "restore of the commit equals the edited base (contents, symlinks)"; else bad "trees differ: $(sed -n 1,20p "$work/tree.diff")"; fi
if diff <(listing "$work/ref") <(listing "$cmp") >"$work/listing.diff"; then ok "modes, types and link targets agree"; else bad "listings differ: $(sed -n 1,20p "$work/listing.diff")"; fi
grep -q "prefix = $cmp/lib" "$cmp/etc/new.cfg" || bad "a file written in the view is not relocated: $(cat "$cmp/etc/new.cfg")"
[ "$(cat "$cmp/etc/b2")" = first ] || bad "the hard link left behind lost its content"
[ "$(stat -c %i "$cmp/newdir/l1")" = "$(stat -c %i "$cmp/newdir/l2")" ] || bad "files linked in the view are not linked in the commit"

# --into another library: the same catalog (the name is part of a catalog's bytes: the same name).
run commit-into commit "$view" --into "$work/lib2" --name new --json
expect_rc commit-into 0
grep -q "\"digest\":\"$digest_new\"" "$work/commit-into.out" || bad "commit --into gave another digest: $(out commit-into)"
run restore-lib2 restore "$work/lib2" new "$work/cmp2"
expect_rc restore-lib2 0

# Errors while mounted.
run mount-again mount --writable "$lib" base "$view"
refused mount-again 'already a writable view'

# umount keeps the workspace; a commit of the kept workspace gives the same digest.
run umount-keep umount "$view"
expect_rc umount-keep 0
grep -q "workspace '$ws' is kept" "$work/umount-keep.out" || bad "umount did not say where the workspace is: $(out umount-keep)"
mountpoint -q "$view" && bad "the view is still mounted"
mountpoint -q "$ws/lower" && bad "the lower layer is still mounted"
[ -f "$ws/upper/etc/new.cfg" ] || bad "the upper layer was not kept"
run umount-twice umount "$view"
refused umount-twice "is not mounted; its workspace '$ws' is kept"
run commit-unmounted commit "$view" --name new --json
expect_rc commit-unmounted 0
grep -q "\"digest\":\"$digest_new\"" "$work/commit-unmounted.out" || bad "commit of the kept workspace differs: $(out commit-unmounted)"

# Another catalog on this workspace: refused; the same one: resumed.
run pack-other pack "$src/pkg" --into "$lib" --name other
expect_rc pack-other 0
run mount-other mount --writable "$lib" other "$view"
refused mount-other "workspace '$ws' is a view of 'base'"
# The name moved to another tree since: the view stays on the catalog it was made from.
run pack-moved pack "$src/pkg" --into "$lib" --name base
expect_rc pack-moved 0
run mount-resume mount --writable "$lib" base "$view"
expect_rc mount-resume 0
grep -q resumed "$work/mount-resume.out" || bad "the second mount did not say it resumed: $(out mount-resume)"
grep -q "now names another catalog" "$work/mount-resume.out" || bad "the mount did not say the name moved: $(out mount-resume)"
[ -f "$view/bin/tool" ] || bad "the resumed view slid onto the catalog the name names now"
[ "$(cat "$view/pkgnew/mod_w.py")" = "VALUE = 42" ] || bad "the resumed view lost a change"
[ -e "$view/old" ] && bad "the resumed view shows a removed directory"

# Not writable views.
run commit-plain commit "$work/src" --name x
refused commit-plain 'not a writable view'
run commit-none commit "$work/nope" --name x
refused commit-none 'does not exist'
run mount-pack mount --writable "$lib/packs" "$view"
refused mount-pack -- '--writable needs a library and a catalog name'
ro=$work/ro
mkdir "$ro"
run mount-ro mount "$lib" base "$ro"
expect_rc mount-ro 0
run commit-ro commit "$ro" --name x
refused commit-ro 'read-only hpak mount'
run umount-ro-discard umount --discard "$ro"
refused umount-ro-discard 'read-only hpak mount'
run umount-ro umount "$ro"
expect_rc umount-ro 0

# An overlay hpak did not make: neither committed nor unmounted by hpak.
foreign=$work/foreign
mkdir -p "$foreign/l" "$foreign/u" "$foreign/w" "$foreign/m"
mount -t overlay overlay -o "lowerdir=$foreign/l,upperdir=$foreign/u,workdir=$foreign/w" "$foreign/m"
run commit-foreign commit "$foreign/m" --name x
refused commit-foreign 'overlay mount that hpak mount --writable did not make'
run umount-foreign umount "$foreign/m"
refused umount-foreign 'overlay mount that hpak mount --writable did not make'
umount "$foreign/m"

# An umount cut short (the overlay gone, the lower layer still mounted): finished by hpak umount, here with --discard.
umount "$view"
mountpoint -q "$ws/lower" || bad "the lower layer went with the overlay"
run umount-discard umount --discard "$view"
expect_rc umount-discard 0
[ -e "$ws" ] && bad "umount --discard left the workspace: $(ls -A "$ws")"
[ -z "$(leftovers)" ] || bad "mounts left: $(leftovers)"

# A workspace is a gc root (LIB/workspaces/): its base catalog and objects
# outlive the name, mounted or kept; the root goes with umount --discard, or
# with the workspace itself (gc drops a root whose workspace is gone).
gsrc=$work/src/genv
make_tree "$gsrc" 30 23
printf 'only in genv\n' >"$gsrc/unique.txt"
run pack-g pack "$gsrc" --into "$lib" --name gbase
expect_rc pack-g 0
gview=$work/gview
gws=$work/.gview.hpak-ws
mkdir "$gview"
run mount-g mount --writable "$lib" gbase "$gview"
expect_rc mount-g 0
grep -qx "workspace $gws" "$lib"/workspaces/* 2>/dev/null || bad "no gc root names the workspace: $(cat "$lib"/workspaces/* 2>&1)"
# The lower layer alone: refused, naming the view.
run umount-lower umount "$gws/lower"
refused umount-lower "is the lower layer of the writable view '$gview'"
mountpoint -q "$gws/lower" || bad "the lower layer was unmounted from under the view"
printf 'edited\n' >>"$gview/unique.txt"
# sums DIR: the content of every file but unique.txt (the view is relocated to its own path: compared with itself).
sums() { (cd "$1" && find . -type f ! -name unique.txt ! -name .hpak-state -exec sha256sum {} + | sort); }
sums "$gview" >"$work/g-before.sum"
run restore-gref restore "$lib" gbase "$work/g2"
expect_rc restore-gref 0
sums "$work/g2" >"$work/g2-before.sum"
rm -rf "$work/g2"
run rm-g catalogs rm "$lib" gbase
expect_rc rm-g 0
run gc-mounted gc "$lib" --grace 0
expect_rc gc-mounted 0
grep -q '^delete' "$work/gc-mounted.out" && bad "gc deleted a pack while a workspace is based on it: $(out gc-mounted)"
sums "$gview" | diff "$work/g-before.sum" - >"$work/g.diff" 2>&1 || bad "the view's files changed after gc: $(head -5 "$work/g.diff")"
run commit-g commit "$gview" --name gnew --json
expect_rc commit-g 0
run umount-g umount "$gview"
expect_rc umount-g 0
run gc-kept gc "$lib" --grace 0 --full
expect_rc gc-kept 0
run mount-g2 mount --writable "$lib" gbase "$gview"
expect_rc mount-g2 0
grep -q "no longer a name" "$work/mount-g2.out" || bad "the resumed mount did not say its name is gone: $(out mount-g2)"
sums "$gview" | diff "$work/g-before.sum" - >"$work/g.diff" 2>&1 || bad "the resumed view's files differ from the view before gc: $(head -5 "$work/g.diff")"
[ "$(tail -n1 "$gview/unique.txt")" = edited ] || bad "the resumed view lost its change"
run commit-g2 commit "$gview" --name gnew2 --json
expect_rc commit-g2 0
run restore-g2 restore "$lib" gnew2 "$work/g2"
expect_rc restore-g2 0
sums "$work/g2" | diff "$work/g2-before.sum" - >"$work/g.diff" 2>&1 || bad "the commit after gc restores other files: $(head -5 "$work/g.diff")"
[ "$(tail -n1 "$work/g2/unique.txt")" = edited ] || bad "the commit after gc lost the change"
run umount-gd umount --discard "$gview"
expect_rc umount-gd 0
[ -z "$(ls -A "$lib/workspaces")" ] || bad "umount --discard left the gc root: $(ls -A "$lib/workspaces")"
# A workspace removed by hand: its root is dropped by the next gc.
run mount-g3 mount --writable "$lib" gnew2 "$gview"
expect_rc mount-g3 0
umount "$gview" && fusermount3 -u "$gws/lower"
rm -rf "$gws"
[ -n "$(ls -A "$lib/workspaces")" ] || bad "no gc root for the third workspace"
run gc-gone gc "$lib" --grace 0
expect_rc gc-gone 0
[ -z "$(ls -A "$lib/workspaces")" ] || bad "gc kept the root of a workspace that is gone: $(ls -A "$lib/workspaces")"
# A kept workspace whose base went before it was a gc root (made by an older
# hpak, root removed here by hand): the mount is refused, naming the catalog.
run mount-g4 mount --writable "$lib" gnew2 "$gview"
expect_rc mount-g4 0
run umount-g4 umount "$gview"
expect_rc umount-g4 0
rm -f "$lib"/workspaces/*
run rm-g4 catalogs rm "$lib" gnew2
expect_rc rm-g4 0
run gc-g4 gc "$lib" --grace 0 --full
expect_rc gc-g4 0
run mount-g5 mount --writable "$lib" gnew2 "$gview"
refused mount-g5 "is no longer in '$lib'"
[ -z "$(leftovers)" ] || bad "the refused mount left a mount: $(leftovers)"
run umount-g5 umount --discard "$gview"
expect_rc umount-g5 0
[ -e "$gws" ] && bad "umount --discard left the workspace"


[ "$fails" -eq 0 ] || fail "$fails checks failed"
echo "$test_name: passed"
