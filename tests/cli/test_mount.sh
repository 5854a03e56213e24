#!/usr/bin/env bash
# hpak mount / hpak umount (issue 31): a catalog served read-only over FUSE,
# exactly as a restore into the mount point writes it.
# - library and pack mounts: content, modes, mtimes, symlinks, hard links
#   (shared inode numbers) and relocation equal a restore (unpack --relocate)
#   into the very same path (a manifest of find/stat and SHA-256 of each file);
# - python3 imports stdlib modules from a mounted copy of them;
# - a damaged object gives EIO for that file (and a log line), the others read
#   (also a large raw object served from the pack's mapping, read before the damage);
# - an ioctl on an open small file (Python's isatty) stores its bytes in the
#   kernel's cache (pages resident before any read; none with prefill off),
#   a damaged one is not stored and still gives EIO through Python;
# - with every kernel cache switched off (HPAK_MOUNT_OFF) the same tree, also
#   with libfuse's multi-threaded loop; an unknown setting refused;
# - one thread answers a lone reader's requests (the busiest server thread
#   takes >= 90% of the wakes of 300 lookups);
# - a file cannot be written; a bad mount point or catalog is a one-line error;
# - unmount while a file is open: refused, or detached with --lazy (the open
#   file still reads; the server ends when it is closed);
# - gc while mounted: the mount keeps reading after its packs were rewritten;
# - the hostile packs of tests/data/hostile: refused with one line, or served
#   without the server dying.
# Every mount is unmounted on exit, whatever happens.
# ctest runs: bash test_mount.sh <hpak-binary> <source-root>.
. "$(dirname "$0")/cli_lib.sh" "$@"
need_tool fusermount3
if [ ! -e /dev/fuse ]; then
  [ "${CI:-}" = true ] && fail "/dev/fuse is missing"
  echo "$test_name: skipped: no /dev/fuse"
  exit 125
fi

mounts=()
mount_cleanup() {
  local status=$? m
  for m in "${mounts[@]}"; do
    if mountpoint -q "$m" 2>/dev/null; then fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; fi
  done
  (exit "$status")
  cli_cleanup
}
trap mount_cleanup EXIT

fails=0
bad() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
ok() { echo "ok: $*"; }

# manifest DIR: every entry below DIR (the state file aside): path, type, mode,
# size, mtime (ns), symlink target, SHA-256 of a file, and for a hard-linked
# file the first path of its inode (so link groups compare, not numbers).
manifest() {
  python3 - "$1" <<'PY'
import hashlib, os, stat, sys
root = sys.argv[1]
rows, first = [], {}
for d, dirs, files in os.walk(root):
    dirs.sort()
    for name in sorted(dirs + files):
        p = os.path.join(d, name)
        rel = os.path.relpath(p, root)
        if rel == ".hpak-state":
            continue
        st = os.lstat(p)
        kind, extra = "?", ""
        if stat.S_ISDIR(st.st_mode):
            kind = "d"
        elif stat.S_ISLNK(st.st_mode):
            kind, extra = "l", os.readlink(p)
        elif stat.S_ISREG(st.st_mode):
            kind = "f"
            with open(p, "rb") as f:
                extra = hashlib.sha256(f.read()).hexdigest()
            if st.st_nlink > 1:
                extra += " group=" + first.setdefault(st.st_ino, rel)
        mode = "" if kind == "l" else oct(stat.S_IMODE(st.st_mode))
        rows.append(f"{rel} {kind} {mode} {st.st_size if kind != 'd' else ''} {st.st_mtime_ns} {extra}")
for r in sorted(rows):
    print(r)
PY
}

# mount_bg NAME ARGS...: hpak mount in the background (returns once mounted).
mount_bg() {
  local name=$1
  shift
  mounts+=("${!#}")
  run "$name" mount "$@"
}
umount_ok() {
  run "umount-$1" umount "$2"
  [ "$rc" -eq 0 ] || bad "umount $2: exit $rc: $(err "umount-$1")"
  mountpoint -q "$2" && bad "$2 still mounted after umount"
  return 0
}

