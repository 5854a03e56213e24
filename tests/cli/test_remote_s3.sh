#!/usr/bin/env bash
# S3: hpak publish LIB s3://BUCKET/PREFIX (PUT, DELETE with --prune) and hpak
# fetch / restore s3://BUCKET/PREFIX (GET with Range), every request signed
# with AWS SigV4 (core/remote/s3/sigv4.hpp), path-style, against a real
# S3-compatible server that checks the signatures: @20minutes/s3rver (npm,
# installed by scripts/setup.sh --test into .cache/s3rver), started on 127.0.0.1.
. "$(dirname "$0")/cli_lib.sh" "$@"
. "$(dirname "$0")/remote_helpers.sh"
modules=${HPAK_S3RVER_MODULES:-$src_root/.cache/s3rver/node_modules}
need_tool node
[ -d "$modules/@20minutes/s3rver" ] || { echo "$test_name: skipped: $modules/@20minutes/s3rver missing (run scripts/setup.sh --test)"; exit 125; }
need_tool ssh-keygen
trap 'status=$?; stop_servers; (exit $status); cli_cleanup; exit $status' EXIT
export XDG_STATE_HOME=$work/state XDG_CACHE_HOME=$work/cache
unset AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_SESSION_TOKEN AWS_DEFAULT_REGION AWS_PROFILE
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1

json() { "$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])' "$work/$1.out" "$2"; }
same_tree() { diff -r --no-dereference -x .hpak-state "$1" "$2" >/dev/null || fail "$1 and $2 differ"; }

pf=$work/s3.port
node "$src_root/tests/tools/s3_server.js" "$modules" "$work/s3data" "$pf" hpak >"$work/s3.log" 2>&1 &
server_pids+=($!)
for _ in $(seq 1 200); do [ -s "$pf" ] && break; kill -0 "${server_pids[-1]}" 2>/dev/null || break; sleep 0.05; done
[ -s "$pf" ] || fail "s3rver did not start: $(cat "$work/s3.log")"
ep="http://127.0.0.1:$(cat "$pf")"

# The server really checks signatures: a wrong secret is refused (curl's own SigV4).
echo hi >"$work/probe"
code() { curl -s -o /dev/null -w '%{http_code}' -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --aws-sigv4 aws:amz:us-east-1:s3 "$@"; }
[ "$(code --user S3RVER:S3RVER -T "$work/probe" "$ep/hpak/probe")" = 200 ] || fail "s3rver refuses a good signature"
[ "$(code --user S3RVER:WRONG -T "$work/probe" "$ep/hpak/probe2")" = 403 ] || fail "s3rver accepts a wrong secret"

ssh-keygen -q -t ed25519 -N '' -C alice -f "$work/alice"
echo "alice $(cut -d' ' -f1,2 "$work/alice.pub")" >"$work/allowed"
make_tree "$work/src" 100 11
run packA pack "$work/src" --into "$work/libA" --name env1 --no-relocate; expect_rc packA 0
run packB pack "$work/src" --into "$work/libB" --name env1 --level 1 --no-relocate; expect_rc packB 0
run ref restore "$work/libA" env1 "$work/ref"; expect_rc ref 0
dest=s3://hpak/team/lib

# Publish: a wrong secret is refused with the server's reason, nothing published.
AWS_SECRET_ACCESS_KEY=WRONG run pub_bad publish "$work/libA" "$dest" --s3-endpoint "$ep"
refused pub_bad "unable to fetch '$ep/hpak/team/lib/HPAKROOT': HTTP 403 \(SignatureDoesNotMatch\)"
[ "$(code --user S3RVER:S3RVER "$ep/hpak/team/lib/HPAKROOT")" = 404 ] || fail "a refused publish wrote a root"
run pub1 publish -k "$work/alice" "$work/libA" "$dest" --s3-endpoint "$ep" --json; expect_rc pub1 0
[ "$(json pub1 packs_copied)" -gt 0 ] && [ "$(json pub1 signed)" = True ] || fail "publish to S3: $(out pub1)"
run pub2 publish -k "$work/alice" "$work/libA" "$dest" --s3-endpoint "$ep" --json; expect_rc pub2 0
[ "$(json pub2 packs_copied)" = 0 ] && [ "$(json pub2 generation)" = 2 ] || fail "second publish to S3: $(out pub2)"
[ "$(code --user S3RVER:S3RVER "$ep/hpak/team/lib/roots/history")" = 200 ] || fail "no root history in the bucket"

# Fetch and restore through SigV4-signed range requests, the root's signature checked.
run f1 fetch "$dest" env1 --into "$work/c1" --s3-endpoint "$ep" --allowed-signers "$work/allowed" --json; expect_rc f1 0
[ "$(json f1 objects_fetched)" = "$(json f1 objects)" ] && [ "$(json f1 ranges)" -gt 0 ] || fail "S3 fetch: $(out f1)"
run v1 verify "$work/c1"; expect_rc v1 0
run r1 restore "$work/c1" env1 "$work/t1"; expect_rc r1 0
same_tree "$work/ref" "$work/t1"
AWS_ENDPOINT_URL=$ep run r2 restore "$dest" env1 "$work/t2" --cache "$work/c2" --allowed-signers "$work/allowed"; expect_rc r2 0
same_tree "$work/ref" "$work/t2"
AWS_SECRET_ACCESS_KEY=WRONG run f_bad fetch "$dest" env1 --into "$work/c3" --s3-endpoint "$ep"
refused f_bad "unable to fetch '$ep/hpak/team/lib/HPAKROOT': HTTP 403 \(SignatureDoesNotMatch\)"
run f_nokey env -u AWS_ACCESS_KEY_ID "$hpak" fetch "$dest" env1 --into "$work/c3" --s3-endpoint "$ep" --attempts 1
no_crash f_nokey # an unsigned request: s3rver has no private buckets, so only its outcome's sanity is checked

# Prune on S3 (DELETE, no listing): the packs only the old root named go.
old_packs=$(curl -s -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --aws-sigv4 aws:amz:us-east-1:s3 --user S3RVER:S3RVER "$ep/hpak/team/lib/HPAKROOT" | awk '$1=="pack"{print $2}')
run pub3 publish -k "$work/alice" "$work/libB" "$dest" --s3-endpoint "$ep"; expect_rc pub3 0
run prune publish -k "$work/alice" "$work/libB" "$dest" --s3-endpoint "$ep" --prune --grace 0 --json; expect_rc prune 0
[ "$(json prune packs_removed)" = "$(echo "$old_packs" | wc -w)" ] || fail "S3 prune: $(out prune)"
for p in $old_packs; do [ "$(code --user S3RVER:S3RVER "$ep/hpak/team/lib/packs/$p")" = 404 ] || fail "S3 prune kept $p"; done
run f4 fetch "$dest" env1 --into "$work/c4" --s3-endpoint "$ep" --allowed-signers "$work/allowed"; expect_rc f4 0
run r4 restore "$work/c4" env1 "$work/t4"; expect_rc r4 0
same_tree "$work/ref" "$work/t4"
run bad_url publish "$work/libA" s3://Bad_Bucket/x --s3-endpoint "$ep"; refused bad_url "is not an s3://BUCKET/PREFIX URL"
echo "$test_name: ok"
