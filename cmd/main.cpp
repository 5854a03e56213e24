// Entry point of the multi-call binary: `hpak <cmd> ...` or `hpak-<cmd> ...`
// (a link named after the command). The only place that catches errors and
// prints them, as `hpak: error: <message>`.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <spdlog/spdlog.h>

#include "base/os/sys.hpp"
#include "cmd/command.hpp"
#include "cmd/log.hpp"
#include "cmd/output.hpp"
#include "cmd/version.hpp"
#include "core/pack/pack_trust.hpp"
#include "base/edit_distance.hpp"
#include "base/error.hpp"

using namespace hpak::cmd;

static std::string suggest(const std::string& name) {
  std::string best;
  size_t best_d = 3;
  for (const Command* c : commands()) {
    size_t d = hpak::edit_distance(name, c->name);
    if (d < best_d) {
      best_d = d;
      best = c->name;
    }
  }
  return best;
}

// Runs the command, then flushes stdout; the only place errors are printed.
static int run_command(const Command& c, const Runner& run) {
  const double t0 = now_seconds();
  spdlog::debug("command '{}', pid {}", c.name, hpak::os::pid());
  int rc = kExitError;
  std::string error;
  try {
    rc = run();
  } catch (const hpak::Error& e) {
    error = e.what();
  } catch (const std::bad_alloc&) {
    error = "out of memory";
  } catch (const std::exception& e) {
    error = e.what();
  }
  end_phases();
  if (!error.empty()) {
    log_error(error); // one line whatever a path or name in it holds
    rc = kExitError;
  } else if (!finish_stdout()) {
    rc = kExitError;
  }
  spdlog::debug("command '{}' took {:.3f} s, exit status {}", c.name, now_seconds() - t0, rc);
  return rc;
}

// The first argument after the command that looks like an option but is none
// of the command's (CLI11 then reports a missing positional, or an argument
// not expected): "" if there is none, or it comes after "--".
static std::string unknown_dash_argument(const CLI::App& sub, const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); i++) {
    const std::string& a = args[i];
    if (a == "--") return {};
    if (a.size() < 2 || a[0] != '-') continue;
    std::string name = a.substr(0, a.find('='));
    if (name.size() > 2 && name[1] != '-') name = name.substr(0, 2); // -j4
    bool known = false;
    for (const CLI::Option* opt : sub.get_options()) known |= opt->check_name(name);
    if (!known && name != "-h" && name != "--help") return a;
  }
  return {};
}

// A parse error, with the way out when an argument that starts with '-' was
// meant as a name or a path: "--" ends the options.
static std::string parse_error_text(const CLI::App& app, const std::vector<std::string>& args, const CLI::ParseError& e) {
  std::string text = e.what();
  if (args.empty()) return text;
  for (const CLI::App* sub : app.get_subcommands()) {
    std::string dash = unknown_dash_argument(*sub, args);
    if (!dash.empty())
      return hpak::quoted(dash) + " is not an option of 'hpak " + sub->get_name() + "' (" + text +
             "); to pass an argument that starts with '-', put '--' before it: 'hpak " + sub->get_name() + " ... -- " + dash + "'";
  }
  return text;
}

int main(int argc, char** argv) {
  hpak::os::keep_freed_memory();
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string self = argv[0];
  self = self.substr(self.find_last_of('/') == std::string::npos ? 0 : self.find_last_of('/') + 1);
  if (self.rfind("hpak-", 0) == 0) args.insert(args.begin(), self.substr(5));

  setup_logging();
  hpak::set_warning_sink([](const std::string& m) {
    clear_progress();
    spdlog::warn("{}", m);
  });

  CLI::App app{"hpak: content-addressed packs of file trees, restored with the fewest syscalls", "hpak"};
  app.set_version_flag("--version", version_text(), "Print the version, the format versions and the libraries' versions");
  app.add_flag("-q,--quiet", global().quiet, "No progress output");
  app.add_flag("-v,--verbose", global().verbose, "More diagnostics on stderr (repeatable)");
  app.require_subcommand(1);
  app.fallthrough();
  // Options are -x and --xx everywhere: CLI11's default on Windows would read a
  // path such as /tmp/x as an option /t (subcommands inherit this setting).
  app.allow_windows_style_options(false);
  const Command* chosen = nullptr;
  Runner chosen_run;
  for (const Command* c : commands()) {
    CLI::App* sub = app.add_subcommand(c->name, c->summary);
    if (c->hidden) sub->group("");
    Runner run = c->setup(*sub);
    sub->footer("Arguments after '--' are never options (a target or catalog starting with '-': hpak " + std::string(c->name) + " ... -- -x).");
    sub->callback([c, run, &chosen, &chosen_run] {
      chosen = c;
      chosen_run = run;
    });
  }
  if (!args.empty() && args[0][0] != '-') {
    bool known = false;
    for (const Command* c : commands()) known |= args[0] == c->name;
    if (!known && !not_built_here(args[0]).empty()) {
      log_error(not_built_here(args[0]));
      return kExitError;
    }
    if (!known) {
      std::string s = suggest(args[0]);
      log_error("'" + args[0] + "' is not an hpak command" + (s.empty() ? "; see 'hpak --help'" : "; did you mean '" + s + "'?"));
      return kExitError;
    }
  }
  try {
    std::vector<std::string> rev(args.rbegin(), args.rend());
    app.parse(rev);
  } catch (const CLI::CallForHelp& e) {
    app.exit(e);
    return kExitOk;
  } catch (const CLI::CallForAllHelp& e) {
    app.exit(e);
    return kExitOk;
  } catch (const CLI::CallForVersion& e) {
    app.exit(e);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    log_error(parse_error_text(app, args, e));
    return kExitError;
  }
  set_verbosity(global().verbose);
  return chosen ? run_command(*chosen, chosen_run) : kExitError;
}
