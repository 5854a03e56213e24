#!/usr/bin/env bash
# A restore never crosses a mount point inside its target (issue 10, "never
# destroys what is not its own"; man/hpak-restore.1 SAFETY, hpak-guarantees.7).
# A directory or file mounted inside the target — a bind mount of someone
# else's data on the same file system, or another file system (tmpfs) — at a
# path the catalog names, or at a stray name, stops the dirty restore with one
# line naming the mount point, before any change: nothing in the mount is
# removed, rewritten, chmod'ed or created, and nothing in the target changes.
# The same without openat2 (tests/faults/no_openat2.c: ENOSYS and EPERM),
# where the per-component walk checks statx STATX_ATTR_MOUNT_ROOT.
# unpack --force refuses a mount point at a catalog path the same way.
# A target that is itself a mount point is restored normally. A catalog
# directory that is there but cannot be opened is reported in one line,
# before any change (run as an unprivileged uid).
# Every mount is made in a private mount namespace (unshare --mount), so it
# disappears with the namespace whatever happens.
# ctest runs: bash test_restore_mounts.sh <hpak-binary> <source-root>.
prefer_shm=1
source "$(dirname "$0")/../faults/lib.sh" "$@"

command -v unshare >/dev/null && unshare --mount --propagation private true 2>/dev/null ||
  { echo "$test_name: skipped: no mount namespaces (unshare --mount)"; exit 125; }
no_openat2=$build_dir/tests/hpak_no_openat2

# sig DIR: entries, types, modes, sizes, mtimes, link targets and contents.
sig() { (cd "$1" && find . -printf '%P|%y|%m|%s|%T@|%l\n' | sort && find . -type f -exec sha256sum {} + | sort -k2); }

lib=$W/lib
make_tree "$W/src/env" env 30
"$hpak" -q pack "$W/src/env" --into "$lib" --name env >/dev/null || fail "pack --into"

# ns_restore WRAPPER... -- MOUNT_CMDS: in a private mount namespace, runs the
# mount commands, records the signature of $M (the mounted data, as seen
# through the mount) before and after one restore of $T, and the restore's
# exit status and stderr in $W/rc, $W/err.
ns_restore() {
  local mounts=$1 wrap=${2:-}
  rm -f "$W/rc" "$W/err" "$W/mnt.before" "$W/mnt.after"
  unshare --mount --propagation private bash -c "
    set -e
    $mounts
    $(declare -f sig)
    sig \"\$M_SEEN\" >'$W/mnt.before'
    set +e
    $wrap '$hpak' -q restore '$lib' env '$T' 2>'$W/err' >/dev/null </dev/null
    echo \$? >'$W/rc'
    sig \"\$M_SEEN\" >'$W/mnt.after'
  " || fail "the mount namespace did not run ($mounts)"
}
# expect_refused WHAT MOUNT_POINT: exit 2, one line naming MOUNT_POINT, the
# mounted data unchanged, the target unchanged (compared with $W/t.before).
expect_refused() {
  local what=$1 mp=$2
  expect_eq "$what: exit 2" 2 "$(cat "$W/rc" 2>/dev/null)"
  check "$what: one line naming the mount point" \
    bash -c "[ \$(wc -l <'$W/err') -eq 1 ] && grep -q \"^hpak: error: '$mp' is a mount point\" '$W/err'"
  check "$what: nothing in the mount changed" diff "$W/mnt.before" "$W/mnt.after"
  check "$what: nothing in the target changed" diff "$W/t.before" <(sig "$T")
  [ -s "$W/err" ] && ok "$what: $(sed "s|$W/||g" "$W/err")"
  return 0
}

# fresh_target: a restored space with a stray file and a changed file (so the
# dirty restore has removals and rewrites to make), its signature in t.before.
fresh_target() {
  T=$W/t-$1
  "$hpak" -q restore "$lib" env "$T" >/dev/null || fail "restore of $T"
  echo stray >"$T/stray.txt"
  echo changed >"$T/README"
  sig "$T" >"$W/t.before"
}
# precious DIR: someone else's data, with names the catalog also uses.
precious() {
  mkdir -p "$1/site-packages/pkg/sub0" "$1/other"
  echo "not hpak's" >"$1/site-packages/pkg/sub0/mod0.py"
  echo "theirs" >"$1/stray-in-mount.txt"
  echo "theirs too" >"$1/other/file"
  chmod 640 "$1/site-packages/pkg/sub0/mod0.py"
  touch -d @1000000000 "$1/site-packages/pkg/sub0/mod0.py"
}

