#!/usr/bin/env bash
# The real hpak.exe under Wine (issue 30), run by scripts/build-windows.sh
# after the unit tests:
#   bash tests/windows/test_wine_cli.sh HPAK_EXE [LINUX_HPAK]
# WINE (default wine64), WINEPREFIX and WINEDEBUG come from the caller.
#
# A tree made here (nested directories, small and large files, an empty file,
# a read-only file) is packed into a .hpak, verified and unpacked; packed into
# a library (pack --into), restored fresh, again unchanged (nothing written)
# and after edits (dirty: exactly the edited files written), and the library
# gc'ed and verified. Compatibility, with the Linux hpak (LINUX_HPAK, default
# build/hpak of the checkout): a library made on Linux restores under Wine, a
# pack and a library made under Wine restore on Linux, a directory remote
# published on one side is fetched on the other, each compared with a manifest
# (sha256 of every file, every directory). Symbolic links: what the Windows
# build does (symlink_at: CreateSymbolicLinkW, EPERM where the user may not)
# is asserted as documented in hpak-library(7), "Windows".
suite=test_wine_cli
. "$(dirname "$0")/wine_lib.sh" "$@"

# ---- the tree
src=$W/src
mkdir -p "$src/a/b/c" "$src/empty-dir/nested" "$src/lib/python3.11/site-packages/pkg"
printf 'hello\n' >"$src/hello.txt"
: >"$src/empty.txt"
for i in $(seq 1 40); do printf 'module %d\n%s\n' "$i" "$(seq 1 "$i")" >"$src/lib/python3.11/site-packages/pkg/m$i.py"; done
head -c 3000000 /dev/urandom >"$src/a/b/c/large.bin"   # several blocks, incompressible
seq 1 200000 >"$src/a/b/text.txt"                      # compressible
printf 'frozen\n' >"$src/a/readonly.txt"
chmod 0444 "$src/a/readonly.txt"
nfiles=$(find "$src" -type f | wc -l)

# ---- pack, verify, unpack
hpak pack -q pack "$src" -o "$W/env.hpak" || true
expect_eq "pack exits 0 ($(head -c 200 "$W/pack.err"))" 0 "$(cat "$W/pack.rc")"
check "pack wrote env.hpak and env.hidx" test -s "$W/env.hpak" -a -s "$W/env.hidx"
check "pack left no temp file" test -z "$(find "$W" -maxdepth 1 -name '.tmp-*')"
hpak verify verify "$W/env.hpak" || true
check "verify says ok" grep -q "^ok: " "$W/verify.out"
hpak unpack -q unpack "$W/env.hpak" "$W/out" || true
expect_eq "unpack exits 0 ($(head -c 200 "$W/unpack.err"))" 0 "$(cat "$W/unpack.rc")"
same_tree "unpacked tree = source (manifest)" "$src" "$W/out"
check "the read-only file unpacks read-only" read_only "$W/out/a/readonly.txt"
check "the writable file unpacks writable" test "$(stat -c %A "$W/out/hello.txt" | cut -c3)" = w
# cat writes a file's bytes as they are (no CRLF translation on stdout).
"$wine" "$exe" cat "$W/env.hpak" a/b/text.txt >"$W/cat.out" 2>"$W/cat.err"
check "cat gives a file's bytes unchanged" cmp -s "$W/cat.out" "$src/a/b/text.txt"
# A corrupted copy fails verify (the check can fail).
cp "$W/env.hpak" "$W/bad.hpak" && cp "$W/env.hidx" "$W/bad.hidx"
size=$(stat -c %s "$W/bad.hpak")
printf 'XXXXXXXX' | dd of="$W/bad.hpak" bs=1 seek=$((size / 2)) conv=notrunc status=none
hpak badverify verify "$W/bad.hpak" || true
expect_eq "verify of a corrupted pack exits 1" 1 "$(cat "$W/badverify.rc")"

