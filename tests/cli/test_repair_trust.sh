#!/usr/bin/env bash
# hpak repair follows the trust rules of add and restore (issue 12;
# core/pack/pack_trust.hpp, man/hpak-repair.1, hpak-library.7 "What is trusted"):
# in a shared library it never copies bytes out of another member's pack into
# a pack of its own — that pack would belong to whoever ran repair (root,
# say) and every member would then trust it without verifying: a forged or
# damaged pack planted by a member would be laundered. Such a pack is left
# where it is and named; what only it holds is reported lost. A damaged pack
# of this user's is still salvaged (tests/cli/test_repair.sh covers that).
# A member (a second uid made here) adds a tree into a shared library at level
# 0 (objects stored raw), then damages one object of its own pack.
. "$(dirname "$0")/cli_lib.sh" "$@"

forge=${HPAK_MAKE_HOSTILE:-$(dirname "$hpak")/tests/hpak_make_hostile}
make_member hpakr

chmod 755 "$work"
export XDG_CACHE_HOME=$work/cache # the victim's (root's) verdicts
lib=$work/lib
run init init --shared --level 0 "$lib"
expect_rc init 0
chgrp -R "$group" "$lib"

# The victim's own environment.
mkdir -p "$work/mine"
echo "root's file" >"$work/mine/a"
run add pack "$work/mine" --into "$lib" --name env
expect_rc add 0

# The member's environment, then one of its objects damaged in place.
mkdir -p "$work/theirs"
chmod 755 "$work/theirs"
printf 'member file one: intact, only in the member pack\n' >"$work/theirs/one"
printf 'member file two: damaged in place\n' >"$work/theirs/two"
chmod 644 "$work/theirs"/*
as_member "$hpak" -q pack "$work/theirs" --into "$lib" --name m >/dev/null 2>"$work/madd.err" || fail "member add: $(cat "$work/madd.err")"
mpack=
for p in "$lib"/packs/pack-*.hpak; do [ "$(stat -c %u "$p")" = "$muid" ] && mpack=$p; done
[ -n "$mpack" ] || fail "no pack of the member's in the library"
grep -q "member file two" "$mpack" || fail "the member's pack does not hold its objects raw"
as_member /usr/bin/python3 - "$mpack" <<'PY' || fail "member could not damage its pack"
import os, sys
p = sys.argv[1]
os.chmod(p, 0o644)
b = bytearray(open(p, "rb").read())
i = b.find(b"member file two")
b[i] ^= 0x20
open(p, "wb").write(b)
os.chmod(p, 0o444)
PY
owned_by_root_holding() { # TEXT: root-owned packs holding TEXT (raw objects)
  local p
  for p in "$lib"/packs/pack-*.hpak; do
    [ "$(stat -c %u "$p")" = 0 ] && grep -q "$1" "$p" && echo "$p"
  done
  return 0
}
[ -z "$(owned_by_root_holding "member file one")" ] || fail "setup: a root pack already holds the member's object"

run rep repair "$lib"
no_crash rep
laundered=$(owned_by_root_holding "member file one")
[ -z "$laundered" ] || fail "repair copied the member's bytes into root's pack '$laundered': $(out rep)"
expect_rc rep 1
[ -e "$mpack" ] || fail "repair moved the member's pack away: $(out rep)"
grep -q "^left alone '$mpack' (owned by '$member' (uid $muid))" "$work/rep.out" ||
  fail "repair does not name the member's pack as left alone: $(out rep)"
grep -q "breaks m: (the catalog itself)" "$work/rep.out" || fail "what only the member's pack holds is not reported lost: $(out rep)"
grep -q "catalog 'm' cannot be fully restored" "$work/rep.out" || fail "the member's catalog is not reported broken: $(out rep)"
grep -q "catalog 'env'" "$work/rep.out" && fail "root's own catalog was reported broken: $(out rep)"

run dry repair --dry-run "$lib"
expect_rc dry 1
grep -q "^left alone '$mpack' (owned by '$member' (uid $muid)): it has damaged or forged entries" "$work/dry.out" ||
  fail "the dry run does not name the member's pack as left alone: $(out dry)"

# Root's own environment still restores (from its own pack), --verify too.
run r1 restore --verify "$lib" env "$work/t1"
expect_rc r1 0
[ "$(cat "$work/t1/a")" = "root's file" ] || fail "root's environment was not restored"

# A forged pack (an entry named sha256("GOOD!\n") holding "EVIL!\n") planted
# beside an honest copy: repair leaves it, and the honest copy stays the one used.
if [ -x "$forge" ]; then
  printf 'GOOD!\n' >"$work/good" && printf 'EVIL!\n' >"$work/evil"
  mkdir -p "$work/g" && cp "$work/good" "$work/g/f"
  run addg pack "$work/g" --into "$lib" --name good
  expect_rc addg 0
  as_member "$forge" --forge "$work/good" "$work/evil" "$lib/packs" >"$work/forged.name" || fail "member could not plant a pack"
  forged=$(cat "$work/forged.name")
  run rep2 repair "$lib"
  no_crash rep2
  [ -e "$forged" ] || fail "repair moved the member's forged pack"
  grep -q "^left alone '$forged'" "$work/rep2.out" || fail "the forged pack is not named: $(out rep2)"
  [ -z "$(owned_by_root_holding "EVIL!")" ] || fail "repair copied forged bytes into a pack of root's"
  run r2 restore "$lib" good "$work/t2"
  expect_rc r2 0
  [ "$(cat "$work/t2/f")" = "GOOD!" ] || fail "restore after repair wrote '$(cat "$work/t2/f")'"
fi
echo "ok: $test_name"
