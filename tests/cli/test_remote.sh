#!/usr/bin/env bash
# Remote libraries: hpak publish, hpak fetch and hpak restore URL against a
# real nginx on 127.0.0.1, and against tests/tools/bad_http_server.py for what
# nginx does not do (whole-body 200s, short bodies, resets, 5xx, 429, redirects,
# stalls, flipped bytes, packs removed by a remote gc).
. "$(dirname "$0")/cli_lib.sh" "$@"
. "$(dirname "$0")/remote_helpers.sh"
for tool in nginx curl; do
  need_tool "$tool"
done
trap 'status=$?; stop_servers; (exit $status); cli_cleanup; exit $status' EXIT # keep the test's status (a killed server's wait would replace it)

json() { "$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])' "$work/$1.out" "$2"; }
same_tree() { diff -r --no-dereference -x .hpak-state "$1" "$2" >/dev/null || fail "$1 and $2 differ: $(diff -r --no-dereference -x .hpak-state "$1" "$2" | sed -n 1,5p)"; }

# Two environments sharing most files, in one library.
make_tree "$work/src1" 150 1
cp -a "$work/src1" "$work/src2"
"$py" - "$work/src2" <<'PY'
import os, sys
root = sys.argv[1]
for i, (d, _, files) in enumerate(os.walk(root)):
    for f in files:
        p = os.path.join(d, f)
        if not os.path.islink(p) and hash(f) % 10 == 0:
            with open(p, "ab") as fh: fh.write(b"# changed in env2\n")
PY
run pack1 pack "$work/src1" --into "$work/lib" --name env1 --no-relocate; expect_rc pack1 0
run pack2 pack "$work/src2" --into "$work/lib" --name env2 --no-relocate; expect_rc pack2 0
run ref1 restore "$work/lib" env1 "$work/ref1"; expect_rc ref1 0

# --- publish ---------------------------------------------------------------
www=$work/www
run pub1 publish "$work/lib" "$www/pub" --json; expect_rc pub1 0
[ "$(json pub1 generation)" = 1 ] || fail "first publish: generation $(json pub1 generation)"
[ "$(json pub1 packs_copied)" = 2 ] || fail "first publish copied $(json pub1 packs_copied) packs"
grep -q "^hpak-remote 2 generation 1 library $(cat "$work/lib/id") time [0-9]* expires [0-9]* $" <<<"$(head -n 5 "$www/pub/HPAKROOT" | tr '\n' ' ')" ||
  fail "root: $(head -n 5 "$www/pub/HPAKROOT")"
grep -q "^catalog env1 " "$www/pub/HPAKROOT" || fail "root does not name env1"
grep -qx end <<<"$(tail -n 1 "$www/pub/HPAKROOT")" || fail "root has no end line"
for p in $(awk '$1=="pack"{print $2}' "$www/pub/HPAKROOT"); do
  [ -f "$www/pub/packs/$p" ] && [ -f "$www/pub/packs/${p%.hpak}.hidx" ] || fail "pack $p or its index not published"
  [ "pack-$(sha256sum "$www/pub/packs/$p" | cut -c1-64).hpak" = "$p" ] || fail "published $p does not match its name"
done
run pub2 publish "$work/lib" "$www/pub" --json; expect_rc pub2 0
[ "$(json pub2 generation)" = 2 ] && [ "$(json pub2 packs_copied)" = 0 ] || fail "second publish: $(out pub2)"
run pub_low publish "$work/lib" "$www/pub" --generation 2; refused pub_low "generation 2 is not above generation 2"
grep -q "^generation 2$" "$www/pub/HPAKROOT" || fail "a refused publish changed the root"
run pub_hi publish "$work/lib" "$www/pub" --generation 10 --json; expect_rc pub_hi 0
[ "$(json pub_hi generation)" = 10 ] || fail "--generation 10 gave $(json pub_hi generation)"
[ -z "$(find "$www/pub" -name '.tmp-*')" ] || fail "publish left temp files"

# --- nginx: fetch, restore URL, caches ---------------------------------------
start_nginx "$www" "$work/nginx" || fail "nginx did not start"
url="http://127.0.0.1:$nginx_port/pub"
run f1 fetch "$url" env1 --into "$work/c1" --json; expect_rc f1 0
[ "$(json f1 objects_fetched)" = "$(json f1 objects)" ] || fail "cold fetch fetched $(json f1 objects_fetched) of $(json f1 objects)"
run v1 verify "$work/c1"; expect_rc v1 0
run r1 restore "$work/c1" env1 "$work/t1"; expect_rc r1 0
same_tree "$work/ref1" "$work/t1"
packs_before=$(grep -c '\.hpak' "$work/nginx/access.log")
run f1b fetch "$url/" env1 --into "$work/c1" --json; expect_rc f1b 0
[ "$(json f1b objects_fetched)" = 0 ] && [ "$(json f1b indexes_fetched)" = 0 ] || fail "refetch moved objects or indexes: $(out f1b)"
[ "$(grep -c '\.hpak' "$work/nginx/access.log")" = "$packs_before" ] || fail "a refetch of a stored catalog requested pack bytes"
grep -q 'GET /pub/HPAKROOT' "$work/nginx/access.log" || fail "no root request in the access log"
run f2 fetch "$url" env2 --into "$work/c1" --json; expect_rc f2 0
o2=$(json f2 objects); f2n=$(json f2 objects_fetched)
[ "$f2n" -gt 0 ] && [ $((f2n * 4)) -lt "$o2" ] || fail "env2 after env1 fetched $f2n of $o2 objects"
run r2 restore "$url" env2 "$work/t2" --cache "$work/c2"; expect_rc r2 0
run ref2 restore "$work/lib" env2 "$work/ref2"; expect_rc ref2 0
same_tree "$work/ref2" "$work/t2"
grep -q '^env2@[0-9a-f]\{16\}$' <<<"$(ls "$work/c2/catalogs/")" || fail "cache name: $(ls "$work/c2/catalogs/")"
rm -rf "$work/xdg"
XDG_CACHE_HOME=$work/xdg run r3 restore "$url" env1 "$work/t3"; expect_rc r3 0
[ -f "$work/xdg/hpak/HPAKLIB" ] || fail "no default cache under XDG_CACHE_HOME"
same_tree "$work/ref1" "$work/t3"
run nope fetch "$url" nosuch --into "$work/c1"; refused nope "no catalog named 'nosuch'.*env1"
run noserv fetch "http://127.0.0.1:9/x" env1 --into "$work/c9" --attempts 1; refused noserv "unable to fetch 'http://127.0.0.1:9/x/HPAKROOT'"
run notlib fetch "$url/packs" env1 --into "$work/c9"; refused notlib "no published library at"

# Concurrent fetchers: into one cache and into their own.
pids=()
for i in 1 2 3 4; do "$hpak" fetch "$url" env2 --into "$work/cc" >"$work/cc$i.out" 2>&1 & pids+=($!); done
for i in 1 2 3; do "$hpak" restore "$url" env1 "$work/ct$i" --cache "$work/own$i" >"$work/ct$i.out" 2>&1 & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent fetcher failed: $(cat "$work"/cc*.out "$work"/ct*.out | grep error | sed -n 1,3p)"; done
run vcc verify "$work/cc"; expect_rc vcc 0
for i in 1 2 3; do same_tree "$work/ref1" "$work/ct$i"; done

# Hostile roots.
mkdir -p "$www/bad1" "$www/bad2" "$www/bad3"
printf 'hpak-remote 1\ngeneration 1\ncatalog env1 %064d\n' 0 >"$www/bad1/HPAKROOT"
printf 'hpak-remote 1\ngeneration 1\npack ../../etc/passwd 1 %064d 1\nend\n' 0 >"$www/bad2/HPAKROOT"
{ head -c 1000 /dev/urandom; echo; } >"$www/bad3/HPAKROOT" # ends in a newline: refused for its first line, not as truncated
run bad1 fetch "http://127.0.0.1:$nginx_port/bad1" env1 --into "$work/cb"; refused bad1 "no 'end' line"
run bad2 fetch "http://127.0.0.1:$nginx_port/bad2" env1 --into "$work/cb"; refused bad2 "is not a pack name"
run bad3 fetch "http://127.0.0.1:$nginx_port/bad3" env1 --into "$work/cb"; refused bad3 "not an hpak remote root"

# --- servers as they really are ---------------------------------------------
n_objects=$(json f1 objects)
bad_fetch() { # NAME MODE [ARGS...]: a cold fetch of env1 through the test server
  local name=$1 mode=$2
  shift 2
  : >"$work/$name.log"
  start_bad "$mode" "$www/pub" "$work/$name.log" "${BAD_AFTER:-0}" || fail "test server did not start"
  run "$name" fetch "http://127.0.0.1:$bad_port" env1 --into "$work/c_$name" --json "$@"
}
for mode in ok full200 short reset 503 429 redirect slow; do
  bad_fetch "m_$mode" "$mode" --timeout 2 --max-range 262144
  expect_rc "m_$mode" 0
  [ "$(json "m_$mode" objects_fetched)" = "$n_objects" ] || fail "$mode: fetched $(json "m_$mode" objects_fetched) of $n_objects"
  run "mv_$mode" verify "$work/c_m_$mode"; expect_rc "mv_$mode" 0
  run "mr_$mode" restore "$work/c_m_$mode" env1 "$work/t_$mode"; expect_rc "mr_$mode" 0
  same_tree "$work/ref1" "$work/t_$mode"
done
grep -q ' 200$' "$work/m_full200.log" && ! grep -q ' 206$' "$work/m_full200.log" || fail "full200 server answered 206"
grep -q ' reset$' "$work/m_reset.log" || fail "no reset happened"
grep -q ' 503$' "$work/m_503.log" && [ "$(json m_503 retries)" -gt 0 ] || fail "no 503 retried"
grep -q ' 429$' "$work/m_429.log" || fail "no 429 happened"
grep -q ' 302$' "$work/m_redirect.log" || fail "no redirect happened"
grep -q ' slow$' "$work/m_slow.log" || fail "no stalled answer happened"

# Flipped bytes: refused, nothing stored, no name.
bad_fetch m_corrupt corrupt
refused m_corrupt "does not match.*refused"
[ ! -e "$work/c_m_corrupt/catalogs/env1" ] || fail "a corrupt fetch set the name"
# shellcheck disable=SC2010 # the names are hpak's own (pack-<hex>.hpak/.hidx): no odd characters to trip ls
[ -z "$(ls "$work/c_m_corrupt/packs/" | grep hpak)" ] || fail "a corrupt fetch stored a pack"
[ -z "$(ls "$work/c_m_corrupt/tmp/")" ] || fail "a corrupt fetch left temp files"

# A 404 for a pack: the root is read again once, then a clear failure.
bad_fetch m_gone gone
refused m_gone "HTTP 404.*root was read again"
[ "$(grep -c '^/HPAKROOT ' "$work/m_gone.log")" = 2 ] || fail "root not read exactly twice: $(grep -c HPAKROOT "$work/m_gone.log")"

# ...and a replan that succeeds: the first root read is stale and names a pack
# a remote gc removed; the root read again names its replacement.
mkdir -p "$www/gc"
cp "$www/pub/HPAKROOT" "$www/gc/HPAKROOT.stale"
cp -a "$www/pub/packs" "$www/gc/packs"
run pack3 pack "$work/src1" --into "$work/lib3" --name env1 --level 1 --no-relocate; expect_rc pack3 0
run pub3 publish "$work/lib3" "$www/gc" --generation 20; expect_rc pub3 0
rm "$www/gc/packs/$(awk '$1=="pack"{print $2}' "$www/gc/HPAKROOT.stale" | sed -n 1p)"
rm "$www/gc/packs/$(awk '$1=="pack"{print $2}' "$www/gc/HPAKROOT.stale" | tail -1)"
: >"$work/m_replan.log"
start_bad stale "$www/gc" "$work/m_replan.log" || fail "test server did not start"
run m_replan fetch "http://127.0.0.1:$bad_port" env1 --into "$work/c_replan" --json; expect_rc m_replan 0
[ "$(json m_replan replans)" = 1 ] && [ "$(json m_replan generation)" = 20 ] || fail "replan: $(out m_replan)"
run mr_replan restore "$work/c_replan" env1 "$work/t_replan"; expect_rc mr_replan 0
same_tree "$work/ref1" "$work/t_replan"

# An interrupted fetch is resumed without fetching again what it stored.
BAD_AFTER=5 bad_fetch m_cut failafter --max-range 8192 --parallel 1 --attempts 1
refused m_cut "HTTP 500"
# shellcheck disable=SC2010 # the names are hpak's own (pack-<hex>.hpak/.hidx): no odd characters to trip ls
stored=$(ls "$work/c_m_cut/packs/" | grep -c 'hpak$' || true)
[ "$stored" = 1 ] || fail "interrupted fetch stored $stored packs"
run m_resume fetch "$url" env1 --into "$work/c_m_cut" --json; expect_rc m_resume 0
resumed=$(json m_resume objects_fetched)
[ "$resumed" -gt 0 ] && [ "$resumed" -lt "$n_objects" ] || fail "resume fetched $resumed of $n_objects objects"
run mr_cut restore "$work/c_m_cut" env1 "$work/t_cut"; expect_rc mr_cut 0
same_tree "$work/ref1" "$work/t_cut"
echo "$test_name: ok"