# ---- a library: pack --into, restore fresh / unchanged / dirty, gc
lib=$W/lib
hpak into -q pack "$src" --into "$lib" --name env --json || true
expect_eq "pack --into exits 0 ($(head -c 200 "$W/into.err"))" 0 "$(cat "$W/into.rc")"
hpak fresh -q restore "$lib" env "$W/t" --json || true
expect_eq "fresh restore exits 0 ($(head -c 200 "$W/fresh.err"))" 0 "$(cat "$W/fresh.rc")"
same_tree "fresh restore = source (manifest)" "$src" "$W/t"
[ "$(cat "$W/fresh.rc")" = 0 ] && expect_eq "fresh restore writes every file" "$nfiles" "$(json "$W/fresh.out" written)"
check "the read-only file restores read-only" read_only "$W/t/a/readonly.txt"
hpak same -q restore "$lib" env "$W/t" --json || true
expect_eq "restore of an unchanged target exits 0 ($(head -c 200 "$W/same.err"))" 0 "$(cat "$W/same.rc")"
[ "$(cat "$W/same.rc")" = 0 ] && expect_eq "an unchanged target: nothing written" 0 "$(json "$W/same.out" written)"
printf 'edited\n' >>"$W/t/hello.txt"
rm "$W/t/lib/python3.11/site-packages/pkg/m7.py"
printf 'stray\n' >"$W/t/a/stray.txt"
hpak dirty -q restore "$lib" env "$W/t" --json || true
expect_eq "dirty restore exits 0 ($(head -c 200 "$W/dirty.err"))" 0 "$(cat "$W/dirty.rc")"
same_tree "dirty restore = source (manifest)" "$src" "$W/t"
[ "$(cat "$W/dirty.rc")" = 0 ] && expect_eq "dirty restore writes the edited and the deleted file" 2 "$(json "$W/dirty.out" written)"
# Windows paths (Wine's Z: is /): the library named with backslashes, the target as Z:/... .
hpak zrestore -q restore "Z:${lib//\//\\}" env "Z:$W/zt" || true
expect_eq "restore with Windows paths (Z:\\..., Z:/...) exits 0 ($(head -c 200 "$W/zrestore.err"))" 0 "$(cat "$W/zrestore.rc")"
same_tree "... into the directory they name (manifest)" "$src" "$W/zt"
hpak gc -q gc "$lib" || true
expect_eq "gc exits 0 ($(head -c 200 "$W/gc.err"))" 0 "$(cat "$W/gc.rc")"
hpak libverify verify "$lib" || true
expect_eq "verify of the library after gc exits 0 ($(head -c 200 "$W/libverify.err"))" 0 "$(cat "$W/libverify.rc")"

# ---- index: the .hidx rebuilt from the pack alone, byte for byte
mv "$W/env.hidx" "$W/env.hidx.orig"
hpak index -q index "$W/env.hpak" || true
expect_eq "index of a pack whose .hidx is deleted exits 0 ($(head -c 200 "$W/index.err"))" 0 "$(cat "$W/index.rc")"
check "... and writes the same .hidx, byte for byte" cmp -s "$W/env.hidx" "$W/env.hidx.orig"

# ---- init, then a pack into the new library at level 0 (raw objects)
hpak init -q init "$W/lib0" --level 0 || true
expect_eq "init exits 0 ($(head -c 200 "$W/init.err"))" 0 "$(cat "$W/init.rc")"
hpak init0 -q pack "$src" --into "$W/lib0" --name env0 || true
expect_eq "pack --into the new library exits 0 ($(head -c 200 "$W/init0.err"))" 0 "$(cat "$W/init0.rc")"
hpak catalogs0 catalogs --names "$W/lib0" || true
expect_eq "... whose catalogs are the one added" env0 "$(cat "$W/catalogs0.out")"
hpak init2 -q init "$W/lib0" || true
expect_eq "init of an existing library exits 0 (nothing to do)" 0 "$(cat "$W/init2.rc")"
hpak catalogs02 catalogs --names "$W/lib0" || true
expect_eq "... and keeps its catalogs" env0 "$(cat "$W/catalogs02.out")"

# ---- block cloning (FSCTL_DUPLICATE_EXTENTS_TO_FILE): the raw objects of 1 MiB
# or more of the level-0 library (large.bin, text.txt) are restored by a clone
# where the volume can (ReFS); Wine's cannot: the restore says once (-v, for the
# first of them its threads reach) that it copies through a buffer, bytes right.
hpak clone -v restore "$W/lib0" env0 "$W/t0" || true
expect_eq "restore of raw large objects exits 0 ($(grep -m1 error "$W/clone.err"))" 0 "$(cat "$W/clone.rc")"
check "... the clone refused (Operation not supported), the buffered copy taken" \
  grep -q "copy_file_range refused for '$W/t0/a/b/\(c/large.bin\|text.txt\)' (Operation not supported): large objects copied through a buffer" "$W/clone.err"
