# Completes command lines in a real interactive zsh, for tests/cli/test_completion.sh:
#   zsh -f zsh_complete.zsh FUNC_DIR BIN_DIR CWD OUT LINE...
# starts `zsh -f -i` on a pseudo-terminal (the zsh/zpty module) with FUNC_DIR
# (holding _hpak) first in fpath, BIN_DIR first in PATH, in CWD, runs compinit,
# then for the Nth LINE types it and a TAB; every match the completion system
# offers (each word compadd adds, as it matched what was typed) is appended to
# OUT.N, one a line (no OUT.N: nothing offered). Exit 3 when zsh/zpty is missing
# or the shell exits; a shell that hangs waits forever (the caller runs this
# under timeout).
zmodload zsh/zpty || { print -u2 "zsh_complete: no zsh/zpty module"; exit 3 }
local fdir=$1 bdir=$2 cwd=$3 out=$4 got
shift 4
integer n=0

zpty hpak_z zsh -f -i || { print -u2 "zsh_complete: cannot start zsh on a pty"; exit 3 }
# expect PATTERN: reads what the shell prints until it matches PATTERN.
expect() { zpty -r -m hpak_z got "*$1*" || { print -u2 "zsh_complete: no '$1' from the shell"; exit 3 } }

zpty -w hpak_z "PS1='zp%% '; bindkey -e; unsetopt beep autolist; fpath=(${(q)fdir} \$fpath); path=(${(q)bdir} \$path); cd ${(q)cwd}"
zpty -w hpak_z 'autoload -Uz compinit && compinit -u -D'
# compadd records the words it adds (calls that only ask which words match, -O/-A/-D, are passed on).
zpty -w hpak_z 'compadd() {
  local -a hpak_m
  if (( ${@[(I)-[OAD]*]} )); then builtin compadd "$@"; return; fi
  builtin compadd -O hpak_m "$@"
  (( $#hpak_m )) && print -rl -- $hpak_m >>$hpak_out
  builtin compadd "$@"
}'
# Keys are typed only once the prompt is drawn: while a command runs the
# terminal is in canonical mode, where the kernel's line editing would eat them.
# (The quotes keep the echo of the typed command from matching.)
zpty -w hpak_z "hpak_out=${(q)out}.1; print -r -- READ''Y"
expect 'READY*zp% '
for line in "$@"; do
  n+=1
  zpty -w -n hpak_z "$line"$'\t'
  zpty -w -n hpak_z $'\C-a\C-k' # start of line, kill to its end: the line is empty again
  zpty -w hpak_z "hpak_out=${(q)out}.$((n + 1)); print -r -- DO''NE$n"
  expect "DONE$n*zp% "
done
zpty -d hpak_z
exit 0
