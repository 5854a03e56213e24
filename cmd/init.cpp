// hpak init LIB [--shared] [--level N]: create an empty library (or set its level).
#include <CLI/CLI.hpp>
#include <memory>

#include "cmd/command.hpp"
#include "core/library/library.hpp"
#include "core/trust/signing.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string lib;
  bool shared = false;
  int level = -1;
  std::string require_signatures;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("library", o->lib, "Library directory to create")->required();
  app.add_flag("--shared", o->shared, "Group-shared: setgid, group-writable directories (see hpak-library(7))");
  app.add_option("-l,--level", o->level, "Default zstd level of packs added to it (0: store objects uncompressed, fastest restores); also changes an existing library's")
      ->check(CLI::Range(0, 19));
  app.add_option("--require-signatures", o->require_signatures,
                 "Restores of this library require a name signed by a key of this OpenSSH allowed_signers file (copied to LIB/allowed_signers)");
  return [o] { return run(*o); };
}

int run(const Options& o) {
  Library::init(o.lib, o.shared, o.level);
  Library lib(o.lib);
  init_trust_files(lib, o.require_signatures);
  std::string level = lib.default_level() < 0 ? "" : " (level " + std::to_string(lib.default_level()) + ")";
  printf("initialised %slibrary '%s'%s\n", lib.shared() ? "shared " : "", o.lib.c_str(), level.c_str());
  return kExitOk;
}
} // namespace

extern const Command cmd_init{"init", "Create an empty library", setup};

} // namespace hpak::cmd
