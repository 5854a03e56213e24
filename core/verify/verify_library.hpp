// Library verify (`hpak verify LIB`): every pack end to end, then every named
// catalog against the packs a restore would read.
//
// 1. Packs: each LIB/packs/pack-*.hpak goes through verify_pack (standalone =
//    false: a library pack need not hold its catalogs' objects). Packs without
//    an index are not visible to readers (being published, or condemned by a
//    gc); they are verified all the same and noted.
// 2. Catalogs: each name file must parse, its catalog object must be readable
//    (any copy), and every object a file or hardlink of it needs must be
//    locatable in a visible pack (as a restore looks it up) and intact in one.
// Bad objects are merged across packs: one entry per digest, with every copy
// that failed and every "catalog:path" it breaks across ALL catalogs. An object
// with an intact copy in some visible pack is not lost (`lost = false`) — the
// data survives, though a restore may still pick the bad copy (hpak repair).
// Nothing is printed here; damage is reported, not thrown.
#pragma once

#include <string>
#include <vector>

#include "core/verify/verify.hpp"

namespace hpak {

struct LibraryBadObject {
  std::string digest; // hex
  std::string kind;   // "blob", "catalog"
  struct Copy {
    std::string pack; // file name
    uint64_t offset = 0;
    std::string why;
  };
  std::vector<Copy> bad_copies;    // empty when no visible pack has it at all
  std::string missing;             // why it is missing ("" when bad copies exist)
  bool lost = true;                // false: an intact copy exists in a visible pack
  std::vector<std::string> intact_in; // visible packs holding an intact copy
  std::vector<std::string> paths;  // "catalog:path" it breaks, across all catalogs
                                   // (a catalog object: the catalog names using it)
};

struct LibraryCatalogReport {
  std::string name;
  std::string digest; // hex, empty if the name file is unreadable
  uint64_t files = 0;
  std::string error; // why the catalog cannot be read at all
  bool broken() const { return !error.empty() || lost_objects > 0; }
  // Objects a restore of it cannot get (lost, or not found by the lookup), and
  // objects with a bad copy but an intact one in a visible pack.
  uint64_t lost_objects = 0, degraded_objects = 0;
};

struct LibraryVerifyReport {
  std::string library;
  std::vector<VerifyReport> packs;     // one per pack file examined
  std::vector<Problem> problems;       // library-level damage (PackUnreadable, IndexRejected)
  std::vector<std::string> notes;      // not errors
  std::vector<LibraryBadObject> bad_objects;
  std::vector<LibraryCatalogReport> catalogs;
  uint64_t objects = 0;                // distinct objects in visible packs
  uint64_t raw_bytes = 0;

  bool ok() const;
  uint64_t lost_objects() const;
  std::vector<std::string> broken_catalogs() const; // names that cannot be restored intact
};

// Throws Error only when `root` is not a library or cannot be read at all.
LibraryVerifyReport verify_library(const std::string& root, const VerifyOptions& opts);

} // namespace hpak
