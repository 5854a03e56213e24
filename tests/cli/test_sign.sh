#!/usr/bin/env bash
# Signatures checkable with openssh-client (issue 12): `hpak sign` writes SSHSIG
# that `ssh-keygen -Y verify` accepts, hpak accepts what `ssh-keygen -Y sign`
# writes, and restores under a signature policy refuse unsigned, tampered,
# wrong-namespace, unknown-key, expired and rolled-back names with one line
# naming the signer or key. Keys are real: `ssh-keygen -t ed25519 -N ''`.
. "$(dirname "$0")/cli_lib.sh" "$@"

need_tool ssh-keygen
export XDG_STATE_HOME=$work/state XDG_CACHE_HOME=$work/cache

keygen() { ssh-keygen -q -t ed25519 -N '' -C "$1" -f "$work/$1" || fail "ssh-keygen failed"; }
keygen alice
keygen bob
keygen eve
fp() { ssh-keygen -l -f "$work/$1.pub" | cut -d' ' -f2; }
fpre() { fp "$1" | sed 's/[+.]/\\&/g'; } # as an extended regex (base64 has '+')
keyfield() { cut -d' ' -f1,2 "$work/$1.pub"; }
allowed=$work/allowed_signers
{
  echo "alice@example.com namespaces=\"hpak\" $(keyfield alice)"
  echo "bob@example.com $(keyfield bob)"
} >"$allowed"
echo "alice@example.com valid-after=\"20200101Z\",valid-before=\"20210101Z\" $(keyfield alice)" >"$work/expired_signers"

# expect_refusal NAME PATTERN: exit 1 or 2, stderr or stdout naming the reason.
expect_failure() {
  no_crash "$1"
  [ "$rc" -ne 0 ] || fail "$1: accepted; stdout: $(out "$1")"
  grep -qE -- "$2" "$work/$1.out" "$work/$1.err" || fail "$1: no /$2/ in: $(out "$1") $(err "$1")"
}

make_tree "$work/src" 30
run pack pack "$work/src" -o "$work/env.hpak"
expect_rc pack 0

# --- standalone packs ----------------------------------------------------
run sign sign -k "$work/alice" "$work/env.hpak"
expect_rc sign 0
grep -q "with key $(fp alice): wrote '$work/env.hpak.sig'" "$work/sign.out" || fail "sign output: $(out sign)"
grep -qx -- '-----BEGIN SSH SIGNATURE-----' <<<"$(head -n 1 "$work/env.hpak.sig")" || fail "not an armored SSH signature"
awk 'NR>1 && !/^-----/ && length($0) > 70 { bad=1 } END { exit bad }' "$work/env.hpak.sig" || fail "armor lines longer than 70 columns"
ssh-keygen -Y verify -f "$allowed" -I alice@example.com -n hpak -s "$work/env.hpak.sig" <"$work/env.hpak" >"$work/sk.out" 2>&1 ||
  fail "ssh-keygen rejects hpak's signature: $(cat "$work/sk.out")"
run v1 verify --allowed-signers "$allowed" "$work/env.hpak"
expect_rc v1 0
grep -q "good signature: '$work/env.hpak.sig' by 'alice@example.com' ($(fp alice))" "$work/v1.out" || fail "v1: $(out v1)"
run v1j verify --json --allowed-signers "$allowed" "$work/env.hpak"
expect_rc v1j 0
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))[0]["signature"]; sys.exit(0 if d["ok"] and "alice" in d["signer"] else 1)' "$work/v1j.out" ||
  fail "v1j: $(out v1j)"

# Made by ssh-keygen, checked by hpak.
cp "$work/env.hpak" "$work/env2.hpak"
ssh-keygen -q -Y sign -f "$work/bob" -n hpak "$work/env2.hpak" || fail "ssh-keygen -Y sign failed"
run v2 verify --allowed-signers "$allowed" "$work/env2.hpak"
expect_rc v2 0
grep -q "by 'bob@example.com'" "$work/v2.out" || fail "v2: $(out v2)"

