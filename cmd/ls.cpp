// hpak ls PACK: the tree inside a pack, like `tar -t` (-l long, --json).
#include <CLI/CLI.hpp>
#include <memory>
#include <ctime>

#include "cmd/command.hpp"
#include "core/library/library.hpp"
#include "cmd/json.hpp"
#include "cmd/log.hpp"
#include "cmd/output.hpp"
#include "core/pack/pack_reader.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string pack, catalog;
  bool long_format = false, json = false, catalogs = false;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("pack", o->pack, "Pack file")->required();
  app.add_option("-c,--catalog", o->catalog, "Catalog to list when the pack holds several");
  app.add_flag("-l,--long", o->long_format, "Mode, size, mtime, digest and path");
  app.add_flag("--json", o->json, "One JSON object per entry");
  app.add_flag("--catalogs", o->catalogs, "List the catalogs' names instead");
  return [o] { return run(*o); };
}

char type_char(formats::NodeType t) {
  switch (t) {
  case formats::NodeType::Dir: return 'd';
  case formats::NodeType::Symlink: return 'l';
  case formats::NodeType::Hardlink: return 'h';
  default: return '-';
  }
}

// Permission bits as 4 octal digits ("0755").
std::string octal_mode(uint32_t mode) {
  char buf[16];
  auto r = std::to_chars(buf, buf + sizeof buf, mode, 8);
  std::string s(buf, size_t(r.ptr - buf));
  return s.size() < 4 ? std::string(4 - s.size(), '0') + s : s;
}

// One line: {"path","type","mode","size","mtime_ns"[,"digest","relocations"[,"relocation_kind"]][,"target"]}.
void print_json(JsonWriter& w, const formats::Node& n) {
  w.begin_object().field("path", n.path).field("type", formats::node_type_name(n.type)).field("mode", octal_mode(n.mode));
  w.field("size", n.size).field("mtime_ns", n.mtime_ns);
  if (n.type == formats::NodeType::File) w.field("digest", to_hex(n.digest)).field("relocations", n.relocs.size());
  if (n.type == formats::NodeType::File && !n.relocs.empty()) w.field("relocation_kind", formats::reloc_kind_name(n.reloc_kind));
  if (!n.target.empty()) w.field("target", n.target);
  w.end().newline().print(stdout);
}

int run(const Options& o) {
  PackReader pack(o.pack);
  pack.set_base_source(enclosing_library_bases(o.pack)); // a library pack's catalog stored against a base
  log_pack(pack);
  if (o.catalogs) {
    for (auto& n : pack.catalog_names()) printf("%s\n", n.c_str());
    return kExitOk;
  }
  formats::Catalog cat = pack.load_catalog(o.catalog);
  JsonWriter w;
  for (auto& n : cat.nodes) {
    if (o.json) {
      print_json(w, n);
    } else if (o.long_format) {
      time_t secs = time_t(n.mtime_ns / 1000000000);
      struct tm tm;
      gmtime_r(&secs, &tm);
      char when[32];
      strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
      std::string digest = n.type == formats::NodeType::File ? to_hex(n.digest).substr(0, 12) : std::string(12, ' ');
      printf("%s %12llu %s %s %s%s", mode_string(type_char(n.type), n.mode).c_str(), (unsigned long long)n.size, when,
             digest.c_str(), n.path.c_str(), n.type == formats::NodeType::Dir ? "/" : "");
      if (n.type == formats::NodeType::Symlink) printf(" -> %s", n.target.c_str());
      if (n.type == formats::NodeType::Hardlink) printf(" link to %s", n.target.c_str());
      printf("\n");
    } else {
      printf("%s%s\n", n.path.c_str(), n.type == formats::NodeType::Dir ? "/" : "");
    }
  }
  return kExitOk;
}
} // namespace

extern const Command cmd_ls{"ls", "List the tree inside a pack", setup};

} // namespace hpak::cmd