for wrap in "" ENOSYS EPERM; do
  if [ -n "$wrap" ]; then
    if ! [ -x "$no_openat2" ] || ! "$no_openat2" ENOSYS true 2>/dev/null; then
      echo "skipped ($wrap): no $no_openat2 or no seccomp"
      continue
    fi
    w="'$no_openat2' $wrap"
    tag="$wrap: "
  else
    w=""
    tag=""
  fi
  k=${wrap:-openat2}

  echo "== ($SECONDS s) ${tag}a bind mount (same file system) at a catalog directory"
  fresh_target "bind-$k"
  precious "$W/data-bind-$k"
  ns_restore "mount --bind '$W/data-bind-$k' '$T/lib/python3'; M_SEEN='$T/lib/python3'" "$w"
  expect_refused "${tag}bind mount at 'lib/python3'" "$T/lib/python3"
  check "${tag}... and the data itself is intact" test "$(cat "$W/data-bind-$k/site-packages/pkg/sub0/mod0.py")" = "not hpak's"

  echo "== ($SECONDS s) ${tag}a bind mount at a deeper catalog directory"
  fresh_target "deep-$k"
  precious "$W/data-deep-$k"
  ns_restore "mount --bind '$W/data-deep-$k' '$T/lib/python3/site-packages/pkg'; M_SEEN='$T/lib/python3/site-packages/pkg'" "$w"
  expect_refused "${tag}bind mount at 'lib/python3/site-packages/pkg'" "$T/lib/python3/site-packages/pkg"

  echo "== ($SECONDS s) ${tag}another file system (tmpfs) at a catalog directory"
  fresh_target "tmpfs-$k"
  ns_restore "mount -t tmpfs -o size=1m hpak-test '$T/etc'; echo 'their conf' >'$T/etc/env.conf'; echo x >'$T/etc/theirs'; M_SEEN='$T/etc'" "$w"
  expect_refused "${tag}tmpfs at 'etc'" "$T/etc"

  echo "== ($SECONDS s) ${tag}a bind-mounted file at a catalog file"
  fresh_target "file-$k"
  printf 'their file\n' >"$W/their-file-$k"
  chmod 600 "$W/their-file-$k"
  # (the mounted file's content and mode are checked after the namespace)
  ns_restore "mount --bind '$W/their-file-$k' '$T/README'; M_SEEN='$T/etc'" "$w"
  expect_refused "${tag}a file bind-mounted at 'README'" "$T/README"
  expect_eq "${tag}... its content is unchanged" "their file" "$(cat "$W/their-file-$k")"
  expect_eq "${tag}... and its mode" 600 "$(stat -c %a "$W/their-file-$k")"

  echo "== ($SECONDS s) ${tag}a bind-mounted file at a stray name"
  fresh_target "strayfile-$k"
  printf 'their file\n' >"$W/their-stray-$k"
  : >"$T/zz-stray-mount"
  sig "$T" >"$W/t.before"
  ns_restore "mount --bind '$W/their-stray-$k' '$T/zz-stray-mount'; M_SEEN='$T/bin'" "$w"
  expect_refused "${tag}a file bind-mounted at a stray name" "$T/zz-stray-mount"
  expect_eq "${tag}... its content is unchanged" "their file" "$(cat "$W/their-stray-$k")"
done

echo "== ($SECONDS s) --force into a non-empty directory holding a mount at a catalog path"
T=$W/forced
mkdir -p "$T/lib/python3" "$T/mine"
echo "mine" >"$T/mine/f"
sig "$T" >"$W/t.before"
precious "$W/data-force"
rm -f "$W/rc"
unshare --mount --propagation private bash -c "
  mount --bind '$W/data-force' '$T/lib/python3' || exit 99
  $(declare -f sig)
  sig '$T/lib/python3' >'$W/mnt.before'
  '$hpak' -q restore --force '$lib' env '$T' 2>'$W/err' >/dev/null </dev/null; echo \$? >'$W/rc'
  sig '$T/lib/python3' >'$W/mnt.after'
" || fail "namespace (force)"
expect_refused "restore --force" "$T/lib/python3"

