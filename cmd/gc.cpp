// hpak gc LIB: reclaim the space of objects no catalog names, merge small
// packs; safe while others add and restore (protocol: core/gc/gc.hpp, man hpak-gc).
#include <CLI/CLI.hpp>
#include <memory>
#include <csignal>
#include <cstdlib>

#include "cmd/command.hpp"
#include "cmd/json.hpp"
#include "cmd/log.hpp"
#include "cmd/duration.hpp"
#include "cmd/output.hpp"
#include "core/gc/gc.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string lib, grace = "1h", unused;
  unsigned min_garbage = kDefaultMinGarbagePct, threads = 0;
  bool dry_run = false, json = false, upgrade = false, full = false;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("library", o->lib, "Library directory")->required();
  app.add_flag("-n,--dry-run", o->dry_run, "Show what would be freed, per pack, and why; change nothing");
  app.add_option("--grace", o->grace, "Leave packs younger than this alone (default 1h; 0 is unsafe with concurrent writers)");
  app.add_option("--unused", o->unused, "Also drop catalogs not restored for this long (e.g. 30d)");
  CLI::Option* min_garbage =
      app.add_option("--min-garbage", o->min_garbage,
                     "Rewrite a pack for its garbage only if at least this percentage of its bytes is dead (default " +
                         std::to_string(kDefaultMinGarbagePct) + "; 0: any garbage)")
          ->check(CLI::Range(0, 100));
  app.add_flag("--full", o->full, "Repack every pack past the grace period into one, whatever its garbage")->excludes(min_garbage);
  app.add_flag("--upgrade", o->upgrade, "Also rewrite every pack of format version 1 as version 2 (small objects into blocks)");
  app.add_flag("--json", o->json, "Print the summary as JSON");
  app.add_option("-j,--threads", o->threads, "Worker threads reading catalogs for the mark and sizing large packs' objects (default: all cores)");
  return [o] { return run(*o); };
}

void print_json(const Options& o, const GcResult& r, double secs) {
  JsonWriter w;
  w.begin_object().field("dry_run", o.dry_run).field("packs_before", r.packs_before).field("packs_after", r.packs_after);
  w.field("objects_kept", r.objects_kept).field("objects_dropped", r.objects_dropped);
  w.field("bytes_before", r.bytes_before).field("bytes_after", r.bytes_after);
  w.field("bytes_freed", static_cast<int64_t>(r.bytes_before - r.bytes_after)); // negative when the library grew
  w.field("copied_objects", r.copied_objects).field("copied_bytes", r.copied_bytes);
  w.key("copy_seconds").fixed(r.copy_seconds, 6).key("seconds").fixed(secs, 3).field("tmp_removed", r.tmp_removed);
  w.key("dropped_catalogs").strings(r.dropped_catalogs);
  w.key("left_for_space").strings(r.left_for_space).field("space_needed", r.space_needed).field("space_free", r.space_free);
  w.key("space_error").value_or_null(r.space_error);
  w.key("packs").begin_array();
  for (auto& p : r.packs) {
    w.begin_object().field("pack", p.pack).field("action", to_string(p.action)).field("why", p.why).field("bytes", p.size);
    w.field("objects", p.objects).field("live_objects", p.live_objects).field("live_bytes", p.live_bytes);
    w.field("dead_bytes", p.dead_bytes).end();
  }
  w.end().end().newline().print(stdout);
}

// One line per name dropped and per pack, and the summary (the figures of
// --json, less the timings' precision).
void print_text(const Options& o, const GcResult& r, double secs) {
  for (auto& c : r.dropped_catalogs) printf("%s catalog '%s' (unused)\n", o.dry_run ? "would drop" : "dropped", c.c_str());
  for (auto& p : r.packs)
    printf("%-8s %s  %llu/%llu objects live, %s  (%s)\n", to_string(p.action), p.pack.substr(0, 17).c_str(),
           (unsigned long long)p.live_objects, (unsigned long long)p.objects, human_bytes(p.size).c_str(), p.why.c_str());
  printf("%s: %llu packs -> %llu, %s -> %s (%s freed), %llu objects kept, %llu dropped, %llu copied (%s), %.2f s\n",
         o.dry_run ? "dry run" : "gc", (unsigned long long)r.packs_before, (unsigned long long)r.packs_after,
         human_bytes(r.bytes_before).c_str(), human_bytes(r.bytes_after).c_str(),
         human_bytes(r.bytes_before - std::min(r.bytes_before, r.bytes_after)).c_str(), (unsigned long long)r.objects_kept,
         (unsigned long long)r.objects_dropped, (unsigned long long)r.copied_objects, human_bytes(r.copied_bytes).c_str(), secs);
}

