#!/usr/bin/env bash
# Remote libraries served by stock servers that behave unlike nginx (issue 29):
# `python3 -m http.server`, which ignores Range and answers every ranged GET
# with 200 and the whole file (hpak reads each file once and serves the ranges
# from it: bytes transferred are checked against what the fetch needs), and
# tests/tools/gzip_http_server.py, which compresses its answers like Apache
# with mod_deflate forced (hpak asks for identity and names the
# Content-Encoding of an answer compressed anyway).
. "$(dirname "$0")/cli_lib.sh" "$@"
. "$(dirname "$0")/remote_helpers.sh"
need_tool curl
trap 'status=$?; stop_servers; (exit $status); cli_cleanup; exit $status' EXIT

json() { "$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])' "$work/$1.out" "$2"; }
same_tree() { diff -r --no-dereference -x .hpak-state "$1" "$2" >/dev/null || fail "$1 and $2 differ: $(diff -r --no-dereference -x .hpak-state "$1" "$2" | sed -n 1,5p)"; }

# A tree of small files and a few incompressible large ones (several MB of packs).
make_tree "$work/src" 300 3
mkdir -p "$work/src/big"
"$py" - "$work/src/big" <<'PY'
import os, random, sys
r = random.Random(29)
for i in range(6):
    with open(os.path.join(sys.argv[1], f"blob{i}.bin"), "wb") as f:
        f.write(r.randbytes(700_000 + 37 * i))
PY
run pack pack "$work/src" --into "$work/lib" --name env --no-relocate; expect_rc pack 0
run ref restore "$work/lib" env "$work/ref"; expect_rc ref 0
run pub publish "$work/lib" "$work/www"; expect_rc pub 0
# Every published file is needed by a cold fetch of the only catalog.
published=$(find "$work/www" -type f -printf '%s\n' | awk '{s += $1} END {print s}')

# --- python3 -m http.server: Range ignored ----------------------------------
start_http_server() { # DIR LOG -> $hs_port
  local _
  for _ in 1 2 3 4 5; do
    hs_port=$(free_port)
    "$py" -m http.server --bind 127.0.0.1 --directory "$1" "$hs_port" >>"$2" 2>&1 &
    server_pids+=($!)
    for _ in $(seq 1 100); do
      curl -s -o /dev/null "http://127.0.0.1:$hs_port/" 2>/dev/null && return 0
      kill -0 "${server_pids[-1]}" 2>/dev/null || break
      sleep 0.05
    done
  done
  fail "python3 -m http.server did not start: $(tail -3 "$2")"
}
start_http_server "$work/www" "$work/http_server.log"
url="http://127.0.0.1:$hs_port"
curl -s -o /dev/null -w '%{http_code}' -r 0-9 "$url/HPAKROOT" >"$work/probe" || true
[ "$(cat "$work/probe")" = 200 ] || fail "python3 -m http.server answered a range with $(cat "$work/probe"), not 200 (it honours Range now: this test needs a server that does not)"

check_bytes() { # NAME: the fetch moved at most 5% more than the published files
  local t
  t=$(json "$1" transferred_bytes)
  [ "$t" -le $((published + published / 20)) ] || fail "$1: $t bytes transferred for $published bytes published ($(out "$1"))"
  [ "$(json "$1" objects_fetched)" = "$(json "$1" objects)" ] || fail "$1: fetched $(json "$1" objects_fetched) of $(json "$1" objects)"
}
k=0
for args in "" "--max-range 65536" "--max-range 65536 --gap 0 --parallel 3"; do
  n=f$((++k))
  # shellcheck disable=SC2086 # the options, split on purpose
  run "$n" fetch "$url" env --into "$work/c$n" --json $args; expect_rc "$n" 0
  check_bytes "$n"
  run "v$n" verify "$work/c$n"; expect_rc "v$n" 0
  run "r$n" restore "$work/c$n" env "$work/t$n"; expect_rc "r$n" 0
  same_tree "$work/ref" "$work/t$n"
done
[ -z "$(find "$work"/cf* -name '.tmp-*')" ] || fail "a fetch left temporary files: $(find "$work"/cf* -name '.tmp-*')"
# restore URL through the cache, the same.
run ru restore "$url" env "$work/tu" --cache "$work/cu"; expect_rc ru 0
same_tree "$work/ref" "$work/tu"

# --- compressing servers ------------------------------------------------------
start_gzip() { # LOG [ARGS...] -> $gz_port
  local log=$1 pf
  shift
  pf=$(mktemp -u "${TMPDIR:-/tmp}/hpak-gz-port-XXXXXX")
  "$py" "$src_root/tests/tools/gzip_http_server.py" --root "$work/www" --port-file "$pf" --log "$log" "$@" 2>>"$log.stderr" &
  server_pids+=($!)
  for _ in $(seq 1 200); do
    [ -s "$pf" ] && break
    sleep 0.05
  done
  gz_port=$(cat "$pf" 2>/dev/null) || fail "the gzip test server did not start: $(cat "$log.stderr")"
  rm -f "$pf"
}
# Compressing whatever the client asks: one line naming the encoding and the URL.
start_gzip "$work/gz.log"
run gz fetch "http://127.0.0.1:$gz_port" env --into "$work/cgz"
refused gz "unable to fetch 'http://127.0.0.1:$gz_port/HPAKROOT': .*Content-Encoding: gzip"
grep -q ' identity 200 gzip$' "$work/gz.log" || fail "hpak did not ask for identity: $(cat "$work/gz.log")"
[ ! -e "$work/cgz/catalogs/env" ] || fail "a refused fetch set the name"
# Compressing unless asked for identity (ranges honoured): it works, nothing compressed.
start_gzip "$work/gzi.log" --honour-identity
run gzi fetch "http://127.0.0.1:$gz_port" env --into "$work/cgzi" --json; expect_rc gzi 0
[ "$(json gzi objects_fetched)" = "$(json gzi objects)" ] || fail "identity server: fetched $(json gzi objects_fetched) of $(json gzi objects)"
grep -q ' 206 identity$' "$work/gzi.log" || fail "no range served as is: $(cat "$work/gzi.log")"
! grep -q ' gzip$' "$work/gzi.log" || fail "a request did not ask for identity: $(grep ' gzip$' "$work/gzi.log")"
run rgzi restore "$work/cgzi" env "$work/tgzi"; expect_rc rgzi 0
same_tree "$work/ref" "$work/tgzi"
echo "ok"
