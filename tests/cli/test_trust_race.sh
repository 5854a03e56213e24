#!/usr/bin/env bash
# A member rewrites her pack in place after another member verified it (issue
# 27): two users of one `init --shared` library, alice and mallory. Mallory
# plants an honest pack holding GOOD; alice's add finds GOOD there (verified,
# the verdict remembered) and stores only its catalog. Then, while a restore or
# gc of alice's has the pack mapped, mallory overwrites her pack and index in
# place with EVIL under GOOD's name (same size, every checksum recomputed).
# No restore of alice's may write EVIL, and no gc of hers may copy it into a
# pack she owns (which she, and every other member, would then trust).
# The windows are opened on purpose: a target lock held while the restore has
# mapped the packs (it then waits for the lock), and a delay strace injects
# into the rename(2) of the verdict file (the pack was verified; its bytes are
# read after the delay).
. "$(dirname "$0")/cli_lib.sh" "$@"

forge=${HPAK_MAKE_HOSTILE:-$(dirname "$hpak")/tests/hpak_make_hostile}
[ -x "$forge" ] || { echo "$test_name: skipped: no hpak_make_hostile"; exit 125; }
need_tool strace
need_tool flock
make_two_members hpakr
chmod 755 "$work"

# f: 300 kB, an entry of its own (not a block member), which gc copies
# verbatim; big: 2 MiB stored raw, which a restore copies with copy_file_range.
python3 - "$work" <<'PY'
import sys
w = sys.argv[1]
for name, n in (("f", 300000), ("big", 2 << 20)):
    open(f"{w}/good-{name}", "wb").write((b"GOOD!\n" * n)[:n])
    open(f"{w}/evil-{name}", "wb").write((b"EVIL!\n" * n)[:n])
PY
chmod 644 "$work"/good-* "$work"/evil-*
for who in "$alice" "$mallory"; do
  mkdir -m 700 "$work/$who"
  chown "$who:$group" "$work/$who"
done
mkdir "$work/src"
cp "$work/good-f" "$work/src/f"
cp "$work/good-big" "$work/src/big"
chmod -R a+rX "$work/src"

# run_as NAME WHO ARGS...: hpak ARGS as WHO, with a home and XDG dirs of WHO's.
run_as() {
  local name=$1 who=$2
  shift 2
  rc=0
  as_user "$who" env HOME="$work/$who" XDG_CACHE_HOME="$work/$who/cache" XDG_STATE_HOME="$work/$who/state" \
    "$hpak" "$@" >"$work/$name.out" 2>"$work/$name.err" </dev/null || rc=$?
}
# strace_as NAME WHO ARGS...: the same under strace, each thread's first
# rename(2) (a verdict file's) delayed by 4 s; in the background, status in
# $work/NAME.rc. (LeakSanitizer does not work under ptrace: off there.)
strace_as() {
  local name=$1 who=$2
  shift 2
  (
    s=0
    as_user "$who" env HOME="$work/$who" XDG_CACHE_HOME="$work/$who/cache" XDG_STATE_HOME="$work/$who/state" \
      ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
      strace -f -qq -o /dev/null --seccomp-bpf -e trace=rename -e inject=rename:delay_enter=4000000:when=1 \
      "$hpak" "$@" >"$work/$name.out" 2>"$work/$name.err" </dev/null || s=$?
    echo "$s" >"$work/$name.rc"
  ) &
}
# wait_for WHAT CMD...: until CMD succeeds (at most 60 s).
wait_for() {
  local what=$1
  shift
  for _ in $(seq 600); do
    "$@" && return 0
    sleep 0.1
  done
  fail "timed out waiting for $what"
}
verdict_pending() { compgen -G "$work/$alice/cache/hpak/trust/.tmp-*" >/dev/null; }
forget_verdicts() { rm -rf "$work/$alice/cache/hpak/trust"; }
no_evil() { # no_evil FILE WHAT
  if [ -e "$1" ] && grep -q EVIL "$1"; then fail "$2 wrote mallory's bytes: $(head -c 12 "$1")"; fi
}

lib=$work/lib
mkdir "$lib"
chown "$alice:$group" "$lib"
run_as init "$alice" init --shared "$lib"
expect_rc init 0

# Mallory's packs: for each object an honest one (planted) and a forged one
# of the same size.
for o in f big; do
  as_user "$mallory" mkdir "$work/$mallory/honest-$o" "$work/$mallory/evil-$o"
  as_user "$mallory" "$forge" --forge "$work/good-$o" "$work/good-$o" "$work/$mallory/honest-$o" >"$work/honest-$o" || fail "forge (honest $o)"
  as_user "$mallory" "$forge" --forge "$work/good-$o" "$work/evil-$o" "$work/$mallory/evil-$o" >"$work/evil-$o.name" || fail "forge (evil $o)"
  h=$(cat "$work/honest-$o") e=$(cat "$work/evil-$o.name")
  [ "$(stat -c %s "$h")" = "$(stat -c %s "$e")" ] || fail "the two packs of $o differ in size"
  [ "$(stat -c %s "${h%.hpak}.hidx")" = "$(stat -c %s "${e%.hpak}.hidx")" ] || fail "the two indexes of $o differ in size"
  as_user "$mallory" cp -p "$h" "${h%.hpak}.hidx" "$lib/packs/"
