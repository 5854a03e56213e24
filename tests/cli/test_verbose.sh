#!/usr/bin/env bash
# -v and warnings on stderr (hpak(1) OPTIONS and OUTPUT): without -v no debug
# line; with -v "hpak: debug:" lines say what was opened, what the command did
# and how long each engine phase took, and stdout is the same (--json still
# parses); -vv adds "hpak: trace:" lines; warnings are one line
# "hpak: warning: ...", with or without -q and -v; --skip-special names each
# special file left out also with --json.
# ctest runs: bash test_verbose.sh <hpak-binary> <source-root>.
. "$(dirname "$0")/cli_lib.sh" "$@"

make_tree "$work/src" 30
lib=$work/lib

# no_debug NAME: nothing on stderr but warnings (here: nothing at all).
quiet_stderr() {
  [ ! -s "$work/$1.err" ] || fail "$1: stderr without -v: $(err "$1")"
}
# has NAME PATTERN: a stderr line matching PATTERN (extended regex).
has() {
  grep -qE -- "$2" "$work/$1.err" || fail "$1: no /$2/ on stderr: $(err "$1")"
}
# all_logged NAME: every stderr line is "hpak: LEVEL: ..." (one line each).
all_logged() {
  if grep -vE '^hpak: (trace|debug|warning): ' "$work/$1.err"; then fail "$1: other lines on stderr: $(err "$1")"; fi
}

# ---- pack, restore, verify, gc, ls: silent without -v, debug lines with it
run pack pack "$work/src" -o "$work/env.hpak"
expect_rc pack 0
quiet_stderr pack
run vpack -v pack "$work/src" -o "$work/env2.hpak"
expect_rc vpack 0
has vpack "^hpak: debug: command 'pack'"
has vpack "^hpak: debug: phase 'pack': [0-9]+/[0-9]+ in [0-9.]+ s$"
has vpack "^hpak: debug: pack: [0-9]+ unique objects: [0-9]+ written"
has vpack "^hpak: debug: command 'pack' took [0-9.]+ s, exit status 0$"
all_logged vpack
if grep -q trace "$work/vpack.err"; then fail "vpack: trace lines at -v: $(err vpack)"; fi

run add pack "$work/src" --into "$lib" --name env
expect_rc add 0
quiet_stderr add
run restore restore "$lib" env "$work/t1"
expect_rc restore 0
quiet_stderr restore
run vrestore -v restore --json "$lib" env "$work/t2"
expect_rc vrestore 0
has vrestore "^hpak: debug: library '$lib': 1 pack visible"
has vrestore "^hpak: debug: phase 'write': [0-9]+/[0-9]+ in [0-9.]+ s$"
has vrestore "^hpak: debug: restore: fresh, [0-9]+ files: [0-9]+ written"
all_logged vrestore
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["fresh"] is True' "$work/vrestore.out" ||
  fail "vrestore: -v changed stdout: $(out vrestore)"
# A second restore into the same target is dirty: scan phase.
run vdirty -v restore "$lib" env "$work/t2"
expect_rc vdirty 0
has vdirty "^hpak: debug: phase 'scan': "
has vdirty "^hpak: debug: restore: dirty, "

run vvrestore -vv restore "$lib" env "$work/t3"
expect_rc vvrestore 0
has vvrestore "^hpak: trace: progress: write [0-9]+/[0-9]+$"
has vvrestore "^hpak: trace: pack '$lib/packs/pack-[0-9a-f]{64}\.hpak': [0-9]+ objects"
all_logged vvrestore

run verify verify "$work/env.hpak" "$lib"
expect_rc verify 0
quiet_stderr verify
run vverify -v verify "$work/env.hpak" "$lib"
expect_rc vverify 0
has vverify "^hpak: debug: verify: pack '$work/env.hpak': [0-9]+ objects"
has vverify "^hpak: debug: verify: library '$lib': 1 packs"
cmp -s <(sed 's/ in [0-9.]* s$//' "$work/verify.out") <(sed 's/ in [0-9.]* s$//' "$work/vverify.out") ||
  fail "vverify: -v changed stdout: $(out verify) / $(out vverify)"

