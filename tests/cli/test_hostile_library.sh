#!/usr/bin/env bash
# Files inside a library are hostile input too (issue 10, item 11; the
# library side of the hostile corpus, generated here: FIFOs and symlinks
# cannot live in git). For each file an attacker with write access to the
# library can plant -- a FIFO, a symlink to /dev/zero, a dangling symlink, a
# symlink to a file outside -- restore, pack --into, gc, verify, repair and
# catalogs must finish (under a timeout: never hang), in bounded memory
# (ulimit -v), and either refuse with one 'hpak: error:' line naming the file
# or skip it and keep the library usable; nothing is ever created or changed
# outside the library and the target (a canary directory is compared before
# and after).
. "$(dirname "$0")/cli_lib.sh" "$@"

# Memory bound: not under ASan (its shadow memory needs terabytes of address space).
mem_kb=$((2 * 1024 * 1024))
# (gcc links libasan dynamically: look for its entry point, not its messages.)
if grep -qa -e __asan_init -e AddressSanitizer "$hpak"; then mem_kb=unlimited; fi

# hrun NAME ARGS...: `run`, under a timeout and the memory bound. A hang or a
# run out of memory fails the test at once.
hrun() {
  local name=$1
  shift
  rc=0
  (
    ulimit -v "$mem_kb"
    exec timeout -s KILL 60 "$hpak" "$@"
  ) >"$work/$name.out" 2>"$work/$name.err" </dev/null || rc=$?
  [ "$rc" -ne 137 ] || fail "$name: killed after 60 s (hung) or by the memory bound: $(head -c 1000 "$work/$name.err")"
  no_crash "$name"
}
# refused_about NAME FILE WHAT: a one-line error naming FILE and saying WHAT it is.
refused_about() {
  [ "$rc" -ne 0 ] || fail "$1: exit 0, expected a refusal; stdout: $(head -c 500 "$work/$1.out")"
  one_line_error "$1" "$2.*$3"
}

outside=$work/outside
mkdir -p "$outside"
echo "precious" >"$outside/victim"
touch -d '2001-01-01' "$outside/victim"
canary_before=$(snapshot "$outside")
canary_ok() {
  [ "$(snapshot "$outside")" = "$canary_before" ] || fail "$1: something outside the library changed:
$(diff <(echo "$canary_before") <(snapshot "$outside"))"
}

make_tree "$work/src" 40
make_tree "$work/src2" 30 2
base=$work/base
run init init "$base"
expect_rc init 0
run add pack "$work/src" --no-relocate --into "$base" --name env
expect_rc add 0
run add2 pack "$work/src2" --no-relocate --into "$base" --name other
expect_rc add2 0
# Sanity: a normal restore works within the bounds.
hrun sane restore "$base" env "$work/t-sane"
expect_rc sane 0

n=0
fresh() { # fresh NAME: a copy of the base library at $L
  n=$((n + 1))
  L=$work/lib-$1
  rm -rf "$L"
  cp -a "$base" "$L"
  T=$work/t-$1
  rm -rf "$T"
}
# restores_env WHAT: the library is still usable: env restores.
restores_env() {
  hrun "$1.env" restore "$L" env "$work/t-$1-env"
  expect_rc "$1.env" 0
  diff -r --no-dereference -q -x .hpak-state "$work/src" "$work/t-$1-env" >/dev/null || fail "$1: env restored differently"
}

echo "== a FIFO at catalogs/X"
fresh fifo-cat
mkfifo "$L/catalogs/x"
hrun fifo-cat.restore restore "$L" x "$T"
refused_about fifo-cat.restore "catalogs/x" "FIFO"
[ ! -e "$T/.hpak-state" ] || fail "fifo-cat: the refused restore wrote a state file"
restores_env fifo-cat
hrun fifo-cat.gc gc "$L"
refused_about fifo-cat.gc "catalogs/x" "FIFO"
hrun fifo-cat.verify verify "$L"
[ "$rc" -ne 0 ] || fail "fifo-cat: verify passed a library with a FIFO for a name"
hrun fifo-cat.catalogs catalogs "$L"
expect_rc fifo-cat.catalogs 0
grep -q '^x .*BROKEN.*FIFO' "$work/fifo-cat.catalogs.out" || fail "fifo-cat: catalogs does not show 'x' as broken: $(out fifo-cat.catalogs)"
hrun fifo-cat.repair repair "$L"
expect_rc fifo-cat.repair 0 # it moves the FIFO aside (issue 28), and says so
grep -q "^moved '$L/catalogs/x' (.*FIFO.*) -> '$L/quarantine/catalogs\.x\." "$work/fifo-cat.repair.out" ||
  fail "fifo-cat: repair did not report moving the FIFO into quarantine: $(out fifo-cat.repair)"