done
honest=$(cat "$work/honest-f") evil=$(cat "$work/evil-f.name")
planted=$lib/packs/$(basename "$honest")
planted_big=$lib/packs/$(basename "$(cat "$work/honest-big")")
[ "$(stat -c %U "$planted")" = "$mallory" ] || fail "the planted pack is not mallory's"

# rewrite SRC_PACK: mallory overwrites her planted pack of f and its index in
# place (no truncation, same inode) with SRC_PACK's bytes.
rewrite() {
  as_user "$mallory" sh -c 'chmod u+w "$1" "$2" && dd if="$3" of="$1" conv=notrunc status=none &&
    dd if="$4" of="$2" conv=notrunc status=none && chmod 444 "$1" "$2"' sh "$planted" "${planted%.hpak}.hidx" "$1" "${1%.hpak}.hidx" ||
    fail "mallory could not rewrite her pack"
  cmp -s "$planted" "$1" || fail "the planted pack was not rewritten"
}
# rewrite_payload PACK FROM TO: mallory overwrites, in place, the stored bytes
# of the object in PACK that hold FROM's content with TO's (its entry header,
# stored checksum included, and the index stay as they were).
rewrite_payload() {
  local at
  at=$(python3 -c 'import sys; print(open(sys.argv[1],"rb").read().find(open(sys.argv[2],"rb").read()))' "$1" "$2")
  [ "$at" -gt 0 ] || fail "no payload of '$2' in '$1'"
  as_user "$mallory" sh -c 'chmod u+w "$1" && dd if="$2" of="$1" bs=4096 seek="$3" oflag=seek_bytes conv=notrunc status=none && chmod 444 "$1"' \
    sh "$1" "$3" "$at" || fail "mallory could not rewrite the payload"
}

run_as add "$alice" pack "$work/src" --into "$lib" --name env
expect_rc add 0
grep -q ", 2 already present" "$work/add.out" || fail "alice's add did not use mallory's honest pack: $(out add)"

# --- 1. restore: the packs mapped (and the verdict remembered) before the rewrite
mkdir "$work/t1"
chown "$alice:$group" "$work/t1"
flock "$work/t1" sh -c "while [ ! -e '$work/release1' ]; do sleep 0.05; done" &
wait_for "the target lock" sh -c "! flock -n '$work/t1' true"
(
  run_as r1 "$alice" -v restore "$lib" env "$work/t1"
  echo "$rc" >"$work/r1.rc"
) &
wait_for "the restore to wait for its target" grep -qs "waiting for it" "$work/r1.err"
rewrite "$evil"
touch "$work/release1"
wait
rc=$(cat "$work/r1.rc")
no_crash r1
no_evil "$work/t1/f" "a restore that mapped the pack before it was rewritten"
[ "$rc" -ne 0 ] || [ "$(head -c 5 "$work/t1/f")" = GOOD! ] || fail "restore r1 succeeded without GOOD!"

# --- 2. restore: verified while honest, read after the payload was rewritten
# (a 2 MiB raw object, --trust-large-objects: copied by the kernel, unread, in
# a pack of one's own; never in another member's)
rewrite "$honest"
forget_verdicts
mkdir "$work/t2"
chown "$alice:$group" "$work/t2"
strace_as r2 "$alice" restore --trust-large-objects "$lib" env "$work/t2"
wait_for "the verdict to be written" verdict_pending
rewrite_payload "$planted_big" "$work/good-big" "$work/evil-big"
wait
rc=$(cat "$work/r2.rc")
no_crash r2
no_evil "$work/t2/big" "a restore that verified the pack before it was rewritten"
[ "$rc" -ne 0 ] || fail "restore r2 succeeded though the only copy of big is now mallory's forgery"
grep -qE "content of .* does not match its name|stored bytes of .* fail their checksum" "$work/r2.err" ||
  fail "r2 does not say the object fails its checks: $(err r2)"

# --- 3. gc: verified while honest, copied after the rewrite ------------------
# A pack of alice's of 200 kB: the gc then rolls it up with her catalog's and
# mallory's pack of f (each pack that stays must hold twice the smaller ones).
mkdir "$work/src2"
head -c 200000 /dev/urandom >"$work/src2/pad"
chmod -R a+rX "$work/src2"
run_as add2 "$alice" pack "$work/src2" --into "$lib" --name pad
expect_rc add2 0
rewrite "$honest"
forget_verdicts
strace_as gc "$alice" gc --grace 0 "$lib"
wait_for "the verdict to be written" verdict_pending
rewrite "$evil"
wait
no_crash gc
grep -q "rolled up" "$work/gc.out" || fail "gc did not take mallory's pack of f: $(out gc)"
for p in "$lib"/packs/pack-*.hpak; do
  [ "$(stat -c %U "$p")" = "$alice" ] || continue # (mallory's big one stays forged)
  if grep -q "EVIL!" "$p"; then fail "alice's gc copied mallory's forged bytes into '$p', a pack of her own"; fi
done
mkdir "$work/t3"
chown "$alice:$group" "$work/t3"
run_as r3 "$alice" restore "$lib" env "$work/t3" # her own packs are taken on trust
no_crash r3
no_evil "$work/t3/f" "a restore after gc"
no_evil "$work/t3/big" "a restore after gc"
echo "ok: $test_name"
