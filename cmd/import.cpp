// hpak import LIB SOURCE...: bring rcc hololibs (directories or hololib.zip
// exports) into a library, one catalog name per rcc catalog.
#include <CLI/CLI.hpp>
#include <memory>

#include "cmd/command.hpp"
#include "cmd/json.hpp"
#include "cmd/log.hpp"
#include "cmd/output.hpp"
#include "core/import/rcc_import.hpp"
#include "base/hash.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string lib, name;
  std::vector<std::string> sources;
  int level = -1;
  unsigned threads = 0;
  bool json = false;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("library", o->lib, "Library directory (created if missing)")->required();
  app.add_option("sources", o->sources, "rcc hololib directories (holding library/ and catalog/) or hololib.zip files")->required();
  app.add_option("-n,--name", o->name, "Name for the catalog (only when the sources hold exactly one)");
  app.add_option("-l,--level", o->level, "zstd level (1-19; 0 stores objects uncompressed; default: the library's own, else 3)")->check(CLI::Range(0, 19));
  app.add_option("-j,--threads", o->threads, "Worker threads (default: all cores)");
  app.add_flag("--json", o->json, "Print the summary as JSON");
  return [o] { return run(*o); };
}

void print_json(const Options& o, const RccImportResult& r, double secs) {
  JsonWriter w;
  w.begin_object().field("library", o.lib).key("catalogs").begin_array();
  for (const RccImportedCatalog& c : r.catalogs) {
    w.begin_object().field("name", c.name).field("source", c.source).field("platform", c.platform).field("digest", to_hex(c.digest));
    w.field("files", c.files).field("dirs", c.dirs).field("symlinks", c.symlinks).field("file_bytes", c.file_bytes);
    w.field("relocated_files", c.relocated_files).field("left_out", c.left_out);
    w.field("space_names_kept", c.space_names_kept);
    relocation_json(w, c.relocated);
    w.end();
  }
  w.end().field("unique_objects", r.unique_objects).field("objects_written", r.objects_written);
  w.field("objects_present", r.objects_present).field("raw_written", r.raw_written).field("stored_written", r.stored_written);
  w.field("pack", r.pack_name).field("pack_bytes", r.pack_size).field("repairs", r.repairs).key("seconds").fixed(secs, 3);
  w.end().newline().print(stdout);
}

void print_text(const RccImportResult& r, double secs) {
  for (const RccImportedCatalog& c : r.catalogs)
    printf("imported '%s' from '%s': %llu files (%s), %llu dirs, %llu symlinks, %llu relocated files\n", c.name.c_str(),
           c.source.c_str(), (unsigned long long)c.files, human_bytes(c.file_bytes).c_str(), (unsigned long long)c.dirs,
           (unsigned long long)c.symlinks, (unsigned long long)c.relocated_files);
  for (const RccImportedCatalog& c : r.catalogs)
    if (c.relocated.total()) printf("  '%s': %s\n", c.name.c_str(), relocation_line(c.relocated).c_str());
  for (const RccImportedCatalog& c : r.catalogs)
    if (c.space_names_kept)
      printf("  '%s': %llu bare occurrences of the space name (outside its path) left as they are\n", c.name.c_str(),
             (unsigned long long)c.space_names_kept);
  printf("%llu of %llu objects new (%s stored), %llu already present; %.2f s\n", (unsigned long long)r.objects_written,
         (unsigned long long)r.unique_objects, human_bytes(r.pack_size).c_str(), (unsigned long long)r.objects_present, secs);
}

int run(const Options& o) {
  if (!Library::is_library(o.lib)) Library::init(o.lib);
  Library lib(o.lib);
  log_library(lib);
  RccImportOptions io;
  io.rename = o.name;
  io.level = o.level >= 0 ? o.level : (lib.default_level() < 0 ? 3 : lib.default_level());
  io.threads = o.threads;
  io.progress = progress_bar();
  double t0 = now_seconds();
  RccImportResult r;
  try {
    r = import_rcc(lib, o.sources, io);
  } catch (const RccRefused& e) {
    log_error(std::string(e.what()) + "; nothing imported");
    return kExitProblem;
  }
  double secs = now_seconds() - t0;
  clear_progress();
  if (o.json) print_json(o, r, secs);
  else print_text(r, secs);
  return kExitOk;
}
} // namespace

extern const Command cmd_import{"import", "Import rcc hololibs (directories or hololib.zip) into a library", setup};

} // namespace hpak::cmd
