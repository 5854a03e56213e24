# shellcheck shell=bash
# Shared by tests/cli/test_library.sh and test_restore.sh (sourced, not run):
# argument handling, a scratch directory kept on failure, check/fail
# reporting, JSON field access, tree comparison and expected relocated trees.
#
#   source library_helpers.sh "$@"    # $1 = hpak binary, $2 = source root
#
# Needs python3 (JSON) and perl (byte-exact relocation of the expected tree).
# The corpus generator is build/bench/hpak-gencorpus, beside the hpak binary.
set -uo pipefail
export LC_ALL=C
hpak=$(realpath "${1:?usage: $0 HPAK_BINARY SOURCE_ROOT}")
# shellcheck disable=SC2034 # used by the scripts that source this file
src_root=${2:?usage: $0 HPAK_BINARY SOURCE_ROOT}
gen=$(dirname "$hpak")/bench/hpak-gencorpus
test_name=$(basename "$0" .sh)
for tool in python3 perl flock; do
  command -v "$tool" >/dev/null || { echo "$test_name: skipped: $tool is not installed"; exit 125; }
done
[ -x "$gen" ] || { echo "$test_name: skipped: no corpus generator at $gen"; exit 125; }

W=$(mktemp -d "${TMPDIR:-/tmp}/hpak-$test_name-XXXXXX") || exit 2
W=$(realpath "$W")
fails=0
bg_pids=()
finish() {
  local pid
  for pid in "${bg_pids[@]}"; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
  if [ "$fails" -eq 0 ]; then
    chmod -R u+rwx "$W" 2>/dev/null
    rm -rf "$W"
  else
    echo "$test_name: keeping $W for inspection"
  fi
}
trap finish EXIT

ok() { echo "ok: $*"; }
# section NAME: prints a header and how long the previous section took.
section_start=$SECONDS
section() {
  echo "== $* (previous section: $((SECONDS - section_start)) s)"
  section_start=$SECONDS
}
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
# check DESCRIPTION COMMAND...: passes when the command succeeds.
check() {
  local what=$1
  shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}
# expect_eq DESCRIPTION EXPECTED ACTUAL
expect_eq() {
  if [ "$2" = "$3" ]; then ok "$1 ($3)"; else fail "$1: expected '$2', got '$3'"; fi
}
done_tests() {
  if [ "$fails" -eq 0 ]; then
    echo "$test_name: all passed"
    exit 0
  fi
  echo "$test_name: $fails failed"
  exit 1
}

# json FILE KEY: a top-level field of the JSON object in FILE.
json() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(json.dumps(v) if isinstance(v,(list,dict)) else str(v).lower() if isinstance(v,bool) else v)' "$1" "$2"; }
# valid_json FILE [lines]: the file is one JSON document, or one per line.
valid_json() {
  python3 -c '
import json, sys
text = open(sys.argv[1]).read()
if len(sys.argv) > 2:
    docs = [json.loads(l) for l in text.splitlines() if l.strip()]
    assert docs, "no JSON lines"
else:
    json.loads(text)
' "$@" 2>/dev/null
}

# gen_env DIR FILES [SEED]: a conda-like environment (~5% of files hold DIR's path).
gen_env() { "$gen" --profile rcc --files "$2" --seed "${3:-1}" "$1" >/dev/null; }

# state_complete TARGET: prints 1 or 0 (the state file's complete byte), or "none".
state_complete() {
  [ -f "$1/.hpak-state" ] || { echo none; return; }
  od -An -tu1 -j8 -N1 "$1/.hpak-state" | tr -d ' '
}

# One line per entry: path, type, mode, link count (for files), symlink target.
tree_sig() {
  (cd "$1" && find . -path ./.hpak-state -prune -o -path './.tmp.hpak-state*' -prune -o ! -path . -printf '%P|%y|%m|%l\n' | sort)
  (cd "$1" && find . -type f ! -name .hpak-state -links +1 -printf '%P|links %n\n' | sort)
}
# same_tree A B: equal entries, types, modes, symlink targets, hardlink
# counts and bytes (the state file aside). Prints the first differences.
same_tree() {
  local d
  d=$(diff <(tree_sig "$1") <(tree_sig "$2"))
  if [ -n "$d" ]; then
    echo "trees differ ($1 vs $2):"
    head -n 10 <<<"$d"
    return 1
  fi
  d=$(diff -r --no-dereference -q -x .hpak-state "$1" "$2" 2>&1)
  if [ -n "$d" ]; then
    echo "contents differ ($1 vs $2):"
    head -n 10 <<<"$d"
    return 1
  fi
  return 0
}

# expected_tree SRC TARGET OUT: a copy of SRC as a restore into TARGET must
# look: every occurrence of SRC in file bytes and symlink targets replaced by
# TARGET; modes, hardlinks and everything else unchanged.
expected_tree() {
  local srcdir=$1 tgt=$2 out=$3 f l
  cp -a "$srcdir" "$out" || return 1
  while IFS= read -r -d '' f; do
    [ -L "$f" ] && continue
    FROM=$srcdir TO=$tgt perl -0777 -pe 's/\Q$ENV{FROM}\E/$ENV{TO}/g' "$f" >"$W/.reloc.tmp" || return 1
    cat "$W/.reloc.tmp" >"$f" # through the same inode: hardlinks stay linked
  done < <(grep -rlFZ -- "$srcdir" "$out")
  while IFS= read -r -d '' f; do
    l=$(readlink "$f")
    case $l in *"$srcdir"*) ln -sfnT "${l//"$srcdir"/"$tgt"}" "$f" ;; esac
  done < <(find "$out" -type l -print0)
  rm -f "$W/.reloc.tmp"
}

# restore_json LIB NAME TARGET OUT [ARGS...]: runs a restore with --json into
# OUT; returns its exit status.
restore_json() {
  local lib=$1 name=$2 tgt=$3 out=$4
  shift 4
  "$hpak" -q restore "$lib" "$name" "$tgt" --json "$@" >"$out" 2>"$out.err"
}
