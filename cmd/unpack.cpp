// hpak unpack PACK DIR: write the tree of a pack's catalog into DIR.
#include <CLI/CLI.hpp>
#include <memory>

#include "cmd/command.hpp"
#include "core/library/library.hpp"
#include "cmd/log.hpp"
#include "cmd/output.hpp"
#include "core/restore/materialize.hpp"
#include "core/restore/windows_names.hpp"
#include "core/restore/target.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string pack, dir, catalog;
  unsigned threads = 0;
  bool force = false, no_mtime = false, no_verify = false, partial = false;
  bool preserve_setid = false, relocate = false, keep_unrelocated = false, windows_names = os::kWindowsNames;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("pack", o->pack, "Pack file")->required();
  app.add_option("dir", o->dir, "Target directory (created with its missing parents if missing; must be empty unless --force)")->required();
  app.add_option("-c,--catalog", o->catalog, "Catalog to unpack when the pack holds several");
  app.add_option("-j,--threads", o->threads, "Worker threads (default: all cores)");
  app.add_flag("-f,--force", o->force, "Unpack into a non-empty directory, replacing what is in the way");
  app.add_flag("--no-mtime", o->no_mtime, "Do not restore modification times");
  app.add_flag("--preserve-setid", o->preserve_setid, "Keep set-uid and set-gid bits (dropped by default)");
  app.add_flag("--no-verify", o->no_verify, "Skip the SHA-256 check of each object (stored checksums are still checked)");
  app.add_flag("--partial", o->partial, "Write every intact file even if some objects are damaged (exit 1)");
  app.add_flag("--relocate", o->relocate, "Write DIR's own path where the packed path occurs, as restore does (default: the bytes as packed)");
  app.add_flag("--windows-names", o->windows_names,
               "Refuse, before writing anything, a catalog with a name Windows cannot hold (two names differing only in case, CON, NUL..., a trailing dot or space, a character such as : or |; always on Windows)");
  app.add_flag("--keep-unrelocated", o->keep_unrelocated,
               "With --relocate: leave binary files whose strings are too short for DIR's path as packed instead of refusing");
  return [o] { return run(*o); };
}

int run(const Options& o) {
  PackReader pack(o.pack);
  pack.set_base_source(enclosing_library_bases(o.pack)); // a library pack's catalog stored against a base
  log_pack(pack);
  formats::Catalog cat = pack.load_catalog(o.catalog);
  PackSource src(pack);
  if (o.keep_unrelocated && !o.relocate) throw Error("--keep-unrelocated needs --relocate");
  if (o.windows_names) refuse_windows_names(cat);
  MaterializeOptions mo;
  if (o.relocate) classify_old_catalog(cat, src);
  mo.relocate_to.keep_blocked = o.keep_unrelocated;
  Fd target = open_unpack_target(o.dir, cat, o.force, o.relocate ? &mo.relocate_to : nullptr);
  mo.threads = o.threads;
  mo.restore_mtime = !o.no_mtime;
  mo.verify = !o.no_verify;
  mo.force = o.force;
  mo.partial = o.partial;
  mo.preserve_setid = o.preserve_setid;
  mo.progress = progress_bar();
  MaterializeStats st = materialize(cat, src, target.get(), o.dir, mo);
  clear_progress();
  for (auto& f : st.failures) log_error("'" + f.path + "' not restored: " + f.why);
  if (!st.failures.empty()) {
    log_error(std::to_string(st.failures.size()) + " of " + std::to_string(st.files + st.failures.size()) + " files not restored");
    return kExitProblem;
  }
  return kExitOk;
}
} // namespace

extern const Command cmd_unpack{"unpack", "Write a pack's tree into a directory", setup};

} // namespace hpak::cmd
