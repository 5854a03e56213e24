// hpak repair LIB: salvage intact objects from damaged packs; report what is lost.
#include <CLI/CLI.hpp>

#include "cmd/command.hpp"
#include "cmd/output.hpp"
#include "core/repair.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string lib;
  bool dry_run = false, json = false;
  unsigned threads = 0;
} o;

void setup(CLI::App& app) {
  app.add_option("library", o.lib, "Library directory")->required();
  app.add_flag("-n,--dry-run", o.dry_run, "Report what would be salvaged and lost; change nothing");
  app.add_option("-j,--threads", o.threads, "Worker threads (default: all cores)");
  app.add_flag("--json", o.json, "Print the report as JSON");
}

int run() {
  Library lib(o.lib);
  RepairOptions ro;
  ro.dry_run = o.dry_run;
  ro.threads = o.threads;
  ro.progress = progress_bar();
  RepairResult r = repair(lib, ro);
  clear_progress();
  if (o.json) {
    printf("{\"dry_run\":%s,\"packs_checked\":%llu,\"packs_rewritten\":%llu,\"indexes_rebuilt\":%llu,\"objects_salvaged\":%llu,"
           "\"objects_elsewhere\":%llu,\"broken_catalogs\":[",
           o.dry_run ? "true" : "false", (unsigned long long)r.packs_checked, (unsigned long long)r.packs_rewritten,
           (unsigned long long)r.indexes_rebuilt, (unsigned long long)r.objects_salvaged, (unsigned long long)r.objects_elsewhere);
    for (size_t i = 0; i < r.broken_catalogs.size(); i++) printf("%s%s", i ? "," : "", json_str(r.broken_catalogs[i]).c_str());
    printf("],\"lost\":[");
    for (size_t i = 0; i < r.lost.size(); i++) {
      printf("%s{\"digest\":\"%s\",\"paths\":[", i ? "," : "", r.lost[i].digest.c_str());
      for (size_t k = 0; k < r.lost[i].paths.size(); k++) printf("%s%s", k ? "," : "", json_str(r.lost[i].paths[k]).c_str());
      printf("]}");
    }
    printf("]}\n");
  } else {
    for (auto& n : r.notes) printf("%s\n", n.c_str());
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

extern const Command cmd_repair{"repair", "Salvage intact objects from damaged packs of a library", setup, run};

} // namespace hpak::cmd
