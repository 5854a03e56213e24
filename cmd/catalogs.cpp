// hpak catalogs LIB [--json] | hpak catalogs rm LIB NAME...: the named
// catalogs of a library: files, bytes, last use; removing a name.
#include <CLI/CLI.hpp>
#include <ctime>

#include "cmd/command.hpp"
#include "cmd/json.hpp"
#include "cmd/log.hpp"
#include "cmd/output.hpp"
#include "core/library/library.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::vector<std::string> args;
  bool json = false, names = false;
} o;

void setup(CLI::App& app) {
  app.add_option("args", o.args, "LIB, or: rm LIB NAME...")->required();
  app.add_flag("--json", o.json, "One JSON object per catalog");
  app.add_flag("--names", o.names, "Only the names, one a line, catalogs not read (for scripts and shell completion)");
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

int run() {
  if (o.args[0] == "rm") {
    if (o.args.size() < 3) throw Error("usage: hpak catalogs rm LIB NAME...");
    Library lib(o.args[1]);
    int rc = kExitOk;
    for (size_t i = 2; i < o.args.size(); i++)
      if (!remove_one(lib, o.args[i])) rc = kExitError;
    return rc;
  }
  if (o.args.size() != 1) throw Error("usage: hpak catalogs LIB");
  Library lib(o.args[0]);
  log_library(lib);
  if (o.names) {
    for (auto& name : lib.catalog_names()) printf("%s\n", name.c_str());
    return kExitOk;
  }
  for (auto& name : lib.catalog_names()) {
    Digest d;
    uint64_t files = 0, bytes = 0, relocated = 0;
    RelocCounts kinds;
    std::string error;
    try {
      formats::Catalog c = lib.load_catalog(name, &d);
      for (auto& n : c.nodes)
        if (n.type == formats::NodeType::File) {
          files++;
          bytes += n.size;
          relocated += !n.relocs.empty();
          kinds.add(n, c.roots);
        }
    } catch (const Error& e) {
      error = e.what();
    }
    int64_t used = lib.last_used(name);
    if (o.json) {
      JsonWriter w;
      w.begin_object().field("name", name).field("digest", error.empty() ? to_hex(d) : "").field("files", files).field("bytes", bytes);
      w.field("relocated_files", relocated);
      relocation_json(w, kinds);
      w.field("last_used", used);
      if (!error.empty()) w.field("error", error);
      w.end().newline().print(stdout);
    } else {
      char when[32] = "-";
      time_t t = time_t(used);
      struct tm tm;
      if (used) strftime(when, sizeof when, "%Y-%m-%d %H:%M", gmtime_r(&t, &tm));
      if (error.empty())
        printf("%-30s %8llu files %10s  last used %s  %s\n", name.c_str(), (unsigned long long)files, human_bytes(bytes).c_str(), when,
               to_hex(d).substr(0, 12).c_str());
      else
        printf("%-30s BROKEN: %s\n", name.c_str(), error.c_str());
    }
  }
  return kExitOk;
}
} // namespace

extern const Command cmd_catalogs{"catalogs", "List (or rm) the named catalogs of a library", setup, run, /*hidden=*/false,
                                  /*positionals=*/"LIB | rm LIB CATALOG..."};

} // namespace hpak::cmd
