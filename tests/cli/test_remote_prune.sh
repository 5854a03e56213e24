#!/usr/bin/env bash
# Remote gc: hpak publish --prune --grace DURATION deletes only the packs that
# no root current within the grace period names, using the history of
# published roots kept at DEST (roots/history, roots/<sha256>.root), never a
# listing and never a file publish did not write. A fetcher holding an old
# root within the grace still gets its packs; after the grace they are gone
# and a fetch through the old root meets a 404, reads the root again and
# replans (real nginx; tests/tools/bad_http_server.py serves a stale root).
. "$(dirname "$0")/cli_lib.sh" "$@"
. "$(dirname "$0")/remote_helpers.sh"
for tool in nginx curl; do
  need_tool "$tool"
done
trap 'status=$?; stop_servers; (exit $status); cli_cleanup; exit $status' EXIT

json() { "$py" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])' "$work/$1.out" "$2"; }
same_tree() { diff -r --no-dereference -x .hpak-state "$1" "$2" >/dev/null || fail "$1 and $2 differ"; }
packs_of() { awk '$1=="pack"{print $2}' "$1"; }

make_tree "$work/src" 80 5
run packA pack "$work/src" --into "$work/libA" --name env1 --no-relocate; expect_rc packA 0
run packB pack "$work/src" --into "$work/libB" --name env1 --level 1 --no-relocate; expect_rc packB 0
run ref restore "$work/libA" env1 "$work/ref"; expect_rc ref 0
www=$work/www
dest=$www/g

run pub1 publish "$work/libA" "$dest"; expect_rc pub1 0
cp "$dest/HPAKROOT" "$work/root-gen1"
old_packs=$(packs_of "$dest/HPAKROOT")
run pub2 publish "$work/libB" "$dest"; expect_rc pub2 0
new_packs=$(packs_of "$dest/HPAKROOT")
[ -n "$old_packs" ] && [ -n "$new_packs" ] && [ "$old_packs" != "$new_packs" ] || fail "the two libraries share packs"
for p in $old_packs; do [ -f "$dest/packs/$p" ] || fail "publish without --prune removed $p"; done
grep -qx 'hpak-remote-history 1' <<<"$(head -n 1 "$dest/roots/history")" || fail "history: $(cat "$dest/roots/history")"
[ "$(grep -c '^root ' "$dest/roots/history")" = 2 ] || fail "history: $(cat "$dest/roots/history")"
for s in $(awk '$1=="root"{print $2}' "$dest/roots/history"); do
  [ "$(sha256sum "$dest/roots/$s.root" | cut -c1-64)" = "$s" ] || fail "roots/$s.root does not match its name"
done
echo "not hpak's" >"$dest/packs/pack-$(printf '%064d' 7).hpak" # a file publish never wrote

# Within the grace: the old root's packs stay, and a fetcher holding it gets them.
run prune1 publish "$work/libB" "$dest" --prune --grace 1h --json; expect_rc prune1 0
[ "$(json prune1 packs_removed)" = 0 ] && [ "$(json prune1 roots_kept)" = 3 ] || fail "prune within grace: $(out prune1)"
for p in $old_packs; do [ -f "$dest/packs/$p" ] || fail "prune within the grace removed $p"; done
cp "$work/root-gen1" "$dest/HPAKROOT.stale"
: >"$work/stale1.log"
start_bad stale "$dest" "$work/stale1.log" || fail "test server did not start"
run f_stale1 fetch "http://127.0.0.1:$bad_port" env1 --into "$work/c1" --json; expect_rc f_stale1 0
[ "$(json f_stale1 generation)" = 1 ] && [ "$(json f_stale1 replans)" = 0 ] || fail "stale fetch within grace: $(out f_stale1)"

# After the grace (0): the packs only generation 1 named go, with its record.
run prune2 publish "$work/libB" "$dest" --prune --grace 0 --json; expect_rc prune2 0
[ "$(json prune2 packs_removed)" = "$(echo "$old_packs" | wc -w)" ] || fail "prune after grace: $(out prune2)"
for p in $old_packs; do
  [ ! -e "$dest/packs/$p" ] && [ ! -e "$dest/packs/${p%.hpak}.hidx" ] || fail "prune kept $p"
done
for p in $new_packs; do [ -f "$dest/packs/$p" ] && [ -f "$dest/packs/${p%.hpak}.hidx" ] || fail "prune removed the current $p"; done
[ -f "$dest/packs/pack-$(printf '%064d' 7).hpak" ] || fail "prune removed a file publish did not write"
[ ! -e "$dest/roots/$(sha256sum "$work/root-gen1" | cut -c1-64).root" ] || fail "the pruned root's record stayed"
grep -q "^root $(sha256sum "$work/root-gen1" | cut -c1-64) " "$dest/roots/history" && fail "the pruned root is still in the history"
[ -z "$(find "$www" -name '.tmp-*')" ] || fail "publish left temp files"

# The fetcher still holding generation 1: 404, root read again, replanned.
: >"$work/stale2.log"
start_bad stale "$dest" "$work/stale2.log" || fail "test server did not start"
run f_stale2 fetch "http://127.0.0.1:$bad_port" env1 --into "$work/c2" --json; expect_rc f_stale2 0
[ "$(json f_stale2 replans)" = 1 ] && [ "$(json f_stale2 generation)" = 4 ] || fail "stale fetch after grace: $(out f_stale2)"
grep -q ' 404$' "$work/stale2.log" || fail "no 404 met: $(cat "$work/stale2.log")"
run r_stale2 restore "$work/c2" env1 "$work/t2"; expect_rc r_stale2 0
same_tree "$work/ref" "$work/t2"

# nginx serves what is left; a fresh fetch works; a prune of nothing removes nothing.
start_nginx "$www" "$work/nginx" || fail "nginx did not start"
run r_ng restore "http://127.0.0.1:$nginx_port/g" env1 "$work/t3" --cache "$work/c3"; expect_rc r_ng 0
same_tree "$work/ref" "$work/t3"
run prune3 publish "$work/libB" "$dest" --prune --grace 0 --json; expect_rc prune3 0
[ "$(json prune3 packs_removed)" = 0 ] || fail "a second prune removed packs: $(out prune3)"
run badgrace publish "$work/libB" "$dest" --prune --grace 3x; refused badgrace "unknown unit"
echo "$test_name: ok"
