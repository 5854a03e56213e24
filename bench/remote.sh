#!/usr/bin/env bash
# Remote libraries over stock HTTP, measured against nginx on 127.0.0.1:
#  1. cold restore of an environment into an empty cache: bytes transferred vs
#     the stored bytes of the objects it needs, HTTP requests, wall time vs
#     curl of the same packs + a local restore;
#  2. a second environment sharing 90% of its files: its bytes vs the first's;
#  3. N concurrent fetchers (own caches) against one nginx: all verify;
#  4. HTTP/1.1 vs HTTP/2 over TLS (nginx with and without http2, a
#     self-signed CA): a cold fetch in many small ranges, median of 5 runs,
#     with the connections nginx saw.
#
#  5. (SECTIONS with "s3") publish to and cold fetch from an S3-compatible
#     server that checks SigV4 (@20minutes/s3rver from .cache/s3rver, see
#     scripts/setup.sh --test), median of 3.
#
#   bench/remote.sh [BUILD_DIR] [FILES] [FETCHERS] [SECTIONS]
#   (defaults: build, 20000, 50, "http h2"; SECTIONS "h2" runs only part 4)
# Prints a markdown section (for bench/RESULTS.md) on stdout.
set -euo pipefail
export LC_ALL=C
src_root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$src_root/build}")
files=${2:-20000}
fetchers=${3:-50}
sections=${4:-http h2}
hpak=$build/hpak
gen=$build/bench/hpak-gencorpus
. "$src_root/tests/cli/remote_helpers.sh"
w=$(mktemp -d /var/tmp/hpak-bench-remote-XXXXXX)
trap 'stop_servers; rm -rf "$w"' EXIT
j() { "$py" -c 'import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1])[sys.argv[1]])' "$1"; }
now() { date +%s.%N; }

"$gen" --profile rcc --files "$files" --seed 7 "$w/env1" >/dev/null
cp -a "$w/env1" "$w/env2"
# env2: 10% of the files changed (every 10th regular file in name order).
find "$w/env2" -type f | sort | awk 'NR % 10 == 0' | while read -r f; do printf '# env2\n' >>"$f"; done
"$hpak" pack "$w/env1" --into "$w/lib" --name env1 >/dev/null
"$hpak" pack "$w/env2" --into "$w/lib" --name env2 >/dev/null
"$hpak" publish "$w/lib" "$w/www/pub" >/dev/null
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
if [[ " $sections " == *" http "* ]]; then
start_nginx "$w/www" "$w/nginx"
url="http://127.0.0.1:$nginx_port/pub"
env1_pack=$(ls -S "$w/www/pub/packs/"*.hpak | sed -n 1p) # env1's pack is the larger

echo "### Remote fetch over HTTP (bench/remote.sh, $(date -u +%Y-%m-%d), nginx $(nginx -v 2>&1 | sed 's/.*\///') on 127.0.0.1, $files files)"
echo
echo "Load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| run | wall s | objects fetched | needed stored bytes | bytes transferred | ratio | requests |"
echo "|---|---|---|---|---|---|---|"
: >"$w/colds"; : >"$w/bases"
for rep in 1 2 3 4 5; do
  rm -rf "$w/cache" "$w/t"
  : >"$w/nginx/access.log"
  t0=$(now)
  "$hpak" fetch "$url" env1 --into "$w/cache" --json >"$w/f1.json"
  "$hpak" restore "$w/cache" env1 "$w/t" >/dev/null
  t1=$(now)
  cold=$(echo "$t1 - $t0" | bc)
  rm -rf "$w/t2"
  t0=$(now)
  curl -s -o "$w/pack.copy" "$url/packs/$(basename "$env1_pack")"
  "$hpak" restore "$w/lib" env1 "$w/t2" >/dev/null
  t1=$(now)
  base=$(echo "$t1 - $t0" | bc)
  rm -f "$w/pack.copy"
  echo "$cold" >>"$w/colds"
  echo "$base" >>"$w/bases"
done
best_cold=$(median <"$w/colds"); best_base=$(median <"$w/bases")
f1=$(cat "$w/f1.json")
need=$(j needed_bytes <<<"$f1"); tr1=$(j transferred_bytes <<<"$f1")
printf '| cold env1 (fetch + restore), median of 5 | %.3f | %s of %s | %s | %s | %.3f | %s (nginx log: %s) |\n' "$best_cold" \
  "$(j objects_fetched <<<"$f1")" "$(j objects <<<"$f1")" "$need" "$tr1" "$(echo "$tr1 / $need" | bc -l)" \
  "$(j requests <<<"$f1")" "$(wc -l <"$w/nginx/access.log")"
printf '| baseline: curl of env1 pack + local restore, median of 5 | %.3f | | | %s | | 1 |\n' "$best_base" "$(stat -c %s "$env1_pack")"
: >"$w/nginx/access.log"
f2=$("$hpak" fetch "$url" env2 --into "$w/cache" --json)
tr2=$(j transferred_bytes <<<"$f2")
printf '| env2 after env1 (90%% shared) | %.3f | %s of %s | %s | %s | %.3f | %s |\n' "$(j seconds <<<"$f2")" \
  "$(j objects_fetched <<<"$f2")" "$(j objects <<<"$f2")" "$(j needed_bytes <<<"$f2")" "$tr2" \
  "$(echo "$tr2 / $(j needed_bytes <<<"$f2")" | bc -l)" "$(j requests <<<"$f2")"
