#include "core/pack/pack_lookup.hpp"

#include <cctype>

namespace hpak {

namespace {
std::optional<formats::IndexRecord> by_digest_prefix(const PackReader& pack, const std::string& what) {
  if (!is_hex(what) || what.size() < 4 || what.size() > 64) return std::nullopt;
  std::string lower;
  for (char c : what) lower += char(std::tolower((unsigned char)c));
  auto hits = pack.index().find_prefix(lower);
  DigestSet distinct;
  for (auto i : hits) distinct.insert(pack.index().digest_at(i));
  if (distinct.size() > 1) throw Error("digest prefix '" + what + "' is ambiguous in '" + pack.path() + "'");
  if (hits.empty()) return std::nullopt;
  return pack.index().record_at(hits[0]);
}

std::string catalog_path_of(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.rfind("./", 0) == 0) path = path.substr(2);
  return path;
}

const formats::Node* node_at(const formats::Catalog& cat, const std::string& path) {
  const formats::Node* node = nullptr;
  for (auto& n : cat.nodes)
    if (n.path == path) node = &n;
  return node;
}

formats::IndexRecord by_path(const PackReader& pack, const std::string& what, const std::string& catalog) {
  formats::Catalog cat = pack.load_catalog(catalog);
  const formats::Node* node = node_at(cat, catalog_path_of(what));
  if (node && node->type == formats::NodeType::Hardlink) node = node_at(cat, node->target);
  if (!node) throw Error("'" + what + "' is neither a path in the catalog nor an object digest in '" + pack.path() + "'");
  if (node->type == formats::NodeType::Dir) throw Error("'" + what + "' is a directory");
  if (node->type == formats::NodeType::Symlink) throw Error("'" + what + "' is a symlink to '" + node->target + "'");
  auto rec = pack.find(node->digest);
  if (!rec) throw Error("object " + to_hex(node->digest) + " for '" + what + "' is not in the pack");
  return *rec;
}
} // namespace

formats::IndexRecord lookup_object(const PackReader& pack, const std::string& what, const std::string& catalog) {
  if (auto rec = by_digest_prefix(pack, what)) return *rec;
  return by_path(pack, what, catalog);
}

} // namespace hpak
