#!/usr/bin/env bash
# Progress on a terminal: each long operation (pack into a library, pack to a
# file, unpack, restore fresh and dirty, verify of a pack and of a library,
# gc --dry-run and a real gc, import of an rcc hololib, publish, fetch from
# nginx) run with stderr on a pseudo-terminal draws "\r<phase>: done/total (n%)"
# lines and erases them before its summary; the same run with stderr not a
# terminal, or with -q on the terminal, draws nothing (its stderr is empty).
# nginx missing: fetch is left out (a failure under CI=true).
#   $1 = hpak binary, $2 = source root
. "$(dirname "$0")/cli_lib.sh" "$@"
. "$(dirname "$0")/remote_helpers.sh"
trap 'status=$?; stop_servers; (exit $status); cli_cleanup; exit $status' EXIT

# on_tty OUT ARGS...: runs hpak with stderr on a pty (stdout to OUT.stdout);
# what it wrote on the pty goes to OUT.tty; the status is the run's.
on_tty() {
  local out=$1
  shift
  python3 - "$out" "$hpak" "$@" <<'PY'
import os, pty, subprocess, sys
out, args = sys.argv[1], sys.argv[2:]
master, slave = pty.openpty()
with open(out + ".stdout", "wb") as so:
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=so, stderr=slave)
os.close(slave)
data = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:  # EIO: the last writer closed the pty
        break
    if not chunk:
        break
    data += chunk
rc = p.wait()
open(out + ".tty", "wb").write(data)
sys.exit(rc)
PY
}

# check NAME PHASE ARGS...: the tty run draws PHASE and clears the line; the
# piped run and the -q tty run draw nothing. ARGS may contain @N@, replaced by
# a fresh name per run (for targets that must not exist yet).
check() {
  local name=$1 phase=$2 run_args=()
  shift 2
  for mode in tty pipe quiet; do
    run_args=()
    for a in "$@"; do run_args+=("${a//@N@/$mode}"); done
    case $mode in
    tty) on_tty "$work/$name.tty" "${run_args[@]}" || fail "$name on a tty: exit $?: $(cat -v "$work/$name.tty.tty")" ;;
    quiet) on_tty "$work/$name.quiet" -q "${run_args[@]}" || fail "$name -q on a tty: exit $?" ;;
    pipe) "$hpak" "${run_args[@]}" >"$work/$name.pipe.stdout" 2>"$work/$name.pipe.err" || fail "$name piped: exit $?: $(cat "$work/$name.pipe.err")" ;;
    esac
  done
  grep -aqE $'\r'"$phase: [0-9]+/[0-9]+ \\([0-9]+%\\)" "$work/$name.tty.tty" ||
    fail "$name: no '$phase' progress on the tty: $(head -c 1000 "$work/$name.tty.tty" | cat -v)"
  grep -aqE "$phase: ([0-9]+)/\\1 \\(100%\\)" "$work/$name.tty.tty" || fail "$name: '$phase' never reached 100%: $(head -c 1000 "$work/$name.tty.tty" | cat -v)"
  # The line is erased ("\r" + erase to end of line) before anything else is printed.
  grep -aq $'\r\033\[K$' "$work/$name.tty.tty" || grep -aq $'\r\033\[Khpak:' "$work/$name.tty.tty" ||
    fail "$name: the progress line is not erased: $(cat -v "$work/$name.tty.tty" | tail -c 300)"
  [ ! -s "$work/$name.pipe.err" ] || fail "$name: stderr not a terminal, yet it printed: $(head -c 500 "$work/$name.pipe.err" | cat -v)"
  [ ! -s "$work/$name.quiet.tty" ] || fail "$name: -q on a tty, yet it drew: $(head -c 500 "$work/$name.quiet.tty" | cat -v)"
  echo "ok: $name draws '$phase' on a tty, nothing when piped or with -q"
}

make_tree "$work/env" 300
make_tree "$work/env2" 200 2
"$hpak" -q init "$work/lib" >/dev/null

