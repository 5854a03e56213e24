// hpak pack DIR -o OUT.hpak: pack a directory tree into one pack + index.
#include <CLI/CLI.hpp>
#include <memory>

#include "cmd/command.hpp"
#include "cmd/json.hpp"
#include "cmd/log.hpp"
#include "cmd/output.hpp"
#include "core/library/library.hpp"
#include "core/pack/packer.hpp"
#include "base/os/file.hpp"
#include "base/hash.hpp"
#include "base/parallel.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string src, out, name, into;
  int level = -1; // -1: 3, or the library's level with --into
  unsigned pack_version = 2;
  unsigned threads = 0;
  bool no_mtime = false, skip_special = false, no_relocate = false, no_dict = false, json = false;
  std::vector<std::string> relocate;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("dir", o->src, "Directory to pack")->required()->check(CLI::ExistingDirectory);
  auto* out = app.add_option("-o,--output", o->out, "Pack file to write (its index goes beside it, .hidx)");
  auto* into = app.add_option("--into", o->into, "Add to this library instead (created if missing); needs --name");
  out->excludes(into);
  app.add_option("-l,--level", o->level, "zstd level (1-19; 0 stores objects uncompressed; default 3, or the library's own with --into)")->check(CLI::Range(0, 19));
  app.add_option("--pack-version", o->pack_version, "Pack format to write: 2 (default; small objects compressed together in blocks) or 1 (each object alone, as builds before format 2 write and read)")
      ->check(CLI::IsMember({1u, 2u}));
  app.add_option("-j,--threads", o->threads, "Worker threads (default: all cores)");
  app.add_option("-n,--name", o->name, "Catalog name (default: the directory's name)");
  app.add_option("--relocate", o->relocate, "Also record occurrences of this absolute path (repeatable)");
  app.add_flag("--no-relocate", o->no_relocate, "Do not record relocation offsets");
  app.add_flag("--no-mtime", o->no_mtime, "Record mtime 0 for every entry");
  app.add_flag("--no-dict", o->no_dict,
               "-o only: never train the pack's zstd dictionary (by default one is written when the small files hold 1 MiB or more and it saves more than it costs)");
  app.add_flag("--skip-special", o->skip_special, "Leave out devices, sockets and fifos instead of refusing");
  app.add_flag("--json", o->json, "Print the summary as JSON");
  return [o] { return run(*o); };
}

// -v: what was found and written.
void log_stats(const PackOptions& po, const PackStats& s) {
  spdlog::debug("pack: level {}, {} threads; {} files, {} dirs, {} symlinks, {} hardlinks, {} file bytes, {} relocated files",
                po.level, po.threads ? po.threads : default_threads(), s.files, s.dirs, s.symlinks, s.hardlinks, s.file_bytes,
                s.relocated_files);
  spdlog::debug("pack: {} unique objects: {} written ({} -> {} bytes), {} already present", s.unique_objects, s.objects_written,
                s.raw_written, s.stored_written, s.objects_present);
  if (po.dictionary)
    spdlog::debug("pack: dictionary of {} bytes ({} bytes of small files, estimated gain {} bytes; none unless it is positive), chosen in {:.3f} s",
                  s.dictionary_bytes, s.dictionary_small_bytes, s.dictionary_gain, s.dictionary_seconds);
}

// The relocation line, when files hold the packed path.
void print_relocation(const RelocCounts& c) {
  std::string line = relocation_line(c);
  if (!line.empty()) printf("%s\n", line.c_str());
}

// --skip-special: each special file left out, one warning each (with or without --json).
void warn_skipped(const PackStats& s) {
  for (auto& p : s.skipped) spdlog::warn("skipped special file '{}'", p);
}

