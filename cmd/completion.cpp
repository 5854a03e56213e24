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
//   - a value checked against a set ({a,b}): those words;
//   - numbers and a few free-text names (name, grace, unused, ...): nothing;
//   - anything else: file names.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cmd/command.hpp"
#include "core/util/error.hpp"

namespace hpak::cmd {

namespace {

struct Arg {
  std::string kind;               // file, dir, library, catalog, none, words
  std::vector<std::string> words; // for kind "words"
};

struct Opt {
  std::vector<std::string> names; // "-j", "--threads"
  std::string desc;
  bool takes_value = false, repeats = false;
  Arg value;
};

struct Positional {
  std::string name, desc;
  bool repeats = false;
  Arg value;
};

struct Cmd {
  std::string name, summary;
  std::vector<Opt> opts;
  std::vector<Positional> pos;
};

struct Options {
  std::string shell;
  CLI::App* self = nullptr;
} o;

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
  else if (name == "catalog" && positional) a.kind = "catalog";
  else if (is_one_of(name, {"library", "lib", "into", "dir", "target", "directory"}) || type.find("DIR") != std::string::npos)
    a.kind = "dir";
  else if (type.find("INT") != std::string::npos || type.find("FLOAT") != std::string::npos ||
           type.find("NUMBER") != std::string::npos ||
           is_one_of(name, {"name", "catalog", "grace", "unused", "relocate", "object"}))
    a.kind = "none";
  else a.kind = "file";
  return a;
}

Cmd describe(const Command& c, const CLI::App& sub) {
  Cmd cmd{c.name, c.summary, {}, {}};
  for (const CLI::Option* opt : sub.get_options()) {
    std::string type = opt->get_type_name();
    bool many = opt->get_items_expected_max() > 1;
    if (opt->get_positional() && !opt->nonpositional()) {
      Positional p{opt->get_name(), opt->get_description(), many, classify(opt->get_name(), type, true)};
      cmd.pos.push_back(p);
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

std::string arg_kind(const Arg& a) { return a.kind == "words" ? "words:" + join(a.words, ",") : a.kind; }

// ---- bash -------------------------------------------------------------------

const char* kBashBody = R"BASH(
# _hpak_complete_kind KIND CUR LIBRARY: fills COMPREPLY.
_hpak_complete_kind() {
  local IFS=$'\n' w
  case $1 in
  file) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$2")) ;;
  dir | library) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$2")) ;;
  catalog)
    COMPREPLY=()
    [ -n "$3" ] || return 0
    while IFS= read -r w; do
      [[ $w == "$2"* ]] && COMPREPLY+=("$w")
    done < <("$_hpak_bin" catalogs --names -- "$3" 2>/dev/null)
    ;;
  words:*) w=${1#words:}; COMPREPLY=($(IFS=','; compgen -W "$w" -- "$2")) ;;
  *) COMPREPLY=() ;;
  esac
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

_hpak() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local _hpak_bin=${COMP_WORDS[0]} base=${COMP_WORDS[0]##*/} cmd= i=1 w k
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
  local -a kinds=($_hpak_pos)
  local rep=$_hpak_rep opts=$_hpak_opts npos=0 lib= expect= dashdash=
  # The words before the cursor: skip options and their values, count positionals.
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
    k=${kinds[npos]:-}
    [ -z "$k" ] && [ "$rep" = 1 ] && k=${kinds[${#kinds[@]}-1]}
    [ "$k" = library ] && [ -z "$lib" ] && lib=$w
    npos=$((npos + 1))
  done
  # The value of an option (also as --opt=value).
  local opt=$prev
  if [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 2 ]; then opt=${COMP_WORDS[COMP_CWORD-2]}; fi
  if [ "$cur" = "=" ]; then opt=$prev; cur=; fi
  if [ -n "$expect" ] && k=$(_hpak_value_kind "$cmd" "$opt"); then
    _hpak_complete_kind "$k" "$cur" "$lib"
    return 0
  fi
  if [ -z "$dashdash" ] && [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    return 0
  fi
  k=${kinds[npos]:-}
  [ -z "$k" ] && [ "$rep" = 1 ] && k=${kinds[${#kinds[@]}-1]}
  _hpak_complete_kind "${k:-none}" "$cur" "$lib"
  return 0
}
)BASH";

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
         "# value), _hpak_pos (the kind of each positional argument), _hpak_rep (1: the last repeats).\n");
  printf("_hpak_spec() {\n  case $1 in\n");
  for (auto& c : cmds) {
    std::vector<std::string> opts, vals, pos;
    for (auto& x : c.opts)
      for (auto& n : x.names) {
        opts.push_back(n);
        if (x.takes_value) vals.push_back(n + "=" + arg_kind(x.value));
      }
    for (auto& p : c.pos) pos.push_back(arg_kind(p.value));
    bool rep = !c.pos.empty() && c.pos.back().repeats;
    printf("  %s) _hpak_opts='%s' _hpak_vals='%s' _hpak_pos='%s' _hpak_rep=%d ;;\n", c.name.c_str(), join(opts).c_str(),
           join(vals).c_str(), join(pos).c_str(), rep ? 1 : 0);
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

std::string zsh_action(const Arg& a, int library_index) {
  if (a.kind == "file") return "_files";
  if (a.kind == "dir" || a.kind == "library") return "_files -/";
  if (a.kind == "catalog") return library_index ? "_hpak_catalog_names " + std::to_string(library_index) : " ";
  if (a.kind == "words") return "(" + join(a.words) + ")";
  return " ";
}

void print_zsh_cmd(const Cmd& c) {
  printf("\n_hpak_cmd_%s() {\n  _arguments -s -S \\\n", c.name.c_str());
  int library_index = 0;
  for (size_t i = 0; i < c.pos.size(); i++)
    if (c.pos[i].value.kind == "library" && !library_index) library_index = int(i) + 1;
  for (auto& x : c.opts) {
    std::string excl = x.names.size() > 1 && !x.repeats ? "(" + join(x.names) + ")" : "";
    for (auto& n : x.names) {
      std::string spec = (x.repeats ? "*" : excl) + n + "[" + zsh_desc(x.desc) + "]";
      if (x.takes_value) spec += ":" + zsh_desc(n.substr(n.find_first_not_of('-'))) + ":" + zsh_action(x.value, library_index);
      printf("    '%s' \\\n", spec.c_str());
    }
  }
  for (size_t i = 0; i < c.pos.size(); i++) {
    auto& p = c.pos[i];
    std::string spec = (p.repeats ? "*:" : ":") + zsh_desc(p.name) + ":" + zsh_action(p.value, library_index);
    printf("    '%s' \\\n", spec.c_str());
  }
  printf("    && return 0\n  return 1\n}\n");
}

void print_zsh(const CLI::App& root, const std::vector<Cmd>& cmds) {
  std::vector<std::string> links;
  for (auto& c : cmds) links.push_back("hpak-" + c.name);
  printf("#compdef hpak %s\n", join(links).c_str());
  printf("# zsh completion for hpak. Generated by 'hpak completion zsh' from hpak's command table: do not edit.\n");
  printf("\n# _hpak_catalog_names N: the catalogs of the library given as positional argument N.\n"
         "_hpak_catalog_names() {\n"
         "  local lib=${(Q)line[$1]}\n"
         "  [[ -n $lib ]] || return 1\n"
         "  local -a names\n"
         "  names=(${(f)\"$(${_hpak_bin:-hpak} catalogs --names -- $lib 2>/dev/null)\"})\n"
         "  compadd -a names\n"
         "}\n");
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

void setup(CLI::App& app) {
  o.self = &app;
  app.add_option("shell", o.shell, "bash, zsh, or commands (the visible commands, one a line)")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "commands"}));
}

int run() {
  const CLI::App& root = *o.self->get_parent();
  std::vector<Cmd> cmds = table(root);
  if (o.shell == "bash") print_bash(root, cmds);
  else if (o.shell == "zsh") print_zsh(root, cmds);
  else
    for (auto& c : cmds) printf("%s\n", c.name.c_str());
  return kExitOk;
}
} // namespace

extern const Command cmd_completion{"completion", "Print a shell completion script (bash, zsh) made from the command table", setup, run,
                                    /*hidden=*/true};

} // namespace hpak::cmd
