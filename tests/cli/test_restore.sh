#!/usr/bin/env bash
# hpak restore: fresh restores relocated into longer and shorter targets;
# dirty restores that touch exactly what changed; switching a target to
# another environment; kill -9 mid-restore and repair; one restore per target
# (wait / --no-wait) and concurrent restores; bad input and a corrupt pack.
# ctest runs: bash test_restore.sh <hpak-binary> <source-root>.
source "$(dirname "$0")/library_helpers.sh" "$@"

lib=$W/lib
env=$W/src/env
mkdir -p "$W/src"
gen_env "$env" 2000 3
# Beyond what the generator makes: a symlink holding the root, odd modes,
# a read-only and a sticky directory, an owner-only one.
ln -s "$env/bin/python3.11" "$env/bin/python-abs"
ln -s "$env/lib" "$env/lib-abs"
chmod 0600 "$env/etc/"*.conf 2>/dev/null
chmod 0751 "$env/bin/pip"
mkdir -p "$env/share/ro" "$env/share/sticky" "$env/share/private/inner"
echo "read-only dir" >"$env/share/ro/data.txt"
echo "in a private dir" >"$env/share/private/inner/x"
chmod 0555 "$env/share/ro"
chmod 1777 "$env/share/sticky"
chmod 0700 "$env/share/private"
"$hpak" -q pack "$env" --into "$lib" --name env --json >"$W/pack.json" 2>"$W/pack.err" || {
  fail "pack --into"
  cat "$W/pack.err"
  done_tests
}
nfiles=$(json "$W/pack.json" files)
nreloc=$(grep -rlF -- "$env" "$env" | wc -l)
check "the corpus has files holding its own path ($nreloc)" test "$nreloc" -ge $((nfiles / 40))

