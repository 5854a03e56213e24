// hpak pack DIR -o OUT.hpak: pack a directory tree into one pack + index.
#include <CLI/CLI.hpp>

#include "cmd/command.hpp"
#include "cmd/output.hpp"
#include "core/library.hpp"
#include "core/packer.hpp"
#include "core/util/file.hpp"
#include "core/util/hash.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string src, out, name, into;
  int level = -1; // -1: 3, or the library's level with --into
  unsigned pack_version = 2;
  unsigned threads = 0;
  bool no_mtime = false, skip_special = false, no_relocate = false, json = false;
  std::vector<std::string> relocate;
} o;

void setup(CLI::App& app) {
  app.add_option("dir", o.src, "Directory to pack")->required()->check(CLI::ExistingDirectory);
  auto* out = app.add_option("-o,--output", o.out, "Pack file to write (its index goes beside it, .hidx)");
  auto* into = app.add_option("--into", o.into, "Add to this library instead (created if missing); needs --name");
  out->excludes(into);
  app.add_option("-l,--level", o.level, "zstd level (1-19; 0 stores objects uncompressed; default 3, or the library's own with --into)")->check(CLI::Range(0, 19));
  app.add_option("--pack-version", o.pack_version, "Pack format to write: 2 (default; small objects compressed together in blocks) or 1 (each object alone, as builds before format 2 write and read)")
      ->check(CLI::IsMember({1u, 2u}));
  app.add_option("-j,--threads", o.threads, "Worker threads (default: all cores)");
  app.add_option("-n,--name", o.name, "Catalog name (default: the directory's name)");
  app.add_option("--relocate", o.relocate, "Also record occurrences of this absolute path (repeatable)");
  app.add_flag("--no-relocate", o.no_relocate, "Do not record relocation offsets");
  app.add_flag("--no-mtime", o.no_mtime, "Record mtime 0 for every entry");
  app.add_flag("--skip-special", o.skip_special, "Leave out devices, sockets and fifos instead of refusing");
  app.add_flag("--json", o.json, "Print the summary as JSON");
}

int run_into(PackOptions& po) {
  if (o.name.empty()) throw Error("--into needs --name NAME for the catalog");
  if (!Library::is_library(o.into)) Library::init(o.into);
  Library lib(o.into);
  if (o.level < 0) po.level = lib.default_level() < 0 ? 3 : lib.default_level();
  double t0 = now_seconds();
  Library::AddResult r = lib.add_tree(o.src, o.name, po);
  double secs = now_seconds() - t0;
  clear_progress();
  const PackStats& s = r.stats;
  if (o.json) {
    printf("{\"library\":%s,\"catalog\":%s,\"catalog_digest\":\"%s\",\"pack\":%s,\"files\":%llu,\"file_bytes\":%llu,"
           "\"unique_objects\":%llu,\"objects_written\":%llu,\"objects_present\":%llu,\"raw_written\":%llu,"
           "\"stored_written\":%llu,\"pack_bytes\":%llu,\"relocated_files\":%llu,\"repairs\":%d,\"seconds\":%.3f}\n",
           json_str(o.into).c_str(), json_str(o.name).c_str(), to_hex(r.catalog_digest).c_str(), json_str(r.pack_name).c_str(),
           (unsigned long long)s.files, (unsigned long long)s.file_bytes, (unsigned long long)s.unique_objects,
           (unsigned long long)s.objects_written, (unsigned long long)s.objects_present, (unsigned long long)s.raw_written,
           (unsigned long long)s.stored_written, (unsigned long long)r.pack_size, (unsigned long long)s.relocated_files, r.repairs, secs);
  } else {
    printf("added '%s' to '%s': %llu files (%s), %llu of %llu objects new (%s stored), %llu already present; %.2f s\n",
           o.name.c_str(), o.into.c_str(), (unsigned long long)s.files, human_bytes(s.file_bytes).c_str(),
           (unsigned long long)s.objects_written, (unsigned long long)s.unique_objects, human_bytes(r.pack_size).c_str(),
           (unsigned long long)s.objects_present, secs);
  }
  return kExitOk;
}

int run() {
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
  if (!o.into.empty()) return run_into(po);
  if (o.out.empty()) throw Error("pack needs -o OUT.hpak or --into LIB");
  double t0 = now_seconds();
  PackFileResult r = pack_to_file(o.src, o.out, po);
  double secs = now_seconds() - t0;
  clear_progress();
  const PackStats& s = r.stats;
  if (o.json) {
    printf("{\"pack\":%s,\"pack_sha256\":%s,\"catalog\":%s,\"catalog_digest\":\"%s\",\"files\":%llu,\"dirs\":%llu,"
           "\"symlinks\":%llu,\"hardlinks\":%llu,\"file_bytes\":%llu,\"objects\":%llu,\"stored_bytes\":%llu,"
           "\"pack_bytes\":%llu,\"relocated_files\":%llu,\"seconds\":%.3f}\n",
           json_str(o.out).c_str(), json_str(to_hex(r.pack.file_sum)).c_str(), json_str(po.name).c_str(),
           to_hex(r.catalog_digest).c_str(), (unsigned long long)s.files, (unsigned long long)s.dirs,
           (unsigned long long)s.symlinks, (unsigned long long)s.hardlinks, (unsigned long long)s.file_bytes,
           (unsigned long long)s.objects_written, (unsigned long long)s.stored_written, (unsigned long long)r.pack.size,
           (unsigned long long)s.relocated_files, secs);
  } else {
    printf("packed %llu files, %llu dirs, %llu symlinks, %llu hardlinks (%s) into '%s'\n", (unsigned long long)s.files,
           (unsigned long long)s.dirs, (unsigned long long)s.symlinks, (unsigned long long)s.hardlinks,
           human_bytes(s.file_bytes).c_str(), o.out.c_str());
    printf("%llu unique objects, pack %s (%.2fx smaller), %.2f s; catalog '%s' %s\n",
           (unsigned long long)s.objects_written, human_bytes(r.pack.size).c_str(),
           r.pack.size ? double(s.file_bytes) / double(r.pack.size) : 0.0, secs, po.name.c_str(),
           to_hex(r.catalog_digest).c_str());
    for (auto& p : s.skipped) fprintf(stderr, "hpak: skipped special file '%s'\n", p.c_str());
  }
  return kExitOk;
}
} // namespace

extern const Command cmd_pack{"pack", "Pack a directory tree into an HPAK pack", setup, run};

} // namespace hpak::cmd