int run(const Options& o) {
  Library lib(o.lib);
  log_library(lib);
  GcOptions go;
  go.dry_run = o.dry_run;
  go.grace_seconds = parse_duration(o.grace);
  go.min_garbage_pct = o.min_garbage;
  go.upgrade = o.upgrade;
  go.full = o.full;
  go.threads = o.threads;
  if (!o.unused.empty()) go.unused_seconds = parse_duration(o.unused);
  go.progress = progress_bar();
  // Test hooks for crash-consistency and race tests: HPAK_TEST_GC_KILL_AT=STEP
  // makes gc SIGKILL itself right after that step, HPAK_TEST_GC_STOP_AT=STEP
  // stops it (SIGSTOP) there until the test continues it. Steps: published,
  // condemned, deleted, sweep (orphan packs chosen, before they are removed),
  // orphan-condemned (an orphan pack condemned, before its index is looked
  // for again), dead-condemned and dead-deleted (the packs with no live
  // object condemned, deleted: before any copy).
  const char* kill_at = getenv("HPAK_TEST_GC_KILL_AT");
  const char* stop_at = getenv("HPAK_TEST_GC_STOP_AT");
  if (kill_at || stop_at) {
    std::string kill_step = kill_at ? kill_at : "", stop_step = stop_at ? stop_at : "";
    go.on_step = [kill_step, stop_step](const char* s) {
#ifdef SIGKILL
      if (kill_step == s) std::raise(SIGKILL);
#else
      if (kill_step == s) std::_Exit(128 + 9); // no SIGKILL (Windows): as abrupt, no destructor runs
#endif
#ifdef SIGSTOP
      if (stop_step == s) std::raise(SIGSTOP);
#else
      if (stop_step == s) throw Error("HPAK_TEST_GC_STOP_AT: no SIGSTOP on this platform");
#endif
    };
  }
  double t0 = now_seconds();
  GcResult r = gc(lib, go);
  double secs = now_seconds() - t0;
  clear_progress();
  for (auto& w : r.warnings) spdlog::warn("{}", w);
  if (!r.left_for_space.empty()) {
    const bool one = r.left_for_space.size() == 1;
    std::string why = "copying " + std::string(one ? "its" : "their") + " live objects needs " + human_bytes(r.space_needed) +
                      ", the file system has " + human_bytes(r.space_free) + " free";
    if (!r.space_error.empty()) why = r.space_error + " (" + why + ")";
    spdlog::warn("{} pack{} left as {} for lack of space in '{}': {}; free some space (or grow the file system) and run gc again",
                 r.left_for_space.size(), one ? "" : "s", one ? "it was" : "they were", o.lib, why);
  }
  for (auto& p : r.packs)
    spdlog::debug("gc: pack '{}': {} ({}); {}/{} objects live, {}/{} bytes", p.pack, to_string(p.action), p.why, p.live_objects, p.objects,
                  p.live_bytes, p.size);
  spdlog::debug("gc: {} packs -> {}, {} objects kept, {} dropped, {} catalogs dropped, {} objects ({} bytes) copied in {:.3f} s",
                r.packs_before, r.packs_after, r.objects_kept, r.objects_dropped, r.dropped_catalogs.size(), r.copied_objects,
                r.copied_bytes, r.copy_seconds);
  const int rc = r.left_for_space.empty() ? kExitOk : kExitProblem; // it freed what it could, not all
  if (o.json) {
    print_json(o, r, secs);
    return rc;
  }
  if (global().quiet) return rc; // -q: warnings and errors only
  print_text(o, r, secs);
  return rc;
}
} // namespace

extern const Command cmd_gc{"gc", "Reclaim unreferenced objects and merge packs of a library", setup};

} // namespace hpak::cmd