same_tree "... the tree restored byte for byte (manifest)" "$src" "$W/t0"

# ---- relocation: a tree holding its own path (Windows form, as Wine names it:
# Z:\...) restored to a path of another length, the path rewritten
winpath() { printf 'Z:%s' "${1//\//\\}"; }
space=$W/reloc/space-1
mkdir -p "$space/Scripts" "$space/Lib"
printf '@echo off\r\nset "VIRTUAL_ENV=%s"\r\nset "PATH=%s\\Scripts;%%PATH%%"\r\n' "$(winpath "$space")" "$(winpath "$space")" >"$space/Scripts/activate.bat"
printf 'home = %s\\Lib\n' "$(winpath "$space")" >"$space/pyvenv.cfg"
printf 'no path here\n' >"$space/Lib/plain.txt"
hpak relpack -q pack "$space" --into "$lib" --name reloc --json || true
expect_eq "pack --into of a tree holding its own path exits 0 ($(head -c 200 "$W/relpack.err"))" 0 "$(cat "$W/relpack.rc")"
for target in "$W/reloc/a-much-longer-target-path" "$W/r"; do
  hpak relrestore -q restore "$lib" reloc "$target" || true
  expect_eq "restore into a path of ${#target} chars (packed at ${#space}) exits 0 ($(head -c 200 "$W/relrestore.err"))" 0 "$(cat "$W/relrestore.rc")"
  check "... activate.bat names the new path, twice" test "$(grep -c -F "$(winpath "$target")" "$target/Scripts/activate.bat" 2>/dev/null)" = 2
  check "... pyvenv.cfg is the packed one with the new path" test "$(cat "$target/pyvenv.cfg" 2>/dev/null)" = "home = $(winpath "$target")\\Lib"
  check "... the old path is gone" test -z "$(grep -rlF "$(winpath "$space")" "$target" 2>/dev/null)"
  check "... a file without the path unchanged" cmp -s "$space/Lib/plain.txt" "$target/Lib/plain.txt"
done

# ---- repair: one object of a library pack damaged (a byte inside the raw
# large.bin); repair salvages the rest, names what is lost, moves the pack away.
cp -r "$lib" "$W/replib"
large_digest=$(sha256sum "$src/a/b/c/large.bin" | cut -d' ' -f1)
for p in "$W"/replib/packs/pack-*.hpak; do
  hpak repshow index --show --no-write "$p" || true
  if grep -q "^$large_digest" "$W/repshow.out"; then
    read -r _ _ _ large_off large_stored _ < <(grep "^$large_digest" "$W/repshow.out")
    at=$((large_off + 72 + large_stored / 2))
    byte=X # a byte other than the one there (large.bin is random: it may be an X)
    [ "$(od -An -tx1 -j "$at" -N1 "$p" | tr -d ' ')" = 58 ] && byte=Y
    printf '%s' "$byte" | dd of="$p" bs=1 seek="$at" conv=notrunc status=none
  fi
done
hpak repair repair "$W/replib" || true
expect_eq "repair of a damaged library exits 1 (an object is lost)" 1 "$(cat "$W/repair.rc")"
check "... naming the lost object's path" grep -q "env:a/b/c/large.bin" "$W/repair.out"
check "... the damaged pack moved to damaged/" test -n "$(ls "$W/replib/damaged/" 2>/dev/null)"
hpak replibverify verify "$W/replib" || true
hpak represtore -q restore --partial "$W/replib" env "$W/rep-t" || true
expect_eq "restore --partial after repair exits 1 (one file missing)" 1 "$(cat "$W/represtore.rc")"
check "... every other file restored (manifest)" diff <(manifest "$src" | grep -v large.bin) <(manifest "$W/rep-t" | grep -v large.bin)