check pack-file pack pack "$work/env" -o "$work/@N@.hpak"
check pack-into pack pack "$work/env" --into "$work/lib" --name "env-@N@"
"$hpak" -q pack "$work/env2" --into "$work/lib" --name other >/dev/null
check unpack write unpack "$work/tty.hpak" "$work/unpacked-@N@"
check verify-pack verify verify "$work/tty.hpak"
check verify-library verify verify "$work/lib"
check restore-fresh write restore "$work/lib" env-tty "$work/space-@N@"
# Dirty: the same target each time, changed before each run.
for mode in tty pipe quiet; do
  "$hpak" -q restore "$work/lib" env-tty "$work/dirty-$mode" >/dev/null # a space of its own (a copy would need --force)
  rm -rf "$work/dirty-$mode/lib/python3.11/encodings"
  echo changed >"$work/dirty-$mode/bin/pip3.11"
done
check restore-dirty scan restore "$work/lib" env-tty "$work/dirty-@N@"
grep -q "(dirty)" "$work/restore-dirty.tty.stdout" || fail "restore-dirty was not dirty: $(cat "$work/restore-dirty.tty.stdout")"
grep -aqE $'\r'"write: [0-9]+/[0-9]+" "$work/restore-dirty.tty.tty" || fail "restore-dirty: no 'write' progress"
# gc: drop catalogs so that packs hold garbage and are rewritten (--grace 0: nothing else writes).
check gc-dry-run mark gc --grace 0 --dry-run "$work/lib"
# A real gc, in a library of its own per run: "env3" is "other" with some files changed, so once "other"
# is dropped its pack is partly garbage (rewritten) and the pack of "other-gone" all garbage (deleted).
cp -a "$work/env2" "$work/env3"
find "$work/env3" -name 'm1*.py' -exec sh -c 'echo changed >>"$1"' sh {} \;
for mode in tty pipe quiet; do
  "$hpak" -q init "$work/gclib-$mode" >/dev/null
  "$hpak" -q pack "$work/env2" --into "$work/gclib-$mode" --name other >/dev/null
  "$hpak" -q pack "$work/env3" --into "$work/gclib-$mode" --name env3 >/dev/null
  "$hpak" -q pack "$work/env" --into "$work/gclib-$mode" --name other-gone >/dev/null
  "$hpak" -q catalogs rm "$work/gclib-$mode" other other-gone >/dev/null
done
check gc repack gc --grace 0 "$work/gclib-@N@"
for phase in mark scan; do
  grep -aqE $'\r'"$phase: [0-9]+/[0-9]+" "$work/gc.tty.tty" || fail "gc: no '$phase' progress: $(head -c 1000 "$work/gc.tty.tty" | cat -v)"
done
grep -q "^rewrite " "$work/gc.tty.stdout" && grep -q "^delete " "$work/gc.tty.stdout" ||
  fail "gc did not both rewrite and delete a pack: $(cat "$work/gc.tty.stdout")"
echo "ok: gc draws mark, scan and repack"

# import: an rcc hololib (tests/tools/make_rcc_hololib.py) into a library of its own per run.
python3 "$src_root/tests/tools/make_rcc_hololib.py" tree "$work/holotree/h1a2b3c4_5d6e7f8a9b0c1dt"
python3 "$src_root/tests/tools/make_rcc_hololib.py" lift "$work/holotree/h1a2b3c4_5d6e7f8a9b0c1dt" "$work/hololib" >/dev/null
check import import import "$work/implib-@N@" "$work/hololib"

# publish into a directory, then fetch it from nginx into a cache library of its own per run.
check publish publish publish "$work/lib" "$work/www/pub-@N@"
if need_tool nginx "fetch (from nginx)" && need_tool curl "fetch (from nginx)"; then
  start_nginx "$work/www" "$work/nginx" || fail "nginx did not start"
  check fetch fetch fetch "http://127.0.0.1:$nginx_port/pub-tty" env-tty --into "$work/cache-@N@"
fi
