#!/usr/bin/env bash
# verify holds a bounded window of a pack, whatever its size (issue 33): a pack
# of 264 MiB of incompressible data (one 200 MiB object, four of 16 MiB, and
# a hundred small files), on /dev/shm when it is writable, is verified, and
# its peak resident memory — heap and mapped pages together, getrusage's
# ru_maxrss of the child, exact: no sample missed (bench/scale_measure.py) —
# stays below 64 MiB, a quarter of the pack (13 MiB when written). Before verify read the pack with
# pread (it mapped it and read the large objects through the mapping), this
# peak was above 200 MiB. The same with a library holding that pack. A byte
# flipped in the large object is still named, with its path.
. "$(dirname "$0")/cli_lib.sh" "$@"
bound_kb=$((64 * 1024))
# A sanitizer build's own memory (shadow, quarantine, a binary of 100+ MiB mapped)
# is ~100-150 MiB: the bound is then 256 MiB, still below the pack it reads.
if [[ $(ldd "$hpak" 2>/dev/null) =~ lib(a|t|ub)san ]]; then bound_kb=$((256 * 1024)); fi

base=$work
if [ -w /dev/shm ]; then
  base=$(mktemp -d /dev/shm/hpak-verify-memory-XXXXXX)
  trap 'rm -rf "$base"; cli_cleanup' EXIT
fi
src=$base/src
mkdir -p "$src/small"
head -c $((200 << 20)) /dev/urandom >"$src/big.bin"
for i in 1 2 3 4; do head -c $((16 << 20)) /dev/urandom >"$src/mid$i.bin"; done
for i in $(seq 1 100); do head -c $((i * 997)) /dev/urandom >"$src/small/f$i"; done

run pack pack -q "$src" -o "$base/big.hpak"
expect_rc pack 0
size=$(stat -c %s "$base/big.hpak")
[ "$size" -ge $((250 << 20)) ] || fail "the pack has $size bytes, not the 250 MiB or more this test needs"

# measure NAME ARGS...: verify ARGS under bench/scale_measure.py; fails when
# its peak resident memory reaches the bound.
measure() {
  local name=$1
  shift
  rc=0
  python3 "$src_root/bench/scale_measure.py" "$work/$name.json" "$hpak" "$@" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  python3 - "$work/$name.json" "$bound_kb" "$name" <<'EOF' || fail "$name: $(cat "$work/$name.json")"
import json, sys
r = json.load(open(sys.argv[1]))
if r["maxrss_kb"] >= int(sys.argv[2]):
    sys.exit(f"peak resident memory {r['maxrss_kb'] // 1024} MiB (sampled: RssAnon {r['anon_kb'] // 1024} MiB, "
             f"RssFile+RssShmem {r['file_kb'] // 1024} MiB) for a pack of 264 MiB: not bounded by {int(sys.argv[2]) // 1024} MiB")
print(f"{sys.argv[3]}: peak {r['maxrss_kb'] // 1024} MiB (RssAnon {r['anon_kb'] // 1024}, RssFile+RssShmem {r['file_kb'] // 1024} MiB sampled)")
EOF
}

measure verify-pack verify "$base/big.hpak"
expect_rc verify-pack 0

lib=$base/lib
run init init -q "$lib"
expect_rc init 0
run add pack -q "$src" --into "$lib" --name big
expect_rc add 0
measure verify-lib verify "$lib"
expect_rc verify-lib 0

# A byte flipped in the middle of the 200 MiB object: named, with its path,
# and the peak still bounded.
big=$(sha256sum "$src/big.bin" | cut -d' ' -f1)
off=$("$hpak" index "$base/big.hpak" --show --no-write | awk -v d="$big" '$1 == d { print $4 }')
[ -n "$off" ] || fail "the 200 MiB object is not in the pack's index"
# The byte's complement: never the byte already there (random data holds any value).
pos=$((off + 72 + (100 << 20)))
was=$(od -A n -t u1 -j "$pos" -N 1 "$base/big.hpak" | tr -d ' ')
# shellcheck disable=SC2059 # the format is the octal escape of the new byte
printf "\\$(printf '%03o' $((was ^ 255)))" | dd of="$base/big.hpak" bs=1 seek="$pos" conv=notrunc status=none
[ "$(od -A n -t u1 -j "$pos" -N 1 "$base/big.hpak" | tr -d ' ')" = $((was ^ 255)) ] || fail "the byte at $pos was not flipped"
measure verify-bad verify "$base/big.hpak"
expect_rc verify-bad 1
grep -q "$big" "$work/verify-bad.out" || fail "verify did not name the damaged object: $(head -c 2000 "$work/verify-bad.out")"
grep -q "big.bin" "$work/verify-bad.out" || fail "verify did not name the damaged object's path: $(head -c 2000 "$work/verify-bad.out")"
echo "test_verify_memory: ok"