# Refusals: missing, tampered, untrusted key, wrong namespace, expired.
cp "$work/env.hpak" "$work/nosig.hpak"
run missing verify --allowed-signers "$allowed" "$work/nosig.hpak"
expect_failure missing "BAD signature: .*no signature '$work/nosig.hpak.sig'"
cp "$work/env.hpak" "$work/tampered.hpak"
cp "$work/env.hpak.sig" "$work/tampered.hpak.sig"
printf 'x' >>"$work/tampered.hpak"
run tampered verify --allowed-signers "$allowed" "$work/tampered.hpak"
expect_failure tampered "signature by key $(fpre alice) does not match the data"
cp "$work/env.hpak" "$work/eve.hpak"
ssh-keygen -q -Y sign -f "$work/eve" -n hpak "$work/eve.hpak"
run untrusted verify --allowed-signers "$allowed" "$work/eve.hpak"
expect_failure untrusted "key $(fpre eve) is not an allowed signer"
cp "$work/env.hpak" "$work/ns.hpak"
ssh-keygen -q -Y sign -f "$work/bob" -n file "$work/ns.hpak"
run ns verify --allowed-signers "$allowed" "$work/ns.hpak"
expect_failure ns "is for namespace 'file', not 'hpak'"
run expired verify --allowed-signers "$work/expired_signers" "$work/env.hpak"
expect_failure expired "signer 'alice@example.com' \\($(fpre alice)\\) expired on 2021-01-01"
run nofile verify --allowed-signers "$work/none" "$work/env.hpak"
expect_rc nofile 2

# --- library names -------------------------------------------------------
lib=$work/lib
run add pack "$work/src" --into "$lib" --name env
expect_rc add 0
run signname sign -k "$work/alice" "$lib" env
expect_rc signname 0
grep -q "generation 1" "$work/signname.out" || fail "first signature is not generation 1: $(out signname)"
sigfile=$lib/signatures/env
[ -f "$sigfile" ] || fail "no $sigfile"
# The statement and its signature, checked with nothing but ssh-keygen.
sed '/^-----BEGIN SSH SIGNATURE-----$/,$d' "$sigfile" >"$work/stmt"
sed -n '/^-----BEGIN SSH SIGNATURE-----$/,$p' "$sigfile" >"$work/stmt.sig"
ssh-keygen -Y verify -f "$allowed" -I alice@example.com -n hpak -s "$work/stmt.sig" <"$work/stmt" >"$work/sk2.out" 2>&1 ||
  fail "ssh-keygen rejects the name signature: $(cat "$work/sk2.out")"
grep -qx "catalog $(sed -n 2p "$lib/catalogs/env")" "$work/stmt" || fail "the statement does not name the catalog digest"
grep -qx "library $(cat "$lib/id")" "$work/stmt" || fail "the statement does not name the library id"
grep -qx "name env" "$work/stmt" || fail "the statement does not name the name"

run r1 restore --allowed-signers "$allowed" "$lib" env "$work/t1"
expect_rc r1 0
# The generations seen live in a directory no one else may write: one others
# may write is refused in one line naming it and why, nothing restored.
chmod o+w "$XDG_STATE_HOME/hpak/generations"
run openstate restore --allowed-signers "$allowed" "$lib" env "$work/t1o"
expect_rc openstate 2
one_line_error openstate "no private directory for the generations seen \\('.*/hpak/generations' is not private: group or others may write it; set XDG_STATE_HOME\\)"
[ ! -e "$work/t1o" ] || fail "openstate created its target"
chmod o-w "$XDG_STATE_HOME/hpak/generations"
run vl verify --allowed-signers "$allowed" "$lib"
expect_rc vl 0
grep -q "env: good, generation 1, signed by 'alice@example.com' ($(fp alice))" "$work/vl.out" || fail "vl: $(out vl)"
run vlj verify --json --allowed-signers "$allowed" "$lib"
expect_rc vlj 0
python3 -c '
import json,sys
s=json.load(open(sys.argv[1]))[0]["signatures"]
assert s[0]["name"]=="env" and s[0]["signed"] and s[0]["ok"] and s[0]["generation"]==1, s
' "$work/vlj.out" || fail "vlj: $(out vlj)"
# Without allowed signers: the state is reported, not judged.
run vl0 verify "$lib"
expect_rc vl0 0
grep -q "env: signed by key $(fp alice), generation 1 (not checked" "$work/vl0.out" || fail "vl0: $(out vl0)"

# Unsigned name.
mkdir "$work/src2"
echo other >"$work/src2/f"
run add2 pack "$work/src2" --into "$lib" --name other
expect_rc add2 0
run unsigned restore --allowed-signers "$allowed" "$lib" other "$work/t2"
refused unsigned "refusing catalog 'other' of library '$lib': it is not signed"
[ -e "$work/t2/f" ] && fail "an unsigned name was restored"
run vlbad verify --allowed-signers "$allowed" "$lib"
expect_rc vlbad 1
grep -q "other: unsigned" "$work/vlbad.out" || fail "vlbad: $(out vlbad)"