echo "== ($SECONDS s) unpack --force over a directory holding a mount at a catalog path"
"$hpak" -q pack "$W/src/env" -o "$W/env.hpak" >/dev/null || fail "pack -o"
for what in dir file; do
  T=$W/unpack-$what
  mkdir -p "$T/lib/python3" && : >"$T/README"
  sig "$T" >"$W/t.before"
  precious "$W/data-unpack-$what"
  printf 'their file\n' >"$W/their-unpack-$what"
  if [ "$what" = dir ]; then mnt="mount --bind '$W/data-unpack-$what' '$T/lib/python3'" mp=$T/lib/python3
  else mnt="mount --bind '$W/their-unpack-$what' '$T/README'" mp=$T/README; fi
  rm -f "$W/rc"
  unshare --mount --propagation private bash -c "
    $mnt || exit 99
    $(declare -f sig)
    sig '$W/data-unpack-$what' >'$W/mnt.before'
    '$hpak' -q unpack --force '$W/env.hpak' '$T' 2>'$W/err' >/dev/null </dev/null; echo \$? >'$W/rc'
    sig '$W/data-unpack-$what' >'$W/mnt.after'
  " || fail "namespace (unpack $what)"
  expect_refused "unpack --force, a mounted $what" "$mp"
  expect_eq "... the mounted file is unchanged" "their file" "$(cat "$W/their-unpack-$what")"
done

for wrap in "" ENOSYS EPERM; do
  w=""
  if [ -n "$wrap" ]; then
    [ -x "$no_openat2" ] && "$no_openat2" ENOSYS true 2>/dev/null || continue
    w="'$no_openat2' $wrap"
  fi
  echo "== ($SECONDS s) ${wrap:+$wrap: }a target that is itself a mount point is restored normally"
  T=$W/mounted-target-${wrap:-openat2}
  mkdir -p "$T"
  rc=0
  unshare --mount --propagation private bash -c "
    mount -t tmpfs -o size=8m hpak-target '$T' || exit 99
    $w '$hpak' -q restore '$lib' env '$T' || exit 1
    echo stray >'$T/stray' && echo changed >'$T/README' && rm -rf '$T/lib/python3/site-packages/pkg/sub0'
    $w '$hpak' -q restore '$lib' env '$T' || exit 2
    test ! -e '$T/stray' || exit 3
    cmp -s '$T/README' '$W/src/env/README' || exit 4
    test -d '$T/lib/python3/site-packages/pkg/sub0' || exit 5
  " >"$W/out.txt" 2>"$W/err.txt" || rc=$?
  expect_eq "${wrap:+$wrap: }fresh and dirty restores into a mounted target (exit of the steps)" 0 "$rc"
done

echo "== ($SECONDS s) a catalog directory that is there but cannot be opened"
if command -v setpriv >/dev/null; then
  nobody=65534
  ulib=$W/ulib
  cp -a "$lib" "$ulib"
  T=$W/unopenable
  "$hpak" -q restore "$ulib" env "$T" >/dev/null || fail "restore of $T"
  chown -R "$nobody:$nobody" "$ulib" "$T"
  chmod 755 "$W"
  echo stray >"$T/stray.txt" && chown "$nobody" "$T/stray.txt"
  chmod 000 "$T/lib/python3/site-packages/pkg/sub0"
  sig "$T" >"$W/t.before"
  rc=0
  HOME=/nonexistent setpriv --reuid=$nobody --regid=$nobody --clear-groups -- \
    "$hpak" -q restore "$ulib" env "$T" >"$W/out.txt" 2>"$W/err.txt" </dev/null || rc=$?
  expect_eq "an unopenable catalog directory: exit 2" 2 "$rc"
  check "... one line saying it exists but cannot be opened, and why" \
    bash -c "[ \$(wc -l <'$W/err.txt') -eq 1 ] && grep -q \"^hpak: error: directory '$T/lib/python3/site-packages/pkg/sub0' exists but cannot be opened (Permission denied)\" '$W/err.txt'"
  check "... before any change (the stray is still there, nothing changed)" diff "$W/t.before" <(sig "$T")
  ok "$(cat "$W/err.txt")"
  chmod 755 "$T/lib/python3/site-packages/pkg/sub0"
  rc=0
  HOME=/nonexistent setpriv --reuid=$nobody --regid=$nobody --clear-groups -- \
    "$hpak" -q restore "$ulib" env "$T" >"$W/out.txt" 2>"$W/err.txt" </dev/null || rc=$?
  expect_eq "... once readable again, the restore repairs the space" 0 "$rc"
  check "... the stray is gone" test ! -e "$T/stray.txt"
else
  echo "skipped: no setpriv"
fi
done_tests