run gc gc --json "$lib"
expect_rc gc 0
quiet_stderr gc
run vgc -v gc --json --grace 0 "$lib"
expect_rc vgc 0
has vgc "^hpak: debug: gc: pack 'pack-[0-9a-f]{64}\.hpak': [a-z]+ \(.*\); [0-9]+/[0-9]+ objects live"
has vgc "^hpak: debug: phase 'mark': "
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/vgc.out" || fail "vgc: -v broke --json: $(out vgc)"

run ls ls "$work/env.hpak"
expect_rc ls 0
quiet_stderr ls
run vls -v ls "$work/env.hpak"
expect_rc vls 0
has vls "^hpak: debug: pack '$work/env.hpak': [0-9]+ bytes, [0-9]+ objects, index from '$work/env.hidx'$"
# An index file that does not match: not used, and -v says why.
cp "$work/env.hpak" "$work/other.hpak"
printf 'garbage' >"$work/other.hidx"
run vls2 -v ls "$work/other.hpak"
expect_rc vls2 0
has vls2 "^hpak: debug: pack '$work/other.hpak': .* index from a scan of the pack: the index file was not used: "

# ---- warnings: one line each, shown with and without -q and -v
cp "$work/env.hpak" "$work/bad.hpak"
"$hpak" index --show --json --no-write "$work/env.hpak" >"$work/recs.json"
python3 - "$work/bad.hpak" "$work/recs.json" <<'EOF'
import json, sys
off = json.loads(open(sys.argv[2]).readline())["offset"]
b = bytearray(open(sys.argv[1], "rb").read())
b[off + 1] ^= 0xff  # an entry's magic
open(sys.argv[1], "wb").write(b)
EOF
for opt in "" -q -v; do
  name=idx${opt#-}
  run "$name" $opt index --no-write "$work/bad.hpak"
  expect_rc "$name" 1
  has "$name" "^hpak: warning: '$work/bad.hpak' offset [0-9]+: "
  [ "$(grep -c '^hpak: warning: ' "$work/$name.err")" -ge 1 ] || fail "$name: no warning"
  all_logged "$name"
done
[ "$(grep -c debug "$work/idx.err")" -eq 0 ] || fail "idx: debug lines without -v: $(err idx)"
[ "$(grep -c debug "$work/idxv.err")" -gt 0 ] || fail "idxv: no debug lines with -v: $(err idxv)"

# ---- --skip-special: each special file named, also with --json (stdout stays JSON)
mkfifo "$work/src/pipe"
run skip pack --skip-special "$work/src" -o "$work/skip.hpak" --json
expect_rc skip 0
has skip "^hpak: warning: skipped special file 'pipe'$"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/skip.out" || fail "skip: --json broken: $(out skip)"
run skip2 pack --skip-special "$work/src" --into "$lib" --name skip
expect_rc skip2 0
has skip2 "^hpak: warning: skipped special file 'pipe'$"

# ---- the engine's own decisions (base/diag.hpp), at -v
# A lock waited for, with its holder: an add sets its name under publish.lock
# (shared), here held exclusively by flock(1) for a moment.
if command -v flock >/dev/null; then
  flock -x "$lib/locks/publish.lock" -c 'sleep 1.5' &
  holder=$!
  for _ in $(seq 100); do grep -q FLOCK /proc/locks && break; sleep 0.02; done
  sleep 0.2
  run vwait -v pack --skip-special "$work/src" --into "$lib" --name env-waited
  wait "$holder"
  expect_rc vwait 0
  has vwait "^hpak: debug: waiting for shared lock '$lib/locks/publish.lock' \(held by pid [0-9]+ \((flock|sleep)\)\)$"
  has vwait "^hpak: debug: lock '$lib/locks/publish.lock' taken after [0-9]+ ms$"
  all_logged vwait
fi
# A pack skipped (an index without its pack) and a multi-pack index ignored, and why.
printf 'x' >"$lib/packs/pack-$(printf '0%.0s' $(seq 64)).hidx"
printf 'garbage' >"$lib/packs/multi.midx"
run vskip -v restore "$lib" env "$work/t4"
expect_rc vskip 0
has vskip "^hpak: debug: pack '$lib/packs/pack-0{64}\.hpak' skipped: "
has vskip "^hpak: debug: midx '$lib/packs/multi.midx' ignored: "
all_logged vskip
run skipq restore "$lib" env "$work/t5"
expect_rc skipq 0
quiet_stderr skipq
echo "test_verbose: ok"