# ---- sign / verify with an Ed25519 key file made by ssh-keygen
if command -v ssh-keygen >/dev/null; then
  ssh-keygen -q -t ed25519 -N '' -C alice@example.com -f "$W/alice"
  ssh-keygen -q -t ed25519 -N '' -C eve@example.com -f "$W/eve"
  echo "alice@example.com $(cut -d' ' -f1,2 "$W/alice.pub")" >"$W/allowed_signers"
  hpak sign sign -k "$W/alice" "$W/env.hpak" || true
  expect_eq "sign of a pack with a key file exits 0 ($(head -c 200 "$W/sign.err"))" 0 "$(cat "$W/sign.rc")"
  check "... ssh-keygen -Y verify accepts its signature" \
    ssh-keygen -q -Y verify -f "$W/allowed_signers" -I alice@example.com -n hpak -s "$W/env.hpak.sig" <"$W/env.hpak"
  hpak sigverify verify --allowed-signers "$W/allowed_signers" "$W/env.hpak" || true
  expect_eq "verify --allowed-signers of the signed pack exits 0 ($(head -c 200 "$W/sigverify.err"))" 0 "$(cat "$W/sigverify.rc")"
  check "... naming the signer" grep -q "good signature: .* by 'alice@example.com'" "$W/sigverify.out"
  cp "$W/env.hpak" "$W/eve.hpak" && cp "$W/env.hidx" "$W/eve.hidx"
  hpak evesign -q sign -k "$W/eve" "$W/eve.hpak" || true
  hpak evev verify --allowed-signers "$W/allowed_signers" "$W/eve.hpak" || true
  expect_eq "verify of a pack signed by a key not allowed exits 1" 1 "$(cat "$W/evev.rc")"
  hpak signname -q sign -k "$W/alice" "$lib" env || true
  expect_eq "sign of a library name exits 0 ($(head -c 200 "$W/signname.err"))" 0 "$(cat "$W/signname.rc")"
  hpak namesverify verify --allowed-signers "$W/allowed_signers" "$lib" || true
  check "verify --allowed-signers of the library: 'env' signed by alice" grep -q "^  env: good, generation 1, signed by 'alice@example.com'" "$W/namesverify.out"
  check "... 'reloc' unsigned" grep -q "^  reloc: unsigned" "$W/namesverify.out"
  expect_eq "... exit 1 (a name is unsigned)" 1 "$(cat "$W/namesverify.rc")"
  # A restore that requires signed names remembers the newest generation each
  # signer signed, in a directory of this user's no one else may write: on
  # Windows its owner SID and DACL say so (hpak-library(7), WINDOWS). Here in
  # XDG_STATE_HOME (a drive path: Wine passes the variable through).
  export XDG_STATE_HOME="Z:$W/state"
  hpak signedrestore -q restore --allowed-signers "$W/allowed_signers" "$lib" env "$W/signed-t" || true
  expect_eq "restore --allowed-signers of a signed name under Wine exits 0 ($(head -c 200 "$W/signedrestore.err"))" 0 "$(cat "$W/signedrestore.rc")"
  same_tree "... the tree restored byte for byte (manifest)" "$src" "$W/signed-t"
  expect_eq "... generation 1 remembered in the private directory" 1 "$(cat "$W"/state/hpak/generations/*-env 2>/dev/null)"
  # Wine shows a directory's Unix 'others may write' bit as an allow ACE
  # granting Everyone (S-1-1-0) write access: such a directory is refused.
  chmod o+w "$W/state/hpak/generations"
  hpak openrestore -q restore --allowed-signers "$W/allowed_signers" "$lib" env "$W/signed-t2" || true
  expect_eq "... with the generations directory writable by Everyone: exit 2" 2 "$(cat "$W/openrestore.rc")"
  expect_eq "... in one line" 1 "$(wc -l <"$W/openrestore.err")"
  check "... naming the directory and the SID that may write it ($(cat "$W/openrestore.err"))" grep -qF \
    "refusing catalog 'env': no private directory for the generations seen ('Z:$W/state/hpak/generations' is not private: 'Everyone' (S-1-1-0) may write it (its DACL allows it); set XDG_STATE_HOME)" "$W/openrestore.err"
  check "... having created nothing" test ! -e "$W/signed-t2"
  chmod o-w "$W/state/hpak/generations"
  unset XDG_STATE_HOME
elif [ "${CI:-}" = true ]; then
  fail "no ssh-keygen (CI=true: sign/verify must run; scripts/setup.sh --test installs openssh-client)"
fi

