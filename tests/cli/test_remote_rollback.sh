#!/usr/bin/env bash
# Rollback of signed remote roots (issue 27). A root names the library it
# publishes (its id) and says when it was published and when it expires; a
# client keeps the highest generation it accepted per library, not per URL.
# So an older signed root of the same library, served from another URL (a
# mirror left behind, an alias, an attacker's copy), is refused once a newer
# one was seen; a fresh client can ask for a minimum generation or a maximum
# age; an expired root is refused; a version 1 root (no identity) is still
# read. Real ed25519 keys, real nginx.
. "$(dirname "$0")/cli_lib.sh" "$@"
. "$(dirname "$0")/remote_helpers.sh"
for tool in nginx curl ssh-keygen; do
  need_tool "$tool"
done
trap 'status=$?; stop_servers; (exit $status); cli_cleanup; exit $status' EXIT
export XDG_STATE_HOME=$work/state XDG_CACHE_HOME=$work/cache

json() { "$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])' "$work/$1.out" "$2"; }
ssh-keygen -q -t ed25519 -N '' -C alice -f "$work/alice" || fail "ssh-keygen failed"
allowed=$work/allowed_signers
echo "alice@example.com namespaces=\"hpak\" $(cut -d' ' -f1,2 "$work/alice.pub")" >"$allowed"
www=$work/www
make_tree "$work/old" 30 7
make_tree "$work/new" 30 8
lib=$work/lib

# Generation 1 names the old tree; a copy of what was published then stays
# on the server under another path (a mirror nobody updates).
run pack1 pack "$work/old" --into "$lib" --name env --no-relocate; expect_rc pack1 0
run pub1 publish -k "$work/alice" "$lib" "$www/pub" --json; expect_rc pub1 0
[ "$(json pub1 generation)" = 1 ] || fail "first publish: $(out pub1)"
id=$(cat "$lib/id")
grep -qz "^hpak-remote 2
generation 1
library $id
time [0-9]*
expires [0-9]*
" <<<"$(head -n 5 "$www/pub/HPAKROOT")" || fail "the root does not name its library and times: $(head -5 "$www/pub/HPAKROOT")"
cp -a "$www/pub" "$www/mirror"
# Generation 2 names the new tree.
run pack2 pack "$work/new" --into "$lib" --name env --no-relocate; expect_rc pack2 0
run pub2 publish -k "$work/alice" "$lib" "$www/pub" --json; expect_rc pub2 0
[ "$(json pub2 generation)" = 2 ] || fail "second publish: $(out pub2)"
start_nginx "$www" "$work/nginx" || fail "nginx did not start"
base="http://127.0.0.1:$nginx_port"
new_digest=$(sed -n 's/^catalog env //p' "$www/pub/HPAKROOT")

run f2 fetch "$base/pub" env --into "$work/c" --allowed-signers "$allowed" --json; expect_rc f2 0
[ "$(json f2 generation)" = 2 ] || fail "fetch of generation 2: $(out f2)"
[ "$(sed -n 2p "$work/c/catalogs/env")" = "$new_digest" ] || fail "env is not generation 2's"
[ "$(cat "$XDG_STATE_HOME/hpak/generations/remote-library-$id")" = 2 ] || fail "no generation kept for library $id"
# The old root from another URL: refused, the name stays where it is.
run f_mirror fetch "$base/mirror" env --into "$work/c" --allowed-signers "$allowed"
refused f_mirror "refusing root '$base/mirror/HPAKROOT': generation 1 is older than generation 2 seen before for library $id"
[ "$(sed -n 2p "$work/c/catalogs/env")" = "$new_digest" ] || fail "the name was rolled back"
run r_mirror restore "$base/mirror" env "$work/t_mirror" --cache "$work/c2" --allowed-signers "$allowed"
refused r_mirror "generation 1 is older than generation 2 seen before for library $id"
[ ! -e "$work/t_mirror" ] || [ -z "$(ls -A "$work/t_mirror")" ] || fail "a refused root restored files"

# A fresh client (nothing seen): --min-generation and --max-age.
export XDG_STATE_HOME=$work/state-fresh
run min_mirror fetch "$base/mirror" env --into "$work/c3" --allowed-signers "$allowed" --min-generation 2
refused min_mirror "refusing root '$base/mirror/HPAKROOT': generation 1 is below the generation 2 --min-generation asks for"
run min_pub fetch "$base/pub" env --into "$work/c3" --allowed-signers "$allowed" --min-generation 2
expect_rc min_pub 0
run age_ok restore "$base/pub" env "$work/t_age" --cache "$work/c4" --max-age 1h
expect_rc age_ok 0
sleep 2
run age_old fetch "$base/pub" env --into "$work/c5" --max-age 1s
refused age_old "refusing root '$base/pub/HPAKROOT': generation 2 was published .*, longer ago than --max-age 1 s"

# An expired root is refused by every client, signed or not.
run pub_short publish "$lib" "$www/short" --expires 1s; expect_rc pub_short 0
sleep 2
run expired fetch "$base/short" env --into "$work/c6"
refused expired "refusing root '$base/short/HPAKROOT': generation [0-9]+ expired at .* \(published .*\); it must be published again"

# One library published to two places keeps one sequence of generations.
run pub_other publish "$lib" "$www/other" --json; expect_rc pub_other 0
[ "$(json pub_other generation)" -gt 3 ] || fail "a new destination restarted the generations: $(out pub_other)"

# A version 1 root (no identity, no times) is still read.
mkdir -p "$www/v1"
cp -a "$www/other/packs" "$www/v1/"
sed -e '1s/^hpak-remote 2$/hpak-remote 1/' -e '/^library /d' -e '/^time /d' -e '/^expires /d' "$www/other/HPAKROOT" >"$www/v1/HPAKROOT"
grep -qx "hpak-remote 1" <<<"$(head -n 1 "$www/v1/HPAKROOT")" || fail "no version 1 root made"
run v1 fetch "$base/v1" env --into "$work/c7"; expect_rc v1 0
run v1_age fetch "$base/v1" env --into "$work/c8" --max-age 1d
refused v1_age "it does not say when it was published \(a version 1 root\), which --max-age needs"
echo "$test_name: ok"