fifo_moved=$(find "$L/quarantine" -maxdepth 1 -name 'catalogs.x.*' -type p)
[ -n "$fifo_moved" ] || fail "fifo-cat: the FIFO is not in quarantine/ as it was"
mkfifo "$L/catalogs/x" # again, for the add below
hrun fifo-cat.add pack "$work/src2" --into "$L" --name x
expect_rc fifo-cat.add 0
[ -f "$L/catalogs/x" ] && [ ! -p "$L/catalogs/x" ] || fail "fifo-cat: setting the name did not replace the FIFO with a name file"
canary_ok fifo-cat
echo "ok: a FIFO name is refused, the rest of the library stays usable"

echo "== a symlink at catalogs/X to /dev/zero"
fresh zero-cat
ln -s /dev/zero "$L/catalogs/z"
hrun zero-cat.restore restore "$L" z "$T"
refused_about zero-cat.restore "catalogs/z" "symbolic link"
restores_env zero-cat
hrun zero-cat.gc gc "$L"
refused_about zero-cat.gc "catalogs/z" "symbolic link"
hrun zero-cat.catalogs catalogs "$L"
expect_rc zero-cat.catalogs 0
hrun zero-cat.verify verify "$L"
[ "$rc" -ne 0 ] || fail "zero-cat: verify passed"
echo "ok: refused, in bounded memory"

echo "== a symlink at catalogs/X to a valid name file outside"
fresh link-cat
cp "$L/catalogs/env" "$outside/name-file"
canary_before=$(snapshot "$outside")
ln -s "$outside/name-file" "$L/catalogs/y"
hrun link-cat.restore restore "$L" y "$T"
refused_about link-cat.restore "catalogs/y" "symbolic link"
canary_ok link-cat
echo "ok: refused"

echo "== an oversized catalog name file"
fresh big-cat
{ cat "$L/catalogs/env"; head -c 100000 /dev/zero; } >"$L/catalogs/big"
hrun big-cat.restore restore "$L" big "$T"
refused_about big-cat.restore "catalogs/big" "bytes"
echo "ok: refused"

echo "== a FIFO at packs/multi.midx"
fresh fifo-midx
rm -f "$L/packs/multi.midx"
mkfifo "$L/packs/multi.midx"
restores_env fifo-midx
hrun fifo-midx.add pack "$work/src2" --into "$L" --name again
expect_rc fifo-midx.add 0
hrun fifo-midx.verify verify "$L"
hrun fifo-midx.gc gc "$L"
expect_rc fifo-midx.gc 0
restores_env fifo-midx-after-gc
echo "ok: the midx is ignored (lookups use the indexes), nothing hangs"

echo "== a symlink at packs/multi.midx to /dev/zero"
fresh zero-midx
rm -f "$L/packs/multi.midx"
ln -s /dev/zero "$L/packs/multi.midx"
restores_env zero-midx
hrun zero-midx.gc gc "$L"
expect_rc zero-midx.gc 0
echo "ok"

echo "== a FIFO in place of a pack's index, and of a pack"
fresh fifo-idx
idx=$(ls "$L"/packs/pack-*.hidx | sed -n 1p)
rm -f "$idx" && mkfifo "$idx"
fake=$L/packs/pack-$(printf 'ab%.0s' {1..32}).hpak
mkfifo "$fake"
cp "$(ls "$base"/packs/pack-*.hidx | sed -n 1p)" "${fake%.hpak}.hidx"
restores_env fifo-idx
hrun fifo-idx.verify verify "$L"
[ "$rc" -ne 0 ] || fail "fifo-idx: verify passed a library with a FIFO for a pack"
grep -q "FIFO" "$work/fifo-idx.verify.out" "$work/fifo-idx.verify.err" || fail "fifo-idx: verify does not name the FIFO: $(out fifo-idx.verify)"
hrun fifo-idx.gc gc "$L"
hrun fifo-idx.repair repair "$L"
[ -p "$fake" ] || [ ! -e "$fake" ] || fail "fifo-idx: the planted FIFO became something else"
canary_ok fifo-idx
echo "ok: no hang; verify names the FIFO"