# ---- fresh restore, relocated: shorter and longer targets, umask 077
section "fresh restore, relocated"
short=$W/t
long=$W/a-much-longer-target-directory-for-relocation/env-restored
mkdir -p "$(dirname "$long")"
check "the targets' paths are shorter and longer than the source's" test ${#short} -lt ${#env} -a ${#long} -gt ${#env}
for tgt in "$short" "$long"; do
  (umask 077 && "$hpak" -q restore "$lib" env "$tgt" --json >"$W/fresh.json" 2>"$W/fresh.err")
  check "fresh restore into $tgt exits 0" test $? -eq 0
  expect_eq "fresh restore reports fresh" true "$(json "$W/fresh.json" fresh)"
  expect_eq "fresh restore writes every file" "$nfiles" "$(json "$W/fresh.json" written)"
  expected_tree "$env" "$tgt" "$tgt.expected"
  check "fresh restore == source relocated to $tgt (bytes, modes under umask 077, symlinks, hardlinks, empty dirs)" same_tree "$tgt.expected" "$tgt"
  check "no file in the target still holds the source path" test -z "$(grep -rlF --exclude=.hpak-state -- "$env" "$tgt")"
  expect_eq "files holding the target path" "$nreloc" "$(grep -rlF -- "$tgt" "$tgt" | grep -v '\.hpak-state$' | wc -l)"
  expect_eq "a symlink holding the root is relocated" "$tgt/bin/python3.11" "$(readlink "$tgt/bin/python-abs")"
  expect_eq "hardlinks share an inode" 2 "$(find "$tgt/bin" -samefile "$tgt/bin/pip3.11" | wc -l)"
  expect_eq "the sticky directory's mode" 1777 "$(stat -c %a "$tgt/share/sticky")"
  expect_eq "the read-only directory's mode" 555 "$(stat -c %a "$tgt/share/ro")"
  expect_eq "empty directories" "$(find "$env" -type d -empty | wc -l)" "$(find "$tgt" -type d -empty | wc -l)"
  expect_eq "the state file says complete" 1 "$(state_complete "$tgt")"
done
rm -rf "$long.expected" "$long"

# ---- dirty restore: change the space every way, restore, compare
section "dirty restore"
T=$short
ref=$short.expected # a fresh restore into $T looks exactly like this
mapfile -d '' all < <(cd "$T" && find . -type f -links 1 ! -name .hpak-state ! -path './share/ro/*' -printf '%P\0' | sort -z)
# (d) a whole directory goes; pick one with a few plain files and no links.
victim=$(cd "$T" && find lib -mindepth 3 -type d | while read -r d; do
  n=$(find "$d" -type f | wc -l)
  if [ "$n" -ge 3 ] && [ "$n" -le 40 ] && [ -z "$(find "$d" -type l -o -type f -links +1)" ]; then
    echo "$d"
    break
  fi
done)
check "picked a directory to delete ($victim)" test -n "$victim"
victim_files=$(find "$T/$victim" -type f | wc -l)
files=()
for f in "${all[@]}"; do [[ $f == "$victim"/* ]] || files+=("$f"); done
n=${#files[@]}
appended=0 edited=0 deleted=0 replaced=0
for ((i = 0; i < n; i += 100)); do # (a) append to 1%
  printf 'appended\n' >>"$T/${files[i]}"
  appended=$((appended + 1))
done
for ((i = 50; i < n && edited < 5; i += 100)); do # (b) same size, mtime put back
  f=$T/${files[i]}
  size=$(stat -c %s "$f")
  [ "$size" -gt 0 ] || continue
  cp -p "$f" "$W/mtime-ref"
  at=$((size / 2))
  b=$(od -An -tu1 -j"$at" -N1 "$f" | tr -d ' ')
  printf "$(printf '\\%03o' $(((b + 1) % 256)))" | dd of="$f" bs=1 seek="$at" conv=notrunc status=none
  touch -r "$W/mtime-ref" "$f"
  edited=$((edited + 1))
done
chmod_file=${files[33]} # (c)
if [ "$(stat -c %a "$T/$chmod_file")" = 600 ]; then chmod 0644 "$T/$chmod_file"; else chmod 0600 "$T/$chmod_file"; fi
for ((i = 77; i < n && deleted < 5; i += 100)); do # (d) files, and the directory
  rm -f "$T/${files[i]}"
  deleted=$((deleted + 1))
done
rm -rf "${T:?}/$victim"
# (e) strays: a file, a directory tree, a hidden file
echo stray >"$T/stray.txt"
mkdir -p "$T/lib/stray-dir/deeper" && echo x >"$T/lib/stray-dir/deeper/y"
echo hidden >"$T/bin/.stray"
# (f) a file replaced by a symlink, another by a directory
rm -f "$T/${files[66]}" && ln -s /etc/passwd "$T/${files[66]}"
rm -f "$T/${files[88]}" && mkdir -p "$T/${files[88]}/sub" && echo z >"$T/${files[88]}/sub/z"
replaced=2
want_written=$((appended + edited + deleted + victim_files + replaced))
restore_json "$lib" env "$T" "$W/dirty.json"
check "dirty restore exits 0" test $? -eq 0
check "dirty restore == a fresh restore" same_tree "$ref" "$T"
expect_eq "dirty restore is not fresh" false "$(json "$W/dirty.json" fresh)"
expect_eq "dirty restore writes exactly the changed files" "$want_written" "$(json "$W/dirty.json" written)"
expect_eq "dirty restore keeps the rest" $((nfiles - want_written)) "$(json "$W/dirty.json" kept)"
expect_eq "dirty restore removes the strays and the replacements" 5 "$(json "$W/dirty.json" removed)"
check "dirty restore compares the same-size edits and the chmod (>= $((edited + 1)))" test "$(json "$W/dirty.json" compared)" -ge $((edited + 1))
check "dirty restore fixes the mode" test "$(json "$W/dirty.json" modes_fixed)" -ge 1
expect_eq "the state file says complete" 1 "$(state_complete "$T")"

# An unchanged space: nothing written, the state file untouched.
before=$(stat -c '%i %z' "$T/.hpak-state")
sleep 0.05
restore_json "$lib" env "$T" "$W/same.json"
check "restore of an unchanged space exits 0" test $? -eq 0
expect_eq "an unchanged space: no file written" 0 "$(json "$W/same.json" written)"
expect_eq "an unchanged space: all kept" "$nfiles" "$(json "$W/same.json" kept)"
expect_eq "an unchanged space: nothing compared" 0 "$(json "$W/same.json" compared)"
expect_eq "an unchanged space: the state file is not rewritten" "$before" "$(stat -c '%i %z' "$T/.hpak-state")"
restore_json "$lib" env "$T" "$W/vc.json" --verify-content
expect_eq "--verify-content compares every file" "$nfiles" "$(json "$W/vc.json" compared)"
expect_eq "--verify-content on an intact space writes nothing" 0 "$(json "$W/vc.json" written)"

# ---- switch a target from one environment to another
section "switching environments"
envb=$W/src/envb
cp -a "$env" "$envb"
rm -f "$envb/bin/python-abs" "$envb/lib-abs"
ln -s "$envb/bin/python3.11" "$envb/bin/python-abs"
ln -s "$envb/lib" "$envb/lib-abs"
mapfile -d '' bfiles < <(cd "$envb" && find . -type f -links 1 -printf '%P\0' | sort -z)
for ((i = 3; i < ${#bfiles[@]}; i += 10)); do printf 'env-b\n' >>"$envb/${bfiles[i]}"; done
for ((i = 7; i < ${#bfiles[@]}; i += 200)); do rm -f "$envb/${bfiles[i]}"; done
for i in 1 2 3 4 5; do echo "only in env-b $i" >"$envb/lib/only-b-$i.txt"; done
"$hpak" -q pack "$envb" --into "$lib" --name env-b >/dev/null 2>&1
sw=$W/sw
"$hpak" -q restore "$lib" env-b "$sw" >/dev/null 2>&1 && mv "$sw" "$W/sw.ref-b"
"$hpak" -q restore "$lib" env "$sw" >/dev/null 2>&1 && cp -a "$sw" "$W/sw.ref-a"
restore_json "$lib" env-b "$sw" "$W/switch.json"
check "switching A -> B exits 0" test $? -eq 0
check "after switching, the target == a fresh restore of B" same_tree "$W/sw.ref-b" "$sw"
# Files whose restored bytes differ between A and B at the same path, or new
# in B (a relocated file that is otherwise equal is compared, then kept).
want=$(diff -rq --no-dereference -x .hpak-state "$W/sw.ref-a" "$W/sw.ref-b" |
  sed -n "s|^Files .* and \(.*\) differ\$|\1|p; s|^Only in \(.*\): \(.*\)\$|\1/\2|p" |
  grep "^$W/sw.ref-b/" | while read -r f; do [ -f "$f" ] && [ ! -L "$f" ] && stat -c %i "$f"; done | sort -u | wc -l)
sw_written=$(json "$W/switch.json" written)
expect_eq "switching writes only the files whose bytes differ" "$want" "$sw_written"
check "switching keeps the common files ($sw_written written of $(json "$W/switch.json" files))" test "$sw_written" -lt "$(json "$W/switch.json" files)"

rm -rf "$sw" "$W/sw.ref-a" "$W/sw.ref-b" "$envb"

# ---- bad input
section "bad input"
"$hpak" -q restore "$lib" evn "$W/bad1" >"$W/b1" 2>&1
expect_eq "unknown catalog name exits 2" 2 $?
check "... and suggests close names" grep -q "did you mean 'env'" "$W/b1"
"$hpak" -q restore "$W/src" env "$W/bad2" >"$W/b2" 2>&1
expect_eq "a library path that is not a library exits 2" 2 $?
check "... saying so" grep -q "not an hpak library" "$W/b2"
echo file >"$W/afile"
"$hpak" -q restore "$lib" env "$W/afile" >"$W/b3" 2>&1
expect_eq "a target that is a file exits 2" 2 $?
check "... saying so" grep -q "not a directory" "$W/b3"
check "... and leaves the file alone" test "$(cat "$W/afile")" = file
"$hpak" -q restore "$lib" env "$lib/inside" >"$W/b4" 2>&1
expect_eq "a target inside the library exits 2" 2 $?
check "... saying so" grep -q "inside the library" "$W/b4"
check "... and creates nothing in the library" test ! -e "$lib/inside"
longest=$("$hpak" ls "$(ls "$lib"/packs/*.hpak | sed -n 1p)" --json -c env 2>/dev/null |
  python3 -c 'import json,sys; print(max(len(json.loads(l)["path"].encode()) for l in sys.stdin))')
# A target whose path is short enough to exist, but with the deepest catalog
# path below it 4 bytes over PATH_MAX (4096, with the NUL).
need=$((4096 - 1 - longest + 4))
deep=$W/deep
comp=$(printf 'd%.0s' $(seq 1 200))
while [ $((${#deep} + 1 + 200)) -lt "$need" ]; do deep=$deep/$comp; done
mkdir -p "$deep"
deep_target=$deep/$(printf 'x%.0s' $(seq 1 $((need - ${#deep} - 1))))
"$hpak" -q restore "$lib" env "$deep_target" >"$W/b5" 2>&1
expect_eq "a target too long for the deepest path (${#deep_target} + $longest bytes) exits 2" 2 $?
check "... saying it is too long" grep -q "too long" "$W/b5"
check "... and creates nothing" test ! -e "$deep_target"

# ---- a corrupt pack: one object, used by one file
section "a corrupt pack"
# A library of format 1 for this section: the damage costs one object (in
# format 2 it costs the object's block, covered by test_repair).
lib_v2=$lib
lib=$W/lib-v1
"$hpak" -q pack "$env" --into "$lib" --name env --pack-version 1 >/dev/null 2>&1 || fail "pack --into --pack-version 1"
pack=$(ls "$lib"/packs/pack-*.hpak | sed -n 1p)
for p in "$lib"/packs/pack-*.hpak; do grep -qx env <<<"$("$hpak" ls "$p" --catalogs 2>/dev/null)" && pack=$p; done
"$hpak" ls "$pack" --json -c env >"$W/ls.json" 2>&1
read -r bad_digest bad_path < <(python3 - "$W/ls.json" <<'EOF'
import json, sys
nodes = [json.loads(l) for l in open(sys.argv[1])]
files = [n for n in nodes if n["type"] == "file"]
uses = {}
for n in files: uses.setdefault(n["digest"], []).append(n)
linked = {n["target"] for n in nodes if n["type"] == "hardlink"}
for n in files:
    if n["size"] > 2000 and not n["relocations"] and len(uses[n["digest"]]) == 1 and n["path"] not in linked:
        print(n["digest"], n["path"]); break
EOF
)
check "picked an object used by one file ($bad_path)" test -n "$bad_digest"
cp -p "$pack" "$W/pack.intact"
read -r off stored < <("$hpak" index "$pack" --show --json --no-write | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r["digest"] == sys.argv[1]: print(r["offset"], r["stored"]); break
' "$bad_digest")
at=$((off + 72 + stored / 2))
b=$(od -An -tu1 -j"$at" -N1 "$pack" | tr -d ' ')
chmod u+w "$pack"
printf "$(printf '\\%03o' $(((b + 1) % 256)))" | dd of="$pack" bs=1 seek="$at" conv=notrunc status=none
c1=$W/corrupt1
"$hpak" -q restore "$lib" env "$c1" >"$W/c1.out" 2>&1
expect_eq "restore from a corrupt pack exits 2" 2 $?
check "... naming the object" grep -q "$bad_digest" "$W/c1.out"
check "... and the path" grep -qF "$bad_path" "$W/c1.out"
expect_eq "... and leaves the target marked incomplete" 0 "$(state_complete "$c1")"
check "... with no partial file at the bad path" test ! -e "$c1/$bad_path"
c2=$W/corrupt2
"$hpak" -q restore "$lib" env "$c2" --partial --json >"$W/c2.json" 2>"$W/c2.err"
expect_eq "restore --partial from a corrupt pack exits 1" 1 $?
check "... naming the path" grep -qF "'$bad_path' not restored" "$W/c2.err"
expect_eq "... one file failed" 1 "$(json "$W/c2.json" failed)"
expected_tree "$env" "$c2" "$c2.expected"
rm -f "$c2.expected/$bad_path"
check "... everything else is restored exactly" same_tree "$c2.expected" "$c2"
expect_eq "... and the target is marked incomplete" 0 "$(state_complete "$c2")"
"$hpak" -q restore "$lib" env "$c1" --partial >/dev/null 2>&1
expect_eq "--partial over the first failed restore also exits 1" 1 $?
expected_tree "$env" "$c1" "$c1.expected"
rm -f "$c1.expected/$bad_path"
check "... and completes everything else" same_tree "$c1.expected" "$c1"
"$hpak" -q verify "$lib" >"$W/v.out" 2>&1
expect_eq "verify LIB exits 1" 1 $?
check "verify LIB names catalog:path" grep -qF "breaks env:$bad_path" "$W/v.out"
check "verify LIB names the object" grep -q "$bad_digest" "$W/v.out"
# The damage repaired (the intact pack back): the next restore completes it.
cp -f "$W/pack.intact" "$pack"
restore_json "$lib" env "$c2" "$W/c2b.json"
check "after the pack is repaired, a restore completes the target" test $? -eq 0
expected_tree "$env" "$c2" "$c2.expected2"
check "... to exactly a fresh restore" same_tree "$c2.expected2" "$c2"
expect_eq "... writing only the missing file" 1 "$(json "$W/c2b.json" written)"
expect_eq "... and marks it complete" 1 "$(state_complete "$c2")"

rm -rf "$c1" "$c2" "$c1.expected" "$c2.expected" "$c2.expected2"
lib=$lib_v2

# ---- one restore per target: waiting, --no-wait
section "one restore per target"
L=$W/locked
"$hpak" -q restore "$lib" env "$L" >/dev/null 2>&1
# The holder notes when it lets go (while still holding the lock).
flock "$L" sh -c 'sleep 3; date +%s%N >"$0"' "$W/released" &
holder=$!
bg_pids+=("$holder")
for _ in $(seq 1 200); do flock -n "$L" true 2>/dev/null || break; sleep 0.02; done
"$hpak" -q restore "$lib" env "$L" --no-wait >"$W/nw.out" 2>&1
expect_eq "--no-wait while another holds the target exits 2" 2 $?
check "... with a clear message" grep -q "being restored by another process" "$W/nw.out"
"$hpak" -q restore "$lib" env "$L" >/dev/null 2>&1
rc=$?
done_at=$(date +%s%N)
expect_eq "without --no-wait the restore waits and succeeds" 0 "$rc"
check "... finishing only after the holder let go" test -s "$W/released" -a "$done_at" -ge "$(cat "$W/released" 2>/dev/null || echo 0)"
wait "$holder"
bg_pids=()

# Two restores of one (new) target at once: both succeed, one writes it all.
S=$W/same-target
restore_json "$lib" env "$S" "$W/s1.json" &
p1=$!
restore_json "$lib" env "$S" "$W/s2.json" &
p2=$!
wait $p1
r1=$?
wait $p2
r2=$?
expect_eq "two restores of one target at once both exit 0" "0 0" "$r1 $r2"
expect_eq "... between them every file is written once" "$nfiles" $(($(json "$W/s1.json" written) + $(json "$W/s2.json" written)))
expected_tree "$env" "$S" "$S.expected"
check "... and the tree is right" same_tree "$S.expected" "$S"

# Concurrent restores of different targets.
pids=()
for k in 1 2; do
  "$hpak" -q restore "$lib" env "$W/multi$k" >/dev/null 2>&1 &
  pids+=($!)
done
mrc=0
for p in "${pids[@]}"; do wait "$p" || mrc=1; done
expect_eq "concurrent restores of different targets exit 0" 0 "$mrc"
for k in 1 2; do
  expected_tree "$env" "$W/multi$k" "$W/multi$k.expected"
  check "concurrent restore $k is right" same_tree "$W/multi$k.expected" "$W/multi$k"
done
"$hpak" -q verify "$lib" >/dev/null 2>&1
expect_eq "the library verifies after it all" 0 $?

rm -rf "$L" "$S" "$S.expected" "$W"/multi*

# ---- kill -9 mid-restore, then repair
section "kill -9 and repair"
big=$W/src/big
gen_env "$big" 5000 9
"$hpak" -q pack "$big" --into "$lib" --name big >/dev/null 2>&1
K=$W/k
t0=$(date +%s%N)
"$hpak" -q restore "$lib" big "$K" >/dev/null 2>&1
full_ms=$((($(date +%s%N) - t0) / 1000000))
mv "$K" "$W/k.ref"
echo "a fresh restore of the big env takes ${full_ms} ms"
interrupted=0
ms_to_s() { awk -v m="$1" 'BEGIN { printf "%.3f", m / 1000 }'; }
for frac in 10 45 80; do
  rm -rf "$K"
  delay_ms=$((full_ms * frac / 100 + RANDOM % 50))
  "$hpak" -q restore "$lib" big "$K" >/dev/null 2>&1 &
  pid=$!
  sleep "$(ms_to_s "$delay_ms")"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  rc=$?
  st=$(state_complete "$K")
  if [ "$rc" -eq 0 ]; then
    check "finished before the kill at ${delay_ms} ms: exit 0 only on a whole tree" same_tree "$W/k.ref" "$K"
  else
    interrupted=$((interrupted + 1))
    if [ "$st" = 1 ]; then
      check "killed after ${delay_ms} ms with the state complete: the tree is whole" same_tree "$W/k.ref" "$K"
    else
      check "killed after ${delay_ms} ms: the state is incomplete or absent ($st)" test "$st" = 0 -o "$st" = none
    fi
  fi
  if [ "$frac" = 45 ] && [ -d "$K" ]; then
    # Interrupt the repair too (a dirty restore).
    "$hpak" -q restore "$lib" big "$K" >/dev/null 2>&1 &
    pid=$!
    sleep "$(ms_to_s $((full_ms * 15 / 100)))"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  restore_json "$lib" big "$K" "$W/k.json"
  check "the next restore after the kill at ${delay_ms} ms exits 0" test $? -eq 0
  check "... and the tree equals a fresh restore" same_tree "$W/k.ref" "$K"
  expect_eq "... and the state is complete" 1 "$(state_complete "$K")"
done
check "at least one restore was really interrupted ($interrupted)" test "$interrupted" -ge 1

# ---- the scan reads only directories changed since the last restore
# A directory whose ctime is below the last complete restore's fence (same
# catalog) still holds exactly the catalog's entries: the scan stats its
# files by name and skips getdents64. Any create, remove or rename in it
# moves its ctime, so a stray or a renamed file is still found.
section "directories unchanged since the last restore are not read"
command -v strace >/dev/null || fail "strace is missing (scripts/setup.sh installs it)"
S=$W/listing
restore_json "$lib" env "$S" "$W/lst0.json"
check "fresh restore for the listing checks" test $? -eq 0
ndirs=$(find "$S" -type d | wc -l)
# getdents64 calls of one restore of env into $S (extra arguments passed on)
getdents_calls() {
  ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    strace -f -qq -e trace=getdents64 -o "$W/lst.strace" "$hpak" -q restore "$lib" env "$S" --json "$@" >"$W/lst.json" 2>"$W/lst.err" ||
    fail "restore under strace: $(cat "$W/lst.err")"
  grep -c getdents64 "$W/lst.strace" || true
}
calls=$(getdents_calls)
# (A few calls are not the scan's: the library's packs/ and the emptiness check of the target.)
check "an unchanged target: only the root is read ($calls getdents64 calls for $ndirs directories)" test "$calls" -le 8
echo stray >"$S/lib/stray-in-deep-dir"
mv "$S/bin/pip" "$S/bin/pip-renamed"
calls=$(getdents_calls)
expect_eq "a stray and a renamed file are found: removed" 2 "$(json "$W/lst.json" removed)"
expect_eq "... and the renamed file written back" 1 "$(json "$W/lst.json" written)"
check "... reading only the changed directories and the root ($calls calls)" test "$calls" -le 12
expected_tree "$env" "$S" "$S.expected"
check "... and the tree equals the source relocated" same_tree "$S.expected" "$S"
calls=$(getdents_calls --verify-content)
check "--verify-content reads every directory ($calls calls for $ndirs)" test "$calls" -ge "$ndirs"
# The state (its embedded catalog) is read whole: one read, one more to see its end.
state_size=$(stat -c %s "$S/.hpak-state")
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
  strace -f -qq -y -e trace=read -o "$W/st.strace" "$hpak" -q restore "$lib" env "$S" >/dev/null 2>"$W/st.err" ||
  fail "restore under strace: $(cat "$W/st.err")"
reads=$(grep -c 'hpak-state>' "$W/st.strace" || true)
check "the state ($state_size bytes, more than 8 KiB) is read in 2 calls ($reads)" test "$state_size" -gt 8192 -a "$reads" -eq 2
rm -rf "$S" "$S.expected"

section "done"
done_tests
