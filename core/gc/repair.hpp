// Repair: salvage every intact object of damaged packs of a library.
//
// Each visible pack is verified in full (core/verify/verify.hpp). A pack whose only
// fault is its index gets the index rebuilt from the pack. A pack with damaged
// entries (or a damaged header, footer or trailer) is rewritten: every entry
// that passes all its checks is copied verbatim into a new pack (published
// pack-then-index); damaged entries are dropped — if an intact copy exists in
// another pack nothing is lost, otherwise the object is reported lost with
// every catalog path that used it. The damaged pack is not deleted but moved
// to LIB/damaged/ (nothing good is thrown away; gc never touches it).
// Junk in catalogs/ under a valid name (a directory, a symlink, a FIFO, a
// malformed or oversized file: gc refuses to run while it is there) is moved
// into LIB/quarantine/ (core/store/quarantine.hpp). A multi-pack index that
// is unreadable or disagrees with the packs' indexes is rewritten.
// Holds the gc lock, so it never races a gc.
#pragma once

#include <string>
#include <vector>

#include "core/library/library.hpp"
#include "core/verify/verify.hpp"

namespace hpak {

struct LostObject {
  std::string digest;
  std::vector<std::string> paths; // "catalog:path"
};

struct RepairResult {
  uint64_t packs_checked = 0, packs_rewritten = 0, indexes_rebuilt = 0;
  uint64_t objects_salvaged = 0, objects_elsewhere = 0;
  std::vector<LostObject> lost;
  std::vector<std::string> broken_catalogs;
  std::vector<std::string> moved; // damaged packs moved to damaged/
  // "'LIB/catalogs/x' (why) -> 'LIB/quarantine/catalogs.x.<time>'" (dry run: nothing moved)
  std::vector<std::string> quarantined;
  std::string midx_rebuilt; // why the multi-pack index was (would be) rewritten, or ""
  std::vector<std::string> notes;
};

struct RepairOptions {
  bool dry_run = false;
  unsigned threads = 0;
  Progress progress;
};

RepairResult repair(Library& lib, const RepairOptions& opts);

// What repair does with one visible pack, decided from verify's report by the
// kinds of its problems (never by their messages): a bad object or any problem
// of the pack itself or its catalogs rewrites the pack; otherwise an index
// problem (is_index_problem) rebuilds the index; otherwise nothing.
enum class PackRepair { None, RebuildIndex, Rewrite };
PackRepair pack_repair_for(const VerifyReport& r);

} // namespace hpak
