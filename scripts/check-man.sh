#!/usr/bin/env bash
# Checks the man pages in man/ against the CLI and renders them.
#
#   scripts/check-man.sh [HPAK_BINARY [SOURCE_ROOT]]   (defaults: build/hpak, this repo)
#
# For each command `hpak <cmd>` that has a page man/hpak-<cmd>.1 (commands
# without one are noted, not failed):
#   - the options `hpak <cmd> --help` shows, long and short, are exactly those
#     in the page's SYNOPSIS, each short one written beside its long one
#     ("-o | --output");
#   - each long option is described in the page's OPTIONS section.
# man/hpak.1 gets the same check against `hpak --help` (global options) and
# must name the page of every command that has one; a man/hpak-<x>.1 for no
# command is an error. Then every page is rendered with
# `groff -man -Tutf8 -ww -z` and any warning is an error (skipped, with a
# note, when groff is not installed; scripts/setup.sh --package and --test
# install it, as groff-base, which man-db depends on).
# Exit: 0 all good, 1 mismatches or roff warnings (listed), 2 could not run.
set -uo pipefail
root=${2:-$(cd "$(dirname "$0")/.." && pwd)}
hpak=${1:-$root/build/hpak}
man="$root/man"
[ -x "$hpak" ] || { echo "check-man: no hpak binary at '$hpak' (build it with scripts/build.sh)" >&2; exit 2; }
[ -d "$man" ] || { echo "check-man: no man/ directory under '$root'" >&2; exit 2; }
export LC_ALL=C
fail=0
problem() { echo "check-man: $*"; fail=1; }

# Options of a --help text, one per line: "-s --long" or "--long".
help_options() {
  "$hpak" "$@" --help 2>/dev/null | awk '
    /^[A-Za-z].*:$/ { section = $0; next }
    section == "Options:" && match($0, /^ +-/) && RLENGTH < 8 {   # not a wrapped description
      names = $1; gsub(",", " ", names); print names }'
}

# A page as plain text with \- turned into -, font escapes dropped.
deroff() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\f(CR//g' -e 's/\\(aq/'"'"'/g' -e 's/\\&//g' "$1"; }

# The lines of one .SH section of a de-roffed page.
section() { awk -v want="$2" '/^\.SH /{ s = $0; sub(/^\.SH +/, "", s); gsub(/"/, "", s); on = (s == want); next } on' "$1"; }

# Option tokens (-x, --long) of a text; a '-' right after a letter or digit
# (hpak-pack) or another '-' is not an option.
option_tokens() { grep -oE '(^|[^-[:alnum:]])--?[[:alnum:]][[:alnum:]-]*' | sed -E 's/^[^-]*//' | sort -u; }

check_page() { # page, args for hpak (none for hpak.1)
  local page=$1; shift
  local name="hpak${1:+ $1}" text synopsis options help_set syn_set
  text=$(mktemp); deroff "$page" > "$text"
  synopsis=$(section "$text" SYNOPSIS)
  options=$(section "$text" OPTIONS)
  local helpopts; helpopts=$(help_options "$@")
  if [ -z "$helpopts" ]; then problem "'$name --help' lists no options"; rm -f "$text"; return; fi
  help_set=$(tr ' ' '\n' <<<"$helpopts" | sort -u)
  syn_set=$(option_tokens <<<"$synopsis")
  for o in $(comm -23 <(echo "$help_set") <(echo "$syn_set")); do
    problem "$(basename "$page"): SYNOPSIS lacks $o, which '$name --help' shows"
  done
  for o in $(comm -13 <(echo "$help_set") <(echo "$syn_set")); do
    problem "$(basename "$page"): SYNOPSIS has $o, which '$name --help' does not show"
  done
  while read -r a b; do
    if [ -n "$b" ] && ! grep -qF -- "$a | $b" <<<"$synopsis"; then
      problem "$(basename "$page"): SYNOPSIS should pair $a with $b ('$a | $b'), as '$name --help' does"
    fi
    local long=${b:-$a}
    if ! grep -qE -- "(^|[^-[:alnum:]])$long([^-[:alnum:]]|\$)" <<<"$options"; then
      problem "$(basename "$page"): OPTIONS does not describe $long"
    fi
  done <<<"$helpopts"
  rm -f "$text"
}

# Commands, from the Subcommands section of `hpak --help`.
commands=$("$hpak" --help 2>/dev/null | awk '/^[A-Za-z].*:$/ { s = $0; next } s == "Subcommands:" && /^ +[a-z]/ { print $1 }')
[ -n "$commands" ] || { echo "check-man: '$hpak --help' lists no commands" >&2; exit 2; }

if [ -f "$man/hpak.1" ]; then
  check_page "$man/hpak.1"
else
  problem "man/hpak.1 is missing"
fi
top=$([ -f "$man/hpak.1" ] && deroff "$man/hpak.1")
checked=0
for c in $commands; do
  page="$man/hpak-$c.1"
  if [ ! -f "$page" ]; then
    echo "check-man: note: no man page for 'hpak $c' (man/hpak-$c.1)"
    continue
  fi
  check_page "$page" "$c"
  checked=$((checked + 1))
  if [ -n "$top" ] && ! grep -qE "hpak-$c ?\(1\)" <<<"$top"; then
    problem "hpak.1 does not list hpak-$c(1)"
  fi
done
for page in "$man"/hpak-*.1; do
  [ -e "$page" ] || continue
  c=$(basename "$page" .1); c=${c#hpak-}
  grep -qxF "$c" <<<"$commands" || problem "$(basename "$page"): 'hpak $c' is not a command of '$hpak'"
done

rendered=0
if command -v groff >/dev/null 2>&1; then
  for page in "$man"/*.[1-9]; do
    [ -e "$page" ] || continue
    out=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
    if [ -n "$out" ]; then
      problem "$(basename "$page"): roff warnings:"
      sed 's/^/    /' <<<"$out"
    fi
    rendered=$((rendered + 1))
  done
else
  echo "check-man: note: groff not installed; pages not rendered (apt-get install groff-base)"
fi

if [ "$fail" -ne 0 ]; then
  echo "check-man: FAILED"
  exit 1
fi
echo "check-man: ok: hpak.1 and $checked command pages match the CLI; $rendered pages render without warnings"
