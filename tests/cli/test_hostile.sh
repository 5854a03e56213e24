#!/usr/bin/env bash
# The hostile corpus (tests/data/hostile, listed in its README): for every
# pack, `hpak verify`, `hpak ls` and `hpak unpack` (into a fresh target in a
# sandbox) must give the exit status the README states, refuse with one
# 'hpak: error:' line, never crash or trip a sanitizer, and never create or
# change anything outside the target (a canary dir and the whole sandbox are
# compared before and after, and the absolute paths the attacks aim at are
# checked). If HPAK_MAKE_HOSTILE names the generator, the corpus must be what
# it generates.
. "$(dirname "$0")/cli_lib.sh" "$@"

corpus=$src_root/tests/data/hostile
[ -f "$corpus/README" ] || fail "no corpus at $corpus"

# Absolute paths the corpus aims at; none may exist before or after.
aimed=(/tmp/hpak-hostile-absolute /etc/hpak-hostile-canary /tmp/hpak-hostile-escape)
for p in "${aimed[@]}"; do
  [ ! -e "$p" ] || fail "$p exists before the test; remove it"
done

sandbox=$work/sandbox
mkdir -p "$sandbox/canary" "$sandbox/targets" "$sandbox/packs"
echo "canary" >"$sandbox/canary/keep"
cp -p "$corpus"/*.hpak "$corpus"/*.hidx "$sandbox/packs/"
hello_sum=$(printf 'hello from a hostile pack\n' | sha256sum | cut -d' ' -f1)
pwned_sum=$(printf 'pwned: this file must never be written\n' | sha256sum | cut -d' ' -f1)

cases=0
while read -r file expect_verify expect_ls expect_unpack _; do
  case "$file" in *.hpak) ;; *) continue ;; esac
  name=${file%.hpak}
  pack=$sandbox/packs/$file
  target=$sandbox/targets/$name
  ev=${expect_verify#verify=}
  el=${expect_ls#ls=}
  eu=${expect_unpack#unpack=}
  cases=$((cases + 1))

  run "$name.verify" verify "$pack"
  expect_rc "$name.verify" "$ev"
  case "$ev" in
  1) grep -q "^BAD: " "$work/$name.verify.out" || fail "$name: verify found damage but printed no BAD report: $(out "$name.verify")" ;;
  2) one_line_error "$name.verify" ;;
  esac
  if [ "$ev" != 2 ]; then
    run "$name.vjson" verify --json "$pack"
    expect_rc "$name.vjson" "$ev"
    python3 -m json.tool "$work/$name.vjson.out" >/dev/null || fail "$name: verify --json is not JSON: $(out "$name.vjson")"
  fi

  run "$name.ls" ls "$pack"
  expect_rc "$name.ls" "$el"
  [ "$el" = 0 ] || one_line_error "$name.ls"

  mkdir "$target" # an empty target (creating it here keeps its parent's mtime out of the comparison)
  before=$(snapshot "$sandbox" "$target")
  run "$name.unpack" unpack -q "$pack" "$target"
  expect_rc "$name.unpack" "$eu"
  after=$(snapshot "$sandbox" "$target")
  [ "$before" = "$after" ] || fail "$name: unpack changed something outside its target: $(diff <(echo "$before") <(echo "$after") | sed -n 1,10p)"
  for p in "${aimed[@]}"; do
    [ ! -e "$p" ] && [ ! -L "$p" ] || fail "$name: unpack created $p"
  done
  if [ "$eu" = 0 ]; then
    [ ! -s "$work/$name.unpack.err" ] || fail "$name: unpack succeeded but wrote to stderr: $(err "$name.unpack")"
    # The restored tree is exactly what ls lists, with the right bytes.
    run "$name.lsj" ls --json "$pack"
    expect_rc "$name.lsj" 0
    python3 - "$work/$name.lsj.out" "$target" <<'PY' || fail "$name: the restored tree does not match the catalog"
import hashlib, json, os, sys
entries = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8", errors="surrogateescape")]
root = sys.argv[2]
found = []
for dp, dn, fn in os.walk(root):
    for n in dn + fn:
        found.append(os.path.relpath(os.path.join(dp, n), root))
assert sorted(found) == sorted(e["path"] for e in entries), (found, entries)
for e in entries:
    if e["type"] == "file":
        with open(os.path.join(root, e["path"]), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == e["digest"], e
PY
  else
    one_line_error "$name.unpack"
    # A refused unpack leaves no partial file: whatever is there is a whole object.
    if [ -d "$target" ]; then
      while IFS= read -r -d '' f; do
        sum=$(sha256sum "$f" | cut -d' ' -f1)
        [ "$sum" = "$hello_sum" ] || [ "$sum" = "$pwned_sum" ] || fail "$name: unpack left a partial or wrong file $f"
      done < <(find "$target" -type f -print0)
    fi
  fi
  [ "$(cat "$sandbox/canary/keep")" = canary ] || fail "$name: the canary changed"
  [ "$(find "$sandbox/canary" | wc -l)" -eq 2 ] || fail "$name: something was created in the canary dir: $(find "$sandbox/canary")"
done <"$corpus/README"
[ "$cases" -ge 40 ] || fail "only $cases cases in $corpus/README"

# Every file of the corpus is listed, and every listed file exists.
for f in "$corpus"/*; do
  b=$(basename "$f")
  [ "$b" = README ] && continue
  grep -q "^$b " "$corpus/README" || fail "$b is not listed in the README"
done
while read -r file _; do
  case "$file" in *.hpak | *.hidx) [ -f "$corpus/$file" ] || fail "README lists $file, which is missing" ;; esac
done <"$corpus/README"

# The corpus is what the generator makes (regenerate and commit when not).
if [ -n "${HPAK_MAKE_HOSTILE:-}" ] && [ -x "$HPAK_MAKE_HOSTILE" ]; then
  "$HPAK_MAKE_HOSTILE" "$work/regen" >/dev/null || fail "hpak_make_hostile failed"
  diff -r "$corpus" "$work/regen" >"$work/regen.diff" 2>&1 ||
    fail "tests/data/hostile is not what tests/tools/make_hostile.cpp generates; run 'hpak_make_hostile tests/data/hostile' and commit: $(head -5 "$work/regen.diff")"
fi
echo "ok: $test_name: $cases hostile packs refused or restored safely"