# A tree with relocated text (a shebang and a config holding the packed
# path), an absolute symlink into it, hard links, modes and mtimes.
src=$work/src/env
make_tree "$src" 80 3
mkdir -p "$src/bin" "$src/etc"
printf '#!%s/bin/python\nprint("hi")\n' "$src" >"$src/bin/tool"
chmod 0755 "$src/bin/tool"
printf 'home = %s\nprefix = %s/lib\n' "$src" "$src" >"$src/etc/env.cfg"
ln -sf "$src/etc/env.cfg" "$src/bin/cfg-link"
printf 'shared\n' >"$src/etc/a"
ln -f "$src/etc/a" "$src/etc/b"
chmod 4755 "$src/etc/a" # set-uid: dropped, as restore drops it
touch -h -d @1600000000.123456789 "$src/bin/cfg-link" "$src/etc/env.cfg"
lib=$work/lib
run pack pack "$src" --into "$lib" --name env
expect_rc pack 0

mnt=$work/mnt
# The reference: a restore into the mount point's own path, then emptied again.
run restore restore "$lib" env "$mnt"
expect_rc restore 0
manifest "$mnt" >"$work/restored.manifest"
grep -q "$mnt/etc/env.cfg" <<<"$(readlink "$mnt/bin/cfg-link")" || fail "the restore did not relocate the symlink"
rm -rf "$mnt"
mkdir "$mnt"
touch -d @1500000000 "$mnt"

mount_bg mount-lib "$lib" env "$mnt"
if [ "$rc" -ne 0 ]; then fail "mount LIB env: exit $rc: $(err mount-lib)"; fi
mountpoint -q "$mnt" || fail "mount returned but '$mnt' is not mounted"
grep -q "mounted 'env' on '$mnt'" "$work/mount-lib.out" || bad "mount did not say what it mounted: $(out mount-lib)"
manifest "$mnt" >"$work/mounted.manifest"
if diff "$work/restored.manifest" "$work/mounted.manifest" >"$work/manifest.diff"; then
  ok "library mount equals a restore into the same path ($(wc -l <"$work/mounted.manifest") entries)"
else
  bad "library mount differs from the restore: $(sed -n 1,20p "$work/manifest.diff")"
fi
[ "$(stat -c %i "$mnt/etc/a")" = "$(stat -c %i "$mnt/etc/b")" ] && [ "$(stat -c %h "$mnt/etc/a")" = 2 ] ||
  bad "hard links do not share an inode"
grep -q "^#!$mnt/bin/python" "$mnt/bin/tool" || bad "the shebang is not relocated to the mount point"
[ "$(stat -c %a "$mnt/etc/a")" = 755 ] || bad "set-uid bit not dropped: $(stat -c %a "$mnt/etc/a")"
# Read-only.
if (echo x >>"$mnt/etc/a") 2>/dev/null; then bad "a mounted file could be written"; else ok "a mounted file cannot be written"; fi
if touch "$mnt/new" 2>/dev/null; then bad "a file could be created in the mount"; fi
# Reading twice (the kernel's cache and a fresh open) gives the same bytes.
cmp -s "$mnt/bin/tool" "$mnt/bin/tool" || bad "a second read differs"
umount_ok lib "$mnt"

# With no decoded file kept (--cache-size 0: each one dropped once no read holds it, and decoded again on the
# next read the kernel sends): the same tree, and a 3 MiB file served by many read requests.
mount_bg mount-c0 --cache-size 0 "$lib" env "$mnt"
expect_rc mount-c0 0
manifest "$mnt" >"$work/c0.manifest"
if diff "$work/restored.manifest" "$work/c0.manifest" >/dev/null; then ok "--cache-size 0: the mount equals the restore"; else bad "--cache-size 0: the mount differs from the restore"; fi
umount_ok c0 "$mnt"
mkdir -p "$work/src-big"
head -c 3145728 /dev/urandom >"$work/src-big/big.bin"
printf 'tail\n' >>"$work/src-big/big.bin"
run pack-big pack "$work/src-big" --into "$lib" --name big
expect_rc pack-big 0
mount_bg mount-big --cache-size 0 "$lib" big "$mnt"
expect_rc mount-big 0
if cmp -s "$work/src-big/big.bin" "$mnt/big.bin" && cmp -s "$work/src-big/big.bin" "$mnt/big.bin"; then
  ok "--cache-size 0: a 3 MiB file reads back exactly, twice"
