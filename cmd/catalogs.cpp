// hpak catalogs LIB [--json] | hpak catalogs rm LIB NAME...: the named
// catalogs of a library: files, bytes, last use; removing a name.
#include <CLI/CLI.hpp>
#include <memory>
#include <ctime>

#include "cmd/command.hpp"
#include "cmd/json.hpp"
#include "cmd/log.hpp"
#include "cmd/output.hpp"
#include "core/library/catalog_summary.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::vector<std::string> args;
  bool json = false, names = false;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("args", o->args, "LIB, or: rm LIB NAME...")->required();
  app.add_flag("--json", o->json, "One JSON object per catalog");
  app.add_flag("--names", o->names, "Only the names, one a line, catalogs not read (for scripts and shell completion)");
  return [o] { return run(*o); };
}

// `catalogs rm LIB NAME`: a name file is removed (durably: catalogs/ synced
// before it is reported); junk under a valid name (a directory, a link, a
// malformed file) is moved into LIB/quarantine/ instead, as it is. False
// (after a one-line error) when there is nothing of that name.
bool remove_one(Library& lib, const std::string& name) {
  std::string why = Library::check_catalog_name(name);
  if (!why.empty()) {
    log_error(why);
    return false;
  }
  std::string junk;
  switch (lib.catalog_entry(name, &junk)) {
  case Library::CatalogEntry::Absent: break;
  case Library::CatalogEntry::Junk:
    printf("moved '%s' to '%s' (it is not a name file: %s)\n", lib.layout().catalog_path(name).c_str(), lib.quarantine_catalog(name).c_str(),
           escape_controls(junk).c_str());
    return true;
  case Library::CatalogEntry::Name:
    if (!lib.remove_catalog(name)) break; // removed meanwhile
    printf("removed catalog '%s' (its objects go at the next gc)\n", name.c_str());
    return true;
  }
  log_error("no catalog named '" + name + "' in library '" + lib.root() + "'");
  return false;
}

void print_json(const CatalogSummary& s) {
  JsonWriter w;
  w.begin_object().field("name", s.name).field("digest", s.error.empty() ? to_hex(s.digest) : "").field("files", s.files);
  w.field("bytes", s.bytes).field("relocated_files", s.relocated);
  relocation_json(w, s.kinds);
  w.field("last_used", s.last_used);
  if (!s.error.empty()) w.field("error", s.error);
  w.end().newline().print(stdout);
}

void print_line(const CatalogSummary& s) {
  if (!s.error.empty()) {
    printf("%-30s BROKEN: %s\n", s.name.c_str(), s.error.c_str());
    return;
  }
  char when[32] = "-";
  time_t t = time_t(s.last_used);
  struct tm tm;
  if (s.last_used) strftime(when, sizeof when, "%Y-%m-%d %H:%M", gmtime_r(&t, &tm));
  printf("%-30s %8llu files %10s  last used %s  %s\n", s.name.c_str(), (unsigned long long)s.files, human_bytes(s.bytes).c_str(), when,
         to_hex(s.digest).substr(0, 12).c_str());
}

void print_summary(const Options& o, const CatalogSummary& s) {
  if (o.json)
    print_json(s);
  else
    print_line(s);
}

int run(const Options& o) {
  if (o.args[0] == "rm") {
    if (o.args.size() < 3) throw Error("usage: hpak catalogs rm LIB NAME...");
    Library lib(o.args[1]);
    int rc = kExitOk;
    for (size_t i = 2; i < o.args.size(); i++)
      if (!remove_one(lib, o.args[i])) rc = kExitError;
    return rc;
  }
  if (o.args.size() != 1) throw Error("usage: hpak catalogs LIB");
  if (o.names) { // the names only: the library's packs and indexes are not loaded
    for (auto& name : Library::catalog_names_at(o.args[0])) printf("%s\n", name.c_str());
    return kExitOk;
  }
  Library lib(o.args[0]);
  log_library(lib);
  for (auto& name : lib.catalog_names()) print_summary(o, summarize_catalog(lib, name));
  return kExitOk;
}
} // namespace

extern const Command cmd_catalogs{"catalogs", "List (or rm) the named catalogs of a library", setup, /*hidden=*/false,
                                  /*positionals=*/"LIB | rm LIB CATALOG..."};

} // namespace hpak::cmd