int run_into(const Options& o, PackOptions& po) {
  if (o.name.empty()) throw Error("--into needs --name NAME for the catalog");
  if (!Library::is_library(o.into)) Library::init(o.into);
  Library lib(o.into);
  log_library(lib);
  if (o.level < 0) po.level = lib.default_level() < 0 ? 3 : lib.default_level();
  double t0 = now_seconds();
  Library::AddResult r = lib.add_tree(o.src, o.name, po);
  double secs = now_seconds() - t0;
  clear_progress();
  const PackStats& s = r.stats;
  log_stats(po, s);
  spdlog::debug("pack: new pack '{}' ({} bytes), {} extra pack(s) for objects a concurrent gc took away", r.pack_name.empty() ? "none" : r.pack_name,
                r.pack_size, r.repairs);
  warn_skipped(s);
  for (auto& w : r.warnings) spdlog::warn("{}", w); // the name is set: exit 0 all the same
  if (o.json) {
    JsonWriter w;
    w.begin_object().field("library", o.into).field("catalog", o.name).field("catalog_digest", to_hex(r.catalog_digest));
    w.field("pack", r.pack_name).field("files", s.files).field("file_bytes", s.file_bytes).field("unique_objects", s.unique_objects);
    w.field("objects_written", s.objects_written).field("objects_present", s.objects_present).field("raw_written", s.raw_written);
    w.field("stored_written", s.stored_written).field("pack_bytes", r.pack_size).field("relocated_files", s.relocated_files);
    relocation_json(w, s.relocated);
    w.field("repairs", r.repairs).key("seconds").fixed(secs, 3);
    w.end().newline().print(stdout);
  } else {
    printf("added '%s' to '%s': %llu files (%s), %llu of %llu objects new (%s stored), %llu already present; %.2f s\n",
           o.name.c_str(), o.into.c_str(), (unsigned long long)s.files, human_bytes(s.file_bytes).c_str(),
           (unsigned long long)s.objects_written, (unsigned long long)s.unique_objects, human_bytes(r.pack_size).c_str(),
           (unsigned long long)s.objects_present, secs);
    print_relocation(s.relocated);
  }
  return kExitOk;
}

int run(const Options& o) {
  PackOptions po;
  po.level = o.level < 0 ? 3 : o.level;
  po.pack_version = uint16_t(o.pack_version);
  po.threads = o.threads;
  po.record_mtime = !o.no_mtime;
  po.skip_special = o.skip_special;
  po.relocate = !o.no_relocate;
  po.extra_roots = o.relocate;
  po.name = o.name.empty() ? base_name(real_path(o.src)) : o.name;
  po.progress = progress_bar();
  if (!o.into.empty()) return run_into(o, po);
  if (o.out.empty()) throw Error("pack needs -o OUT.hpak or --into LIB");
  po.dictionary = !o.no_dict;
  double t0 = now_seconds();
  PackFileResult r = pack_to_file(o.src, o.out, po);
  double secs = now_seconds() - t0;
  clear_progress();
  const PackStats& s = r.stats;
  log_stats(po, s);
  warn_skipped(s);
  if (o.json) {
    JsonWriter w;
    w.begin_object().field("pack", o.out).field("pack_sha256", to_hex(r.pack.file_sum)).field("catalog", po.name);
    w.field("catalog_digest", to_hex(r.catalog_digest)).field("files", s.files).field("dirs", s.dirs).field("symlinks", s.symlinks);
    w.field("hardlinks", s.hardlinks).field("file_bytes", s.file_bytes).field("objects", s.objects_written);
    w.field("stored_bytes", s.stored_written).field("pack_bytes", r.pack.size).field("dictionary_bytes", s.dictionary_bytes);
    w.field("relocated_files", s.relocated_files);
    relocation_json(w, s.relocated);
    w.key("seconds").fixed(secs, 3);
    w.end().newline().print(stdout);
  } else {
    printf("packed %llu files, %llu dirs, %llu symlinks, %llu hardlinks (%s) into '%s'\n", (unsigned long long)s.files,
           (unsigned long long)s.dirs, (unsigned long long)s.symlinks, (unsigned long long)s.hardlinks,
           human_bytes(s.file_bytes).c_str(), o.out.c_str());
    printf("%llu unique objects, pack %s (%.2fx smaller), %.2f s; catalog '%s' %s\n",
           (unsigned long long)s.objects_written, human_bytes(r.pack.size).c_str(),
           r.pack.size ? double(s.file_bytes) / double(r.pack.size) : 0.0, secs, po.name.c_str(),
           to_hex(r.catalog_digest).c_str());
    print_relocation(s.relocated);
  }
  return kExitOk;
}
} // namespace

extern const Command cmd_pack{"pack", "Pack a directory tree into an HPAK pack", setup};

} // namespace hpak::cmd
