#!/usr/bin/env bash
# The library: pack --into (only new objects written, no pack for a known
# tree, atomic name replacement), catalogs (list, --json, rm), concurrent adds
# of different environments, and `hpak verify LIB` (every pack, every catalog,
# bad objects named with every catalog:path they break, intact copies noted).
# ctest runs: bash test_library.sh <hpak-binary> <source-root>.
source "$(dirname "$0")/library_helpers.sh" "$@"

lib=$W/lib
env=$W/src/env
mkdir -p "$W/src"
gen_env "$env" 2000 1
packs() { find "$lib/packs" -name 'pack-*.hpak' | wc -l; }

# ---- first environment
section "pack --into"
"$hpak" -q pack "$env" --into "$lib" --name env-a --json >"$W/a1.json" 2>"$W/err"
check "pack --into creates the library and adds env-a" test $? -eq 0 -a -f "$lib/HPAKLIB"
check "pack --into --json is valid JSON" valid_json "$W/a1.json"
a_written=$(json "$W/a1.json" objects_written)
a_unique=$(json "$W/a1.json" unique_objects)
a_bytes=$(json "$W/a1.json" pack_bytes)
a_files=$(json "$W/a1.json" files)
a_digest=$(json "$W/a1.json" catalog_digest)
expect_eq "first add writes every distinct object" "$a_unique" "$a_written"
a_pack=$lib/packs/$(json "$W/a1.json" pack)
expect_eq "pack_bytes is the size of the published pack" "$a_bytes" "$(stat -c %s "$a_pack" 2>/dev/null)"
check "the pack's index is published beside it" test -f "${a_pack%.hpak}.hidx"

# ---- the same tree again: nothing new, no pack
"$hpak" -q pack "$env" --into "$lib" --name env-a --json >"$W/a2.json" 2>"$W/err"
expect_eq "same env added twice: no objects written" 0 "$(json "$W/a2.json" objects_written)"
expect_eq "same env added twice: no pack named" "" "$(json "$W/a2.json" pack)"
expect_eq "same env added twice: still one pack file" 1 "$(packs)"
expect_eq "same env added twice: same catalog digest" "$a_digest" "$(json "$W/a2.json" catalog_digest)"
check "no temp files left in tmp/" test -z "$(ls -A "$lib/tmp")"

