#!/usr/bin/env bash
# Relocation never makes a file invalid in its own format (issue 25), checked
# with the programs users run on the restored tree:
#   - a real venv (python -m venv, with pip) restored to a longer and to a
#     shorter path: pip runs and reports the new path, python starts with
#     nothing on stderr, compileall finds every .pyc valid;
#   - the Python stdlib packed from where it lives, restored under a longer
#     prefix: Python starts on it, a few dozen modules import, every .pyc
#     passes marshal.loads, code loaded from them names the new path;
#   - an ELF program with a RUNPATH into the tree: to a shorter path it runs
#     and ld.so finds its library at the new path; to a longer path the
#     restore is refused in one line before anything is written, unless
#     --keep-unrelocated (then it is left as packed);
#   - a stored and a deflated zip holding the path: byte-identical, testzip()
#     passes; a .pyc holding the path: left as packed at another length;
#   - the same length: everything but the zips relocated (rcc's case);
#   - pack says how many files are relocated of each kind; dirty and no-op
#     restores and unpack --relocate follow the same rules.
. "$(dirname "$0")/cli_lib.sh" "$@"
need_tool gcc
need_tool ldd
need_tool readelf
py=$(command -v python3)
"$py" -c 'import ensurepip, venv' 2>/dev/null || fail "$py has no venv/ensurepip (Debian: python3-venv; scripts/setup.sh installs it)"

lib=$work/lib
"$hpak" init "$lib" >/dev/null

# pyc_digests DIR: "sha256  path" of every .pyc under DIR, sorted.
pyc_digests() { find "$1" -name '*.pyc' -type f -print0 | sort -z | xargs -0 -r sha256sum; }
# marshal_all DIR: every .pyc under DIR loads with marshal; prints how many.
marshal_all() {
  "$py" - "$1" <<'PY'
import marshal, pathlib, sys
n = 0
for p in pathlib.Path(sys.argv[1]).rglob("*.pyc"):
    marshal.loads(p.read_bytes()[16:])
    n += 1
print(n)
PY
}

echo "== a real venv, to a longer and to a shorter path"
venv_src=$work/v/envA
"$py" -m venv "$venv_src"
run pack-venv pack "$venv_src" --into "$lib" --name venv --json
expect_rc pack-venv 0
"$py" - "$work/pack-venv.out" <<'PY' || fail "pack --json: $(cat "$work/pack-venv.out")"
import json, sys
r = json.load(open(sys.argv[1]))["relocation"]
assert r["text"] >= 3 and r["same_length"] >= 100 and r["verbatim"] == 0 and r["in_place"] == 0, r
assert r["in_place_max_target"] is None, r
PY
for target in "$work/a-much-longer-path-than-before/envB" "$work/e"; do
  run restore-venv restore "$lib" venv "$target"
  expect_rc restore-venv 0
  if [ "${#target}" -ne "${#venv_src}" ]; then
    grep -q "files holding the packed path left as packed" "$work/restore-venv.out" || fail "restore does not say what it left as packed: $(out restore-venv)"
  fi
  before=$(pyc_digests "$target")
  [ -n "$before" ] || fail "no .pyc in the restored venv"
  pip_out=$("$target/bin/pip" --version 2>"$work/pip.err") || fail "pip --version in $target: $(cat "$work/pip.err")"
  case "$pip_out" in *"from $target/lib/"*) ;; *) fail "pip does not report the new path $target: $pip_out" ;; esac
  [ ! -s "$work/pip.err" ] || fail "pip printed on stderr: $(cat "$work/pip.err")"
  "$target/bin/python" -c 'import sys' 2>"$work/py.err" || fail "python in $target: $(cat "$work/py.err")"
  [ ! -s "$work/py.err" ] || fail "python -c 'import sys' printed on stderr: $(cat "$work/py.err")"
  prefix=$("$target/bin/python" -c 'import sys; print(sys.prefix)')
  [ "$prefix" = "$target" ] || fail "sys.prefix is '$prefix', not '$target'"
  "$target/bin/python" -m compileall -q "$target/lib" >/dev/null || fail "compileall failed in $target"
  after=$(pyc_digests "$target")
  # compileall may add a .pyc for a source that had none; none of the restored ones may change.
  changed=$(comm -23 <(echo "$before") <(echo "$after"))
  [ -z "$changed" ] || fail "compileall rewrote restored .pyc files (they were invalid): ${changed:0:600}"
  # A restore again writes nothing: the kept .pyc match what the rules say.
  run restore-venv-again restore "$lib" venv "$target" --json
  expect_rc restore-venv-again 0
  grep -q '"written":0,' "$work/restore-venv-again.out" || fail "no-op restore wrote files: $(out restore-venv-again)"
