// hpak completion bash|zsh|commands (hidden): shell completion generated from
// the command table at run time, so every command, option and argument the
// CLI knows is completed and nothing can drift. The build runs it to produce
// the installed completion files (CMakeLists.txt); `commands` lists the
// visible commands, one a line (the install rule makes an hpak-<cmd> link for
// each).
//
// What an argument completes to is inferred from how the command declares it:
//   - positional "library" (or named library/lib/into/dir/target/directory, or
//     checked as an existing directory): directories; a "library" positional
//     is remembered so that a later "catalog" positional completes to that
//     library's catalogs (`hpak catalogs --names LIB`);
//   - positional "pack": files, remembered so that a -c/--catalog value
//     completes to that pack's catalogs (`hpak ls --catalogs PACK`);
//   - a value checked against a set ({a,b}): those words;
//   - numbers and a few free-text names (name, grace, unused, ...): nothing;
//   - anything else: file names.
// A command whose positionals take several forms (`catalogs LIB | catalogs rm
// LIB NAME...`) says so in its Command::positionals synopsis instead.
#include <CLI/CLI.hpp>
#include <memory>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cmd/command.hpp"
#include "base/error.hpp"

namespace hpak::cmd {

namespace {

struct Arg {
  std::string kind;               // file, dir, library, catalog, pack, pack-catalog, none, words, literal
  std::vector<std::string> words; // for kind "words"; the word for "literal"
};

struct Opt {
  std::vector<std::string> names; // "-j", "--threads"
  std::string desc;
  bool takes_value = false, repeats = false;
  Arg value;
};

struct Positional {
  std::string name, desc;
  Arg value;
};

// One way to give the positional arguments; the last may repeat.
struct Form {
  std::vector<Positional> pos;
  bool repeats = false;
};

struct Cmd {
  std::string name, summary;
  std::vector<Opt> opts;
  std::vector<Form> forms; // one, unless Command::positionals names several
};

struct Options {
  std::string shell;
  CLI::App* self = nullptr;
};

bool is_one_of(const std::string& s, std::initializer_list<const char*> list) {
  for (const char* x : list)
    if (s == x) return true;
  return false;
}

// The words of a "{a,b,c}" set in a CLI11 type name, if any.
std::vector<std::string> set_words(const std::string& type) {
  std::vector<std::string> words;
  size_t open = type.find('{'), close = type.find('}', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return words;
  std::string w;
  for (char c : type.substr(open + 1, close - open - 1)) {
    if (c == ',') {
      if (!w.empty()) words.push_back(w);
      w.clear();
    } else if (c != ' ') {
      w += c;
    }
  }
  if (!w.empty()) words.push_back(w);
  return words;
}

Arg classify(const std::string& name, const std::string& type, bool positional) {
  Arg a;
  a.words = set_words(type);
  if (!a.words.empty()) a.kind = "words";
  else if (positional && name == "library") a.kind = "library";
  else if (positional && name == "catalog") a.kind = "catalog";
  else if (positional && name == "pack") a.kind = "pack";
  else if (!positional && name == "catalog") a.kind = "pack-catalog";
  else if (is_one_of(name, {"library", "lib", "into", "dir", "target", "directory"}) || type.find("DIR") != std::string::npos)
    a.kind = "dir";
  else if (type.find("INT") != std::string::npos || type.find("FLOAT") != std::string::npos ||
           type.find("NUMBER") != std::string::npos ||
           is_one_of(name, {"name", "grace", "unused", "relocate", "object"}))
    a.kind = "none";
  else a.kind = "file";
  return a;
}

// One word of a Command::positionals synopsis: LIB, CATALOG, PACK, FILE, DIR, or a literal (lower case).
Positional synopsis_word(const std::string& w, const char* command) {
  static const std::pair<const char*, const char*> kinds[] = {
      {"LIB", "library"}, {"CATALOG", "catalog"}, {"PACK", "pack"}, {"FILE", "file"}, {"DIR", "dir"}};
  for (auto& [word, kind] : kinds)
    if (w == word) return {w, w, {kind, {}}};
  if (!w.empty() && std::all_of(w.begin(), w.end(), [](char c) { return c >= 'a' && c <= 'z'; })) return {w, w, {"literal", {w}}};
  throw Error(std::string("command '") + command + "': bad word '" + w + "' in its positionals synopsis");
}

// The forms of a synopsis such as "LIB | rm LIB CATALOG...".
std::vector<Form> parse_synopsis(const char* synopsis, const char* command) {
  std::vector<Form> forms(1);
  std::string w;
  auto end_word = [&] {
    if (w.empty()) return;
    if (w.size() > 3 && w.ends_with("...")) {
      forms.back().repeats = true;
      w.resize(w.size() - 3);
    } else if (forms.back().repeats) {
      throw Error(std::string("command '") + command + "': only the last word of a form may repeat");
    }
    forms.back().pos.push_back(synopsis_word(w, command));
    w.clear();
  };
  for (const char* c = synopsis; *c; c++) {
    if (*c == ' ') end_word();
    else if (*c == '|') {
      end_word();
      forms.emplace_back();
    } else w += *c;
  }
  end_word();
  for (auto& f : forms)
    if (f.pos.empty()) throw Error(std::string("command '") + command + "': an empty form in its positionals synopsis");
  return forms;
}

Cmd describe(const Command& c, const CLI::App& sub) {
  Cmd cmd{c.name, c.summary, {}, {Form{}}};
  for (const CLI::Option* opt : sub.get_options()) {
    std::string type = opt->get_type_name();
    bool many = opt->get_items_expected_max() > 1;
    if (opt->get_positional() && !opt->nonpositional()) {
      cmd.forms[0].pos.push_back({opt->get_name(), opt->get_description(), classify(opt->get_name(), type, true)});
      cmd.forms[0].repeats = many;
      continue;
    }
    Opt x;
    for (auto& s : opt->get_snames()) x.names.push_back("-" + s);
    for (auto& l : opt->get_lnames()) x.names.push_back("--" + l);
    x.desc = opt->get_description();
    x.takes_value = opt->get_expected_max() > 0 && opt->get_type_size_max() > 0; // flags expect 0 values
    x.repeats = many || (!x.takes_value && opt->get_multi_option_policy() != CLI::MultiOptionPolicy::Throw &&
                         x.names.back() == "--verbose");
    std::string key = opt->get_lnames().empty() ? opt->get_snames().front() : opt->get_lnames().front();
    if (x.takes_value) x.value = classify(key, type, false);
    cmd.opts.push_back(x);
  }
  if (c.positionals) cmd.forms = parse_synopsis(c.positionals, c.name);
  return cmd;
}

std::vector<Cmd> table(const CLI::App& root) {
  std::vector<Cmd> out;
  for (const Command* c : commands()) {
    if (c->hidden) continue;
    const CLI::App* sub = root.get_subcommand(c->name);
    out.push_back(describe(*c, *sub));
  }
  return out;
}

std::string join(const std::vector<std::string>& v, const char* sep = " ") {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string arg_kind(const Arg& a) {
  if (a.kind == "words") return "words:" + join(a.words, ",");
  if (a.kind == "literal") return "=" + a.words.at(0);
  return a.kind;
}

// ---- bash -------------------------------------------------------------------

const char* kBashBody = R"BASH(
# _hpak_add_lines CUR COMMAND...: adds to COMPREPLY the lines COMMAND prints that start with CUR.
_hpak_add_lines() {
  local cur=$1 w
  shift
  while IFS= read -r w; do
    [[ $w == "$cur"* ]] && COMPREPLY+=("$w")
  done < <("$@" 2>/dev/null)
}

# _hpak_complete_kind KIND CUR LIBRARY PACK: adds to COMPREPLY.
_hpak_complete_kind() {
  local IFS=$'\n' w
  case $1 in
  file | pack) compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$2")) ;;
  dir | library) compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$2")) ;;
  catalog) [ -z "$3" ] || _hpak_add_lines "$2" "$_hpak_bin" catalogs --names -- "$3" ;;
  pack-catalog) [ -z "$4" ] || _hpak_add_lines "$2" "$_hpak_bin" ls --catalogs -- "$4" ;;
  =*) w=${1#=}; [[ $w == "$2"* ]] && COMPREPLY+=("$w") ;;
  words:*) w=${1#words:}; COMPREPLY+=($(IFS=','; compgen -W "$w" -- "$2")) ;;
  esac
  return 0
}

