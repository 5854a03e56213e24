#!/usr/bin/env bash
# System calls per file of a fresh restore (issue 30): Linux under strace
# beside Windows under Wine's relay trace.
#   bash bench/restore-calls.sh [LINUX_HPAK] [HPAK_EXE] [SMALL BIG]
# defaults: build/hpak, build-win64/hpak.exe, 500 and 1000 files.
#
# Two trees with the same 5 directories, one with twice the files of the
# other (every fifth file read-only), restored fresh with -j 1; the calls per
# file are the difference of the two counts over the difference of their file
# counts (what a restore does once cancels out). Linux: `strace -f -c` of
# `hpak restore`, every syscall. Windows: tests/windows/test_wine_calls.sh
# with the same sizes (every ntdll Nt* call of hpak.exe's process; it also
# asserts at most 5). WINE and WINEPREFIX as for that script (default
# prefix: build-win64/wineprefix).
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "$0")/.." && pwd)
hpak=$(realpath "${1:-$root/build/hpak}")
exe=$(realpath "${2:-$root/build-win64/hpak.exe}")
small=${3:-500}
big=${4:-1000}
W=$(mktemp -d "${TMPDIR:-/tmp}/hpak-restore-calls-XXXXXX")
trap 'chmod -R u+rwx "$W"; rm -rf "$W"' EXIT

# shellcheck source=tests/windows/call_trees.sh
source "$root/tests/windows/call_trees.sh"

echo "== Linux: $hpak ($(uname -r)), strace -f -c, $small and $big files"
make_tree "$W/small" "$small"
make_tree "$W/big" "$big"
"$hpak" init "$W/lib" >/dev/null
for t in small big; do
  "$hpak" pack -q --into "$W/lib" --name "$t" "$W/$t"
  strace -f -c -o "$W/$t.strace" "$hpak" restore -q --json -j 1 "$W/lib" "$t" "$W/t-$t" >/dev/null
done
python3 - "$W/small.strace" "$W/big.strace" "$small" "$big" <<'EOF'
import sys

def counts(path):
    c = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 5 and f[3].isdigit() and f[-1] != 'total':
            c[f[-1]] = int(f[3])
    return c

small, big = counts(sys.argv[1]), counts(sys.argv[2])
files = int(sys.argv[4]) - int(sys.argv[3])
per = {n: (big.get(n, 0) - small.get(n, 0)) / files for n in set(small) | set(big)}
for n in sorted(per, key=lambda n: (-per[n], n)):
    if abs(per[n]) >= 0.005:
        print(f"  {n:32s} {per[n]:6.2f}")
print(f"  {'syscalls per file':32s} {sum(per.values()):6.2f}  ({sum(big.values())} - {sum(small.values())} over {files} files)")
EOF

echo "== Windows: $exe under $(${WINE:-/usr/lib/wine/wine64} --version), relay trace, $small and $big files"
WINEPREFIX=${WINEPREFIX:-$root/build-win64/wineprefix} bash "$root/tests/windows/test_wine_calls.sh" "$exe" "$small" "$big"