# ---- import of an rcc hololib zip exported on Windows: entry names with '\'
# separators, a windows_amd64 catalog whose space path is C:\...\<identity>,
# the path inside text files; imported and restored to a path of another
# length, the path rewritten to the target's (tests/tools/make_rcc_hololib.py
# lifts the tree; only the Windows parts are made here).
ident=h1a2b3c4_5d6e7f8a9b0c1dt
rcc_space="C:\\Users\\robot\\AppData\\Local\\robocorp\\holotree\\$ident"
rtree=$W/rcc/$ident
mkdir -p "$rtree/Scripts" "$rtree/Lib/site-packages"
printf '@echo off\r\nset "CONDA_PREFIX=%s"\r\nset "PATH=%s\\Scripts;%%PATH%%"\r\n' "$rcc_space" "$rcc_space" >"$rtree/Scripts/activate.bat"
printf 'print("no path")\n' >"$rtree/Lib/site-packages/mod.py"
head -c 100000 /dev/urandom >"$rtree/Lib/data.bin"
# rcc_zip OUT [DAMAGE]: the zip as rcc on Windows exports it (DAMAGE=dotdot: an entry naming '..').
rcc_zip() {
  python3 - "$root/tests/tools/make_rcc_hololib.py" "$rtree" "$rcc_space" "$1" "${2:-}" <<'PY'
import gzip, importlib.util, json, sys, zipfile
spec = importlib.util.spec_from_file_location("gen", sys.argv[1])
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
tree, space, out, damage = sys.argv[2:6]
lifter = gen.Lifter(tree)
info, cat = lifter.catalog()
for d in (info, cat):
    d["path"], d["platform"] = space, "windows_amd64"
name = info["blueprint"] + "v12.windows_amd64"
def put(z, entry, data):
    zi = zipfile.ZipInfo(entry, (1980, 1, 1, 0, 0, 0))
    zi.create_system = 0  # MS-DOS/Windows, as Go's archive/zip on Windows
    z.writestr(zi, data)
with zipfile.ZipFile(out, "w") as z:
    for d, b in sorted(lifter.objects.items()):
        put(z, "library\\%s\\%s\\%s\\%s" % (d[:2], d[2:4], d[4:6], d), gzip.compress(b, 1, mtime=0))
    if damage == "dotdot":
        put(z, "library\\..\\..\\escape", b"x")
    put(z, "catalog\\" + name, gzip.compress(json.dumps(cat, indent=2).encode(), 1, mtime=0))
print(name)
PY
}
rcc_name=$(rcc_zip "$W/rcc/hololib.zip")
check "the zip's entries are named with backslashes" python3 -c 'import sys, zipfile; sys.exit(not all("\\" in n for n in zipfile.ZipFile(sys.argv[1]).namelist()))' "$W/rcc/hololib.zip"
hpak import -q import "$W/implib" "$W/rcc/hololib.zip" || true
expect_eq "import of a Windows rcc zip exits 0 ($(head -c 200 "$W/import.err"))" 0 "$(cat "$W/import.rc")"
hpak impnames catalogs --names "$W/implib" || true
expect_eq "... one name, the rcc catalog's" "$rcc_name" "$(cat "$W/impnames.out")"
imp_t=$W/imported-t
hpak imprestore -q restore "$W/implib" "$rcc_name" "$imp_t" || true
expect_eq "... which restores ($(head -c 200 "$W/imprestore.err"))" 0 "$(cat "$W/imprestore.rc")"
check "... activate.bat names the target, twice, and no longer the rcc space" \
  test "$(grep -c -F "$(winpath "$imp_t")" "$imp_t/Scripts/activate.bat" 2>/dev/null)-$(grep -c -F "$rcc_space" "$imp_t/Scripts/activate.bat" 2>/dev/null)" = 2-0
check "... the other files byte for byte" cmp -s "$rtree/Lib/data.bin" "$imp_t/Lib/data.bin"
check "... (mod.py too)" cmp -s "$rtree/Lib/site-packages/mod.py" "$imp_t/Lib/site-packages/mod.py"
rcc_zip "$W/rcc/dotdot.zip" dotdot >/dev/null
hpak impdotdot import "$W/implib2" "$W/rcc/dotdot.zip" || true
expect_eq "import of a zip with an entry 'library\\..\\..\\escape' exits 1" 1 "$(cat "$W/impdotdot.rc")"
expect_eq "... in one line naming it" 1 "$(grep -c "zip entry 'library\\\\..\\\\..\\\\escape' in '.*dotdot.zip' names a parent directory" "$W/impdotdot.err")"
check "... having imported nothing" test -z "$(ls "$W/implib2/packs" 2>/dev/null)"