# _hpak_value_kind CMD OPTION: prints the kind of OPTION's value; fails for a flag.
_hpak_value_kind() {
  local v
  _hpak_spec "$1" || return 1
  for v in $_hpak_vals; do
    [ "${v%%=*}" = "$2" ] && { printf '%s\n' "${v#*=}"; return 0; }
  done
  return 1
}

# _hpak_kind_at FORM N: sets _hpak_k to the kind of positional N (from 0) in FORM
# ("KIND KIND ...", the last may end in "..." when it repeats); empty past its end.
_hpak_kind_at() {
  local IFS=' '
  local -a k=($1)
  local last=${k[${#k[@]}-1]}
  _hpak_k=
  if [ "$2" -lt "${#k[@]}" ]; then
    _hpak_k=${k[$2]%...}
  elif [[ $last == *... ]]; then
    _hpak_k=${last%...}
  fi
}

# _hpak_fits FORM WORD...: whether the positional WORDs typed fit FORM (a literal
# equal, a library an existing directory); sets _hpak_lib and _hpak_pack to the
# words given as the form's library and pack.
_hpak_fits() {
  local form=$1 j=0 w ok=0
  shift
  _hpak_lib= _hpak_pack=
  for w; do
    _hpak_kind_at "$form" $j
    case $_hpak_k in
    '') ok=1 ;;
    =*) [ "$w" = "${_hpak_k#=}" ] || ok=1 ;;
    library) [ -d "$w" ] || ok=1; _hpak_lib=${_hpak_lib:-$w} ;;
    pack) _hpak_pack=${_hpak_pack:-$w} ;;
    esac
    j=$((j + 1))
  done
  return $ok
}