# Name pointed at another catalog after signing.
cp "$lib/catalogs/env" "$work/env.name"
cp "$lib/catalogs/other" "$lib/catalogs/env"
run moved restore --allowed-signers "$allowed" "$lib" env "$work/t3"
refused moved "refusing catalog 'env'.*changed after signing.*signed by 'alice@example.com' \\($(fpre alice)\\)"
cp "$work/env.name" "$lib/catalogs/env"

# Tampered statement (a higher generation written in by hand).
cp "$sigfile" "$work/env.sig.good"
sed -i 's/^generation 1$/generation 9/' "$sigfile"
run edited restore --allowed-signers "$allowed" "$lib" env "$work/t4"
refused edited "signature by key $(fpre alice) does not match the data"
cp "$work/env.sig.good" "$sigfile"

# Wrong namespace and unknown key: statements signed by ssh-keygen itself.
sign_stmt() { # KEY NAMESPACE: re-signs the current statement into the signature file
  cp "$work/stmt" "$work/s2"
  rm -f "$work/s2.sig"
  ssh-keygen -q -Y sign -f "$work/$1" -n "$2" "$work/s2" || fail "ssh-keygen sign"
  cat "$work/s2" "$work/s2.sig" >"$sigfile"
}
sign_stmt bob file
run wrongns restore --allowed-signers "$allowed" "$lib" env "$work/t5"
refused wrongns "refusing catalog 'env'.*signature by key $(fpre bob) is for namespace 'file', not 'hpak'"
sign_stmt eve hpak
run unknown restore --allowed-signers "$allowed" "$lib" env "$work/t6"
refused unknown "refusing catalog 'env'.*key $(fpre eve) is not an allowed signer"
sign_stmt bob hpak
run bobok restore --allowed-signers "$allowed" "$lib" env "$work/t7"
expect_rc bobok 0
cp "$work/env.sig.good" "$sigfile"
run expiredname restore --allowed-signers "$work/expired_signers" "$lib" env "$work/t8"
refused expiredname "signer 'alice@example.com' \\($(fpre alice)\\) expired on 2021-01-01"

# Rollback: a newer signed version is restored, then the old name and its
# (valid) signature are put back.
cp "$lib/catalogs/env" "$work/env.name.g1"
cp "$sigfile" "$work/env.sig.g1"
echo "fixed" >"$work/src/SECURITY-FIX"
run add3 pack "$work/src" --into "$lib" --name env
expect_rc add3 0
run sign2 sign -k "$work/alice" "$lib" env
expect_rc sign2 0
grep -q "generation 2" "$work/sign2.out" || fail "second signature is not generation 2: $(out sign2)"
run r2 restore --allowed-signers "$allowed" "$lib" env "$work/t9"
expect_rc r2 0
cp "$work/env.name.g1" "$lib/catalogs/env"
cp "$work/env.sig.g1" "$sigfile"
run rollback restore --allowed-signers "$allowed" "$lib" env "$work/t10"
refused rollback "refusing catalog 'env'.*generation 1 .*by 'alice@example.com' \\($(fpre alice)\\).*older than generation 2 seen before"
# Another user's state is not ours: a fresh state dir accepts generation 1.
XDG_STATE_HOME=$work/state-other run fresh restore --allowed-signers "$allowed" "$lib" env "$work/t11"
expect_rc fresh 0
[ "$(stat -c %a "$XDG_STATE_HOME/hpak/generations")" = 700 ] || fail "the generations directory is not private"

# The library's own policy (hpak init --require-signatures).
lib2=$work/lib2
run init2 init --shared --require-signatures "$allowed" "$lib2"
expect_rc init2 0
run add4 pack "$work/src2" --into "$lib2" --name other
expect_rc add4 0
run policy restore "$lib2" other "$work/t12"
refused policy "refusing catalog 'other' of library '$lib2': it is not signed"
run sign3 sign -k "$work/bob" "$lib2" other
expect_rc sign3 0
run policyok restore "$lib2" other "$work/t13"
expect_rc policyok 0
[ "$(cat "$work/t13/f")" = other ] || fail "policyok restored the wrong bytes"
echo "ok: $test_name"
