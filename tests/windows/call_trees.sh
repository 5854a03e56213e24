# shellcheck shell=bash
# tests/windows/call_trees.sh — the trees whose restore calls are counted,
# sourced by tests/windows/test_wine_calls.sh (Windows, under Wine) and
# bench/restore-calls.sh (Linux beside it), so both count the same trees.

# make_tree DIR FILES: FILES small files spread over 5 directories (two of
# them nested), every fifth one read-only.
make_tree() {
  local dir=$1 files=$2 i d
  mkdir -p "$dir/a/b" "$dir/c" "$dir/d/e" "$dir/f"
  local dirs=(a a/b c d/e f)
  for i in $(seq 1 "$files"); do
    d=${dirs[$((i % 5))]}
    printf 'file %d of %s\n' "$i" "${dir##*/}" >"$dir/$d/m$i.py"
    [ $((i % 5)) -ne 0 ] || chmod 0444 "$dir/$d/m$i.py"
  done
}
