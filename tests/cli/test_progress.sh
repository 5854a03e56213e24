#!/usr/bin/env bash
# Progress on a terminal: each long operation (pack into a library, pack to a
# file, unpack, restore fresh and dirty, verify of a pack and of a library,
# gc) run with stderr on a pseudo-terminal draws "\r<phase>: done/total (n%)"
# lines and erases them before its summary; the same run with stderr not a
# terminal, or with -q on the terminal, draws nothing (its stderr is empty).
#   $1 = hpak binary, $2 = source root
. "$(dirname "$0")/cli_lib.sh" "$@"

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
  local name=$1 phase=$2 run_args=() i
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
    fail "$name: no '$phase' progress on the tty: $(cat -v "$work/$name.tty.tty" | head -c 1000)"
  grep -aqE "$phase: ([0-9]+)/\\1 \\(100%\\)" "$work/$name.tty.tty" || fail "$name: '$phase' never reached 100%: $(cat -v "$work/$name.tty.tty" | head -c 1000)"
  # The line is erased ("\r" + erase to end of line) before anything else is printed.
  grep -aq $'\r\033\[K$' "$work/$name.tty.tty" || grep -aq $'\r\033\[Khpak:' "$work/$name.tty.tty" ||
    fail "$name: the progress line is not erased: $(cat -v "$work/$name.tty.tty" | tail -c 300)"
  [ ! -s "$work/$name.pipe.err" ] || fail "$name: stderr not a terminal, yet it printed: $(cat -v "$work/$name.pipe.err" | head -c 500)"
  [ ! -s "$work/$name.quiet.tty" ] || fail "$name: -q on a tty, yet it drew: $(cat -v "$work/$name.quiet.tty" | head -c 500)"
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
check gc mark gc --grace 0 --dry-run "$work/lib"
"$hpak" catalogs rm "$work/lib" env-pipe env-quiet other >/dev/null
on_tty "$work/gc-real" gc --grace 0 "$work/lib" || fail "gc on a tty: exit $?"
for phase in mark scan repack; do
  grep -aqE $'\r'"$phase: [0-9]+/[0-9]+" "$work/gc-real.tty" || fail "gc: no '$phase' progress: $(cat -v "$work/gc-real.tty" | head -c 1000)"
done
echo "ok: gc draws mark, scan and repack"