echo
printf 'Cold wall time / (curl + local restore): %.2f. env2 bytes / env1 bytes: %.3f.\n' \
  "$(echo "$best_cold / $best_base" | bc -l)" "$(echo "$tr2 / $tr1" | bc -l)"
echo
# Concurrent fetchers, each into its own cache, then each cache verified.
: >"$w/nginx/access.log"
t0=$(now)
pids=()
for i in $(seq 1 "$fetchers"); do
  "$hpak" fetch "$url" env1 --into "$w/cc$i" --json >"$w/cc$i.json" 2>"$w/cc$i.err" & pids+=($!)
done
ok=0
for p in "${pids[@]}"; do wait "$p" && ok=$((ok + 1)) || true; done
t1=$(now)
verified=0
for i in $(seq 1 "$fetchers"); do
  "$hpak" verify "$w/cc$i" >/dev/null 2>&1 && verified=$((verified + 1))
  [ -s "$w/cc$i.json" ] && tail -1 "$w/cc$i.json" >>"$w/all.json"
done
"$py" - "$w/all.json" "$fetchers" "$ok" "$verified" "$(echo "$t1 - $t0" | bc)" <<'PY'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])] if __import__("os").path.getsize(sys.argv[1]) else []
n, ok, ver, secs = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
req = [r["requests"] for r in rows]; tr = [r["transferred_bytes"] for r in rows]; rt = [r["retries"] for r in rows]
print(f"{n} concurrent fetchers of env1 (own caches) against one nginx: {ok} succeeded, {ver} caches verified "
      f"(hpak verify), {secs:.1f} s for all; per fetcher: requests median {statistics.median(req) if req else 0}, "
      f"bytes median {statistics.median(tr) if tr else 0:.0f}, retries total {sum(rt)}.")
PY
fi

if [[ " $sections " == *" h2 "* ]]; then
echo
echo "### HTTP/1.1 vs HTTP/2 over TLS (bench/remote.sh, $(date -u +%Y-%m-%d), $files files, cold fetch of env1 with --gap 0 --max-range 65536, median of 5)"
echo
echo "Load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| server | protocol seen by nginx | fetch s (median) | min–max | requests | connections |"
echo "|---|---|---|---|---|---|"
for h2 in 0 1; do
  NGINX_TLS=1 NGINX_H2=$h2 start_nginx "$w/www" "$w/nginx-h$h2"
  url="https://127.0.0.1:$nginx_port/pub"
  : >"$w/secs"
  for rep in 1 2 3 4 5; do
    rm -rf "$w/cache"
    : >"$w/nginx-h$h2/access.log"
    "$hpak" fetch "$url" env1 --into "$w/cache" --cacert "$w/nginx-h$h2/ca.pem" --gap 0 --max-range 65536 --json >"$w/h.json"
    j seconds <"$w/h.json" >>"$w/secs"
  done
  printf '| nginx TLS%s | %s | %.3f | %.3f–%.3f | %s | %s |\n' "$([ $h2 = 1 ] && echo ' + http2' || echo ' (no http2)')" \
    "$(awk '{print $2}' "$w/nginx-h$h2/access.log" | sort -u | tr '\n' ' ')" "$(median <"$w/secs")" \
    "$(sort -g "$w/secs" | sed -n 1p)" "$(sort -g "$w/secs" | tail -1)" "$(j requests <"$w/h.json")" \
    "$(awk '{print $1}' "$w/nginx-h$h2/access.log" | sort -u | wc -l)"
done
fi

if [[ " $sections " == *" s3 "* ]]; then
modules=$src_root/.cache/s3rver/node_modules
node "$src_root/tests/tools/s3_server.js" "$modules" "$w/s3data" "$w/s3.port" bench >"$w/s3.log" 2>&1 &
server_pids+=($!)
for i in $(seq 1 200); do [ -s "$w/s3.port" ] && break; sleep 0.05; done
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
ep="http://127.0.0.1:$(cat "$w/s3.port")"
echo
echo "### S3 (bench/remote.sh, $(date -u +%Y-%m-%d), @20minutes/s3rver on 127.0.0.1, SigV4-signed, $files files, median of 3)"
echo
echo "Load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
: >"$w/pubs"; : >"$w/fets"
for rep in 1 2 3; do
  "$hpak" publish "$w/lib" "s3://bench/r$rep" --s3-endpoint "$ep" --json >"$w/p.json"
  j seconds <"$w/p.json" >>"$w/pubs"
  rm -rf "$w/cache"
  "$hpak" fetch "s3://bench/r$rep" env1 --into "$w/cache" --s3-endpoint "$ep" --json >"$w/f.json"
  j seconds <"$w/f.json" >>"$w/fets"
done
echo "| step | s (median) | min–max | bytes | requests |"
echo "|---|---|---|---|---|"
printf '| publish (PUT every pack and index, the root records, the root) | %.3f | %.3f–%.3f | %s | |\n' "$(median <"$w/pubs")" \
  "$(sort -g "$w/pubs" | sed -n 1p)" "$(sort -g "$w/pubs" | tail -1)" "$(j bytes_copied <"$w/p.json")"
printf '| cold fetch of env1 (GET with Range) | %.3f | %.3f–%.3f | %s | %s |\n' "$(median <"$w/fets")" \
  "$(sort -g "$w/fets" | sed -n 1p)" "$(sort -g "$w/fets" | tail -1)" "$(j transferred_bytes <"$w/f.json")" "$(j requests <"$w/f.json")"
fi
