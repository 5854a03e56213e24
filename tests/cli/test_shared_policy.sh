#!/usr/bin/env bash
# The files of a shared library that say what to trust (issue 27): any member
# can create files in the library's folder, so LIB/allowed_signers and LIB/id
# count only when they are the library owner's (or root's), the folder is
# sticky (members cannot remove or replace the owner's), and the marker's
# "shared" line cannot turn the pack trust off while the folders are
# group-writable. Two real users (useradd): alice owns the library, mallory
# is a member.
. "$(dirname "$0")/cli_lib.sh" "$@"

need_tool ssh-keygen
forge=${HPAK_MAKE_HOSTILE:-$(dirname "$hpak")/tests/hpak_make_hostile}
[ -x "$forge" ] || { echo "$test_name: skipped: no hpak_make_hostile"; exit 125; }
make_two_members hpaks
chmod 755 "$work"
for who in "$alice" "$mallory"; do
  mkdir -m 700 "$work/$who"
  chown "$who:$group" "$work/$who"
  as_user "$who" ssh-keygen -q -t ed25519 -N '' -C "$who" -f "$work/$who/key" || fail "ssh-keygen failed"
done
signers() { echo "$1@example.com namespaces=\"hpak\" $(cut -d' ' -f1,2 "$work/$1/key.pub")"; }
signers "$alice" >"$work/allowed-alice"
signers "$mallory" >"$work/allowed-mallory"
chmod 644 "$work"/allowed-*
run_as() { # run_as NAME WHO ARGS...
  local name=$1 who=$2
  shift 2
  rc=0
  as_user "$who" env HOME="$work/$who" XDG_CACHE_HOME="$work/$who/cache" XDG_STATE_HOME="$work/$who/state" \
    "$hpak" "$@" >"$work/$name.out" 2>"$work/$name.err" </dev/null || rc=$?
}
target() { # target NAME: an empty directory of alice's
  mkdir "$work/$1"
  chown "$alice:$group" "$work/$1"
}
printf 'GOOD!\n' >"$work/good"
printf 'EVIL!\n' >"$work/evil"
chmod 644 "$work/good" "$work/evil"
mkdir "$work/src" "$work/evilsrc"
cp "$work/good" "$work/src/f"
cp "$work/evil" "$work/evilsrc/f"
chmod -R a+rX "$work/src" "$work/evilsrc"

lib=$work/lib
mkdir "$lib"
chown "$alice:$group" "$lib"
run_as init "$alice" init --shared --require-signatures "$work/allowed-alice" "$lib"
expect_rc init 0
[ "$(stat -c %a "$lib")" = 3775 ] || fail "the shared library's folder is not sticky: $(stat -c %a "$lib")"
[ "$(stat -c %U "$lib/id")" = "$alice" ] || fail "init --shared did not make the library id"
run_as add "$alice" pack "$work/src" --into "$lib" --name env
expect_rc add 0
run_as sign "$alice" sign -k "$work/$alice/key" "$lib" env
expect_rc sign 0
target t0
run_as r0 "$alice" restore "$lib" env "$work/t0"
expect_rc r0 0

# --- 1. the sticky folder: mallory can neither remove nor replace alice's files
for f in allowed_signers id HPAKLIB; do
  if as_user "$mallory" rm -f "$lib/$f" 2>/dev/null && [ ! -e "$lib/$f" ]; then fail "mallory removed $f"; fi
  as_user "$mallory" cp "$work/allowed-mallory" "$work/$mallory/x" 2>/dev/null
  if as_user "$mallory" mv -f "$work/$mallory/x" "$lib/$f" 2>/dev/null; then fail "mallory replaced $f"; fi
done
# She may not make the library require other signatures, nor sign it into
# another library's name space by making its id.
run_as mreq "$mallory" init --shared --require-signatures "$work/allowed-mallory" "$lib"
refused mreq "only the owner of shared library '$lib' or root can make it require signatures"
cmp -s "$lib/allowed_signers" "$work/allowed-alice" || fail "allowed_signers changed"

