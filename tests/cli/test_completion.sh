#!/usr/bin/env bash
# Shell completion (hidden `hpak completion bash|zsh`), exercised for real:
# the bash script is sourced in a clean bash, COMP_WORDS/COMP_CWORD set, _hpak
# called and COMPREPLY checked. Against `hpak --help` and `hpak CMD --help`:
# every command and every option of each is completed, nothing more (so the
# completion cannot drift from the CLI); catalogs of the library typed before
# (`hpak restore LIB <TAB>`, `hpak catalogs rm LIB <TAB>`, `hpak sign -k KEY LIB
# <TAB>`) and of the pack typed before (`hpak ls PACK -c <TAB>`), the forms of
# `catalogs` and `sign`, directories, files, set members, option values
# skipped, --opt=value, and the hpak-<cmd> links. zsh: the script parses and has
# a function per command naming each of its options, and an interactive zsh on
# a pty (tests/cli/zsh_complete.zsh) offers the same catalogs, forms, commands
# and options (zsh missing: that part is left out, or fails under CI=true).
#   $1 = hpak binary, $2 = source root
. "$(dirname "$0")/cli_lib.sh" "$@"

bash_script=$work/hpak.bash
"$hpak" completion bash >"$bash_script" || fail "hpak completion bash failed"
"$hpak" completion zsh >"$work/_hpak" || fail "hpak completion zsh failed"

