// hpak repair LIB: salvage intact objects from damaged packs; report what is lost.
#include <CLI/CLI.hpp>
#include <memory>

#include "cmd/command.hpp"
#include "cmd/json.hpp"
#include "cmd/log.hpp"
#include "cmd/output.hpp"
#include "core/gc/repair.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string lib;
  bool dry_run = false, json = false;
  unsigned threads = 0;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("library", o->lib, "Library directory")->required();
  app.add_flag("-n,--dry-run", o->dry_run, "Report what would be salvaged and lost; change nothing");
  app.add_option("-j,--threads", o->threads, "Worker threads (default: all cores)");
  app.add_flag("--json", o->json, "Print the report as JSON");
  return [o] { return run(*o); };
}

int run(const Options& o) {
  Library lib(o.lib);
  log_library(lib);
  RepairOptions ro;
  ro.dry_run = o.dry_run;
  ro.threads = o.threads;
  ro.progress = progress_bar();
  RepairResult r = repair(lib, ro);
  clear_progress();
  if (o.json) {
    JsonWriter w;
    w.begin_object().field("dry_run", o.dry_run).field("packs_checked", r.packs_checked).field("packs_rewritten", r.packs_rewritten);
    w.field("indexes_rebuilt", r.indexes_rebuilt).field("objects_salvaged", r.objects_salvaged);
    w.field("objects_elsewhere", r.objects_elsewhere).key("broken_catalogs").strings(r.broken_catalogs);
    w.key("quarantined").strings(r.quarantined).key("midx_rebuilt").value_or_null(r.midx_rebuilt);
    w.key("lost").begin_array();
    for (auto& l : r.lost) w.begin_object().field("digest", l.digest).key("paths").strings(l.paths).end();
    w.end().end().newline().print(stdout);
  } else {
    for (auto& n : r.notes) printf("%s\n", n.c_str());
    for (auto& q : r.quarantined) printf("%s %s (not a name file; gc refuses to run while it is in catalogs/)\n", o.dry_run ? "would move" : "moved", escape_controls(q).c_str());
    if (!r.midx_rebuilt.empty()) printf("%s the multi-pack index: %s\n", o.dry_run ? "would rewrite" : "rewrote", r.midx_rebuilt.c_str());
    for (auto& m : r.moved) printf("moved damaged pack to '%s'\n", m.c_str());
    for (auto& l : r.lost) {
      printf("LOST object %s\n", l.digest.c_str());
      for (auto& p : l.paths) printf("  breaks %s\n", p.c_str());
    }
    for (auto& c : r.broken_catalogs) printf("catalog '%s' cannot be fully restored\n", c.c_str());
    printf("%s: %llu packs checked, %llu rewritten, %llu indexes rebuilt, %llu objects salvaged, %zu lost\n",
           o.dry_run ? "dry run" : "repair", (unsigned long long)r.packs_checked, (unsigned long long)r.packs_rewritten,
           (unsigned long long)r.indexes_rebuilt, (unsigned long long)r.objects_salvaged, r.lost.size());
  }
  return r.lost.empty() && r.broken_catalogs.empty() ? kExitOk : kExitProblem;
}
} // namespace

extern const Command cmd_repair{"repair", "Salvage intact objects from damaged packs of a library", setup};

} // namespace hpak::cmd
