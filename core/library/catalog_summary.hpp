// What `hpak catalogs` reports of one named catalog: its digest, how many
// files and bytes it restores, its relocated files by kind and its last use.
// A catalog that cannot be read is summarised with `error` set, not thrown.
#pragma once

#include <cstdint>
#include <string>

#include "core/library/library.hpp"
#include "core/pack/relocation.hpp"

namespace hpak {

struct CatalogSummary {
  std::string name;
  Digest digest{};
  uint64_t files = 0, bytes = 0, relocated = 0;
  RelocCounts kinds;
  int64_t last_used = 0; // seconds since the epoch; 0 if never recorded
  std::string error;     // non-empty: the catalog could not be read
};

CatalogSummary summarize_catalog(const Library& lib, const std::string& name);

} // namespace hpak
