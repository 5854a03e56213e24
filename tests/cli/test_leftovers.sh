#!/usr/bin/env bash
# Leftovers of writers that are gone (issue 28, item 3): a temp file whose
# writer died (its name records a process of this host that no longer
# exists, and nobody holds its flock) and a pack published without its index
# whose flock is free go at the next gc, whatever the grace period; those of
# a live writer stay (the hour's rule), and so do names of other hosts and of
# older hpaks, until they are old.
# ctest runs: bash test_leftovers.sh <hpak-binary> <source-root>.
source "$(dirname "$0")/../faults/lib.sh" "$@"
H() { "$hpak" -q "$@"; }
tmp_files() { find "$1/tmp" -maxdepth 1 -name '.tmp-*' | wc -l; }

# A tree large enough that an add spends a while writing its pack.
mkdir -p "$W/big"
python3 - "$W/big" <<'PY'
import random, sys
r = random.Random(7)
alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789 \n"
for i in range(12):
    with open(f"{sys.argv[1]}/t{i}", "wb") as f:
        f.write(bytes(r.choice(alphabet) for _ in range(3 << 20)))
PY
make_tree "$W/small" s

echo "== an add stopped while it writes its pack: its temp file stays; killed: it goes"
L=$W/lib
H pack "$W/small" --into "$L" --name small >/dev/null || fail "first add"
"$hpak" -q pack -j1 "$W/big" --into "$L" --name big >/dev/null 2>&1 &
add=$!
bg_pids+=("$add")
for _ in $(seq 200); do
  [ "$(tmp_files "$L")" -gt 0 ] && break
  sleep 0.05
done
kill -STOP "$add"
leftover=$(find "$L/tmp" -maxdepth 1 -name '.tmp-*' -printf '%f\n' | sort | sed -n 1p)
check "the add has a temp file in tmp/ ($leftover)" test -n "$leftover"
H gc "$L" --grace 0 >"$W/gc1.out" 2>"$W/gc1.err" || fail "gc while the add is stopped: $(cat "$W/gc1.err")"
check "gc --grace 0 keeps the temp file of a live writer" test -e "$L/tmp/$leftover"
kill -9 "$add"
wait "$add" 2>/dev/null
check "the killed add's temp file is still there" test -e "$L/tmp/$leftover"
H gc "$L" >"$W/gc2.out" 2>"$W/gc2.err" || fail "gc after the kill: $(cat "$W/gc2.err")"
check "the next gc (default grace: 1 hour) removes it: its writer is gone" test ! -e "$L/tmp/$leftover"
expect_eq "tmp/ is empty" 0 "$(tmp_files "$L")"
check "small still restores" "$hpak" -q restore "$L" small "$W/t1"

echo "== temp names by who wrote them"
tag=$(python3 -c 'import hashlib, socket; print(hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8])')
# A pid that no longer exists: a process that has exited.
sh -c 'exit 0' &
dead=$!
wait "$dead"
kill -0 "$dead" 2>/dev/null && fail "pid $dead still exists"
mk() { printf 'x' >"$1"; }
mk "$L/tmp/.tmp-pack-0123456789abcdef-w${dead}h$tag"           # this host, writer dead: goes
mk "$L/tmp/.tmp-pack-0123456789abcdef-w${dead}h$tag.done"      # the same, handed over: goes
mk "$L/catalogs/.tmp-x-0123456789abcdef-w${dead}h$tag"         # a name being written: goes
mk "$L/packs/.tmp-multi.midx-0123456789abcdef-w${dead}h$tag"   # a midx being written: goes
mk "$L/tmp/.tmp-pack-0123456789abcdef-w$$h$tag"                # this host, writer alive (this shell): stays
mk "$L/tmp/.tmp-pack-0123456789abcdef-w${dead}h00000000"       # another host: stays (its pids are not ours)
mk "$L/tmp/.tmp-pack-0123456789abcdef"                         # an older hpak's: stays
mk "$L/tmp/.tmp-pack-0123456789abcdef-w${dead}h$tag-locked"    # (not the pattern: the tag must end the name or precede '.')
locked="$L/tmp/.tmp-pack-fedcba9876543210-w${dead}h$tag"
mk "$locked"
# Its flock held by a live process (a writer in another pid namespace, whose
# pid means nothing here): stays.
python3 -c '
import fcntl, sys, time
f = open(sys.argv[1], "rb")
fcntl.flock(f, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)' "$locked" >"$W/locker.out" &
locker=$!
bg_pids+=("$locker")
for _ in $(seq 100); do grep -q locked "$W/locker.out" 2>/dev/null && break; sleep 0.05; done
H gc "$L" >"$W/gc3.out" 2>"$W/gc3.err" || fail "gc: $(cat "$W/gc3.err")"
for f in "tmp/.tmp-pack-0123456789abcdef-w${dead}h$tag" "tmp/.tmp-pack-0123456789abcdef-w${dead}h$tag.done" \
  "catalogs/.tmp-x-0123456789abcdef-w${dead}h$tag" "packs/.tmp-multi.midx-0123456789abcdef-w${dead}h$tag"; do
  check "gone: $f" test ! -e "$L/$f"
