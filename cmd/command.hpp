// The command table: every subcommand is one file in cmd/ defining a
// `Command` — a name, a one-line summary and `setup`, which declares the
// command's options on a CLI11 subcommand, bound to a fresh options struct it
// owns, and returns the command's `Runner`: a function holding that struct
// that calls the engine, formats output and returns the exit status. No
// command keeps its options in a global. main.cpp dispatches `hpak <cmd>` and
// `hpak-<cmd>` (argv[0]) through `commands()`.
//
// Exit statuses, shared by all commands (see man/hpak.1):
//   0 success; 1 the command ran and found a problem (verify: corruption;
//   restore/unpack --partial: objects lost); 2 usage error or the command could not run.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace hpak::cmd {

constexpr int kExitOk = 0;
constexpr int kExitProblem = 1;
constexpr int kExitError = 2;

// Runs a command once its options are parsed; returns the exit status.
using Runner = std::function<int()>;

struct Command {
  const char* name;
  const char* summary;
  std::function<Runner(CLI::App&)> setup;
  bool hidden = false; // not in --help, no hpak-<cmd> link, no completion (e.g. `hpak completion`)
  // For shell completion, when the declared positional arguments do not say
  // what each one is: their forms, '|'-separated, each a list of LIB (a
  // library directory), CATALOG (a catalog of the LIB before it), PACK, FILE,
  // DIR or a literal word; the last may end in "..." (repeats). A form is
  // offered while the words typed fit it (a literal equal, a LIB a directory).
  // E.g. "LIB | rm LIB CATALOG..." (cmd/completion.cpp).
  const char* positionals = nullptr;
};

const std::vector<const Command*>& commands();
// Why command `name` is not in this build ("" when it is, or is no command at
// all): the Windows build leaves out mount, umount and commit.
std::string not_built_here(const std::string& name);

// Options every command sees.
struct Global {
  bool quiet = false;
  int verbose = 0;
};
Global& global();

} // namespace hpak::cmd