else
  bad "--cache-size 0: the 3 MiB file differs"
fi
umount_ok big "$mnt"

# Prefill: an ioctl on an open small file (Python's isatty) stores its bytes in the kernel's page cache before
# any read (fincore counts the resident pages); with HPAK_MOUNT_OFF=prefill nothing is.
resident_after_isatty() {
  python3 -c '
import os, subprocess, sys
f = open(sys.argv[1], "rb")  # buffered: asks isatty (ioctl TCGETS), reads nothing
print(subprocess.run(["fincore", "-n", "-b", "-o", "RES", sys.argv[1]], capture_output=True, text=True, check=True).stdout.strip())' "$1"
}
mount_bg mount-pf "$lib" env "$mnt"
expect_rc mount-pf 0
pf_size=$(stat -c %s "$mnt/etc/env.cfg")
pf_res=$(resident_after_isatty "$mnt/etc/env.cfg")
[ "$pf_res" -gt 0 ] && ok "an ioctl stored a small file's bytes in the kernel's cache ($pf_res bytes resident, size $pf_size)" ||
  bad "prefill: nothing resident after an ioctl: '$pf_res'"
[ "$(cat "$mnt/etc/env.cfg")" = "$(printf 'home = %s\nprefix = %s/lib' "$mnt" "$mnt")" ] || bad "a prefilled file reads wrong: $(cat "$mnt/etc/env.cfg")"
umount_ok pf "$mnt"
HPAK_MOUNT_OFF=prefill mount_bg mount-npf "$lib" env "$mnt"
expect_rc mount-npf 0
pf_res=$(resident_after_isatty "$mnt/etc/env.cfg")
[ "$pf_res" = 0 ] && ok "HPAK_MOUNT_OFF=prefill: nothing resident before a read" || bad "HPAK_MOUNT_OFF=prefill: '$pf_res' bytes resident"
umount_ok npf "$mnt"

# Every kernel cache switched off (HPAK_MOUNT_OFF, for bench/mount-cache.sh): the same tree, read twice, and
# with the single-threaded loop; an unknown setting is refused before anything is mounted.
all_off=timeouts,keep_cache,no_open,no_opendir,cache_readdir,cache_symlinks,readdirplus,splice,threads,prefill,async_read,readahead,max_read
HPAK_MOUNT_OFF=$all_off mount_bg mount-off "$lib" env "$mnt"
expect_rc mount-off 0
manifest "$mnt" >"$work/off.manifest"
manifest "$mnt" >"$work/off2.manifest"
if diff "$work/restored.manifest" "$work/off.manifest" >/dev/null && diff "$work/off.manifest" "$work/off2.manifest" >/dev/null; then
  ok "HPAK_MOUNT_OFF=$all_off: the mount equals the restore, twice"
else
  bad "HPAK_MOUNT_OFF=$all_off: the mount differs from the restore"
fi
umount_ok off "$mnt"
# libfuse's multi-threaded loop (HPAK_MOUNT_OFF=own_loop) with the read settings off: the same tree.
HPAK_MOUNT_OFF=own_loop,async_read,readahead,max_read mount_bg mount-mt "$lib" env "$mnt"
expect_rc mount-mt 0
manifest "$mnt" >"$work/mt.manifest"
diff "$work/restored.manifest" "$work/mt.manifest" >/dev/null && ok "HPAK_MOUNT_OFF=own_loop,async_read,readahead,max_read: the mount equals the restore" ||
  bad "HPAK_MOUNT_OFF=own_loop,...: the mount differs from the restore"
umount_ok mt "$mnt"

