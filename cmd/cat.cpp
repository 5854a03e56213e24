// hpak cat PACK PATH|DIGEST: one file's bytes to stdout, read through the
// index without touching the rest of the pack.
#include <CLI/CLI.hpp>

#include "base/os/sys.hpp"
#include "cmd/command.hpp"
#include "cmd/log.hpp"
#include "core/pack/pack_reader.hpp"
#include "base/os/file.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string pack, what, catalog;
} o;

void setup(CLI::App& app) {
  app.add_option("pack", o.pack, "Pack file")->required();
  app.add_option("object", o.what, "A path in the catalog, or an object digest (hex, or a unique prefix of 4+ digits)")->required();
  app.add_option("-c,--catalog", o.catalog, "Catalog to resolve paths in when the pack holds several");
}

int run() {
  PackReader pack(o.pack);
  log_pack(pack);
  std::optional<formats::IndexRecord> rec;
  if (is_hex(o.what) && o.what.size() >= 4 && o.what.size() <= 64) {
    std::string lower;
    for (char c : o.what) lower += char(std::tolower((unsigned char)c));
    auto hits = pack.index().find_prefix(lower);
    DigestSet distinct;
    for (auto i : hits) distinct.insert(pack.index().digest_at(i));
    if (distinct.size() > 1) throw Error("digest prefix '" + o.what + "' is ambiguous in '" + o.pack + "'");
    if (!hits.empty()) rec = pack.index().record_at(hits[0]);
  }
  if (!rec) {
    formats::Catalog cat = pack.load_catalog(o.catalog);
    std::string path = o.what;
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    if (path.rfind("./", 0) == 0) path = path.substr(2);
    const formats::Node* node = nullptr;
    for (auto& n : cat.nodes)
      if (n.path == path) node = &n;
    if (node && node->type == formats::NodeType::Hardlink)
      for (auto& n : cat.nodes)
        if (n.path == node->target) node = &n;
    if (!node) throw Error("'" + o.what + "' is neither a path in the catalog nor an object digest in '" + o.pack + "'");
    if (node->type == formats::NodeType::Dir) throw Error("'" + o.what + "' is a directory");
    if (node->type == formats::NodeType::Symlink) throw Error("'" + o.what + "' is a symlink to '" + node->target + "'");
    rec = pack.find(node->digest);
    if (!rec) throw Error("object " + to_hex(node->digest) + " for '" + o.what + "' is not in the pack");
  }
  fflush(stdout);
  pack.read_stream(*rec, [](ByteSpan chunk) { write_all(os::kStdout, chunk, "standard output"); });
  return kExitOk;
}
} // namespace

extern const Command cmd_cat{"cat", "Write one object's bytes to stdout", setup, run};

} // namespace hpak::cmd
