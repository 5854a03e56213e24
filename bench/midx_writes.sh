#!/usr/bin/env bash
# bench/midx_writes.sh: the bytes the multi-pack index writes as a library
# grows by K adds (issue 33, "Index cost tracks the change"), for one or more
# hpak binaries side by side. Each binary grows its own library by KMAX adds
# (`pack --into`), each of NEW_FILES new small files (the same trees for every
# binary). After every add it lists packs/*.midx and sums the sizes of the
# files that are new or were rewritten (a layer's name is its content hash;
# the legacy multi.midx is compared by inode, size and mtime): what that add
# wrote into the index. At each checkpoint (1, 10, 30, 100, 300, ... up to
# KMAX, and KMAX) it prints the total written so far, the largest single
# add's write, the index files present and their size, and the objects held.
# Sizes are counted, not timed: the figures do not depend on the machine.
#
# Usage: [KMAX=300] [NEW_FILES=100] bash bench/midx_writes.sh LABEL=HPAK [LABEL=HPAK...]
set -euo pipefail
export LC_ALL=C HPAK_FSYNC=0 # throwaway libraries: the index's bytes, not the disk's speed, are measured
KMAX=${KMAX:-300}
NEW_FILES=${NEW_FILES:-100}
[ $# -ge 1 ] || { echo "usage: [KMAX=300] [NEW_FILES=100] bash bench/midx_writes.sh LABEL=HPAK [LABEL=HPAK...]" >&2; exit 2; }
W=$(mktemp -d "${TMPDIR:-/dev/shm}/hpak-midx-writes.XXXXXX")
trap 'rm -rf "$W"' EXIT

# The trees: add k holds NEW_FILES files of its own (60-120 bytes each).
python3 - "$W/src" "$KMAX" "$NEW_FILES" <<'PY'
import os, sys
root, kmax, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for k in range(1, kmax + 1):
    d = f"{root}/e{k}/lib"
    os.makedirs(d)
    for i in range(n):
        with open(f"{d}/m{i}.py", "w") as f:
            f.write(f"# environment {k}, module {i}\n" + f"VALUE = {k * 100003 + i}\n" * (1 + i % 3))
PY

snapshot() { find "$1/packs" -maxdepth 1 -name '*.midx' -printf '%f %i %s %T@\n' | sort; }
checkpoint() { # K: 1, 10, 30, 100, 300, 1000, ... and KMAX
  local k=$1
  [ "$k" -eq "$KMAX" ] && return 0
  case $k in 1 | 10 | 30 | 100 | 300 | 1000 | 3000 | 10000) return 0 ;; esac
  return 1
}

echo "| binary | K | objects | midx MiB written (total) | bytes written per object held | largest single add (KiB) | index files | index MiB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for arg in "$@"; do
  label=${arg%%=*}
  hpak=${arg#*=}
  L=$W/lib-$label
  total=0
  largest=0
  before=""
  for k in $(seq 1 "$KMAX"); do
    "$hpak" -q pack "$W/src/e$k" --no-relocate --into "$L" --name "e$k" >/dev/null
    after=$(snapshot "$L")
    wrote=$(comm -13 <(printf '%s\n' "$before" | sed '/^$/d') <(printf '%s\n' "$after") | awk '{ s += $3 } END { print s + 0 }')
    total=$((total + wrote))
    [ "$wrote" -gt "$largest" ] && largest=$wrote
    before=$after
    if checkpoint "$k"; then
      objects=$("$hpak" verify "$L" 2>&1 | sed -n 's/.* \([0-9]*\) objects,.*/\1/p')
      files=$(printf '%s\n' "$after" | sed '/^$/d' | wc -l)
      size=$(printf '%s\n' "$after" | awk '{ s += $3 } END { print s + 0 }')
      awk -v l="$label" -v k="$k" -v o="$objects" -v t="$total" -v m="$largest" -v f="$files" -v s="$size" 'BEGIN {
        printf "| %s | %d | %d | %.2f | %.0f | %.1f | %d | %.2f |\n", l, k, o, t / 1048576, t / o, m / 1024, f, s / 1048576 }'
    fi
  done
done
