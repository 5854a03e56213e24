#!/usr/bin/env bash
# bench/catalog-decode.sh — a catalog held in memory as today's nodes or in a
# compact form (bench/catalog_decode.cpp), one decode per process, alternated.
#
#   bench/catalog-decode.sh HPAK LIBRARY CATALOG_NAME [RUNS]
#
# Builds build/bench/hpak-catdecode if needed (ninja -C build hpak-catdecode),
# extracts the catalog's raw bytes with `hpak cat`, and prints the median CPU
# ms (decode, free, total) and page faults of each form.
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: $0 HPAK LIBRARY CATALOG_NAME [RUNS]" >&2; exit 2; }
hpak=$1 lib=$2 name=$3 runs=${4:-15}
here=$(cd "$(dirname "$0")/.." && pwd)
tool=$here/build/bench/hpak-catdecode
[[ -x $tool ]] || ninja -C "$here/build" hpak-catdecode >/dev/null
digest=$("$hpak" catalogs "$lib" --json | python3 -c "import json,sys; print([c['digest'] for c in map(json.loads, sys.stdin) if c['name'] == sys.argv[1]][0])" "$name")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in "$lib"/packs/*.hpak; do
  "$hpak" cat "$p" "$digest" >"$tmp/cat" 2>/dev/null && break
done
[[ -s $tmp/cat ]] || { echo "catalog-decode.sh: catalog '$name' not found in $lib" >&2; exit 1; }
echo "# catalog '$name' ($digest): $(stat -c %s "$tmp/cat") bytes raw; $runs runs of each form, alternated"
for _ in $(seq 1 "$runs"); do
  "$tool" "$tmp/cat" nodes
  "$tool" "$tmp/cat" compact
done >"$tmp/res"
for form in nodes compact; do
  grep "^$form " "$tmp/res" | python3 -c "
import sys, statistics
rows = [dict(kv.split('=') for kv in line.split()[1:] if '=' in kv) for line in sys.stdin]
med = lambda k: statistics.median(float(r[k]) for r in rows)
print(f'$form: {int(med(\"nodes\"))} nodes, decode {med(\"decode_ms\"):.2f} ms, free {med(\"free_ms\"):.2f} ms, total {med(\"total_ms\"):.2f} ms, {int(med(\"faults\"))} page faults')"
done
