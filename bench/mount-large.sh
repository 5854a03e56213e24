#!/usr/bin/env bash
# bench/mount-large.sh HPAK_A HPAK_B [DIR]: one large raw object on hpak mount
# (issue 31), two builds side by side: a 256 MiB file of random bytes (stored
# raw) packed into a library on DIR (default /dev/shm); each round mounts it
# with each build, reads its first 4 KiB (dd, from spawn to exit: the first
# read, the object's check included), then the whole file, and sums the memory
# files (memfd) the server holds. Rounds: RUNS (default 3).
# Figures: bench/RESULTS.md, "Large raw objects on hpak mount".
set -euo pipefail
a=$(realpath "${1:?usage: bench/mount-large.sh HPAK_A HPAK_B [DIR]}")
b=$(realpath "${2:?usage: bench/mount-large.sh HPAK_A HPAK_B [DIR]}")
w=$(mktemp -d "${3:-/dev/shm}/hpak-mount-large-XXXXXX")
trap 'for m in "$w"/m*; do if mountpoint -q "$m"; then fusermount3 -u -z "$m"; fi; done; rm -rf "$w"' EXIT
mkdir -p "$w/src"
head -c $((256 << 20)) /dev/urandom >"$w/src/big"
"$a" pack -q "$w/src" --into "$w/lib" --name e >/dev/null
ms() { echo "($2 - $1) * 1000" | bc; }
for r in $(seq "${RUNS:-3}"); do
  for arm in A B; do
    h=$a
    [ "$arm" = B ] && h=$b
    m=$w/m$r$arm
    mkdir "$m"
    "$h" mount -q "$w/lib" e "$m"
    pids=$(pgrep -f "mount -q $w/lib e $m")
    pid=${pids%%$'\n'*}
    t0=$(date +%s.%N)
    dd if="$m/big" of=/dev/null bs=4096 count=1 status=none
    t1=$(date +%s.%N)
    dd if="$m/big" of=/dev/null bs=1M status=none
    t2=$(date +%s.%N)
    memfd=0
    for f in /proc/"$pid"/fd/*; do
      case "$(readlink "$f")" in /memfd:*) memfd=$((memfd + $(stat -L -c %s "$f"))) ;; esac
    done
    printf '%s round %s: first 4 KiB %.1f ms, whole file after it %.1f ms, memory files held by the server %d MiB\n' \
      "$arm" "$r" "$(ms "$t0" "$t1")" "$(ms "$t1" "$t2")" $((memfd >> 20))
    fusermount3 -u "$m"
  done
done
