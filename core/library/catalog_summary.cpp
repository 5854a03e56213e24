#include "core/library/catalog_summary.hpp"

namespace hpak {

namespace {
void count_files(const formats::Catalog& c, CatalogSummary& s) {
  for (auto& n : c.nodes) {
    if (n.type != formats::NodeType::File) continue;
    s.files++;
    s.bytes += n.size;
    s.relocated += !n.relocs.empty();
    s.kinds.add(n, c.roots);
  }
}
} // namespace

CatalogSummary summarize_catalog(const Library& lib, const std::string& name) {
  CatalogSummary s;
  s.name = name;
  try {
    count_files(lib.load_catalog(name, &s.digest), s);
  } catch (const Error& e) {
    s = CatalogSummary{.name = name, .error = e.what()};
  }
  s.last_used = lib.last_used(name);
  return s;
}

} // namespace hpak