_hpak() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local _hpak_bin=${COMP_WORDS[0]} base=${COMP_WORDS[0]##*/} cmd= i=1 w
  COMPREPLY=()
  if [[ $base == hpak-* ]]; then
    cmd=${base#hpak-}
    # hpak-<cmd> runs <cmd>: ask the hpak beside it, or the one on PATH.
    if [[ $_hpak_bin == */* ]] && [ -x "${_hpak_bin%/*}/hpak" ]; then _hpak_bin=${_hpak_bin%/*}/hpak; else _hpak_bin=hpak; fi
  else
    for ((; i < COMP_CWORD; i++)); do
      w=${COMP_WORDS[i]}
      [[ $w == -* ]] && continue
      cmd=$w
      i=$((i + 1))
      break
    done
  fi
  if [ -z "$cmd" ]; then
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "$_hpak_global" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "$_hpak_cmds" -- "$cur"))
    fi
    return 0
  fi
  _hpak_spec "$cmd" || { _hpak_complete_kind file "$cur"; return 0; }
  local opts=$_hpak_opts forms_spec=$_hpak_forms expect= dashdash= form k _hpak_k _hpak_lib _hpak_pack
  local -a pos=() forms=()
  # The words before the cursor: skip options and their values, collect the positionals.
  for ((; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    if [ -n "$expect" ]; then
      [ "$w" = "=" ] && continue
      expect=
      continue
    fi
    if [ -z "$dashdash" ] && [ "$w" = "--" ]; then dashdash=1; continue; fi
    if [ -z "$dashdash" ] && [[ $w == -* ]]; then
      _hpak_value_kind "$cmd" "$w" >/dev/null && expect=1
      continue
    fi
    [[ $w == "~/"* ]] && w=$HOME/${w#"~/"}
    pos+=("$w")
  done
  IFS='|' read -ra forms <<<"$forms_spec"
  # The value of an option (also as --opt=value), with the library and pack of the form the words fit.
  local opt=$prev
  if [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 2 ]; then opt=${COMP_WORDS[COMP_CWORD-2]}; fi
  if [ "$cur" = "=" ]; then opt=$prev; cur=; fi
  if [ -n "$expect" ] && k=$(_hpak_value_kind "$cmd" "$opt"); then
    for form in "${forms[@]}"; do
      _hpak_fits "$form" "${pos[@]}" || [ ${#forms[@]} -eq 1 ] && break
      _hpak_lib= _hpak_pack=
    done
    _hpak_complete_kind "$k" "$cur" "$_hpak_lib" "$_hpak_pack"
    return 0
  fi
  if [ -z "$dashdash" ] && [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    return 0
  fi
  # The next positional, in every form the words typed fit (the only form is taken as it is).
  for form in "${forms[@]}"; do
    _hpak_fits "$form" "${pos[@]}" || [ ${#forms[@]} -eq 1 ] || continue
    _hpak_kind_at "$form" ${#pos[@]}
    _hpak_complete_kind "${_hpak_k:-none}" "$cur" "$_hpak_lib" "$_hpak_pack"
  done
  if [ ${#forms[@]} -gt 1 ] && [ ${#COMPREPLY[@]} -gt 1 ]; then
    mapfile -t COMPREPLY < <(printf '%s\n' "${COMPREPLY[@]}" | awk '!seen[$0]++')
  fi
  return 0
}
)BASH";

// A form for bash and zsh: the kinds of its positionals, space-separated, the last followed by "..." when it repeats.
std::string form_kinds(const Form& f) {
  std::vector<std::string> kinds;
  for (auto& p : f.pos) kinds.push_back(arg_kind(p.value));
  if (f.repeats && !kinds.empty()) kinds.back() += "...";
  return join(kinds);
}

void print_bash(const CLI::App& root, const std::vector<Cmd>& cmds) {
  printf("# bash completion for hpak                                  -*- shell-script -*-\n");
  printf("# Generated by 'hpak completion bash' from hpak's command table: do not edit.\n\n");
  std::vector<std::string> names, global, links;
  for (auto& c : cmds) {
    names.push_back(c.name);
    links.push_back("hpak-" + c.name);
  }
  for (const CLI::Option* opt : root.get_options()) {
    for (auto& s : opt->get_snames()) global.push_back("-" + s);
    for (auto& l : opt->get_lnames()) global.push_back("--" + l);
  }
  printf("_hpak_cmds='%s'\n_hpak_global='%s'\n\n", join(names).c_str(), join(global).c_str());
  printf("# _hpak_spec CMD: sets _hpak_opts (every option), _hpak_vals (OPTION=KIND for those taking a\n"
         "# value), _hpak_forms (the forms of the positional arguments, '|'-separated: the kind of each\n"
         "# positional (=WORD: that word), the last followed by \"...\" when it repeats).\n");
  printf("_hpak_spec() {\n  case $1 in\n");
  for (auto& c : cmds) {
    std::vector<std::string> opts, vals, forms;
    for (auto& x : c.opts)
      for (auto& n : x.names) {
        opts.push_back(n);
        if (x.takes_value) vals.push_back(n + "=" + arg_kind(x.value));
      }
    for (auto& f : c.forms) forms.push_back(form_kinds(f));
    printf("  %s) _hpak_opts='%s' _hpak_vals='%s' _hpak_forms='%s' ;;\n", c.name.c_str(), join(opts).c_str(), join(vals).c_str(),
           join(forms, "|").c_str());
  }
  printf("  *) return 1 ;;\n  esac\n}\n");
  fputs(kBashBody, stdout);
  printf("\ncomplete -F _hpak hpak %s\n", join(links).c_str());
}

// ---- zsh --------------------------------------------------------------------

// A description inside an _arguments spec's [...], the spec single-quoted.
std::string zsh_desc(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else if (c == '[' || c == ']' || c == ':' || c == '\\') out += std::string("\\") + c;
    else out += c;
  }
  return out;
}

// The action of an argument; library_index and pack_index: the positions of the
// command's library and pack positionals (from 1; 0: none).
std::string zsh_action(const Arg& a, int library_index, int pack_index) {
  if (a.kind == "file" || a.kind == "pack") return "_files";
  if (a.kind == "dir" || a.kind == "library") return "_files -/";
  if (a.kind == "catalog") return library_index ? "_hpak_catalog_names " + std::to_string(library_index) : " ";
  if (a.kind == "pack-catalog") return pack_index ? "_hpak_pack_catalogs " + std::to_string(pack_index) : " ";
  if (a.kind == "words") return "(" + join(a.words) + ")";
  return " ";
}

int position_of(const Form& f, const char* kind) {
  for (size_t i = 0; i < f.pos.size(); i++)
    if (f.pos[i].value.kind == kind) return int(i) + 1;
  return 0;
}

void print_zsh_cmd(const Cmd& c) {
  printf("\n_hpak_cmd_%s() {\n  _arguments -s -S \\\n", c.name.c_str());
  // With one form, a spec per positional; with several, _hpak_forms picks the forms that fit.
  const Form* one = c.forms.size() == 1 ? &c.forms[0] : nullptr;
  int library_index = one ? position_of(*one, "library") : 0, pack_index = one ? position_of(*one, "pack") : 0;
  for (auto& x : c.opts) {
    std::string excl = x.names.size() > 1 && !x.repeats ? "(" + join(x.names) + ")" : "";
    for (auto& n : x.names) {
      std::string spec = (x.repeats ? "*" : excl) + n + "[" + zsh_desc(x.desc) + "]";
      if (x.takes_value)
        spec += ":" + zsh_desc(n.substr(n.find_first_not_of('-'))) + ":" + zsh_action(x.value, library_index, pack_index);
      printf("    '%s' \\\n", spec.c_str());
    }
  }
  if (one) {
    for (size_t i = 0; i < one->pos.size(); i++) {
      auto& p = one->pos[i];
      bool repeats = one->repeats && i + 1 == one->pos.size();
      std::string spec = (repeats ? "*:" : ":") + zsh_desc(p.name) + ":" + zsh_action(p.value, library_index, pack_index);
      printf("    '%s' \\\n", spec.c_str());
    }
  } else {
    std::vector<std::string> forms;
    for (auto& f : c.forms) forms.push_back(form_kinds(f));
    printf("    '*:argument:_hpak_forms \"%s\"' \\\n", join(forms, "|").c_str());
  }
  printf("    && return 0\n  return 1\n}\n");
}

// Helpers of the zsh script. _arguments calls an action with its compadd
// options first: the action's own argument is the last.
const char* kZshHelpers = R"ZSH(
# _hpak_lines OPTION... COMMAND: adds the lines the command (a string, run by
# eval) prints as matches, with compadd's OPTIONs.
_hpak_lines() {
  local -a names
  names=(${(f)"$(eval "${@[-1]}" 2>/dev/null)"})
  compadd "${@[1,-2]}" -a names
}

# _hpak_catalog_names OPTION... N: the catalogs of the library given as positional argument N.
_hpak_catalog_names() {
  local lib=${(Q)line[${@[-1]}]}
  [[ -n $lib ]] || return 1
  _hpak_lines "${@[1,-2]}" '${_hpak_bin:-hpak} catalogs --names -- ${lib/#\~/$HOME}'
}

# _hpak_pack_catalogs OPTION... N: the catalogs of the pack given as positional argument N.
_hpak_pack_catalogs() {
  local pack=${(Q)line[${@[-1]}]}
  [[ -n $pack ]] || return 1
  _hpak_lines "${@[1,-2]}" '${_hpak_bin:-hpak} ls --catalogs -- ${pack/#\~/$HOME}'
}

# _hpak_forms OPTION... FORMS: the next positional argument in each form of
# FORMS ('|'-separated; each the kinds of its positionals, =WORD for a word, the
# last followed by ... when it repeats) that the positionals typed before fit:
# a word equal, a library an existing directory.
_hpak_forms() {
  local -a opts forms kinds typed want
  local form kind lib w
  integer i fits ret=1
  opts=("${@[1,-2]}") forms=(${(s:|:)${@[-1]}}) typed=("${(@Q)line[1,-2]}")
  for form in $forms; do
    kinds=(${=form}) fits=1 lib=
    for (( i = 1; i <= $#typed + 1; i++ )); do
      kind=${kinds[i]:-}
      [[ -z $kind && $kinds[-1] == *... ]] && kind=$kinds[-1]
      kind=${kind%...}
      (( i > $#typed )) && break
      w=${typed[i]/#\~/$HOME}
      case $kind in
      '') fits=0 ;;
      '='*) [[ $w == ${kind#=} ]] || fits=0 ;;
      library) [[ -d $w ]] || fits=0; [[ -n $lib ]] || lib=$w ;;
      esac
    done
    (( fits )) && [[ -n $kind ]] || continue
    case $kind in
    file | pack) want+=(file) ;;
    dir | library) want+=(dir) ;;
    catalog) [[ -n $lib ]] && want+=("catalog:$lib") ;;
    '='*) want+=("$kind") ;;
    esac
  done
  (( ${want[(I)file]} )) && want=(${want:#dir}) # files include directories
  for w in ${(u)want}; do
    case $w in
    file) _files "${opts[@]}" && ret=0 ;;
    dir) _files "${opts[@]}" -/ && ret=0 ;;
    catalog:*) lib=${w#catalog:}; _hpak_lines "${opts[@]}" '${_hpak_bin:-hpak} catalogs --names -- $lib' && ret=0 ;;
    '='*) compadd "${opts[@]}" -- ${w#=} && ret=0 ;;
    esac
  done
  return ret
}
)ZSH";

void print_zsh(const CLI::App& root, const std::vector<Cmd>& cmds) {
  std::vector<std::string> links;
  for (auto& c : cmds) links.push_back("hpak-" + c.name);
  printf("#compdef hpak %s\n", join(links).c_str());
  printf("# zsh completion for hpak. Generated by 'hpak completion zsh' from hpak's command table: do not edit.\n");
  fputs(kZshHelpers, stdout);
  for (auto& c : cmds) print_zsh_cmd(c);
  printf("\n_hpak() {\n  local curcontext=$curcontext state line ret=1 _hpak_bin=hpak\n");
  printf("  # The hpak to ask for catalogs: the one typed (or the one beside the hpak-<cmd> link typed), else PATH's.\n"
         "  if [[ $words[1] == */* ]]; then\n"
         "    if [[ $service == hpak-* ]]; then _hpak_bin=${words[1]%%/*}/hpak; else _hpak_bin=$words[1]; fi\n"
         "    [[ -x $_hpak_bin ]] || _hpak_bin=hpak\n"
         "  fi\n");
  printf("  if [[ $service == hpak-* ]]; then\n    _hpak_cmd_${service#hpak-}\n    return\n  fi\n");
  printf("  local -a cmds\n  cmds=(\n");
  for (auto& c : cmds) {
    std::string d = zsh_desc(c.summary);
    printf("    '%s:%s'\n", c.name.c_str(), d.c_str());
  }
  printf("  )\n  _arguments -C \\\n");
  for (const CLI::Option* opt : root.get_options()) {
    std::vector<std::string> names;
    for (auto& s : opt->get_snames()) names.push_back("-" + s);
    for (auto& l : opt->get_lnames()) names.push_back("--" + l);
    bool repeats = !names.empty() && names.back() == "--verbose";
    for (auto& n : names)
      printf("    '%s%s[%s]' \\\n", repeats ? "*" : "", n.c_str(), zsh_desc(opt->get_description()).c_str());
  }
  printf("    '1:command:->command' \\\n    '*::argument:->argument' && ret=0\n");
  printf("  case $state in\n"
         "  command) _describe -t commands 'hpak command' cmds && ret=0 ;;\n"
         "  argument)\n"
         "    curcontext=${curcontext%%:*:*}:hpak-$words[1]:\n"
         "    if (( $+functions[_hpak_cmd_$words[1]] )); then _hpak_cmd_$words[1] && ret=0; else _files && ret=0; fi\n"
         "    ;;\n"
         "  esac\n  return ret\n}\n\n");
  printf("if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n  _hpak \"$@\"\nelse\n  compdef _hpak hpak %s\nfi\n",
         join(links).c_str());
}

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  o->self = &app;
  app.add_option("shell", o->shell, "bash, zsh, or commands (the visible commands, one a line)")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "commands"}));
  return [o] { return run(*o); };
}

int run(const Options& o) {
  const CLI::App& root = *o.self->get_parent();
  std::vector<Cmd> cmds = table(root);
  if (o.shell == "bash") print_bash(root, cmds);
  else if (o.shell == "zsh") print_zsh(root, cmds);
  else
    for (auto& c : cmds) printf("%s\n", c.name.c_str());
  return kExitOk;
}
} // namespace

extern const Command cmd_completion{"completion", "Print a shell completion script (bash, zsh) made from the command table", setup,
                                    /*hidden=*/true};

} // namespace hpak::cmd