# ---- a second environment sharing ~90% of the files: change 10% in place,
# add 20 files, remove 10 (each changed file gets unique bytes: one new object).
cp -a "$env" "$W/env-a-copy"
mapfile -d '' files < <(find "$env" -type f -links 1 -print0 | sort -z)
changed=0
for ((i = 0; i < ${#files[@]}; i += 10)); do
  printf '\n# changed for env-b: %s\n' "${files[i]}" >>"${files[i]}"
  changed=$((changed + 1))
done
for i in $(seq 1 20); do printf 'new file %d of env-b\n' "$i" >"$env/lib/new-$i.txt"; done
removed=0
for ((i = 5; i < ${#files[@]} && removed < 10; i += 97)); do
  [ $((i % 10)) -eq 0 ] && continue # changed above: its new object would go too
  rm -f "${files[i]}" && removed=$((removed + 1))
done
"$hpak" -q pack "$env" --into "$lib" --name env-b --json >"$W/b.json" 2>"$W/err"
check "env-b added" test $? -eq 0
b_written=$(json "$W/b.json" objects_written)
b_bytes=$(json "$W/b.json" pack_bytes)
expect_eq "env-b writes only its new objects" $((changed + 20)) "$b_written"
expect_eq "env-b: the rest is already present" $(($(json "$W/b.json" unique_objects) - b_written)) "$(json "$W/b.json" objects_present)"
check "env-b's pack ($b_bytes B) is <= 15% of env-a's ($a_bytes B)" test $((b_bytes * 100)) -le $((a_bytes * 15))
expect_eq "two packs now" 2 "$(packs)"
b_digest=$(json "$W/b.json" catalog_digest)

# ---- catalogs: names, files, bytes, last use
section "init --level"
L0=$W/lib-level
"$hpak" init "$L0" --level 0 >"$W/i0.out" 2>&1
check "init --level 0 creates a library" test $? -eq 0
check "... says its level" grep -q "(level 0)" "$W/i0.out"
check "... and records it in the marker" grep -qx "level 0" "$L0/HPAKLIB"
"$hpak" -q pack "$env" --into "$L0" --name e0 --json >"$W/l0.json" 2>&1
check "pack --into a level-0 library stores objects (catalogs too) uncompressed" test -z "$(for p in "$L0"/packs/pack-*.hpak; do "$hpak" index "$p" --show --no-write; done | awk '$3 != "raw"')"
mkdir -p "$W/new3"
for i in 1 2 3 4 5; do for _ in $(seq 2000); do echo "new line $i of a compressible file"; done >"$W/new3/f$i.txt"; done
"$hpak" -q pack "$W/new3" --into "$L0" --name e3 -l 3 --json >"$W/l3.json" 2>&1
check "... unless -l is given" test "$(json "$W/l3.json" stored_written)" -lt "$(json "$W/l3.json" raw_written)"
"$hpak" init "$L0" --shared >/dev/null 2>&1
check "init --shared on it keeps the level" grep -qx "level 0" "$L0/HPAKLIB"
check "... and marks it shared" grep -qx "shared" "$L0/HPAKLIB"
"$hpak" init "$L0" --level 5 >/dev/null 2>&1
check "init --level 5 changes the level" grep -qx "level 5" "$L0/HPAKLIB"
check "... and keeps it shared" grep -qx "shared" "$L0/HPAKLIB"
"$hpak" init "$L0" >/dev/null 2>&1
check "a plain init changes nothing" grep -qx "level 5" "$L0/HPAKLIB"
printf 'hpak-library 1\nlevel 42\n' >"$W/bad-level/HPAKLIB" 2>/dev/null || { mkdir -p "$W/bad-level"; printf 'hpak-library 1\nlevel 42\n' >"$W/bad-level/HPAKLIB"; }
"$hpak" catalogs "$W/bad-level" >"$W/bl.out" 2>&1
expect_eq "a marker with an impossible level is refused" 2 $?
check "... saying so" grep -q "level 42" "$W/bl.out"
rm -rf "$L0" "$W/bad-level"

section "catalogs"
"$hpak" catalogs "$lib" >"$W/cat.txt" 2>&1
check "catalogs lists env-a and env-b" grep -q '^env-a .* files' "$W/cat.txt"
check "catalogs lists env-b" grep -q '^env-b .* files' "$W/cat.txt"
"$hpak" catalogs "$lib" --json >"$W/cat.json" 2>&1
check "catalogs --json is valid JSON (one object per line)" valid_json "$W/cat.json" lines
now=$(date +%s)
python3 - "$W/cat.json" "$a_files" "$(json "$W/a1.json" file_bytes)" "$a_digest" "$b_digest" "$now" <<'EOF' >"$W/cat.check" 2>&1
import json, sys
path, files, nbytes, da, db, now = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
cats = {c["name"]: c for c in map(json.loads, open(path).read().splitlines())}
assert sorted(cats) == ["env-a", "env-b"], cats.keys()
a, b = cats["env-a"], cats["env-b"]
assert a["files"] == files and a["bytes"] == nbytes, a
assert a["digest"] == da and b["digest"] == db, (a, b)
assert b["files"] == files + 20 - 10, b
for c in (a, b):
    assert now - 600 <= c["last_used"] <= now + 5, c
    assert "error" not in c, c
EOF
check "catalogs --json: names, files, bytes, digests, last use ($(tail -1 "$W/cat.check"))" test ! -s "$W/cat.check"

touch -d '2001-01-01' "$lib/used/env-a"
"$hpak" -q restore "$lib" env-a "$W/t-used" >/dev/null 2>&1
used=$("$hpak" catalogs "$lib" --json | python3 -c 'import json,sys; print([c for c in map(json.loads, sys.stdin) if c["name"]=="env-a"][0]["last_used"])')
check "a restore updates the catalog's last use" test "$used" -ge $((now - 5))

# ---- names are replaced atomically: a reader never sees a missing or partial name
section "atomic names"
mkdir -p "$W/small"
for i in 1 2 3; do echo "small $i" >"$W/small/f$i"; done
"$hpak" -q pack "$W/small" --into "$lib" --name flip --json >"$W/s.json" 2>&1
s_digest=$(json "$W/s.json" catalog_digest)
(
  for i in $(seq 1 6); do
    "$hpak" -q pack "$env" --into "$lib" --name flip >/dev/null 2>&1 || echo "writer failed" >>"$W/flip.err"
    "$hpak" -q pack "$W/small" --into "$lib" --name flip >/dev/null 2>&1 || echo "writer failed" >>"$W/flip.err"
  done
  touch "$W/flip.done"
) &
bg_pids+=($!)
seen_small=0 seen_env=0 bad=0 reads=0
want_small=$(printf 'hpak-catalog 1\n%s' "$s_digest")
while [ ! -e "$W/flip.done" ] && [ $reads -lt 20000 ]; do
  content=$(cat "$lib/catalogs/flip" 2>/dev/null) || { bad=$((bad + 1)); content=missing; }
  reads=$((reads + 1))
  if [ "$content" = "$want_small" ]; then
    seen_small=1
  elif [[ $content =~ ^hpak-catalog\ 1$'\n'[0-9a-f]{64}$ ]]; then
    seen_env=1
  else
    bad=$((bad + 1))
    echo "bad read: $content" | sed -n 1,3p
  fi
done
wait "${bg_pids[@]}" 2>/dev/null
bg_pids=()
expect_eq "a name being replaced is always readable and whole ($reads reads)" 0 "$bad"
check "the reader saw both versions of the name" test $seen_small -eq 1 -a $seen_env -eq 1
check "the writers all succeeded" test ! -e "$W/flip.err"
"$hpak" catalogs "$lib" --json >"$W/cat2.json" 2>&1
check "catalogs reads every name after the flips" test "$(grep -c '"error"' "$W/cat2.json")" -eq 0

# ---- catalogs rm
section "catalogs rm"
"$hpak" catalogs rm "$lib" flip >"$W/rm.out" 2>&1
check "catalogs rm removes a name" test $? -eq 0 -a ! -e "$lib/catalogs/flip" -a ! -e "$lib/used/flip"
check "catalogs no longer lists it" test -z "$("$hpak" catalogs "$lib" | grep '^flip ')"
"$hpak" catalogs rm "$lib" no-such-name >"$W/rm2.out" 2>&1
rc=$?
expect_eq "catalogs rm of a missing name exits 2" 2 "$rc"
check "... and names it" grep -q "no-such-name" "$W/rm2.out"
"$hpak" -q restore "$lib" flip "$W/t-flip" >"$W/rf.out" 2>&1
expect_eq "restoring a removed name fails" 2 $?

# ---- hpak verify LIB: intact
section "verify LIB"
"$hpak" -q verify "$lib" >"$W/v.out" 2>&1
rc=$?
expect_eq "verify LIB of an intact library exits 0" 0 "$rc"
check "verify LIB says ok" grep -q "^ok: library" "$W/v.out"
"$hpak" -q verify "$lib" --json >"$W/v.json" 2>&1
check "verify LIB --json is valid JSON" valid_json "$W/v.json"
check "verify LIB --json: ok, every pack, every catalog" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))[0]
assert r["ok"] is True and r["packs"] == int(sys.argv[2]) and r["catalogs"] == 2 and r["broken_catalogs"] == [], r
assert r["objects"] >= int(sys.argv[3]), r
' "$W/v.json" "$(packs)" "$a_unique"

# ---- concurrent adds of different environments into one (new) library
section "concurrent adds"
lib2=$W/lib2
for s in 1 2 3; do gen_env "$W/c/env$s" 800 $((s + 10)); done
for s in 1 2 3; do
  "$hpak" -q pack "$W/c/env$s" --into "$lib2" --name "c$s" >"$W/c$s.out" 2>&1 &
  bg_pids+=($!)
done
crc=0
for p in "${bg_pids[@]}"; do wait "$p" || crc=1; done
bg_pids=()
expect_eq "three concurrent pack --into of different envs all succeed" 0 "$crc"
expect_eq "the library lists the three" "c1 c2 c3" "$("$hpak" catalogs "$lib2" | awk '{print $1}' | tr '\n' ' ' | sed 's/ $//')"
"$hpak" -q verify "$lib2" >"$W/v2.out" 2>&1
expect_eq "the library verifies after concurrent adds" 0 $?
for s in 1 2 3; do
  "$hpak" -q restore "$lib2" "c$s" "$W/c/t$s" >/dev/null 2>&1 &&
    expected_tree "$W/c/env$s" "$W/c/t$s" "$W/c/exp$s" &&
    check "c$s restores to its source tree (relocated)" same_tree "$W/c/exp$s" "$W/c/t$s" ||
    fail "c$s could not be restored"
done

# ---- hpak verify LIB: damage
section "verify LIB: damage"
# An object shared by env-a and env-b, used by exactly one path in each.
"$hpak" ls "$a_pack" --json -c env-a >"$W/ls-a.json" 2>&1
"$hpak" ls "$lib/packs/$(json "$W/b.json" pack)" --json -c env-b >"$W/ls-b.json" 2>&1
pick=$(python3 - "$W/ls-a.json" "$W/ls-b.json" <<'EOF2'
import json, sys
def load(p):
    files = [n for n in map(json.loads, open(p)) if n["type"] == "file"]
    uses = {}
    for n in files: uses.setdefault(n["digest"], []).append(n["path"])
    return files, uses
a, ua = load(sys.argv[1])
b, ub = load(sys.argv[2])
for n in a:
    d = n["digest"]
    if n["size"] > 2000 and not n["relocations"] and ua[d] == [n["path"]] and ub.get(d) == [n["path"]]:
        print(d, n["path"]); break
EOF2
)
read -r bad_digest bad_path <<<"$pick"
check "found an object used once by env-a and once by env-b ($bad_digest $bad_path)" test -n "$bad_digest"
cp -a "$lib" "$W/lib-intact"
flip_object_byte() { # PACK DIGEST: a byte of its stored bytes (an entry's payload, or its block's)
  local at
  at=$("$hpak" index "$1" --show --json --no-write | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r["digest"] != sys.argv[1]: continue
    if "member" not in r: print(r["offset"] + 72 + r["stored"] // 2); break
    with open(sys.argv[2], "rb") as f:  # a block: past its 48-byte header and 36-byte table rows
        f.seek(r["offset"]); h = f.read(48)
    print(r["offset"] + 48 + 36 * int.from_bytes(h[8:12], "little") + int.from_bytes(h[16:20], "little") // 2); break
' "$2" "$1")
  local b
  b=$(od -An -tu1 -j"$at" -N1 "$1" | tr -d ' ')
  chmod u+w "$1"
  printf "$(printf '\\%03o' $(((b + 1) % 256)))" | dd of="$1" bs=1 seek="$at" conv=notrunc status=none
}
flip_object_byte "$a_pack" "$bad_digest"
"$hpak" -q verify "$lib" >"$W/vb.out" 2>&1
expect_eq "verify LIB exits 1 on a damaged object" 1 $?
check "verify LIB names the object" grep -q "bad blob $bad_digest" "$W/vb.out"
check "verify LIB names env-a:$bad_path" grep -qF "breaks env-a:$bad_path" "$W/vb.out"
check "verify LIB names env-b:$bad_path too (a path of another catalog)" grep -qF "breaks env-b:$bad_path" "$W/vb.out"
check "verify LIB calls env-b broken" grep -qE "catalog 'env-b' is BROKEN" "$W/vb.out"
check "verify LIB calls env-a broken" grep -qE "catalog 'env-a' is BROKEN" "$W/vb.out"
"$hpak" -q verify "$lib" --json >"$W/vb.json" 2>&1
check "verify LIB --json (damaged) is valid and lists the bad object as lost" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))[0]
assert r["ok"] is False, r
bad = [b for b in r["bad_objects"] if b["digest"] == sys.argv[2]]
assert len(bad) == 1 and bad[0]["lost"] is True, bad
assert "env-a:" + sys.argv[3] in bad[0]["paths"] and "env-b:" + sys.argv[3] in bad[0]["paths"], bad
assert bad[0]["bad_copies"][0]["pack"].endswith(".hpak"), bad
assert r["broken_catalogs"] == ["env-a", "env-b"], r["broken_catalogs"]
assert r["lost_objects"] >= 1
' "$W/vb.json" "$bad_digest" "$bad_path"

# An intact copy in another visible pack: not lost. A standalone pack of the
# original tree holds every object; publish it as a library pack.
"$hpak" -q pack "$W/env-a-copy" -o "$W/extra.hpak" >/dev/null 2>&1
sum=$(sha256sum "$W/extra.hpak" | cut -c1-64)
cp "$W/extra.hpak" "$lib/packs/pack-$sum.hpak"
cp "$W/extra.hidx" "$lib/packs/pack-$sum.hidx"
"$hpak" -q verify "$lib" --json >"$W/vc.json" 2>&1
expect_eq "verify LIB still exits 1 while a bad copy exists" 1 $?
check "verify LIB: a bad object with an intact copy in another pack is not lost" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))[0]
bad = [b for b in r["bad_objects"] if b["digest"] == sys.argv[2]]
assert len(bad) == 1 and bad[0]["lost"] is False and bad[0]["intact_in"], bad
assert r["lost_objects"] == 0 and r["broken_catalogs"] == [], r
' "$W/vc.json" "$bad_digest"
"$hpak" -q verify "$lib" >"$W/vc.out" 2>&1
check "verify LIB (human) says an intact copy exists" grep -q "not lost: an intact copy is in 'pack-$sum.hpak'" "$W/vc.out"

# Broken name files and a missing catalog object.
rm -rf "$lib"
cp -a "$W/lib-intact" "$lib"
printf 'hpak-catalog 1\n%s\n' "$(printf '%064d' 0)" >"$lib/catalogs/ghost"
printf 'garbage\n' >"$lib/catalogs/mangled"
"$hpak" -q verify "$lib" >"$W/vd.out" 2>&1
expect_eq "verify LIB exits 1 for a name whose catalog is missing" 1 $?
check "verify LIB calls 'ghost' broken" grep -q "catalog 'ghost' is BROKEN" "$W/vd.out"
check "verify LIB calls 'mangled' broken" grep -q "catalog 'mangled' is BROKEN: .*malformed" "$W/vd.out"
check "verify LIB does not blame the intact catalogs" test -z "$(grep -E "catalog 'env-[ab]' is BROKEN" "$W/vd.out")"
rm -f "$lib/catalogs/ghost" "$lib/catalogs/mangled"

# A pack deleted behind the library's back: its objects are missing.
rm -f "$a_pack"
"$hpak" -q verify "$lib" --json >"$W/ve.json" 2>&1
expect_eq "verify LIB exits 1 when a pack is gone" 1 $?
check "verify LIB: env-a and env-b broken, objects missing, index noted" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))[0]
assert sorted(r["broken_catalogs"]) == ["env-a", "env-b"], r["broken_catalogs"]
assert r["bad_objects"] and any(b["missing"] for b in r["bad_objects"]), r["bad_objects"][:2]
# the rest: catalog mirrors stored against a catalog that went with the pack (their first copy stands alone)
for b in r["bad_objects"]:
    assert b["missing"] or (b["kind"] == "catalog" and not b["lost"] and b["bad_copies"] and
                            all("base catalog" in c["error"] for c in b["bad_copies"])), b
assert any("has no pack" in n for n in r["notes"]), r["notes"]
' "$W/ve.json"

# Hard links: a damaged object is named at every path that links to it, a link
# whose name sorts before its file's included.
mkdir -p "$W/hl/src/sub"
head -c 5000 /dev/urandom >"$W/hl/src/z-file"
ln "$W/hl/src/z-file" "$W/hl/src/a-link"
ln "$W/hl/src/z-file" "$W/hl/src/sub/link"
"$hpak" -q init "$W/hl/lib" >/dev/null 2>&1
"$hpak" -q pack "$W/hl/src" --into "$W/hl/lib" --name hl --json >"$W/hl/p.json" 2>&1
hl_pack=$W/hl/lib/packs/$(json "$W/hl/p.json" pack)
flip_object_byte "$hl_pack" "$(sha256sum "$W/hl/src/z-file" | cut -c1-64)"
"$hpak" -q verify "$W/hl/lib" >"$W/hl/v.out" 2>&1
expect_eq "verify LIB exits 1 on a damaged hard-linked object" 1 $?
for p in z-file a-link sub/link; do
  check "verify LIB names hl:$p" grep -qF "breaks hl:$p" "$W/hl/v.out"
done

# Not a library.
mkdir -p "$W/plain"
"$hpak" -q verify "$W/plain" >"$W/vf.out" 2>&1
expect_eq "verify of a directory that is not a library exits 2" 2 $?
check "... saying it is not a library" grep -q "not an hpak library" "$W/vf.out"

section "done"
done_tests