done

echo "== the Python stdlib, under a longer prefix"
stdlib=$("$py" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
ver=$(basename "$stdlib")
[ -f "$stdlib/os.py" ] || fail "no stdlib at $stdlib"
run pack-stdlib pack "$stdlib" --into "$lib" --name stdlib
expect_rc pack-stdlib 0
prefix=$work/a-considerably-longer-prefix-for-the-stdlib
run restore-stdlib restore "$lib" stdlib "$prefix/lib/$ver"
expect_rc restore-stdlib 0
n_pyc=$(marshal_all "$prefix/lib/$ver") || fail "a restored stdlib .pyc does not load with marshal"
[ "$n_pyc" -gt 10 ] || fail "only $n_pyc .pyc in the restored stdlib"
mods="os re json collections functools itertools email.parser http.client urllib.parse xml.etree.ElementTree decimal datetime
argparse logging subprocess threading asyncio unittest zipfile tarfile csv hashlib pathlib shutil tempfile textwrap typing
dataclasses enum inspect pickle struct base64 uuid random statistics fractions string codecs"
PYTHONHOME=$prefix PYTHONNOUSERSITE=1 PYTHONDONTWRITEBYTECODE=1 "$py" - "$prefix" $mods >"$work/stdlib.out" 2>"$work/stdlib.err" <<'PY' || fail "python on the restored stdlib: $(cat "$work/stdlib.err")"
import importlib, sys
prefix, mods = sys.argv[1], sys.argv[2:]
assert sys.prefix == prefix, (sys.prefix, prefix)
for m in mods:
    mod = importlib.import_module(m)
    f = getattr(mod, "__file__", None)
    assert f is None or f.startswith(prefix + "/"), (m, f)
import json.decoder
# Code loaded from an unrelocated .pyc names the new path (importlib fixes co_filename).
assert json.decoder.JSONDecoder.decode.__code__.co_filename.startswith(prefix + "/"), json.decoder.JSONDecoder.decode.__code__.co_filename
print(len(mods))
PY
n_mods=$(echo $mods | wc -w)
[ "$(cat "$work/stdlib.out")" -eq "$n_mods" ] || fail "stdlib imports: $(cat "$work/stdlib.out") of $n_mods"
[ ! -s "$work/stdlib.err" ] || fail "python on the restored stdlib printed on stderr: $(cat "$work/stdlib.err")"

echo "== ELF, zips, .pyc and text in one tree"
mixed=$work/mixed-source-tree-with-some-room/t
mkdir -p "$mixed/lib" "$mixed/bin" "$mixed/share/pkg"
printf 'int hello(void) { return 42; }\n' >"$work/lib.c"
printf '#include <stdio.h>\nint hello(void);\nint main(void) { printf("%%d\\n", hello()); return 0; }\n' >"$work/main.c"
gcc -shared -fPIC -o "$mixed/lib/libhello.so" "$work/lib.c"
gcc -o "$mixed/bin/hello" "$work/main.c" -L"$mixed/lib" -lhello -Wl,-rpath,"$mixed/lib"
grep -qE "R(UN)?PATH.*$mixed/lib" <<<"$(readelf -d "$mixed/bin/hello")" || fail "the test program has no RUNPATH into the tree"
echo "prefix=$mixed" >"$mixed/share/config.txt"
printf 'def where():\n    return __file__\n' >"$mixed/share/pkg/mod.py"
"$py" - "$mixed" <<'PY'
import py_compile, sys, zipfile
root = sys.argv[1]
py_compile.compile(f"{root}/share/pkg/mod.py", doraise=True)
with zipfile.ZipFile(f"{root}/share/stored.zip", "w", zipfile.ZIP_STORED) as z:
    z.writestr("paths.txt", f"{root}/lib\n{root}/bin\n")
with zipfile.ZipFile(f"{root}/share/deflated.zip", "w", zipfile.ZIP_DEFLATED) as z:
    z.comment = root.encode()
    z.writestr(f"files{root}/data.txt", "x" * 5000)
PY
grep -q "$mixed" "$mixed/share/stored.zip" || fail "the stored zip does not hold the path"
grep -q "$mixed" "$mixed/share/deflated.zip" || fail "the deflated zip does not hold the path"
pyc=$(cd "$mixed" && echo share/pkg/__pycache__/mod.*.pyc)
grep -q "$mixed" "$mixed/$pyc" || fail "the .pyc does not hold the path"
run pack-mixed pack "$mixed" --into "$lib" --name mixed
expect_rc pack-mixed 0
grep -qE '^relocation: 1 text \(any target path\), 1 binary in place \(target paths of at most '"${#mixed}"' bytes\), 1 same length only .*, 2 never rewritten \(zip, compressed\)$' "$work/pack-mixed.out" ||
  fail "pack does not count the relocated files by kind: $(out pack-mixed)"
run pack-file pack "$mixed" -o "$work/mixed.hpak" # for unpack, below
expect_rc pack-file 0
cp -a "$mixed" "$work/packed" # the bytes as packed, for comparison
rm -rf "$work/mixed-source-tree-with-some-room" # nothing may still find the old path

# check_zips DIR: byte-identical to the packed ones, and valid.
check_zips() {
  cmp "$1/share/stored.zip" "$work/packed/share/stored.zip" || fail "$1: the stored zip was rewritten"
  cmp "$1/share/deflated.zip" "$work/packed/share/deflated.zip" || fail "$1: the deflated zip was rewritten"
  "$py" -c 'import sys, zipfile
for p in sys.argv[1:]:
    assert zipfile.ZipFile(p).testzip() is None, p' "$1/share/stored.zip" "$1/share/deflated.zip" || fail "$1: testzip failed"
}
# runs_from DIR: bin/hello runs and ld.so finds libhello at DIR/lib.
runs_from() {
  [ "$("$1/bin/hello")" = 42 ] || fail "$1/bin/hello does not run"
  grep -q "libhello.so => $1/lib/libhello.so" <<<"$(ldd "$1/bin/hello")" || fail "ld.so does not find libhello in $1/lib: $(ldd "$1/bin/hello")"
}
# mod_where DIR: the module's __file__ and its code's co_filename, loaded from DIR.
mod_where() {
  PYTHONDONTWRITEBYTECODE=1 "$py" -c 'import sys; sys.path.insert(0, sys.argv[1] + "/share"); import pkg.mod as m
assert m.__cached__ and m.where() == m.__file__, (m.where(), m.__file__)
print(m.where.__code__.co_filename)' "$1"
}

short=$work/s/t
run restore-short restore "$lib" mixed "$short"
expect_rc restore-short 0
runs_from "$short"
check_zips "$short"
cmp "$short/$pyc" "$work/packed/$pyc" || fail "the .pyc was rewritten at another length"
[ "$(mod_where "$short")" = "$short/share/pkg/mod.py" ] || fail "code from the kept .pyc does not name the new path: $(mod_where "$short")"
[ "$(cat "$short/share/config.txt")" = "prefix=$short" ] || fail "text not relocated: $(cat "$short/share/config.txt")"
[ "$(stat -c %s "$short/bin/hello")" = "$(stat -c %s "$work/packed/bin/hello")" ] || fail "the ELF changed size"

same=$work/mixed-source-tree-with-some-room/T # the packed path's length
[ "${#same}" -eq "${#mixed}" ] || fail "test bug: same-length target"
run restore-same restore "$lib" mixed "$same"
expect_rc restore-same 0
runs_from "$same"
check_zips "$same"
grep -q "$same" "$same/$pyc" || fail "same length: the .pyc was not relocated"
marshal_all "$same/share" >/dev/null || fail "same length: the relocated .pyc does not load"
[ "$(mod_where "$same")" = "$same/share/pkg/mod.py" ] || fail "same length: co_filename $(mod_where "$same")"
rm -rf "$work/mixed-source-tree-with-some-room"

long=$work/a-target-path-that-is-longer-than-the-packed-one/t
run restore-long restore "$lib" mixed "$long"
refused restore-long "cannot relocate into '$long': 'bin/hello' holds the packed path in NUL-terminated strings, which take a path of at most ${#mixed} bytes, and '$long' has ${#long} \(restore to a shorter path, or pass --keep-unrelocated"
[ ! -e "$work/a-target-path-that-is-longer-than-the-packed-one" ] || fail "the refused restore created its target"
mkdir "$work/empty-and-longer-than-the-packed-path-by-far"
run restore-long2 restore "$lib" mixed "$work/empty-and-longer-than-the-packed-path-by-far"
refused restore-long2 "'bin/hello' holds the packed path"
[ -z "$(ls -A "$work/empty-and-longer-than-the-packed-path-by-far")" ] || fail "the refused restore wrote into its target"
run restore-keep restore "$lib" mixed "$long" --keep-unrelocated
expect_rc restore-keep 0
cmp "$long/bin/hello" "$work/packed/bin/hello" || fail "--keep-unrelocated: the ELF was not left as packed"
check_zips "$long"
[ "$(cat "$long/share/config.txt")" = "prefix=$long" ] || fail "--keep-unrelocated: text not relocated"
grep -q "^4 files holding the packed path left as packed" "$work/restore-keep.out" || fail "restore does not count what it left: $(out restore-keep)"

echo "== dirty restore: a spliced .pyc (as an older hpak wrote it) is put back as packed"
printf 'garbage' >>"$short/$pyc"
printf '\0\0' >>"$short/bin/hello"
run restore-dirty restore "$lib" mixed "$short" --json
expect_rc restore-dirty 0
grep -q '"written":2,' "$work/restore-dirty.out" || fail "dirty restore: $(out restore-dirty)"
cmp "$short/$pyc" "$work/packed/$pyc" || fail "dirty restore: the .pyc is not as packed"
runs_from "$short"
run restore-noop restore "$lib" mixed "$short" --json
grep -q '"written":0,' "$work/restore-noop.out" || fail "no-op restore: $(out restore-noop)"

echo "== unpack --relocate follows the same rules; plain unpack writes the bytes as packed"
run unpack-rel unpack "$work/mixed.hpak" "$work/u/t" --relocate
expect_rc unpack-rel 0
runs_from "$work/u/t"
cmp "$work/u/t/$pyc" "$work/packed/$pyc" || fail "unpack --relocate rewrote the .pyc at another length"
[ "$(cat "$work/u/t/share/config.txt")" = "prefix=$work/u/t" ] || fail "unpack --relocate: text not relocated: $(cat "$work/u/t/share/config.txt")"
run unpack-long unpack "$work/mixed.hpak" "$work/unpack-target-that-is-much-longer-than-packed" --relocate
refused unpack-long "'bin/hello' holds the packed path"
[ ! -e "$work/unpack-target-that-is-much-longer-than-packed" ] || fail "the refused unpack created its target"
run unpack-plain unpack "$work/mixed.hpak" "$work/plain"
expect_rc unpack-plain 0
diff -r "$work/plain" "$work/packed" >/dev/null || fail "plain unpack changed bytes"
run unpack-bad unpack "$work/mixed.hpak" "$work/x" --keep-unrelocated
refused unpack-bad "--keep-unrelocated needs --relocate"

echo "test_relocation: ok"
