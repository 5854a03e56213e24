#!/usr/bin/env bash
# `hpak sign` with a passphrase-protected key (issue 12, item 2; man/hpak-sign.1):
# a real `ssh-keygen -t ed25519 -N PASSPHRASE` key loaded into a real ssh-agent
# (ssh-add through SSH_ASKPASS, no terminal) signs packs and library names
# through the agent protocol — hpak itself talks to $SSH_AUTH_SOCK (a fake
# ssh-keygen first on PATH proves it is not run) — and `ssh-keygen -Y verify`
# accepts the result, as do `hpak verify` and a restore under the policy.
# Without a terminal, a key no agent holds is refused with one line (no agent;
# an agent without the key), and no signature is written.
. "$(dirname "$0")/cli_lib.sh" "$@"

for tool in ssh-keygen ssh-agent ssh-add setsid; do
  need_tool "$tool"
done
real_keygen=$(command -v ssh-keygen)
export XDG_STATE_HOME=$work/state XDG_CACHE_HOME=$work/cache
agent_pid=
trap 'st=$?; [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null; (exit $st); cli_cleanup' EXIT

key=$work/locked
"$real_keygen" -q -t ed25519 -N 'correct horse battery' -C locked@example.com -f "$key" || fail "ssh-keygen failed"
grep -q "aes256-ctr\|bcrypt" <(base64 -d <(sed '1d;$d' "$key") 2>/dev/null | strings) || fail "the key is not passphrase-protected"
fp=$("$real_keygen" -l -f "$key.pub" | cut -d' ' -f2)
fpre=$(sed 's/[+.]/\\&/g' <<<"$fp") # as an extended regex (base64 has '+')
echo "locked@example.com $(cut -d' ' -f1,2 "$key.pub")" >"$work/allowed_signers"

make_tree "$work/src" 10
run pack pack "$work/src" -o "$work/env.hpak"
expect_rc pack 0

# A fake ssh-keygen first on PATH: hpak must not need it to sign.
mkdir -p "$work/fakebin"
printf '#!/bin/sh\ntouch "%s/fake-keygen-ran"\nexit 1\n' "$work" >"$work/fakebin/ssh-keygen"
chmod +x "$work/fakebin/ssh-keygen"
# nosign NAME ARGS...: hpak without a controlling terminal, stdin closed.
nosign() {
  local name=$1
  shift
  rc=0
  PATH="$work/fakebin:$PATH" setsid -w "$hpak" "$@" >"$work/$name.out" 2>"$work/$name.err" </dev/null || rc=$?
}

# --- no agent ------------------------------------------------------------
unset SSH_AUTH_SOCK SSH_AGENT_PID
nosign noagent sign -k "$key" "$work/env.hpak"
refused noagent "key '$key' \\($fpre\\) is passphrase-protected and no ssh-agent is running \\(SSH_AUTH_SOCK is not set\\): load it with 'ssh-add $key'"
[ ! -e "$work/env.hpak.sig" ] || fail "a signature was written without the key"

# --- an agent that does not hold the key -----------------------------------
eval "$(ssh-agent -s -a "$work/agent.sock")" >/dev/null || fail "ssh-agent did not start"
agent_pid=$SSH_AGENT_PID
export SSH_AUTH_SOCK
nosign notheld sign -k "$key" "$work/env.hpak"
refused notheld "is passphrase-protected and the ssh-agent does not hold it"
[ ! -e "$work/env.hpak.sig" ] || fail "a signature was written without the key"

# --- the key loaded into the agent (passphrase through SSH_ASKPASS) ---------
printf '#!/bin/sh\necho "correct horse battery"\n' >"$work/askpass"
chmod +x "$work/askpass"
SSH_ASKPASS=$work/askpass SSH_ASKPASS_REQUIRE=force DISPLAY=:0 setsid -w ssh-add "$key" </dev/null >"$work/add.out" 2>&1 ||
  fail "ssh-add failed: $(cat "$work/add.out")"
grep -q "$fp" <<<"$(ssh-add -l)" || fail "the agent does not list the key"

nosign signed sign -k "$key" "$work/env.hpak"
expect_rc signed 0
grep -q "with key $fp: wrote '$work/env.hpak.sig'" "$work/signed.out" || fail "sign output: $(out signed)"
[ ! -e "$work/fake-keygen-ran" ] || fail "hpak ran ssh-keygen instead of asking the agent"
"$real_keygen" -Y verify -f "$work/allowed_signers" -I locked@example.com -n hpak -s "$work/env.hpak.sig" <"$work/env.hpak" \
  >"$work/skv.out" 2>&1 || fail "ssh-keygen -Y verify rejects the agent-made signature: $(cat "$work/skv.out")"
grep -q "Good \"hpak\" signature for locked@example.com" "$work/skv.out" || fail "ssh-keygen: $(cat "$work/skv.out")"
run v verify --allowed-signers "$work/allowed_signers" "$work/env.hpak"
expect_rc v 0
grep -q "good signature: '$work/env.hpak.sig' by 'locked@example.com'" "$work/v.out" || fail "hpak verify: $(out v)"

# A library name signed through the agent, then restored under the policy.
lib=$work/lib
run add pack "$work/src" --into "$lib" --name env
expect_rc add 0
nosign signname sign -k "$key" "$lib" env
expect_rc signname 0
[ ! -e "$work/fake-keygen-ran" ] || fail "hpak ran ssh-keygen to sign the name"
run r restore --allowed-signers "$work/allowed_signers" "$lib" env "$work/t"
expect_rc r 0
sed -n '/^-----BEGIN SSH SIGNATURE-----$/,$p' "$lib/signatures/env" >"$work/name.sig"
sed '/^-----BEGIN SSH SIGNATURE-----$/,$d' "$lib/signatures/env" >"$work/name.txt"
"$real_keygen" -Y verify -f "$work/allowed_signers" -I locked@example.com -n hpak -s "$work/name.sig" <"$work/name.txt" \
  >"$work/skn.out" 2>&1 || fail "ssh-keygen -Y verify rejects the agent-signed name: $(cat "$work/skn.out")"

# Removed from the agent: refused again, in one line.
ssh-add -D >/dev/null 2>&1 || fail "ssh-add -D"
rm -f "$work/env.hpak.sig"
nosign removed sign -k "$key" "$work/env.hpak"
refused removed "the ssh-agent does not hold it"
echo "ok: $test_name"
