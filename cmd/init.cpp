// hpak init LIB [--shared]: create an empty library.
#include <CLI/CLI.hpp>

#include "cmd/command.hpp"
#include "core/library.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string lib;
  bool shared = false;
} o;

void setup(CLI::App& app) {
  app.add_option("library", o.lib, "Library directory to create")->required();
  app.add_flag("--shared", o.shared, "Group-shared: setgid, group-writable directories (see hpak-library(7))");
}

int run() {
  Library::init(o.lib, o.shared);
  Library lib(o.lib);
  printf("initialised %slibrary '%s'\n", lib.shared() ? "shared " : "", o.lib.c_str());
  return kExitOk;
}
} // namespace

extern const Command cmd_init{"init", "Create an empty library", setup, run};

} // namespace hpak::cmd