# ---- hpak bench in hpak.exe: its suites run hpak.exe (and hpak-gencorpus.exe, beside it) as
# child processes through the os seam (CreateProcessW; GetProcessTimes, but not under Wine); hpak-rccbase, hpak-ceiling,
# tar, git, strace and cp are not there, so their rows are left out with a note. The smallest run
# that still measures: --quick (tiny corpora, one run), the restore and verify suites, on the disk.
# The generated corpus has names outside ASCII (café-résumé): Wine maps names to Unix by the locale's
# charset, which LC_ALL=C (wine_lib.sh) has not, so these runs take a UTF-8 locale.
mkdir -p "$W/bench-disk"
LC_ALL=C.UTF-8 hpak bench -q bench --quick --suite restore,verify --json --disk "$W/bench-disk" --save "$W/bench-saved.json" || true
expect_eq "bench --quick --suite restore,verify exits 0 ($(tail -c 300 "$W/bench.err"))" 0 "$(cat "$W/bench.rc")"
check "... its --json: both suites measured by hpak.exe, the environment Windows' under Wine, no CPU times" python3 - "$W/bench.out" "$W/bench-saved.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert json.load(open(sys.argv[2])) == r, "--save wrote something else than --json printed"
assert r["suites"] == ["restore", "verify"] and r["quick"] is True and r["failed"] is False, (r["suites"], r["failed"])
env = r["environment"]
assert "Windows" in env["kernel"] and "Wine" in env["kernel"], env["kernel"]
assert env["cpus"] >= 1 and env["cpus_usable"] >= 1 and env["mem_bytes"] > 0 and env["cpu"], env
assert [m["name"] for m in env["media"]] == ["disk"] and env["media"][0]["fstype"], env["media"]
assert env["tools"]["hpak-gencorpus"].endswith("hpak-gencorpus.exe"), env["tools"]
assert env["tools"]["hpak-rccbase"] == "not found", env["tools"]
rows = {x["id"]: x for x in r["rows"]}
for rid in ("restore.fresh.disk.hpak", "restore.unpack.disk.hpak", "restore.dirty0.disk.hpak", "restore.dirty1.disk.hpak",
            "restore.dirty10.disk.hpak", "restore.churn.disk.hpak", "restore.cpu_work.decode_sha256", "verify.hpak"):
    x = rows.get(rid)
    assert x, "no row " + rid + " in " + " ".join(rows)
    assert x["error"] is None and x["n"] == len(x["samples"]) == 1 and x["median"] > 0, x
assert rows["restore.fresh.disk.hpak"]["count"] == 400, rows["restore.fresh.disk.hpak"]
assert rows["verify.hpak"]["bytes"] > 0 and rows["verify.hpak"]["count"] > 0, rows["verify.hpak"]
# Wine's GetProcessTimes of a child gives the caller's times: bench reports none (null), and says why.
cpu = [(x["metrics"]["cpu_user_s"], x["metrics"]["cpu_sys_s"]) for x in r["rows"] if x["role"] == "hpak" and x["suite"] == "restore" and x["samples"] and "cpu_user_s" in x["metrics"]]
assert cpu and all(u is None and s is None for u, s in cpu), "CPU times under Wine: %r" % cpu
assert any("none under Wine" in n for n in r["notes"]), r["notes"]
assert not any(x["id"].endswith((".rcc", ".ceiling")) for x in r["rows"]), "rows of tools not in the Windows build"
assert any("hpak-rccbase is not in this build" in n for n in r["notes"]), r["notes"]
assert any("Wine's, not Windows'" in n for n in r["notes"]), r["notes"]
PY
check "... and removed its work directory" test -z "$(ls "$W/bench-disk")"
LC_ALL=C.UTF-8 hpak benchtable -q bench --quick --suite verify --disk "$W/bench-disk" || true
expect_eq "bench --quick --suite verify (tables) exits 0" 0 "$(cat "$W/benchtable.rc")"
bench_table_ok() { # a "## verify" section; the machine line names Wine and its version
  local t
  t=$(<"$1")
  [[ $t == *$'\n## verify\n'* && $t =~ machine:\ [^$'\n']*Wine\ [0-9] ]]
}
check "... a verify section, the machine named as Windows under Wine" bench_table_ok "$W/benchtable.out"
hpak benchtmpfs bench --quick --media tmpfs || true
expect_eq "bench --media tmpfs without --tmpfs exits 2 (Windows has no tmpfs)" 2 "$(cat "$W/benchtmpfs.rc")"
check "... in one line saying so" grep -q "^hpak: error: Windows has no tmpfs: name a directory" "$W/benchtmpfs.err"