# complete LINE...: the sorted completions, one a line, of the command line
# LINE (the last word is the one completed; "" completes an empty word), run
# from $work/cwd.
complete() {
  (cd "$work/cwd" && env -i PATH="$(dirname "$hpak"):$PATH" bash --norc --noprofile -c '
    source "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
    _hpak
    printf "%s\n" "${COMPREPLY[@]}" | LC_ALL=C sort' sh "$bash_script" "$@")
}
# expect_completion WANT LINE...: WANT is the space-separated sorted list.
expect_completion() {
  local want=$1 got
  shift
  got=$(complete "$@" | tr '\n' ' ' | sed 's/ $//')
  [ "$got" = "$want" ] || fail "completing '$*': got '$got', want '$want'"
}

# Commands and options as --help shows them.
help_commands() { "$hpak" --help | awk '/^[A-Za-z].*:$/ { s = $0; next } s == "Subcommands:" && /^ +[a-z]/ { print $1 }' | sort; }
help_options() {
  "$hpak" "$@" --help | awk '/^[A-Za-z].*:$/ { s = $0; next }
    s == "Options:" && match($0, /^ +-/) && RLENGTH < 8 { names = $1; gsub(",", " ", names); print names }' | tr ' ' '\n' |
    grep . | sort
}

mkdir -p "$work/cwd/somedir/sub" "$work/cwd/lib"
echo x >"$work/cwd/somefile.hpak"

# --- every command, and only the visible ones -------------------------------------------
cmds=$(help_commands)
[ -n "$cmds" ] || fail "'hpak --help' lists no commands"
got=$(complete hpak "")
[ "$got" = "$cmds" ] || fail "commands: completion has '$(echo $got)', --help has '$(echo $cmds)'"
grep -qx completion <<<"$got" && fail "the hidden 'completion' command is offered"
expect_completion "restore" hpak -q res
[ "$(complete hpak -)" = "$(help_options)" ] || fail "global options: '$(complete hpak - | tr '\n' ' ')' vs --help '$(help_options | tr '\n' ' ')'"
echo "ok: commands and global options match --help"

# --- every option of every command ------------------------------------------------------
for c in $cmds; do
  want=$(help_options "$c")
  got=$(complete hpak "$c" -)
  [ "$got" = "$want" ] || fail "options of '$c': completion '$(echo $got)', --help '$(echo $want)'"
  got=$(cd "$work/cwd" && complete "hpak-$c" --)
  [ "$got" = "$(grep -- '^--' <<<"$want")" ] || fail "options of 'hpak-$c --': '$(echo $got)'"
done
echo "ok: the options of each of $(echo $cmds | wc -w) commands match its --help"

# --- catalogs of a library, directories, files ------------------------------------------
make_tree "$work/env" 20
"$hpak" -q init "$work/cwd/lib" >/dev/null
for n in py311 py312 node20; do "$hpak" -q pack "$work/env" --into "$work/cwd/lib" --name "$n" >/dev/null; done
[ "$("$hpak" catalogs --names "$work/cwd/lib" | tr '\n' ' ')" = "node20 py311 py312 " ] || fail "catalogs --names: $("$hpak" catalogs --names "$work/cwd/lib")"
expect_completion "node20 py311 py312" hpak restore lib ""
expect_completion "py311 py312" hpak restore lib py
expect_completion "py311 py312" hpak restore -j 4 --verify lib py
expect_completion "py311 py312" hpak restore --threads = 4 lib py
expect_completion "py311 py312" hpak -q restore "$work/cwd/lib" py
expect_completion "" hpak restore nolib ""
expect_completion "lib somedir" hpak restore ""
expect_completion "lib somedir" hpak restore lib py311 ""
expect_completion "somedir/sub" hpak restore lib py311 somedir/
expect_completion "lib somedir" hpak pack somedir --into ""
expect_completion "lib somedir" hpak pack somedir --into = ""
expect_completion "lib somedir somefile.hpak" hpak verify ""
expect_completion "lib somedir somefile.hpak" hpak verify somefile.hpak ""
expect_completion "lib somedir somefile.hpak" hpak pack somedir -o ""
expect_completion "" hpak pack somedir -j ""
expect_completion "disk tmpfs" hpak bench --media ""
expect_completion "py311 py312" hpak-restore lib py
ln -s "$hpak" "$work/cwd/hpak-restore"
expect_completion "py311 py312" ./hpak-restore lib py
echo "ok: catalogs of the library typed, directories, files, set members, option values"

# --- forms of the positionals: catalogs LIB | catalogs rm LIB NAME..., sign PACK | sign LIB NAME ----------------
expect_completion "lib rm somedir" hpak catalogs ""
expect_completion "rm" hpak catalogs r
expect_completion "lib somedir" hpak catalogs rm ""
expect_completion "node20 py311 py312" hpak catalogs rm lib ""
expect_completion "py311 py312" hpak catalogs --json rm lib py
expect_completion "node20 py311 py312" hpak catalogs rm lib py311 ""
expect_completion "" hpak catalogs lib ""
expect_completion "" hpak catalogs rm nolib ""
expect_completion "hpak-restore lib somedir somefile.hpak" hpak sign -k key ""
expect_completion "node20 py311 py312" hpak sign -k key lib ""
expect_completion "py311 py312" hpak sign --key = key lib py
expect_completion "py311 py312" hpak sign lib -k key py
expect_completion "" hpak sign -k key somefile.hpak ""
expect_completion "hpak-restore lib somedir somefile.hpak" hpak sign -k ""
expect_completion "py311 py312" hpak-catalogs rm lib py
echo "ok: catalogs rm LIB and sign LIB complete the library's catalogs; catalogs offers rm"

# --- -c/--catalog: the catalogs of the pack typed --------------------------------------------------------------
"$hpak" -q pack "$work/env" -o "$work/cwd/env.hpak" --name mycat >/dev/null
[ "$("$hpak" ls --catalogs "$work/cwd/env.hpak")" = mycat ] || fail "ls --catalogs: $("$hpak" ls --catalogs "$work/cwd/env.hpak")"
for c in ls unpack cat; do
  expect_completion "mycat" hpak "$c" env.hpak -c ""
  expect_completion "mycat" hpak "$c" env.hpak --catalog = my
  expect_completion "" hpak "$c" somefile.hpak -c ""
  expect_completion "" hpak "$c" -c ""
done
echo "ok: -c/--catalog of ls, unpack and cat complete the pack's catalogs"

# --- the completion script names every command's link -----------------------------------
for c in $cmds; do
  grep -q "^complete -F _hpak hpak .*hpak-$c\\b" "$bash_script" || fail "bash: no 'complete' for hpak-$c"
  grep -q " hpak-$c\\b" <<<"$(head -n 1 "$work/_hpak")" || fail "zsh: #compdef lacks hpak-$c"
done

# --- zsh ----------------------------------------------------------------------------------
need_tool zsh "the zsh part" || { echo "ok: bash completion"; exit 0; }
zsh -n "$work/_hpak" || fail "the zsh completion does not parse"
for c in $cmds; do
  grep -q "^_hpak_cmd_$c()" "$work/_hpak" || fail "zsh: no function for '$c'"
  for o in $(help_options "$c"); do
    grep -q "'[^']*$o\\[" <(sed -n "/^_hpak_cmd_$c()/,/^}/p" "$work/_hpak") || fail "zsh: '$c' lacks $o"
  done
done
echo "ok: zsh completion parses and has every command and option"

# In an interactive zsh: type each line and a TAB (tests/cli/zsh_complete.zsh), compare what is offered.
zsh_lines=(
  "hpak restore lib " "hpak restore lib py" "hpak restore -j 4 --verify lib py" "hpak restore nolib "
  "hpak catalogs " "hpak catalogs rm " "hpak catalogs rm lib " "hpak catalogs --json rm lib py311 p" "hpak catalogs lib "
  "hpak sign -k key lib " "hpak sign -k key somefile.hpak " "hpak ls env.hpak -c " "hpak unpack env.hpak --catalog "
  "hpak res" "hpak restore --thr" "hpak-restore lib py" "./hpak-restore lib "
)
zsh_want=(
  "node20 py311 py312" "py311 py312" "py311 py312" ""
  "lib rm somedir" "lib somedir" "node20 py311 py312" "py311 py312" ""
  "node20 py311 py312" "" "mycat" "mycat"
  "restore" "--threads" "py311 py312" "node20 py311 py312"
)
mkdir -p "$work/zfunc"
cp "$work/_hpak" "$work/zfunc/_hpak"
timeout 120 env -i PATH="$PATH" HOME="$work" TERM=xterm zsh -f "$src_root/tests/cli/zsh_complete.zsh" \
  "$work/zfunc" "$(dirname "$hpak")" "$work/cwd" "$work/zsh.out" "${zsh_lines[@]}" >"$work/zsh.log" 2>&1 ||
  fail "zsh_complete.zsh: exit $?: $(tail -c 2000 "$work/zsh.log" | cat -v)"
for i in "${!zsh_lines[@]}"; do
  f=$work/zsh.out.$((i + 1)) got=
  [ ! -f "$f" ] || got=$(sort -u "$f" | tr '\n' ' ' | sed 's/ $//')
  [ "$got" = "${zsh_want[i]}" ] || fail "zsh: completing '${zsh_lines[i]}': got '$got', want '${zsh_want[i]}'"
done
echo "ok: bash completion; in zsh, ${#zsh_lines[@]} command lines complete catalogs, forms, commands and options"
