#!/usr/bin/env bash
# Signed remote roots: hpak publish -k KEY signs HPAKROOT (SSHSIG, namespace
# "hpak", checkable with ssh-keygen -Y verify); hpak fetch / restore URL with
# --allowed-signers check it before trusting any digest in it, and refuse
# unsigned, tampered, unknown-key and wrong-namespace roots and a generation
# below one seen before (a replayed old root). Real ed25519 keys, real nginx.
. "$(dirname "$0")/cli_lib.sh" "$@"
. "$(dirname "$0")/remote_helpers.sh"
for tool in nginx curl ssh-keygen; do
  need_tool "$tool"
done
trap 'status=$?; stop_servers; (exit $status); cli_cleanup; exit $status' EXIT
export XDG_STATE_HOME=$work/state XDG_CACHE_HOME=$work/cache

json() { "$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])' "$work/$1.out" "$2"; }
same_tree() { diff -r --no-dereference -x .hpak-state "$1" "$2" >/dev/null || fail "$1 and $2 differ"; }
keygen() { ssh-keygen -q -t ed25519 -N '' -C "$1" -f "$work/$1" || fail "ssh-keygen failed"; }
keyfield() { cut -d' ' -f1,2 "$work/$1.pub"; }
keygen alice
keygen eve
allowed=$work/allowed_signers
echo "alice@example.com namespaces=\"hpak\" $(keyfield alice)" >"$allowed"
root_text() { sed '/^-----BEGIN SSH SIGNATURE-----$/,$d' "$1"; } # the signed part of a root
root_sig() { sed -n '/^-----BEGIN SSH SIGNATURE-----$/,$p' "$1"; }

make_tree "$work/src" 80 3
run pack pack "$work/src" --into "$work/lib" --name env1 --no-relocate; expect_rc pack 0
run ref restore "$work/lib" env1 "$work/ref"; expect_rc ref 0
www=$work/www

# --- publish -k: a signed root that ssh-keygen accepts ------------------------
run pub1 publish -k "$work/alice" "$work/lib" "$www/pub" --json; expect_rc pub1 0
[ "$(json pub1 signed)" = True ] || fail "publish -k did not sign: $(out pub1)"
grep -q '^-----BEGIN SSH SIGNATURE-----$' "$www/pub/HPAKROOT" || fail "no signature in the root"
root_text "$www/pub/HPAKROOT" >"$work/root1.txt"
root_sig "$www/pub/HPAKROOT" >"$work/root1.sig"
grep -qx end <<<"$(tail -n 1 "$work/root1.txt")" || fail "signed part does not end with the end line"
ssh-keygen -Y verify -f "$allowed" -I alice@example.com -n hpak -s "$work/root1.sig" <"$work/root1.txt" >/dev/null 2>&1 ||
  fail "ssh-keygen -Y verify refuses the root's signature"
cp "$www/pub/HPAKROOT" "$work/root-gen1"

# Unsigned, tampered, unknown key, wrong namespace, malformed signature.
run pub_u publish "$work/lib" "$www/unsigned"; expect_rc pub_u 0
run pub_e publish -k "$work/eve" "$work/lib" "$www/eve"; expect_rc pub_e 0
for d in tampered ns badsig; do cp -a "$www/pub" "$www/$d"; done
sed -i 's/^generation 1$/generation 9/' "$www/tampered/HPAKROOT"
ssh-keygen -q -Y sign -f "$work/alice" -n other "$work/root1.txt" || fail "ssh-keygen -Y sign failed"
cat "$work/root1.txt" "$work/root1.txt.sig" >"$www/ns/HPAKROOT"
{ cat "$work/root1.txt"; printf -- '-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n'; } >"$www/badsig/HPAKROOT"

start_nginx "$www" "$work/nginx" || fail "nginx did not start"
base="http://127.0.0.1:$nginx_port"

run f_ok fetch "$base/pub" env1 --into "$work/c1" --allowed-signers "$allowed" --json; expect_rc f_ok 0
[ "$(json f_ok generation)" = 1 ] && [[ "$(json f_ok signer)" == *alice@example.com* ]] || fail "signed fetch: $(out f_ok)"
run r_ok restore "$base/pub" env1 "$work/t1" --cache "$work/c2" --allowed-signers "$allowed"; expect_rc r_ok 0
same_tree "$work/ref" "$work/t1"
run f_plain fetch "$base/pub" env1 --into "$work/c3"; expect_rc f_plain 0 # without a policy the signature is not needed

check_refused() { # NAME DIR PATTERN: fetch and restore URL both refuse, storing nothing
  local name=$1 dir=$2 pattern=$3
  run "$name" fetch "$base/$dir" env1 --into "$work/c_$name" --allowed-signers "$allowed"; refused "$name" "$pattern"
  # shellcheck disable=SC2010 # the names are hpak's own (pack-<hex>.hpak/.hidx): no odd characters to trip ls
  [ -z "$(ls "$work/c_$name/packs" 2>/dev/null | grep hpak)" ] || fail "$name: a refused root let packs in"
  [ ! -e "$work/c_$name/catalogs/env1" ] || fail "$name: a refused root set the name"
  run "${name}_r" restore "$base/$dir" env1 "$work/t_$name" --cache "$work/cr_$name" --allowed-signers "$allowed"
  refused "${name}_r" "$pattern"
  [ ! -e "$work/t_$name" ] || [ -z "$(ls -A "$work/t_$name")" ] || fail "$name: a refused root restored files"
}
check_refused unsigned unsigned "refusing root '.*/unsigned/HPAKROOT': it is not signed"
check_refused tampered tampered "refusing root .*does not match the data"
check_refused eve eve "refusing root .*key SHA256:.* is not an allowed signer"
check_refused ns ns "refusing root .*namespace 'other', not 'hpak'"
check_refused badsig badsig "refusing root '.*/badsig/HPAKROOT': "

# A library that requires signatures requires a signed root, without the option.
run initp init --require-signatures "$allowed" "$work/cp"; expect_rc initp 0
run fp_uns fetch "$base/unsigned" env1 --into "$work/cp"; refused fp_uns "refusing root .*: it is not signed"
run fp_ok fetch "$base/pub" env1 --into "$work/cp"; expect_rc fp_ok 0
run rp_uns restore "$base/unsigned" env1 "$work/t_rp" --cache "$work/cp"; refused rp_uns "refusing root .*: it is not signed"

# --- generations only grow: a replayed old root is refused ---------------------
# (One sequence per library: the publishes to unsigned/ and eve/ took 2 and 3.)
run pub2 publish -k "$work/alice" "$work/lib" "$www/pub" --json; expect_rc pub2 0
[ "$(json pub2 generation)" = 4 ] || fail "second publish: $(out pub2)"
run f_gen2 fetch "$base/pub" env1 --into "$work/c1" --allowed-signers "$allowed" --json; expect_rc f_gen2 0
[ "$(json f_gen2 generation)" = 4 ] || fail "gen 4 fetch: $(out f_gen2)"
[ "$(cat "$XDG_STATE_HOME"/hpak/generations/remote-*)" = 4 ] || fail "generation state: $(cat "$XDG_STATE_HOME"/hpak/generations/remote-*)"
cp "$work/root-gen1" "$www/pub/HPAKROOT" # an attacker (or a stale mirror) replays generation 1
run replay fetch "$base/pub" env1 --into "$work/c1" --allowed-signers "$allowed"
refused replay "generation 1 is older than generation 4 seen before"
run replay_r restore "$base/pub" env1 "$work/t_replay" --cache "$work/c2" --allowed-signers "$allowed"
refused replay_r "generation 1 is older than generation 4 seen before"
# Another user (state) has seen nothing: generation 1 is new to them.
XDG_STATE_HOME=$work/state2 run replay_other fetch "$base/pub" env1 --into "$work/c4" --allowed-signers "$allowed"
expect_rc replay_other 0
# A restore through a URL expects the digest the signed root gives.
run pub3 publish -k "$work/alice" "$work/lib" "$www/pub" --generation 5; expect_rc pub3 0
run r_gen5 restore "$base/pub" env1 "$work/t5" --cache "$work/c2" --allowed-signers "$allowed"; expect_rc r_gen5 0
same_tree "$work/ref" "$work/t5"
echo "$test_name: ok"