done
for f in "tmp/.tmp-pack-0123456789abcdef-w$$h$tag" "tmp/.tmp-pack-0123456789abcdef-w${dead}h00000000" \
  "tmp/.tmp-pack-0123456789abcdef" "tmp/.tmp-pack-0123456789abcdef-w${dead}h$tag-locked" "${locked#$L/}"; do
  check "kept: $f" test -e "$L/$f"
done
kill "$locker" 2>/dev/null
wait "$locker" 2>/dev/null
H gc "$L" >/dev/null 2>&1 || fail "gc after the lock was released"
check "gone once nobody holds its lock: ${locked#$L/}" test ! -e "$locked"
rm -f "$L"/tmp/.tmp-*

echo "== a pack published without its index goes at the next gc"
L2=$W/orphan
H pack "$W/small" --into "$L2" --name small >/dev/null || fail "add"
make_tree "$W/gone" g
H pack "$W/gone" --into "$L2" --name gone --json >"$W/gone.json" || fail "add gone"
orphan=$L2/packs/$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pack"])' "$W/gone.json")
rm -f "${orphan%.hpak}.hidx" "$L2"/packs/*.midx # a power loss between the pack and its index
H catalogs rm "$L2" gone >/dev/null || fail "catalogs rm"
"$hpak" verify "$L2" >"$W/v1.out" 2>&1
check "verify notes the invisible pack" grep -q "has no index" "$W/v1.out"
H gc "$L2" >"$W/gc4.out" 2>"$W/gc4.err" || fail "gc: $(cat "$W/gc4.err")"
check "the next gc (default grace) removes it, minutes old: nobody holds its lock" test ! -e "$orphan"
"$hpak" verify "$L2" >"$W/v2.out" 2>&1
check "verify: ok, no invisible pack" grep -q "^ok: " "$W/v2.out"
check "small restores" "$hpak" -q restore "$L2" small "$W/t2"

echo "== an orphan pack whose writer holds its lock stays"
H pack "$W/gone" --into "$L2" --name gone --json >"$W/gone2.json" || fail "re-add gone"
rm -f "${orphan%.hpak}.hidx" "$L2"/packs/*.midx
H catalogs rm "$L2" gone >/dev/null
python3 -c '
import fcntl, sys, time
f = open(sys.argv[1], "rb")
fcntl.flock(f, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)' "$orphan" >"$W/locker2.out" &
locker=$!
bg_pids+=("$locker")
for _ in $(seq 100); do grep -q locked "$W/locker2.out" 2>/dev/null && break; sleep 0.05; done
H gc "$L2" >/dev/null 2>&1 || fail "gc with the orphan locked"
check "kept while its lock is held (a writer publishing its index)" test -e "$orphan"
kill "$locker" 2>/dev/null
wait "$locker" 2>/dev/null
H gc "$L2" >/dev/null 2>&1 || fail "gc after"
check "gone once the lock is free" test ! -e "$orphan"

done_tests