# ---- commands not in the Windows build: one line saying why
hpak mount mount "$lib" env "$W/mnt" || true
expect_eq "mount: one line saying why" "hpak: error: 'mount' is not in the Windows build (it needs FUSE and overlayfs: Linux only)" "$(cat "$W/mount.err")"
check "restore --json reports the seconds a restore took (what a Windows user times)" python3 -c 'import json,sys; sys.exit(not json.load(open(sys.argv[1]))["seconds"] >= 0)' "$W/fresh.out"

# ---- symbolic links (hpak-library(7), "Windows")
# Wine shows a Unix symbolic link as the file or directory it names (it has no
# reparse point for it), so a tree packed under Wine holds a copy, not a link.
lt=$W/linktree
mkdir -p "$lt/d" && printf 'target\n' >"$lt/d/f" && ln -s d/f "$lt/link"
hpak linkpack pack "$lt" -o "$W/links.hpak" || true
expect_eq "pack of a tree holding a Unix symlink exits 0 under Wine" 0 "$(cat "$W/linkpack.rc")"
check "... and records no symlink (Wine shows the file it names)" grep -q " 0 symlinks" "$W/linkpack.out"
hpak linkls ls -l "$W/links.hpak" || true
check "... 'link' is a regular file of the target's size" grep -Eq '^-r.* 7 .* link$' "$W/linkls.out"

