// hpak cat PACK PATH|DIGEST: one file's bytes to stdout, read through the
// index without touching the rest of the pack.
#include <CLI/CLI.hpp>
#include <memory>

#include "base/os/sys.hpp"
#include "cmd/command.hpp"
#include "core/library/library.hpp"
#include "cmd/log.hpp"
#include "core/pack/pack_lookup.hpp"
#include "base/os/file.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string pack, what, catalog;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("pack", o->pack, "Pack file")->required();
  app.add_option("object", o->what, "A path in the catalog, or an object digest (hex, or a unique prefix of 4+ digits)")->required();
  app.add_option("-c,--catalog", o->catalog, "Catalog to resolve paths in when the pack holds several");
  return [o] { return run(*o); };
}

int run(const Options& o) {
  PackReader pack(o.pack);
  pack.set_base_source(enclosing_library_bases(o.pack)); // a library pack's catalog stored against a base
  log_pack(pack);
  formats::IndexRecord rec = lookup_object(pack, o.what, o.catalog);
  fflush(stdout);
  pack.read_stream(rec, [](ByteSpan chunk) { write_all(os::kStdout, chunk, "standard output"); });
  return kExitOk;
}
} // namespace

extern const Command cmd_cat{"cat", "Write one object's bytes to stdout", setup};

} // namespace hpak::cmd
