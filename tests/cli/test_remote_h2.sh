#!/usr/bin/env bash
# HTTP/2 where the server offers it: nginx over TLS (a self-signed certificate
# made by openssl req) with http2; hpak fetch and restore URL take the CA from
# --cacert, $CURL_CA_BUNDLE or $SSL_CERT_FILE, speak HTTP/2 (nginx's
# $server_protocol) and multiplex their parallel range requests over one
# connection (nginx's $connection); without the CA they refuse the server.
. "$(dirname "$0")/cli_lib.sh" "$@"
. "$(dirname "$0")/remote_helpers.sh"
for tool in nginx curl openssl; do
  need_tool "$tool"
done
grep -q -- --with-http_v2_module <<<"$(nginx -V 2>&1)" || { echo "$test_name: skipped: nginx has no http2 module"; exit 125; }
trap 'status=$?; stop_servers; (exit $status); cli_cleanup; exit $status' EXIT
unset CURL_CA_BUNDLE SSL_CERT_FILE # the CA comes from each case below

json() { "$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])' "$work/$1.out" "$2"; }
same_tree() { diff -r --no-dereference -x .hpak-state "$1" "$2" >/dev/null || fail "$1 and $2 differ"; }

make_tree "$work/src" 150 7
run pack pack "$work/src" --into "$work/lib" --name env1 --no-relocate; expect_rc pack 0
run ref restore "$work/lib" env1 "$work/ref"; expect_rc ref 0
run pub publish "$work/lib" "$work/www/pub"; expect_rc pub 0
NGINX_TLS=1 start_nginx "$work/www" "$work/nginx" || fail "nginx did not start"
url="https://127.0.0.1:$nginx_port/pub"
log=$work/nginx/access.log
ca=$work/nginx/ca.pem

# Without the CA: refused (the system's CAs do not know the test's certificate).
run noca fetch "$url" env1 --into "$work/c0" --attempts 1
refused noca "unable to fetch '$url/HPAKROOT': .*(certificate|SSL)"

# --cacert: small ranges so that many requests run at once.
: >"$log"
run f1 fetch "$url" env1 --into "$work/c1" --cacert "$ca" --parallel 8 --gap 0 --max-range 4096 --json; expect_rc f1 0
reqs=$(json f1 requests)
[ "$reqs" -gt 8 ] || fail "too few requests to show multiplexing: $reqs"
[ "$(wc -l <"$log")" = "$reqs" ] || fail "nginx logged $(wc -l <"$log") requests, hpak counted $reqs"
[ "$(awk '$2!="HTTP/2.0"' "$log" | wc -l)" = 0 ] || fail "requests not over HTTP/2: $(awk '$2!="HTTP/2.0"' "$log" | sed -n 1,3p)"
[ "$(awk '{print $1}' "$log" | sort -u | wc -l)" = 1 ] || fail "HTTP/2 requests not multiplexed on one connection: $(awk '{print $1}' "$log" | sort | uniq -c)"
run v1 verify "$work/c1"; expect_rc v1 0
run r1 restore "$work/c1" env1 "$work/t1"; expect_rc r1 0
same_tree "$work/ref" "$work/t1"

# $CURL_CA_BUNDLE and $SSL_CERT_FILE; restore URL.
CURL_CA_BUNDLE=$ca run r2 restore "$url" env1 "$work/t2" --cache "$work/c2"; expect_rc r2 0
same_tree "$work/ref" "$work/t2"
SSL_CERT_FILE=$ca run f3 fetch "$url" env1 --into "$work/c3"; expect_rc f3 0
grep -q 'HTTP/2.0 "GET /pub/HPAKROOT' "$log" || fail "root not fetched over HTTP/2"
echo "$test_name: ok"
