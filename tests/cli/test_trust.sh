#!/usr/bin/env bash
# Trust on shared storage (issue 12): in a shared library, another member's
# pack is used only after this user verified it (core/pack/pack_trust.hpp). A member
# (a second uid made here) plants a pack whose entry is named sha256("GOOD!\n")
# but holds "EVIL!\n", every checksum consistent; the victim's add must store
# its own bytes and its restore must write "GOOD!" (or fail clearly), never
# "EVIL!". A verdict remembered for a pack is voided when the file changes.
. "$(dirname "$0")/cli_lib.sh" "$@"

forge=${HPAK_MAKE_HOSTILE:-$(dirname "$hpak")/tests/hpak_make_hostile}
[ -x "$forge" ] || { echo "$test_name: skipped: no hpak_make_hostile"; exit 125; }
make_member hpakm

chmod 755 "$work"
export XDG_CACHE_HOME=$work/cache # the victim's (root's) verdicts
printf 'GOOD!\n' >"$work/good"
printf 'EVIL!\n' >"$work/evil"
mkdir "$work/src"
cp "$work/good" "$work/src/f"
verdicts() { find "$XDG_CACHE_HOME/hpak/trust" -type f 2>/dev/null | wc -l; }

# A shared library whose group the member is in.
lib=$work/lib
run init init --shared "$lib"
expect_rc init 0
chgrp -R "$group" "$lib"

# --- 1. a forged pack planted before the victim adds the same content --------
as_member "$forge" --forge "$work/good" "$work/evil" "$lib/packs" >"$work/forged.name" || fail "member could not plant a pack"
forged=$(cat "$work/forged.name")
[ "$(stat -c %u "$forged")" = "$muid" ] || fail "the planted pack is not the member's"

run add pack "$work/src" --into "$lib" --name env --json
expect_rc add 0
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d.get("objects_written",0)>=1 else 1)' "$work/add.out" ||
  fail "the add trusted the member's pack instead of storing its own bytes: $(out add)"
grep -q "^hpak: warning: not using pack '$forged' (owned by '$member' (uid $muid)): it failed verification: .*does not match its name" "$work/add.err" ||
  fail "no one-line warning naming the forged pack: $(err add)"

run restore restore "$lib" env "$work/t1"
expect_rc restore 0
[ "$(cat "$work/t1/f")" = "GOOD!" ] || fail "restore wrote '$(cat "$work/t1/f")', not GOOD!"
[ "$(verdicts)" -eq 1 ] || fail "expected one remembered verdict (the forged pack's), got $(verdicts)"
# The verdict is remembered (and warned about whenever the pack is consulted).
run restore2 restore "$lib" env "$work/t2"
expect_rc restore2 0
[ "$(cat "$work/t2/f")" = "GOOD!" ] || fail "second restore wrote '$(cat "$work/t2/f")'"
[ "$(verdicts)" -eq 1 ] || fail "the verdict was not reused"

# A gc by the victim merges packs into one of its own (then trusted): it must
# not copy the member's forged bytes into it.
run gc gc --grace 0 "$lib"
expect_rc gc 0
run aftergc restore --verify "$lib" env "$work/t3"
expect_rc aftergc 0
[ "$(cat "$work/t3/f")" = "GOOD!" ] || fail "after gc the restore wrote '$(cat "$work/t3/f")'"
for p in "$lib"/packs/pack-*.hpak; do
  [ "$p" = "$forged" ] && continue
  [ "$(stat -c %u "$p")" = 0 ] || continue
  if "$hpak" verify "$p" >"$work/gcv.out" 2>&1; then :; else fail "gc laundered forged bytes into '$p': $(cat "$work/gcv.out")"; fi
done

# --- 2. a verified pack changed in place is verified again ------------------
lib2=$work/lib2
run init2 init --shared "$lib2"
expect_rc init2 0
chgrp -R "$group" "$lib2"
mkdir "$work/m1" "$work/m2"
chown "$muid" "$work/m1" "$work/m2"
as_member "$forge" --forge "$work/good" "$work/good" "$work/m1" >"$work/honest.name" || fail "forge (honest) failed"
as_member "$forge" --forge "$work/good" "$work/evil" "$work/m2" >"$work/evil.name" || fail "forge (evil) failed"
honest=$(cat "$work/honest.name")
evil=$(cat "$work/evil.name")
[ "$(stat -c %s "$honest")" = "$(stat -c %s "$evil")" ] || fail "the two packs differ in size"
as_member cp -p "$honest" "${honest%.hpak}.hidx" "$lib2/packs/"
planted=$lib2/packs/$(basename "$honest")
before=$(verdicts)
run add2 pack "$work/src" --into "$lib2" --name env
expect_rc add2 0
grep -q ", 1 already present" "$work/add2.out" || fail "an honest member's pack was not used for dedup: $(out add2)"
[ "$(verdicts)" -eq $((before + 1)) ] || fail "the honest pack's verdict was not remembered"
run r4 restore "$lib2" env "$work/t4"
expect_rc r4 0
[ "$(cat "$work/t4/f")" = "GOOD!" ] || fail "restore from the verified pack wrote '$(cat "$work/t4/f")'"
[ -s "$work/r4.err" ] && fail "a verified pack warned: $(err r4)"
# Rewritten in place with the forged bytes, mtimes put back: only ctime tells.
as_member sh -c 'chmod u+w "$1" "$2" && cat "$3" >"$1" && cat "$4" >"$2" && chmod 444 "$1" "$2" && touch -r "$5" "$1" "$2"' \
  sh "$planted" "${planted%.hpak}.hidx" "$evil" "${evil%.hpak}.hidx" "$honest" || fail "member could not rewrite the pack"
cmp -s "$planted" "$evil" || fail "the planted pack was not rewritten"
# The only copy is now forged: the restore fails clearly, naming the pack.
run r5 restore "$lib2" env "$work/t5"
[ "$rc" -ne 0 ] || fail "restore used a pack rewritten after its verdict: $(cat "$work/t5/f" 2>/dev/null)"
no_crash r5
grep -q "^hpak: warning: not using pack '$planted' (owned by '$member' (uid $muid)): it failed verification" "$work/r5.err" ||
  fail "no warning for the rewritten pack: $(err r5)"
grep -q "is missing" "$work/r5.err" || fail "the failure does not say the object is missing: $(err r5)"
if [ -e "$work/t5/f" ] && grep -q EVIL "$work/t5/f"; then fail "restore wrote EVIL"; fi

# --- 3. a private library keeps trusting names (no verification, no verdicts)
lib3=$work/lib3
run init3 init "$lib3"
before=$(verdicts)
cp "$forged" "${forged%.hpak}.hidx" "$lib3/packs/"
chown "$muid" "$lib3"/packs/*
run add3 pack "$work/src" --into "$lib3" --name env
expect_rc add3 0
[ "$(verdicts)" -eq "$before" ] || fail "a private library verified a pack"
echo "ok: $test_name"
