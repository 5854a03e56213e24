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

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/hash.hpp"
#include "base/progress.hpp"

namespace hpak {

// What a problem is about. Callers decide from the kind (repair rebuilds an
// index for an index problem and rewrites the pack for any other); the message
// is for people.
enum class ProblemKind : uint8_t {
  // verify_pack: the pack's own bytes.
  EntryDamage,     // the scan found damaged bytes ("offset N: why")
  FooterCount,     // the footer counts other entries than the pack holds
  TrailerMismatch, // the SHA-256 of the pack is not its trailer
  // verify_pack: the .hidx beside the pack.
  IndexForeign,    // it belongs to another pack (size or trailer differ)
  IndexStale,      // it lists other entries than the pack holds
  IndexUnreadable, // it cannot be read or parsed
  // verify_pack: the catalogs in the pack.
  CatalogInvalid,      // a catalog's bytes read but do not parse or validate
  CatalogSizeMismatch, // a catalog gives a file another size than its object's
  NoCatalog,           // a standalone pack without a readable catalog
  // verify_library (core/verify/verify_library.hpp): the library around the packs.
  PackUnreadable, // a pack that cannot be examined at all
  IndexRejected,  // a pack with an index beside it that readers cannot open
  MidxBad,        // packs/multi.midx unreadable, or at odds with the packs' indexes
};

// IndexForeign, IndexStale, IndexUnreadable: the .hidx is wrong, and rebuilding
// it from the pack fixes the problem.
bool is_index_problem(ProblemKind k);

struct Problem {
  ProblemKind kind;
  std::string message;
  bool operator==(const Problem&) const = default;
};

// The messages alone, in order (what `hpak verify` prints).
std::vector<std::string> messages_of(const std::vector<Problem>& problems);

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
  std::vector<Problem> problems;      // pack-, index- and catalog-level damage
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
  // Where a catalog stored against a base (formats::Codec::ZstdBase) finds
  // it: a library verify gives its own; by default, the pack itself, then the
  // library whose packs/ holds the pack file (enclosing_library_bases).
  std::function<Bytes(const Digest&)> base_source;
  Progress progress;
};

// Throws Error only when the file cannot be examined at all (unreadable, not
// an HPAK pack, unsupported version); damage is reported, not thrown.
// The digests a verified pack holds (each sorted, each once): those with an
// intact copy in it, and those of its blobs (intact or not). A library verify
// asks for them instead of scanning the pack a second time.
struct PackDigests {
  std::vector<Digest> intact, blobs;
};
VerifyReport verify_pack(const std::string& path, const VerifyOptions& opts, PackDigests* held = nullptr);

} // namespace hpak