# ---- compatibility with the Linux hpak
if [ -x "$linux_hpak" ]; then
  "$linux_hpak" -q pack "$src" --into "$W/linuxlib" --name env >/dev/null
  hpak fromlinux -q restore "$W/linuxlib" env "$W/from-linux" || true
  expect_eq "a library made on Linux restores under Wine ($(head -c 200 "$W/fromlinux.err"))" 0 "$(cat "$W/fromlinux.rc")"
  same_tree "... byte for byte (manifest)" "$src" "$W/from-linux"
  # A symlink of a Linux pack: CreateSymbolicLinkW, which Wine 8 answers with
  # success and no link; the os layer sees no link there (EOPNOTSUPP): one line, exit 2.
  "$linux_hpak" -q pack "$lt" -o "$W/linux-links.hpak" >/dev/null
  hpak linkunpack -q unpack "$W/linux-links.hpak" "$W/linkout" || true
  expect_eq "unpack of a pack holding a symlink fails under Wine" 2 "$(cat "$W/linkunpack.rc")"
  expect_eq "... in one line naming the link" "hpak: error: unable to create symlink '$W/linkout/link': Operation not supported" "$(cat "$W/linkunpack.err")"
  # A remote (the directory backend): published on Linux, fetched and restored under Wine, and back.
  "$linux_hpak" -q publish "$W/linuxlib" "$W/www/" >/dev/null
  hpak fetch -q fetch "$W/www" env --into "$W/fetched" || true
  expect_eq "fetch under Wine from a directory published on Linux exits 0 ($(head -c 200 "$W/fetch.err"))" 0 "$(cat "$W/fetch.rc")"
  hpak fetchedrestore -q restore "$W/fetched" env "$W/fetched-t" || true
  same_tree "... and restores the tree (manifest)" "$src" "$W/fetched-t"
  hpak publish -q publish "$lib" "$W/www-wine/" || true
  expect_eq "publish under Wine exits 0 ($(head -c 200 "$W/publish.err"))" 0 "$(cat "$W/publish.rc")"
  if ! { "$linux_hpak" -q fetch "$W/www-wine" env --into "$W/linux-fetched" &&
    "$linux_hpak" -q restore "$W/linux-fetched" env "$W/linux-fetched-t"; } >/dev/null 2>&1; then
    fail "Linux fetch and restore of the Wine publish"
  fi
  same_tree "... which Linux fetches and restores (manifest)" "$src" "$W/linux-fetched-t"
  if [ -f "$W/alice" ]; then
    # fetch --allowed-signers: a root signed on Linux accepted, its generation kept in
    # the private directory restore uses; refused while Everyone may write it.
    "$linux_hpak" -q publish -k "$W/alice" "$W/linuxlib" "$W/www-signed/" >/dev/null
    export XDG_STATE_HOME="Z:$W/fstate"
    hpak signedfetch -q fetch --allowed-signers "$W/allowed_signers" "$W/www-signed" env --into "$W/signed-fetched" || true
    expect_eq "fetch --allowed-signers under Wine of a root signed on Linux exits 0 ($(head -c 200 "$W/signedfetch.err"))" 0 "$(cat "$W/signedfetch.rc")"
    expect_eq "... generation 2 (the library's second publish) remembered in the private directory" 2 "$(cat "$W"/fstate/hpak/generations/remote-library-* 2>/dev/null)"
    chmod o+w "$W/fstate/hpak/generations"
    hpak openfetch -q fetch --allowed-signers "$W/allowed_signers" "$W/www-signed" env --into "$W/signed-fetched2" || true
    expect_eq "... with the generations directory writable by Everyone: exit 2" 2 "$(cat "$W/openfetch.rc")"
    check "... saying why ($(cat "$W/openfetch.err"))" grep -qF "no private directory for the generations seen ('Z:$W/fstate/hpak/generations' is not private: 'Everyone' (S-1-1-0) may write it" "$W/openfetch.err"
    chmod o-w "$W/fstate/hpak/generations"
    unset XDG_STATE_HOME
  fi
  # Names Windows cannot hold (core/restore/windows_names.hpp, always on for hpak.exe): refused in
  # one line before anything is created.
  mkdir -p "$W/names" && printf 'a\n' >"$W/names/Makefile" && printf 'b\n' >"$W/names/makefile"
  "$linux_hpak" -q pack "$W/names" -o "$W/names.hpak" >/dev/null
  hpak names -q unpack "$W/names.hpak" "$W/names-out" || true
  expect_eq "unpack of a case pair under Wine exits 2" 2 "$(cat "$W/names.rc")"
  check "... saying the names differ only in case" grep -q "'Makefile' and 'makefile' differ only in case" "$W/names.err"
  check "... having created nothing" test ! -e "$W/names-out"
  # An executable file: its exec bit is not applied on Windows nor read back;
  # an unchanged target writes nothing and counts it as a mode fixed.
  mkdir -p "$W/exe" && printf '#!/bin/sh\n' >"$W/exe/run.sh" && chmod 0755 "$W/exe/run.sh" && printf 'data\n' >"$W/exe/d.txt"
  "$linux_hpak" -q pack "$W/exe" --into "$W/exelib" --name env >/dev/null
  hpak exe1 -q restore "$W/exelib" env "$W/exet" --json || true
  hpak exe2 -q restore "$W/exelib" env "$W/exet" --json || true
  expect_eq "an unchanged target with an executable: nothing written" 0 "$(json "$W/exe2.out" written 2>/dev/null)"
  expect_eq "... one mode counted as fixed (the exec bit)" 1 "$(json "$W/exe2.out" modes_fixed 2>/dev/null)"
  "$linux_hpak" -q unpack "$W/env.hpak" "$W/on-linux" >/dev/null 2>"$W/onlinux.err" || fail "Linux unpack of the Wine pack: $(head -c 200 "$W/onlinux.err")"
  same_tree "a pack made under Wine unpacks on Linux identically (manifest)" "$src" "$W/on-linux"
  "$linux_hpak" -q restore "$lib" env "$W/wine-lib-on-linux" >/dev/null 2>"$W/winelib.err" || fail "Linux restore of the Wine library: $(head -c 200 "$W/winelib.err")"
  same_tree "a library made under Wine restores on Linux (manifest)" "$src" "$W/wine-lib-on-linux"
elif [ "${CI:-}" = true ]; then
  fail "no Linux hpak at $linux_hpak (CI=true: the compatibility part must run; scripts/build.sh builds it)"
else
  echo "test_wine_cli: compatibility left out: no Linux hpak at $linux_hpak (scripts/build.sh builds it)"
fi

finish
