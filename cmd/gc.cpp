// hpak gc LIB: reclaim the space of objects no catalog names, merge small
// packs; safe while others add and restore (protocol: core/gc.hpp, man hpak-gc).
#include <CLI/CLI.hpp>
#include <csignal>
#include <unistd.h>

#include "cmd/command.hpp"
#include "cmd/duration.hpp"
#include "cmd/output.hpp"
#include "core/gc.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string lib, grace = "1h", unused;
  unsigned min_garbage = 0;
  bool dry_run = false, json = false, upgrade = false;
} o;

void setup(CLI::App& app) {
  app.add_option("library", o.lib, "Library directory")->required();
  app.add_flag("-n,--dry-run", o.dry_run, "Show what would be freed, per pack, and why; change nothing");
  app.add_option("--grace", o.grace, "Leave packs younger than this alone (default 1h; 0 is unsafe with concurrent writers)");
  app.add_option("--unused", o.unused, "Also drop catalogs not restored for this long (e.g. 30d)");
  app.add_option("--min-garbage", o.min_garbage, "Rewrite a pack only if at least this percentage of it is garbage (default 0)")
      ->check(CLI::Range(0, 100));
  app.add_flag("--upgrade", o.upgrade, "Also rewrite every pack of format version 1 as version 2 (small objects into blocks)");
  app.add_flag("--json", o.json, "Print the summary as JSON");
}

int run() {
  Library lib(o.lib);
  GcOptions go;
  go.dry_run = o.dry_run;
  go.grace_seconds = parse_duration(o.grace);
  go.min_garbage_pct = o.min_garbage;
  go.upgrade = o.upgrade;
  if (!o.unused.empty()) go.unused_seconds = parse_duration(o.unused);
  go.progress = progress_bar();
  // Test hooks for crash-consistency and race tests: HPAK_TEST_GC_KILL_AT=STEP
  // makes gc SIGKILL itself right after that step, HPAK_TEST_GC_STOP_AT=STEP
  // stops it (SIGSTOP) there until the test continues it. Steps: published,
  // condemned, deleted, sweep (orphan packs chosen, before they are removed).
  const char* kill_at = getenv("HPAK_TEST_GC_KILL_AT");
  const char* stop_at = getenv("HPAK_TEST_GC_STOP_AT");
  if (kill_at || stop_at) {
    std::string kill_step = kill_at ? kill_at : "", stop_step = stop_at ? stop_at : "";
    go.on_step = [kill_step, stop_step](const char* s) {
      if (kill_step == s) kill(getpid(), SIGKILL);
      if (stop_step == s) kill(getpid(), SIGSTOP);
    };
  }
  double t0 = now_seconds();
  GcResult r = gc(lib, go);
  double secs = now_seconds() - t0;
  clear_progress();
  for (auto& w : r.warnings) fprintf(stderr, "hpak: warning: %s\n", w.c_str());
  if (o.json) {
    printf("{\"dry_run\":%s,\"packs_before\":%llu,\"packs_after\":%llu,\"objects_kept\":%llu,\"objects_dropped\":%llu,"
           "\"bytes_before\":%llu,\"bytes_after\":%llu,\"bytes_freed\":%lld,\"copied_objects\":%llu,\"copied_bytes\":%llu,"
           "\"copy_seconds\":%.6f,\"seconds\":%.3f,\"tmp_removed\":%llu,\"dropped_catalogs\":[",
           o.dry_run ? "true" : "false", (unsigned long long)r.packs_before, (unsigned long long)r.packs_after,
           (unsigned long long)r.objects_kept, (unsigned long long)r.objects_dropped, (unsigned long long)r.bytes_before,
           (unsigned long long)r.bytes_after, (long long)r.bytes_before - (long long)r.bytes_after, (unsigned long long)r.copied_objects,
           (unsigned long long)r.copied_bytes, r.copy_seconds, secs, (unsigned long long)r.tmp_removed);
    for (size_t i = 0; i < r.dropped_catalogs.size(); i++) printf("%s%s", i ? "," : "", json_str(r.dropped_catalogs[i]).c_str());
    printf("],\"packs\":[");
    for (size_t i = 0; i < r.packs.size(); i++) {
      auto& p = r.packs[i];
      printf("%s{\"pack\":%s,\"action\":\"%s\",\"why\":%s,\"bytes\":%llu,\"objects\":%llu,\"live_objects\":%llu,\"live_bytes\":%llu}",
             i ? "," : "", json_str(p.pack).c_str(), p.action.c_str(), json_str(p.why).c_str(), (unsigned long long)p.size,
             (unsigned long long)p.objects, (unsigned long long)p.live_objects, (unsigned long long)p.live_bytes);
    }
    printf("]}\n");
    return kExitOk;
  }
  for (auto& c : r.dropped_catalogs) printf("%s catalog '%s' (unused)\n", o.dry_run ? "would drop" : "dropped", c.c_str());
  for (auto& p : r.packs)
    printf("%-8s %s  %llu/%llu objects live, %s  (%s)\n", p.action.c_str(), p.pack.substr(0, 17).c_str(),
           (unsigned long long)p.live_objects, (unsigned long long)p.objects, human_bytes(p.size).c_str(), p.why.c_str());
  printf("%s: %llu packs -> %llu, %s -> %s (%s freed), %llu objects dropped, %.2f s\n", o.dry_run ? "dry run" : "gc",
         (unsigned long long)r.packs_before, (unsigned long long)r.packs_after, human_bytes(r.bytes_before).c_str(),
         human_bytes(r.bytes_after).c_str(), human_bytes(r.bytes_before - std::min(r.bytes_before, r.bytes_after)).c_str(),
         (unsigned long long)r.objects_dropped, secs);
  return kExitOk;
}
} // namespace

extern const Command cmd_gc{"gc", "Reclaim unreferenced objects and merge packs of a library", setup, run};

} // namespace hpak::cmd
