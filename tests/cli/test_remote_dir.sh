#!/usr/bin/env bash
# A published library read in place from a directory (file:///DIR or a plain
# DIR, core/remote/dir/): hpak fetch and hpak restore URL through the same
# backend interface as over HTTP, every object checked, nothing written into
# DIR; and the one-line refusals of a URL that cannot be used (no host, a bad
# port, a query, an unknown scheme, a bucket name, writing over HTTP).
. "$(dirname "$0")/cli_lib.sh" "$@"
trap 'status=$?; cli_cleanup; exit $status' EXIT
export XDG_STATE_HOME=$work/state XDG_CACHE_HOME=$work/cache

py=$(command -v /usr/bin/python3 || command -v python3)
json() { "$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])' "$work/$1.out" "$2"; }
same_tree() { diff -r --no-dereference -x .hpak-state "$1" "$2" >/dev/null || fail "$1 and $2 differ"; }

make_tree "$work/src" 120 29
run pack pack "$work/src" --into "$work/lib" --name env1 --no-relocate; expect_rc pack 0
# env2: the same files under another name (another catalog, no new object).
run pack2 pack "$work/src" --into "$work/lib" --name env2 --no-relocate; expect_rc pack2 0
run ref restore "$work/lib" env1 "$work/ref"; expect_rc ref 0
run pub publish "$work/lib" "file://$work/www/"; expect_rc pub 0
[ -f "$work/www/HPAKROOT" ] && [ -d "$work/www/packs" ] || fail "publish to file:// wrote no library: $(ls -R "$work/www")"
before=$(find "$work/www" -printf '%p %s %T@\n' | sort)

# fetch from file:///DIR and from a plain DIR: everything, then nothing.
run f1 fetch "file://$work/www" env1 --into "$work/c1" --json; expect_rc f1 0
[ "$(json f1 objects_fetched)" = "$(json f1 objects)" ] && [ "$(json f1 objects)" -gt 0 ] || fail "fetch from file://: $(out f1)"
[ "$(json f1 ranges)" -gt 0 ] && [ "$(json f1 transferred_bytes)" -gt 0 ] || fail "fetch from file:// read nothing: $(out f1)"
run v1 verify "$work/c1"; expect_rc v1 0
run r1 restore "$work/c1" env1 "$work/t1"; expect_rc r1 0
same_tree "$work/ref" "$work/t1"
run f2 fetch "$work/www/" env1 --into "$work/c1" --json; expect_rc f2 0
[ "$(json f2 objects_fetched)" = 0 ] || fail "second fetch from a directory fetched again: $(out f2)"
[ "$(json f2 needed_bytes)" = 0 ] || fail "a fetch of a catalog the cache holds needed bytes: $(out f2)"
# A catalog whose objects the cache holds: its entry is all the fetch needs,
# and needed_bytes counts it (with its 72-byte header).
run f2b fetch "$work/www" env2 --into "$work/c1" --json; expect_rc f2b 0
[ "$(json f2b objects_fetched)" = 0 ] || fail "env2 fetched objects the cache holds: $(out f2b)"
need=$(json f2b needed_bytes)
[ "$need" -gt 72 ] && [ "$(json f2b transferred_bytes)" -ge "$need" ] || fail "env2's catalog entry not counted in needed_bytes: $(out f2b)"
run f3 fetch "$work/www" env1 --into "$work/c3"; expect_rc f3 0
grep -q "^fetched 'env1' from '$work/www' (generation 1)" "$work/f3.out" || fail "fetch summary: $(out f3)"

# restore file:///DIR through the cache (a plain DIR stays a library).
run r2 restore "file://$work/www" env1 "$work/t2" --cache "$work/cache2"; expect_rc r2 0
same_tree "$work/ref" "$work/t2"
[ "$(find "$work/www" -printf '%p %s %T@\n' | sort)" = "$before" ] || fail "reading the published directory changed it"

# A directory that holds no published library; a damaged pack is refused.
run none fetch "$work/src" env1 --into "$work/c4"; refused none "no published library at '$work/src': '$work/src/HPAKROOT' not found \(no such file\)"
cp -a "$work/www" "$work/bad"
p=$(find "$work/bad/packs" -name '*.hpak' -size +20k | sed -n 1p)
[ -n "$p" ] || fail "no pack large enough to damage"
"$py" - "$p" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(4096); b = f.read(1); f.seek(4096); f.write(bytes([b[0] ^ 0xff]))
PY
run bad fetch "$work/bad" env1 --into "$work/c5"; refused bad "refused, not stored"
ln -sf /etc/passwd "$work/bad/HPAKROOT"
run link fetch "$work/bad" env1 --into "$work/c5"; refused link "is a symbolic link"

# URLs that cannot be used: one line, naming the URL and why; nothing made.
run nohost fetch "http://" env1 --into "$work/c6"; refused nohost "'http://' is not an http://HOST\[:PORT\]\[/PATH\] URL: no host"
run port fetch "http://127.0.0.1:70000/x" env1 --into "$work/c6"; refused port "port '70000' is not a number from 1 to 65535"
run query fetch "https://h.example/x?sig=1" env1 --into "$work/c6"; refused query "a query or a fragment"
run scheme fetch "ftp://h.example/x" env1 --into "$work/c6"; refused scheme "unknown scheme 'ftp' \(hpak reads file://, http://, https://, s3:// or a directory\)"
run rscheme restore "gopher://h/x" env1 "$work/t6" --cache "$work/c6"; refused rscheme "unknown scheme 'gopher'"
run filehost fetch "file://server/share" env1 --into "$work/c6"; refused filehost "file:// URLs name local directories"
run bucket publish "$work/lib" "s3://Bad_Bucket/x"; refused bucket "is not an s3://BUCKET/PREFIX URL: bucket names are lower-case"
run overhttp publish "$work/lib" "http://127.0.0.1:9/pub/"; refused overhttp "'http://127.0.0.1:9/pub': publish writes to a directory or an s3:// URL, not over HTTP"
[ ! -e "$work/t6" ] || fail "a refused restore made its target"
echo "$test_name: ok"