echo "== a pack in packs/ that is a symlink to a pack outside"
fresh link-pack
pack=$(ls "$L"/packs/pack-*.hpak | sed -n 1p)
mv "$pack" "$outside/moved.hpak"
ln -s "$outside/moved.hpak" "$pack"
canary_before=$(snapshot "$outside")
hrun link-pack.verify verify "$L"
[ "$rc" -ne 0 ] || fail "link-pack: verify passed a library with a symlinked pack"
grep -q "symbolic link" "$work/link-pack.verify.out" "$work/link-pack.verify.err" || fail "link-pack: verify does not name the symlink: $(out link-pack.verify)"
hrun link-pack.gc gc "$L"
[ -L "$pack" ] || fail "link-pack: gc removed or replaced the planted symlink"
canary_ok link-pack
echo "ok: refused, never followed"

echo "== a dangling symlink at used/NAME"
fresh dangling-used
rm -f "$L/used/env"
ln -s "$outside/created-by-restore" "$L/used/env"
hrun dangling-used.restore restore "$L" env "$T"
expect_rc dangling-used.restore 0
[ ! -e "$outside/created-by-restore" ] || fail "dangling-used: the restore created a file through the symlink"
[ -f "$L/used/env" ] && [ ! -L "$L/used/env" ] || fail "dangling-used: used/env was not replaced by a regular file"
canary_ok dangling-used
echo "ok: nothing created through the link; the last-use file is a regular file again"

echo "== a symlink at used/NAME to a file outside"
fresh link-used
rm -f "$L/used/env"
ln -s "$outside/victim" "$L/used/env"
hrun link-used.restore restore "$L" env "$T"
expect_rc link-used.restore 0
canary_ok link-used
echo "ok: the outside file's time is untouched"

echo "== a FIFO at used/NAME"
fresh fifo-used
rm -f "$L/used/env"
mkfifo "$L/used/env"
hrun fifo-used.restore restore "$L" env "$T"
expect_rc fifo-used.restore 0
[ -f "$L/used/env" ] && [ ! -p "$L/used/env" ] || fail "fifo-used: used/env is still not a regular file"
echo "ok"

echo "== HPAKLIB: a FIFO, a symlink to /dev/zero, a symlink to a marker outside"
fresh fifo-marker
rm "$L/HPAKLIB" && mkfifo "$L/HPAKLIB"
hrun fifo-marker.restore restore "$L" env "$T"
refused_about fifo-marker.restore "HPAKLIB" "FIFO"
hrun fifo-marker.add pack "$work/src2" --into "$L" --name n2
refused_about fifo-marker.add "HPAKLIB" "FIFO"
fresh zero-marker
rm "$L/HPAKLIB" && ln -s /dev/zero "$L/HPAKLIB"
hrun zero-marker.gc gc "$L"
refused_about zero-marker.gc "HPAKLIB" "symbolic link"
fresh link-marker
cp "$L/HPAKLIB" "$outside/marker"
canary_before=$(snapshot "$outside")
rm "$L/HPAKLIB" && ln -s "$outside/marker" "$L/HPAKLIB"
hrun link-marker.restore restore "$L" env "$T"
refused_about link-marker.restore "HPAKLIB" "symbolic link"
canary_ok link-marker
echo "ok: refused"

echo "== lock files: symlinks out of the library, a FIFO"
fresh link-gclock
rm -f "$L/locks/gc.lock"
ln -s "$outside/victim" "$L/locks/gc.lock"
hrun link-gclock.gc gc "$L"
refused_about link-gclock.gc "locks/gc.lock" "symbolic link"
hrun link-gclock.repair repair "$L"
refused_about link-gclock.repair "locks/gc.lock" "symbolic link"
canary_ok link-gclock
fresh dangling-gclock
rm -f "$L/locks/gc.lock"
ln -s "$outside/created-by-gc" "$L/locks/gc.lock"
hrun dangling-gclock.gc gc "$L"
refused_about dangling-gclock.gc "locks/gc.lock" "symbolic link"
[ ! -e "$outside/created-by-gc" ] || fail "dangling-gclock: gc created a file through the symlink"
fresh dangling-publock
rm -f "$L/locks/publish.lock"
ln -s "$outside/created-by-add" "$L/locks/publish.lock"
hrun dangling-publock.add pack "$work/src2" --into "$L" --name n3
refused_about dangling-publock.add "locks/publish.lock" "symbolic link"
[ ! -e "$outside/created-by-add" ] || fail "dangling-publock: the add created a file through the symlink"
[ ! -e "$L/catalogs/n3" ] || fail "dangling-publock: the name was set without the lock"
fresh fifo-publock
rm -f "$L/locks/publish.lock"
mkfifo "$L/locks/publish.lock"
hrun fifo-publock.add pack "$work/src2" --into "$L" --name n4
refused_about fifo-publock.add "locks/publish.lock" "FIFO"
canary_ok locks
echo "ok: refused, nothing written outside"

