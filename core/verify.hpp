// Verify: checks a pack end to end and reports every problem, carrying on
// past each one.
//
// Checks, in one parallel pass: the trailer (SHA-256 of the whole pack), the
// header and footer, a resyncing scan of every entry header, every object
// (entry header vs index, XXH3 of stored bytes, decompression, SHA-256 of the
// content vs its name), each catalog (parsed and validated; every digest it
// names present), and the .hidx (its own checksum, its tie to the pack, and
// that it lists exactly the entries the scan found). Bad objects are reported
// with every catalog path that uses them. Nothing is printed here.
#pragma once

#include <string>
#include <vector>

#include "core/progress.hpp"

namespace hpak {

struct BadObject {
  std::string digest; // hex
  std::string kind;
  uint64_t offset = 0;
  std::string why;
  bool lost = true;                 // false if another intact copy exists (catalog mirror)
  std::vector<std::string> paths;   // "catalog:path" that use it
};

struct VerifyReport {
  std::string pack;
  std::vector<std::string> problems; // pack-, index- and catalog-level damage
  std::vector<std::string> notes;    // not errors (e.g. no index file)
  std::vector<BadObject> bad_objects;
  std::vector<std::string> catalog_digests; // hex, of the readable catalogs
  uint64_t objects = 0, catalogs = 0;
  uint64_t raw_bytes = 0, stored_bytes = 0;
  bool ok() const { return problems.empty() && bad_objects.empty(); }
  uint64_t lost_objects() const;
};

struct VerifyOptions {
  unsigned threads = 0;
  // A standalone pack must hold a catalog and every object its catalogs name.
  // Packs of a library need neither (the library checks references across packs),
  // and are files inside a library: a symlink in their place is refused.
  bool standalone = true;
  Progress progress;
};

// Throws Error only when the file cannot be examined at all (unreadable, not
// an HPAK pack, unsupported version); damage is reported, not thrown.
VerifyReport verify_pack(const std::string& path, const VerifyOptions& opts);

} // namespace hpak
