// hpak publish LIB DEST: copy a library into a directory any web server can
// serve (packs and indexes first, the root last); see core/remote_publish.hpp.
#include <CLI/CLI.hpp>

#include "cmd/command.hpp"
#include "cmd/output.hpp"
#include "core/remote_publish.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string lib, dest;
  uint64_t generation = 0;
  bool json = false;
} o;

void setup(CLI::App& app) {
  app.add_option("library", o.lib, "Library directory")->required();
  app.add_option("dest", o.dest, "Directory served over HTTP (created if missing)")->required();
  app.add_option("--generation", o.generation, "Generation of the new root (default: one above the published one; must be above it)")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 62));
  app.add_flag("--json", o.json, "Print the summary as JSON");
}

int run() {
  Library lib(o.lib);
  PublishOptions po;
  po.generation = o.generation;
  po.progress = progress_bar();
  double t0 = now_seconds();
  PublishResult r = publish(lib, o.dest, po);
  double secs = now_seconds() - t0;
  clear_progress();
  if (o.json)
    printf("{\"dest\":%s,\"generation\":%llu,\"previous_generation\":%llu,\"packs\":%llu,\"packs_copied\":%llu,"
           "\"bytes_copied\":%llu,\"catalogs\":%llu,\"seconds\":%.3f}\n",
           json_str(o.dest).c_str(), (unsigned long long)r.generation, (unsigned long long)r.previous_generation,
           (unsigned long long)r.packs, (unsigned long long)r.packs_copied, (unsigned long long)r.bytes_copied,
           (unsigned long long)r.catalogs, secs);
  else
    printf("published '%s' to '%s' as generation %llu: %llu catalogs, %llu packs (%llu new, %s copied) in %.3f s\n",
           o.lib.c_str(), o.dest.c_str(), (unsigned long long)r.generation, (unsigned long long)r.catalogs,
           (unsigned long long)r.packs, (unsigned long long)r.packs_copied, human_bytes(r.bytes_copied).c_str(), secs);
  return kExitOk;
}
} // namespace

extern const Command cmd_publish{"publish", "Publish a library as plain files for a web server", setup, run};

} // namespace hpak::cmd