echo "== id, allowed_signers, signatures/NAME: a FIFO, a symlink to /dev/zero (issue 27)"
need_tool ssh-keygen
ssh-keygen -q -t ed25519 -N '' -C hostile -f "$work/key" || fail "ssh-keygen failed"
echo "h@example.com namespaces=\"hpak\" $(cut -d' ' -f1,2 "$work/key.pub")" >"$work/allowed"
fresh fifo-id
mkfifo "$L/id"
hrun fifo-id.sign sign -k "$work/key" "$L" env
refused_about fifo-id.sign "id" "FIFO"
fresh zero-id
ln -s /dev/zero "$L/id"
hrun zero-id.sign sign -k "$work/key" "$L" env
refused_about zero-id.sign "id" "symbolic link"
for kind in fifo zero; do
  fresh "$kind-policy"
  if [ "$kind" = fifo ]; then mkfifo "$L/allowed_signers"; else ln -s /dev/zero "$L/allowed_signers"; fi
  hrun "$kind-policy.restore" restore "$L" env "$T"
  refused_about "$kind-policy.restore" "allowed_signers" "$([ "$kind" = fifo ] && echo FIFO || echo "symbolic link")"
  hrun "$kind-policy.verify" verify "$L"
  refused_about "$kind-policy.verify" "allowed_signers" ""
done
fresh fifo-sig
mkdir -p "$L/signatures"
mkfifo "$L/signatures/env"
hrun fifo-sig.restore restore --allowed-signers "$work/allowed" "$L" env "$T"
refused_about fifo-sig.restore "signatures/env" "FIFO"
echo "ok: refused, nothing hangs"

echo "== TARGET/.hpak-state: a FIFO, a symlink to /dev/zero, a sparse 3 GB file (issue 27)"
for kind in fifo zero huge; do
  fresh "$kind-state"
  hrun "$kind-state.first" restore "$L" env "$T"
  expect_rc "$kind-state.first" 0
  rm "$T/.hpak-state"
  case $kind in
  fifo) mkfifo "$T/.hpak-state" ;;
  zero) ln -s /dev/zero "$T/.hpak-state" ;;
  huge) truncate -s 3G "$T/.hpak-state" ;;
  esac
  # No state of hpak's: a non-empty target is refused, --force restores it.
  hrun "$kind-state.again" restore "$L" env "$T"
  refused_about "$kind-state.again" "$T" "holds no valid restore state"
  hrun "$kind-state.force" restore --force "$L" env "$T"
  expect_rc "$kind-state.force" 0
  [ -f "$T/.hpak-state" ] && [ ! -L "$T/.hpak-state" ] && [ "$(stat -c %s "$T/.hpak-state")" -lt 1000000 ] ||
    fail "$kind-state: the state was not replaced by one of hpak's"
  diff -r --no-dereference -q -x .hpak-state "$work/src" "$T" >/dev/null || fail "$kind-state: the target differs from env"
done
echo "ok: no hang, bounded memory; --force replaces it"

if need_tool nginx "the remote index cases"; then
  . "$(dirname "$0")/remote_helpers.sh"
  trap 'status=$?; stop_servers; (exit $status); cli_cleanup; exit $status' EXIT
  echo "== LIB/remote/indexes/X.hidx: a FIFO, a symlink to /dev/zero (issue 27)"
  run pub publish "$base" "$work/www/pub"
  expect_rc pub 0
  start_nginx "$work/www" "$work/nginx" || fail "nginx did not start"
  idx=$(sed -n 's/^pack \(pack-[0-9a-f]*\)\.hpak .*/\1.hidx/p' "$work/www/pub/HPAKROOT" | sed -n 1p)
  for kind in fifo zero; do
    R=$work/fetched-$kind
    run "init-$kind" init "$R"
    expect_rc "init-$kind" 0
    mkdir -p "$R/remote/indexes"
    if [ "$kind" = fifo ]; then mkfifo "$R/remote/indexes/$idx"; else ln -s /dev/zero "$R/remote/indexes/$idx"; fi
    hrun "$kind-rindex" fetch "http://127.0.0.1:$nginx_port/pub" env --into "$R"
    expect_rc "$kind-rindex" 0
    [ -f "$R/remote/indexes/$idx" ] && [ ! -L "$R/remote/indexes/$idx" ] || fail "$kind-rindex: the cached index was not replaced"
  done
  echo "ok: ignored and replaced"
fi

echo "$test_name: all passed ($n hostile libraries)"
