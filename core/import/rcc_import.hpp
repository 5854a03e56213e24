// hpak import: brings rcc hololibs (directories or hololib.zip exports) into
// a library. Each rcc catalog becomes one catalog name (its file name, or
// `rename` for a single one); all their new objects go into one new pack,
// published like any add (Library::add_set).
//
// Conversion of an rcc catalog (formats/rcc_catalog.hpp) into an HPAK catalog:
//  - directories -> dir nodes (mode: Go mode -> POSIX, see go_mode_to_posix);
//  - files -> file nodes (digest, size, mode incl. setuid/setgid/sticky);
//  - files and directories rcc recorded with a `symlink` -> symlink nodes with
//    that target; the entries rcc lists under a symlinked directory (and any
//    "shadow" directory) are left out: the link brings them, rcc stores none;
//  - mtimes: rcc records none and sets 1610000000 (its "mother time") on all
//    it restores; every node gets that mtime;
//  - relocation: the catalog's `path` (the space it was lifted from) becomes
//    the HPAK relocation root; each rcc rewrite offset (where the space's last
//    component `identity` occurs) becomes a relocation of the whole path that
//    ends there, so the tree restores into a path of any length. An offset
//    where the bytes are not the space's full path is refused (rcc could
//    only swap the last component; hpak relocates whole paths). Symlink
//    targets holding the path are relocated too (rcc restores them verbatim).
// Checks (all before anything is published; RccRefused on failure): a
// catalog decodes to at most 256 MiB of JSON; every
// object the tree needs exists, decodes (gzip/zstd/raw by magic) to exactly
// the catalog's size (decoding stops past it) and has the SHA-256 of its
// name; errors name the object and every catalog path that uses it. rcc's
// `compress.no` libraries (SipHash-named raw objects) are refused. Objects
// the library already holds are not stored again (nor read, except those of
// relocated files, whose bytes the offsets are checked against). Objects are
// read a batch of at most 256 MiB (by the sizes claimed; a larger one alone)
// at a time, each held whole.
#pragma once

#include <string>
#include <vector>

#include "core/library/library.hpp"
#include "base/progress.hpp"
#include "core/import/rcc_source.hpp"
#include "core/pack/relocation.hpp"
#include "formats/rcc_catalog.hpp"

namespace hpak {

struct RccImportOptions {
  std::string rename; // new name for the single catalog of the sources ("": keep)
  int level = 3;      // zstd level of the new pack (0: uncompressed)
  unsigned threads = 0;
  Progress progress;
};

struct RccImportedCatalog {
  std::string name;     // in the library
  std::string source;   // "SOURCE/catalog/<file>"
  std::string platform; // from the rcc catalog
  uint64_t files = 0, dirs = 0, symlinks = 0, file_bytes = 0, relocated_files = 0, left_out = 0;
  uint64_t space_names_kept = 0; // bare space names (outside the space path) left as they are
  RelocCounts relocated;         // the relocated files by kind (core/pack/relocation.hpp)
  Digest digest{};
};

struct RccImportResult {
  std::vector<RccImportedCatalog> catalogs;
  uint64_t unique_objects = 0, objects_written = 0, objects_present = 0;
  uint64_t raw_written = 0, stored_written = 0;
  std::string pack_name; // empty if nothing new was stored
  uint64_t pack_size = 0;
  int repairs = 0;
};

RccImportResult import_rcc(Library& lib, const std::vector<std::string>& sources, const RccImportOptions& opts);

// One rcc catalog converted, in two steps: the tree (no object read), then
// the relocations of the files rcc recorded rewrite offsets for, checked
// against their bytes: `object(hex, size)` returns an object's checked bytes.
struct RccConverted {
  formats::Catalog catalog;
  RccImportedCatalog summary;
  std::string space_path, identity, where;
  std::vector<std::pair<size_t, std::vector<int64_t>>> rewrites; // node index, rcc offsets
};
using RccObjectLoader = std::function<Bytes(const std::string& hex, uint64_t size)>;
RccConverted convert_rcc_tree(const formats::RccCatalog& rc, const std::string& name, const std::string& where);
void map_rcc_relocations(RccConverted& c, const RccObjectLoader& object, unsigned threads = 0);
// Both steps.
RccConverted convert_rcc_catalog(const formats::RccCatalog& rc, const std::string& name, const std::string& where,
                                 const RccObjectLoader& object);

// Maps rcc rewrite offsets (of `identity`) in `data` to HPAK relocations of
// root 0 = `path`. An offset whose name is not inside `path` and not preceded
// by '/' (a bare name: a prompt, a label) is counted in names_kept and left as
// it is; one ending another path, or not holding the name, throws RccRefused
// naming `what`.
struct RccRewrites {
  std::vector<uint64_t> relocs;
  uint64_t names_kept = 0;
  formats::RelocKind kind = formats::RelocKind::Unclassified; // set by map_rcc_relocations (classify_relocated)
};
RccRewrites map_rcc_rewrites(ByteSpan data, const std::vector<int64_t>& rewrite, const std::string& path,
                                       const std::string& identity, const std::string& what);

} // namespace hpak
