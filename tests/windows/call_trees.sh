# shellcheck shell=bash
# tests/windows/call_trees.sh — the trees whose restore calls are counted,
# sourced by tests/windows/test_wine_calls.sh (Windows, under Wine) and
# bench/restore-calls.sh (Linux beside it), so both count the same trees.

# make_tree DIR FILES [EXTRA]: FILES small files spread over 5 directories (two
# of them nested) and EXTRA more (a/x1...: a tree of as many files with more
# directories, to count what a directory costs), every fifth file read-only.
make_tree() {
  local dir=$1 files=$2 extra=${3:-0} i d
  local dirs=(a a/b c d/e f)
  for i in $(seq 1 "$extra"); do dirs+=("a/x$i"); done
  for d in "${dirs[@]}"; do mkdir -p "$dir/$d"; done
  for i in $(seq 1 "$files"); do
    d=${dirs[$((i % ${#dirs[@]}))]}
    printf 'file %d of %s\n' "$i" "${dir##*/}" >"$dir/$d/m$i.py"
    [ $((i % 5)) -ne 0 ] || chmod 0444 "$dir/$d/m$i.py"
  done
}
