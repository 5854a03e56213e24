# shellcheck shell=bash
# Shared by tests/cli/test_{roundtrip,bad_input,exit_codes,hostile}.sh
# (sourced, not run):   . "$(dirname "$0")/cli_lib.sh" "$@"
#   $1 = the hpak binary, $2 = the source root.
# Gives: $hpak, $src_root, $work (a temp dir removed on success, kept on
# failure), need_tool (a tool missing: skip, or fail under CI), fail, run (rc + captured output), checks for one-line errors and
# crashes, and make_tree (a generated tree like a small Python env).
set -euo pipefail
export LC_ALL=C
hpak=$(realpath "${1:?usage: $0 HPAK_BINARY SOURCE_ROOT}")
# shellcheck disable=SC2034 # used by the scripts that source this file
src_root=$(realpath "${2:?usage: $0 HPAK_BINARY SOURCE_ROOT}")
test_name=$(basename "$0" .sh)

# need_tool NAME [PART]: succeeds when the command NAME is installed. When it is
# not: under CI (CI=true, set by .ci/run and by CI services) the test fails, a
# tool scripts/setup.sh --test installs being missing; otherwise it says so and
# skips the whole test (exit 125), or with PART (what is left out) only that
# part (returns 1).
need_tool() {
  command -v "$1" >/dev/null && return 0
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $1 is not installed (CI=true: a missing tool fails the test; scripts/setup.sh --test installs it)"
    exit 1
  fi
  if [ $# -ge 2 ]; then
    echo "$test_name: $2 left out: $1 is not installed (scripts/setup.sh --test installs it)"
    return 1
  fi
  echo "$test_name: skipped: $1 is not installed (scripts/setup.sh --test installs it)"
  exit 125
}
need_tool python3
work=$(realpath "$(mktemp -d "${TMPDIR:-/tmp}/hpak-$test_name-XXXXXX")")
# The script's background jobs and their children, stopped: a test that fails
# while one waits (a flock holder looping until a release file) must not leave
# it running, holding ctest's output pipe open until ctest's timeout.
stop_jobs() {
  local pid child
  for pid in $(jobs -p); do
    for child in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do kill "$child" 2>/dev/null; done
    kill "$pid" 2>/dev/null
  done
  return 0
}
cli_cleanup() {
  local status=$?
  stop_jobs
  if [ "$status" -eq 0 ] || [ "$status" -eq 125 ]; then # passed or skipped
    chmod -R u+rwx "$work" 2>/dev/null || true
    rm -rf "$work"
  else
    echo "$test_name: keeping $work for inspection"
  fi
}
trap cli_cleanup EXIT

fail() {
  echo "FAIL: $*"
  exit 1
}

# make_member PREFIX: a second user (PREFIX<pid>) in its own group
# (PREFIX<pid>g), removed again on exit; skips the test (125) unless root with
# useradd & co. Sets $member, $group, $muid, $mgid; as_member CMD... runs CMD
# as that user (no supplementary groups, HOME=/nonexistent).
make_member() {
  [ "$(id -u)" -eq 0 ] || { echo "$test_name: skipped: needs root (to make a second user)"; exit 125; }
  local tool
  for tool in useradd userdel groupadd groupdel setpriv; do
    command -v "$tool" >/dev/null || { echo "$test_name: skipped: no $tool"; exit 125; }
  done
  member=$1$$
  group=$1$$g # not the user's name: userdel would remove a same-named group first
  groupadd "$group"
  useradd -M -N -g "$group" -s /usr/sbin/nologin "$member"
  # shellcheck disable=SC2154 # st is assigned at the start of the trap's own code
  trap 'st=$?; userdel "$member" 2>/dev/null; groupdel "$group" 2>/dev/null; (exit $st); cli_cleanup' EXIT
  muid=$(id -u "$member")
  mgid=$(getent group "$group" | cut -d: -f3)
}
as_member() { HOME=/nonexistent setpriv --reuid="$muid" --regid="$mgid" --clear-groups -- "$@"; }

# make_two_members PREFIX: two users, $alice (PREFIX<pid>a) and $mallory
# (PREFIX<pid>m), both in one group $group (PREFIX<pid>g), removed again on
# exit; skips (125) unless root with useradd & co. as_user NAME CMD... runs
# CMD as NAME (that group only, umask 002, the caller's environment), e.g.
# with HOME or XDG_* set in front.
make_two_members() {
  [ "$(id -u)" -eq 0 ] || { echo "$test_name: skipped: needs root (to make two users)"; exit 125; }
  local tool
  for tool in useradd userdel groupadd groupdel setpriv; do
    command -v "$tool" >/dev/null || { echo "$test_name: skipped: no $tool"; exit 125; }
  done
  alice=$1$$a
  mallory=$1$$m
  group=$1$$g
  groupadd "$group"
  useradd -M -N -g "$group" -s /usr/sbin/nologin "$alice"
  useradd -M -N -g "$group" -s /usr/sbin/nologin "$mallory"
  trap 'st=$?; userdel "$alice" 2>/dev/null; userdel "$mallory" 2>/dev/null; groupdel "$group" 2>/dev/null; (exit $st); cli_cleanup' EXIT
  mgid=$(getent group "$group" | cut -d: -f3)
}
as_user() {
  local who=$1
  shift
  setpriv --reuid="$(id -u "$who")" --regid="$mgid" --clear-groups -- sh -c 'umask 002; exec "$@"' sh "$@"
}

# run NAME ARGS...: runs hpak; stdout/stderr in $work/NAME.out/.err, status in $rc.
run() {
  local name=$1
  shift
  rc=0
  "$hpak" "$@" >"$work/$name.out" 2>"$work/$name.err" </dev/null || rc=$?
}
out() { cat "$work/$1.out"; }
err() { cat "$work/$1.err"; }

# no_crash NAME: no sanitizer report, abort or crash message, and a status hpak can give.
no_crash() {
  if grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:|Segmentation fault|terminate called|Assertion .* failed|stack smashing' "$work/$1.err"; then
    fail "$1: crash or sanitizer report: $(head -c 3000 "$work/$1.err")"
  fi
  case "$rc" in 0 | 1 | 2) ;; *) fail "$1: exit status $rc (a crash?); stderr: $(head -c 2000 "$work/$1.err")" ;; esac
}
# expect_rc NAME STATUS
expect_rc() {
  no_crash "$1"
  [ "$rc" -eq "$2" ] || fail "$1: exit $rc, expected $2; stderr: $(head -c 2000 "$work/$1.err"); stdout: $(head -c 1000 "$work/$1.out")"
}
# one_line_error NAME [PATTERN]: exactly one stderr line, 'hpak: error: ...' (matching PATTERN).
one_line_error() {
  no_crash "$1"
  local lines
  lines=$(wc -l <"$work/$1.err")
  [ "$lines" -eq 1 ] || fail "$1: expected one line on stderr, got $lines: $(head -c 2000 "$work/$1.err")"
  grep -q '^hpak: error: ' "$work/$1.err" || fail "$1: stderr does not start with 'hpak: error:': $(err "$1")"
  if [ $# -ge 2 ]; then
    grep -qE -- "$2" "$work/$1.err" || fail "$1: error does not match /$2/: $(err "$1")"
  fi
}
# refused NAME [PATTERN]: exit 2 with a one-line error.
refused() {
  expect_rc "$1" 2
  one_line_error "$@"
}

# snapshot DIR [EXCLUDE]: a listing of DIR (paths, types, sizes, modes, mtimes,
# link targets), leaving out the subtree EXCLUDE.
snapshot() {
  if [ $# -ge 2 ]; then
    find "$1" -path "$2" -prune -o -printf '%p %y %s %m %T@ %l\n' | sort
  else
    find "$1" -printf '%p %y %s %m %T@ %l\n' | sort
  fi
}

# tree_listing DIR: relative path, type, mode, size and link target of
# everything under DIR, and the mtime of everything but symlinks' parents'
# own entries (sorted), for comparing a restored tree with its source.
tree_listing() {
  (cd "$1" && find . -mindepth 1 -printf '%P %y %m %s %T@ %l\n' | sort)
}

# make_tree DIR [FILES] [SEED]: a tree shaped like a small Python env: the
# usual size mix, empty files and dirs, unicode and 200-byte names, 30 levels
# of nesting, relative/absolute/dangling symlinks, exec bits, hardlinks and
# duplicate contents, with fixed nanosecond mtimes.
make_tree() {
  python3 - "$1" "${2:-120}" "${3:-1}" <<'PY'
import os, random, sys
root, nfiles, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(seed)
os.makedirs(root, exist_ok=True)
words = [b"def ", b"return ", b"import ", b"self.", b"class ", b"    ", b"None", b"(", b")", b":\n", b" = ", b"for ", b" in ", b"\n"]
def content(n, text):
    if not text:
        return bytes(rnd.getrandbits(8) for _ in range(n))
    out = bytearray()
    while len(out) < n:
        out += rnd.choice(words)
    return bytes(out[:n])
def put(rel, data, mode=0o644):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)
    os.chmod(p, mode)
dirs = ["lib/python3.11/site-packages/numpy", "lib/python3.11/site-packages/requests", "lib/python3.11/encodings", "include", "share/doc"]
for i in range(nfiles):
    r = rnd.randrange(100)
    size = rnd.randint(1, 1023) if r < 48 else rnd.randint(1024, 10239) if r < 91 else rnd.randint(10240, 102399) if r < 99 else rnd.randint(102400, 200000)
    text = rnd.randrange(4) != 0
    put(f"{rnd.choice(dirs)}/m{i}.{'py' if text else 'so'}", content(size, text), 0o644 if text else 0o755)
put("lib/python3.11/site-packages/numpy/__init__.py", b"")
put("lib/python3.11/site-packages/requests/__init__.py", b"")
lic = content(4000, True)
put("lib/python3.11/site-packages/numpy/LICENSE.txt", lic)
put("share/doc/LICENSE", lic, 0o444)
os.makedirs(os.path.join(root, "share/empty/nested"), exist_ok=True)
put("share/doc/donn\u00e9es_\u65e5\u672c.txt", content(300, True))
put("share/doc/" + "n" * 200, content(100, True))
deep = "deep/" + "/".join(f"d{i}" for i in range(1, 31))
put(deep + "/leaf.txt", b"leaf\n")
put("bin/python3.11", content(5000, False), 0o755)
put("bin/secret", b"secret\n", 0o600)
put("bin/pip3.11", content(700, True), 0o755)
os.link(os.path.join(root, "bin/pip3.11"), os.path.join(root, "bin/pip"))
os.link(os.path.join(root, "bin/pip3.11"), os.path.join(root, "bin/pip3"))
put("bin/activate", f"VIRTUAL_ENV={root}\nPATH={root}/bin:$PATH\n".encode())
os.symlink("python3.11", os.path.join(root, "bin/python"))
os.symlink("lib", os.path.join(root, "lib64"))
os.symlink("does/not/exist", os.path.join(root, "share/dangling"))
os.symlink("/usr/bin/env", os.path.join(root, "bin/env-abs"))
os.makedirs(os.path.join(root, "share/readonly"), exist_ok=True)
put("share/readonly/data.txt", b"data\n")
os.chmod(os.path.join(root, "share/readonly"), 0o555)
# Fixed mtimes, children before parents.
n = 0
for dirpath, dirnames, filenames in os.walk(root, topdown=False):
    for name in sorted(filenames + dirnames):
        p = os.path.join(dirpath, name)
        n += 1
        t = 1600000000123456789 + n * 1000000007
        os.utime(p, ns=(t, t), follow_symlinks=False)
PY
}
