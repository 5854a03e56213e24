#!/usr/bin/env bash
# The shell lint (ctest `shellcheck`, tests/CMakeLists.txt):
#
#   scripts/lint-shell.sh [SOURCE_ROOT]     (default: this checkout)
#
# Every shell script of the source tree (*.sh, *.bash, and files without a dot
# in their name whose first line is a #! for sh or bash, e.g. .ci/run; not
# build*/, .cache/, .git/):
#   1. shellcheck (settings in .shellcheckrc): a warning or an error fails.
#      A finding that is right to keep is disabled where it is, with
#      `# shellcheck disable=SCxxxx` and a comment saying why. Notes and style
#      hints (`A && B || fail`, ls in tests, ...) are not reported: the suites
#      use those idioms on purpose.
#   2. no early-exit reader at the end of a pipe: `| head`, `| grep -q/-m/-l/-L`,
#      `| awk '... exit ...'`, `| sed '...q'`. Such a reader stops after what it
#      needs; the writer's next write then dies of SIGPIPE and, under `set -o
#      pipefail`, the pipeline fails (with `set -e`, the script ends: issue 26,
#      scripts/demo.sh exiting 141). Read the whole output instead (`sed -n 1p`,
#      a variable, a here-string).
# zsh scripts (*.zsh) are checked with `zsh -n` (syntax only; shellcheck does not
# read zsh).
# Exit: 0 clean; 1 findings (listed); 2 could not run; 125 skipped, shellcheck
# or zsh not installed (under CI=true, which .ci/run sets, that fails: 1).
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
cd "$root"
# need_tool NAME: as tests/cli/cli_lib.sh's: a missing tool skips (125), or fails under CI=true.
need_tool() {
  command -v "$1" >/dev/null && return 0
  if [ "${CI:-}" = true ]; then
    echo "lint-shell: FAIL: $1 is not installed (CI=true: a missing tool fails; scripts/setup.sh --test installs it)"
    exit 1
  fi
  echo "lint-shell: skipped: $1 is not installed (scripts/setup.sh --test installs it)"
  exit 125
}
need_tool shellcheck

# is_shell FILE: its first line is a #! naming sh or bash.
is_shell() {
  local first=""
  IFS= read -r first <"$1" 2>/dev/null || true
  [[ $first =~ ^#!.*[/[:space:]](ba)?sh([[:space:]]|$) ]]
}
# shell_scripts: the sh/bash scripts of the tree, relative, sorted, one a line.
shell_scripts() {
  local f
  find . \( -path ./.git -o -path './build*' -o -path ./.cache -o -name node_modules \) -prune -o -type f -print |
    sort | while IFS= read -r f; do
      f=${f#./}
      case ${f##*/} in
      *.sh | *.bash) echo "$f" ;;
      *.*) ;; # another name with a dot: not a script
      *) if is_shell "$f"; then echo "$f"; fi ;;
      esac
    done
}
mapfile -t scripts < <(shell_scripts)
mapfile -t zsh_scripts < <(find . \( -path ./.git -o -path './build*' -o -path ./.cache \) -prune -o -type f -name '*.zsh' -print | sort)
[ ${#scripts[@]} -gt 0 ] || { echo "lint-shell: no shell scripts found under $root" >&2; exit 2; }
fail=0

echo "lint-shell: shellcheck over ${#scripts[@]} scripts"
shellcheck --version | sed -n 's/^version: /lint-shell: shellcheck /p'
shellcheck --severity=warning -f gcc "${scripts[@]}" || fail=1

# early_exit_readers FILE: lines of FILE (not comments) that pipe into a reader
# that can stop before the end of its input: head; grep -q, -m, -l, -L; awk with
# an exit; sed with a q command (q after an address, ';', '{' or the quote, and
# before the end of the script).
readers_re='(head\b'
readers_re+='|grep\b[^|;&)]*[[:space:]](-[a-zA-Z]*[qmlL][a-zA-Z]*|--quiet|--silent|--max-count|--files-with)\b'
readers_re+='|awk\b[^|]*\bexit\b'
readers_re+="|sed\\b[^|]*([0-9\$/;{'\"]|[[:space:]]-e[[:space:]]*)q[0-9]*(['\";}[:space:]]|\$)"
readers_re+=')'
early_exit_readers() {
  grep -nE "(^|[^|])\\|[[:space:]]*$readers_re" "$1" | grep -vE '^[0-9]+:[[:space:]]*#' || true
}
# The detector itself, on lines it must flag and lines it must not
# (tests/data/lint/), so that a broken pattern cannot pass every script unseen.
samples=tests/data/lint
flagged=$(early_exit_readers "$samples/early-exit-readers.txt" | wc -l)
[ "$flagged" -eq "$(wc -l <"$samples/early-exit-readers.txt")" ] ||
  { echo "lint-shell: the early-exit detector misses a line of $samples/early-exit-readers.txt; it flags only:"; early_exit_readers "$samples/early-exit-readers.txt"; exit 2; }
[ -z "$(early_exit_readers "$samples/whole-readers.txt")" ] ||
  { echo "lint-shell: the early-exit detector flags a line of $samples/whole-readers.txt:"; early_exit_readers "$samples/whole-readers.txt"; exit 2; }

readers=0
for f in "${scripts[@]}"; do
  hits=$(early_exit_readers "$f")
  [ -n "$hits" ] || continue
  while IFS= read -r h; do
    echo "$f:${h%%:*}: a pipe into an early-exit reader (head, grep -q/-m/-l, awk exit, sed q) can die of SIGPIPE under pipefail: ${h#*:}"
    readers=$((readers + 1))
  done <<<"$hits"
done
[ "$readers" -eq 0 ] || fail=1

[ ${#zsh_scripts[@]} -eq 0 ] || need_tool zsh
echo "lint-shell: zsh -n over ${#zsh_scripts[@]} zsh scripts"
for f in "${zsh_scripts[@]}"; do
  zsh -n "$f" || { echo "${f#./}: zsh -n reports a syntax error"; fail=1; }
done

if [ "$fail" -ne 0 ]; then
  echo "lint-shell: FAILED"
  exit 1
fi
echo "lint-shell: ok: ${#scripts[@]} shell scripts pass shellcheck and pipe into no early-exit reader; ${#zsh_scripts[@]} zsh scripts parse"