# One thread answers a lone reader's requests (the default): 300 lookups one after the other (names that do
# not exist, each a request) wake the server's threads; the busiest must take at least 90% of the wakes. The
# reader pauses 1 ms between lookups so that each one finds the server asleep (without the pause a slow server
# still busy with its last reply takes the next request without a wake: 98 wakes of 300 in one CI run). In
# libfuse's multi-threaded loop (the default before) the kernel hands them to its idle threads in turn.
busiest_share() { # SERVER_PID: the busiest thread's share (%) of the voluntary switches during 300 lookups
  local pid=$1
  python3 - "$pid" "$mnt" <<'PY'
import glob, os, sys, time
pid, mnt = sys.argv[1], sys.argv[2]
def switches():
    out = {}
    for f in glob.glob(f"/proc/{pid}/task/*/status"):
        for line in open(f):
            if line.startswith("voluntary_ctxt_switches:"):
                out[f] = int(line.split()[1])
    return out
before = switches()
for i in range(300):
    os.path.exists(os.path.join(mnt, f"no-such-name-{i}"))
    time.sleep(0.001)
after = switches()
d = [after[k] - before.get(k, 0) for k in after]
print(100 * max(d) // max(1, sum(d)), sum(d))
PY
}
for arm in default own_loop; do
  if [ "$arm" = default ]; then mount_bg mount-one "$lib" env "$mnt"; else HPAK_MOUNT_OFF=own_loop mount_bg mount-one "$lib" env "$mnt"; fi
  expect_rc mount-one 0
  server=$(pgrep -n -f -- "$lib env $mnt\$" || true)
  if [ -z "$server" ]; then
    bad "no server process found for $mnt"
  else
    read -r share wakes <<<"$(busiest_share "$server")"
    if [ "$arm" = default ]; then
      [ "$wakes" -ge 100 ] && [ "$share" -ge 90 ] && ok "one thread answered a lone reader's lookups ($share% of $wakes wakes)" ||
        bad "a lone reader's lookups were spread over the server's threads: the busiest took $share% of $wakes wakes"
    else
      echo "info: libfuse's multi-threaded loop: its busiest thread took $share% of $wakes wakes"
    fi
  fi
  umount_ok one "$mnt"
done

HPAK_MOUNT_OFF=timeouts,bogus run mount-offbad mount "$lib" env "$mnt"
refused mount-offbad "HPAK_MOUNT_OFF: unknown setting 'bogus'"
mountpoint -q "$mnt" && bad "a refused HPAK_MOUNT_OFF left '$mnt' mounted"

# A pack mount equals unpack --relocate into the same path.
pack=$work/env.hpak
run packfile pack "$src" -o "$pack"
expect_rc packfile 0
rm -rf "$mnt" && mkdir "$mnt"
run unpack unpack --relocate "$pack" "$mnt"
expect_rc unpack 0
manifest "$mnt" >"$work/unpacked.manifest"
rm -rf "$mnt" && mkdir "$mnt"
mount_bg mount-pack "$pack" "$mnt"
[ "$rc" -eq 0 ] || fail "mount PACK: exit $rc: $(err mount-pack)"
manifest "$mnt" >"$work/mounted-pack.manifest"
if diff "$work/unpacked.manifest" "$work/mounted-pack.manifest" >"$work/manifest-pack.diff"; then
  ok "pack mount equals unpack --relocate into the same path"
else
  bad "pack mount differs from unpack --relocate: $(sed -n 1,20p "$work/manifest-pack.diff")"
fi
umount_ok pack "$mnt"

# Errors: one line each, exit 2, nothing left mounted.
run mount-nodir mount "$lib" env "$work/nonexistent"
refused mount-nodir "mount point '$work/nonexistent'"
run mount-nocat mount "$lib" nosuch "$mnt"
refused mount-nocat "nosuch"
mountpoint -q "$mnt" && bad "a failed mount left '$mnt' mounted"
run mount-inlib mount "$lib" env "$lib/catalogs"
refused mount-inlib "inside the library"
run umount-not umount "$work"
refused umount-not "not an hpak mount"
mountpoint -q "$work" && bad "umount of a plain directory mounted something"

# Python imports stdlib modules from the mount.
py=$work/src/py
stdlib=$(python3 -c 'import json, os; print(os.path.dirname(os.path.dirname(json.__file__)))')
mkdir -p "$py/lib"
for m in json email csv textwrap difflib fractions dataclasses string; do
  if [ -d "$stdlib/$m" ]; then cp -r "$stdlib/$m" "$py/lib/"; else cp "$stdlib/$m.py" "$py/lib/"; fi
done
find "$py" -name __pycache__ -prune -exec rm -rf {} +
run pack-py pack "$py" --into "$lib" --name py
expect_rc pack-py 0
pym=$work/pym
mkdir "$pym"
# Read through a pipe: the command returns and the background server holds
# neither its stdout nor its stderr open (else cat would wait for it: 124).
mounts+=("$pym")
got=$(timeout 30 cat < <("$hpak" mount "$lib" py "$pym" 2>&1)) || fail "the mount's output stayed open after it returned ($?)"
mountpoint -q "$pym" || fail "mount py: $got"
if got=$(PYTHONDONTWRITEBYTECODE=1 python3 -S -c '
import sys; sys.path.insert(0, sys.argv[1] + "/lib")
import json, email.message, csv, textwrap, difflib, fractions, dataclasses, string
for m in (json, email.message, csv, textwrap, difflib, fractions, dataclasses, string):
    assert m.__file__.startswith(sys.argv[1] + "/"), m.__file__
print(json.dumps({"ok": str(fractions.Fraction(1, 3))}))' "$pym" 2>&1); then
  [ "$got" = '{"ok": "1/3"}' ] && ok "python3 imports from the mount" || bad "python3 from the mount printed: $got"
else
  bad "python3 could not import from the mount: $got"
fi
umount_ok py "$pym"

# A damaged object: EIO for that file and a line in the log; the others read.
dlib=$work/dlib
dsrc=$work/src/dmg
mkdir -p "$dsrc"
head -c 300000 /dev/urandom >"$dsrc/big.bin"
head -c 2000000 /dev/urandom >"$dsrc/huge.bin" # a large raw object: served from the pack's mapping once checked
head -c 100000 /dev/urandom >"$dsrc/mid.bin"   # small enough to be stored in the kernel's cache on an ioctl (prefill)
printf 'intact\n' >"$dsrc/small.txt"
run init-d init "$dlib" --level 0
expect_rc init-d 0
run pack-d pack "$dsrc" --into "$dlib" --name dmg
expect_rc pack-d 0
python3 - "$dlib" "$dsrc/big.bin" "$dsrc/huge.bin" "$dsrc/mid.bin" <<'PY'
import glob, os, sys
lib, bigs = sys.argv[1], sys.argv[2:]
for big in bigs:
    needle = open(big, "rb").read()[1500000 if big.endswith("huge.bin") else 1000:][:64]
    for p in glob.glob(os.path.join(lib, "packs", "*.hpak")):
        data = bytearray(open(p, "rb").read())
        i = data.find(needle)
        if i >= 0:
            data[i] ^= 0xFF
            os.chmod(p, 0o644)
            open(p, "wb").write(data)
            break
    else:
        sys.exit(f"the bytes of {big} were not found in any pack")
PY
dm=$work/dmnt
mkdir "$dm"
mount_bg mount-d "$dlib" dmg "$dm" --log "$work/mount-d.log"
[ "$rc" -eq 0 ] || fail "mount of the damaged library: exit $rc: $(err mount-d)"
if cat "$dm/big.bin" >/dev/null 2>"$work/eio.err"; then
  bad "a damaged object was served"
else
  grep -q "Input/output error" "$work/eio.err" && ok "a damaged object gives EIO" || bad "damaged object: $(cat "$work/eio.err")"
fi
if dd if="$dm/huge.bin" of=/dev/null bs=4096 count=1 2>"$work/eio2.err"; then
  bad "a damaged large raw object was served (its first page)"
else
  grep -q "Input/output error" "$work/eio2.err" && ok "a damaged large raw object gives EIO, even for a range before the damage" ||
    bad "damaged large object: $(cat "$work/eio2.err")"
fi
[ "$(cat "$dm/small.txt")" = intact ] || bad "an intact file beside a damaged one does not read"
# Python's open asks isatty (an ioctl, which loads a small file to store it in the kernel's cache): a damaged
# one is not stored, and its read still fails with EIO.
got=$(python3 -c '
import sys
f = open(sys.argv[1], "rb")
try:
    f.read()
    print("served")
except OSError as e:
    print("errno", e.errno)' "$dm/mid.bin" 2>&1) || true
[ "$got" = "errno 5" ] && ok "a damaged small file opened by Python gives EIO" || bad "damaged small file through Python: $got"
grep -q "huge.bin' unreadable" "$work/mount-d.log" || bad "no log line for the damaged large object: $(cat "$work/mount-d.log")"
grep -q "big.bin' unreadable" "$work/mount-d.log" && ok "the damage is logged: $(sed -n 1p "$work/mount-d.log")" ||
  bad "no log line for the damaged object: $(cat "$work/mount-d.log")"
umount_ok d "$dm"

# Unmount while a file is open: refused; --lazy detaches, the open file still
# reads, and the server (in the foreground here, to know its pid) ends when it closes.
mounts+=("$mnt")
"$hpak" mount -f "$lib" env "$mnt" >"$work/fg.out" 2>"$work/fg.err" &
fg_pid=$!
for _ in $(seq 100); do
  mountpoint -q "$mnt" && break
  sleep 0.1
done
mountpoint -q "$mnt" || fail "mount -f did not mount: $(cat "$work/fg.err")"
exec 3<"$mnt/bin/tool"
run umount-busy umount "$mnt"
refused umount-busy "unable to unmount .*busy"
mountpoint -q "$mnt" || bad "a refused umount unmounted"
run umount-lazy umount --lazy "$mnt"
expect_rc umount-lazy 0
mountpoint -q "$mnt" && bad "umount --lazy left it mounted"
grep -q "^#!$mnt/bin/python" <&3 && ok "an open file still reads after umount --lazy" || bad "the open file no longer reads"
exec 3<&-
for _ in $(seq 100); do
  kill -0 "$fg_pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$fg_pid" 2>/dev/null; then
  bad "the server still runs after the last file closed"
  kill "$fg_pid"
fi
wait "$fg_pid" && ok "the server ended with the mount" || bad "the foreground server exited $?: $(cat "$work/fg.err")"

# gc while mounted: the catalog's packs rewritten under the mount.
rm -rf "$mnt" && mkdir "$mnt"
mount_bg mount-gc "$lib" env "$mnt"
[ "$rc" -eq 0 ] || fail "mount for gc: exit $rc: $(err mount-gc)"
run catalogs-rm catalogs rm "$lib" py
run gc gc "$lib" --grace 0
expect_rc gc 0
manifest "$mnt" >"$work/after-gc.manifest"
diff -q "$work/restored.manifest" "$work/after-gc.manifest" >/dev/null && ok "the mount reads the same after gc" ||
  bad "after gc the mount differs: $(diff "$work/restored.manifest" "$work/after-gc.manifest" | sed -n 1,10p)"
umount_ok gc "$mnt"

# Hostile packs: a one-line refusal, or a mount whose every file reads or fails with EIO.
hm=$work/hmnt
mkdir "$hm"
served=0
for p in "$src_root"/tests/data/hostile/*.hpak; do
  name=$(basename "$p" .hpak)
  mount_bg "h-$name" "$p" "$hm"
  no_crash "h-$name"
  if [ "$rc" -ne 0 ]; then
    [ "$(wc -l <"$work/h-$name.err")" -ge 1 ] && grep -q "^hpak: error: " "$work/h-$name.err" ||
      bad "$name: refused without a message"
    mountpoint -q "$hm" && bad "$name: refused but left mounted"
    continue
  fi
  served=$((served + 1))
  find "$hm" -type f -exec cat {} + >/dev/null 2>&1 || true
  find "$hm" -type l -exec readlink {} + >/dev/null 2>&1 || true
  mountpoint -q "$hm" || bad "$name: the server died while its files were read"
  umount_ok "h-$name" "$hm"
done
ok "hostile packs: none crashed the server ($served served)"

if [ "$fails" -gt 0 ]; then
  echo "$test_name: $fails failed"
  exit 1
fi
echo "$test_name: all passed"