# --- 2. a library whose folder is not sticky (made by an older hpak) ----------
chmod -t "$lib"
# Mallory puts her own allowed_signers in place and signs a name of her own.
as_user "$mallory" sh -c 'cp "$1" "$2/allowed_signers.new" && chmod 444 "$2/allowed_signers.new" && mv -f "$2/allowed_signers.new" "$2/allowed_signers"' \
  sh "$work/allowed-mallory" "$lib" || fail "mallory could not replace allowed_signers in a folder without the sticky bit"
[ "$(stat -c %U "$lib/allowed_signers")" = "$mallory" ] || fail "allowed_signers is not mallory's"
run_as madd "$mallory" pack "$work/evilsrc" --into "$lib" --name env
expect_rc madd 0
run_as msign "$mallory" sign -k "$work/$mallory/key" "$lib" env
expect_rc msign 0
target t1
run_as r1 "$alice" restore "$lib" env "$work/t1"
if [ -e "$work/t1/f" ] && grep -q EVIL "$work/t1/f"; then fail "alice restored mallory's signed name under mallory's allowed_signers"; fi
refused r1 "refusing '$lib/allowed_signers': it belongs to '$mallory' \(uid [0-9]+\), not to the library's owner '$alice' \(uid [0-9]+\) or root"
run_as v1 "$alice" verify "$lib"
no_crash v1
grep -q "refusing '$lib/allowed_signers': it belongs to '$mallory'" "$work/v1.err" || fail "verify does not refuse mallory's allowed_signers: $(err v1)"
# An id of mallory's: refused as well (a signature "for this library" is
# checked against it).
as_user "$mallory" sh -c 'printf "%032d\n" 7 >"$1/id.new" && chmod 444 "$1/id.new" && mv -f "$1/id.new" "$1/id"' sh "$lib" ||
  fail "mallory could not replace id"
run_as s2 "$alice" sign -k "$work/$alice/key" "$lib" env
refused s2 "refusing '$lib/id': it belongs to '$mallory'"
# The owner puts things right: her files again, the sticky bit back.
as_user "$alice" sh -c 'rm -f "$1/id" "$1/allowed_signers"' sh "$lib"
run_as reinit "$alice" init --shared --require-signatures "$work/allowed-alice" "$lib"
expect_rc reinit 0
[ "$(stat -c %a "$lib")" = 3775 ] || fail "init --shared did not make the folder sticky again"

# --- 3. the marker's "shared" line: not the word of whoever can write it -----
lib2=$work/lib2
mkdir "$lib2"
chown "$alice:$group" "$lib2"
run_as init2 "$alice" init --shared "$lib2"
expect_rc init2 0
mkdir "$work/$mallory/forged"
chown "$mallory:$group" "$work/$mallory/forged"
as_user "$mallory" "$forge" --forge "$work/good" "$work/evil" "$work/$mallory/forged" >"$work/forged.name" || fail "forge failed"
as_user "$mallory" cp -p "$(cat "$work/forged.name")" "$(sed 's/\.hpak$/.hidx/' "$work/forged.name")" "$lib2/packs/"
# Mallory drops the "shared" line from the marker.
as_user "$mallory" sh -c 'grep -v "^shared$" "$1/HPAKLIB" >"$1/.m" && cat "$1/.m" >"$1/HPAKLIB" && rm -f "$1/.m"' sh "$lib2" ||
  fail "mallory could not rewrite the marker"
grep -qx shared "$lib2/HPAKLIB" && fail "the marker still says shared"
run_as add2 "$alice" pack "$work/src" --into "$lib2" --name env
expect_rc add2 0
target t2
run_as r2 "$alice" restore "$lib2" env "$work/t2"
if [ -e "$work/t2/f" ] && grep -q EVIL "$work/t2/f"; then fail "a marker without 'shared' made alice trust mallory's forged pack"; fi
[ "$(cat "$work/t2/f")" = GOOD! ] || fail "restore r2 wrote '$(cat "$work/t2/f" 2>/dev/null)': $(err r2)"
echo "ok: $test_name"
