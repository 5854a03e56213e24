// The objects a catalog names, read from its raw bytes without decoding it
// (formats/catalog_format.hpp has the grammar): what gc's mark needs of each
// of thousands of catalogs. The structure is read as decode_catalog reads it
// (magic, version, flags, node types and counts, every length bounded by the
// bytes), but strings are skipped, not copied, and paths, their order and
// relocation offsets are not checked: a catalog decode_catalog refuses for
// those still has its files' objects marked (the conservative side: they are
// kept). Hardlinks, directories and symlinks name no object. A version 3
// catalog lists its objects in its digest table: only the header and the
// table are read (the table checked to be sorted, each digest once).
#pragma once

#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/hash.hpp"

namespace hpak::formats {

// Versions 1 and 2: the digest of every file node, in catalog order (repeats
// included); version 3: its digest table (sorted, each once).
// Throws Corrupt naming `where` when the bytes are not a catalog's structure.
std::vector<Digest> catalog_file_digests(ByteSpan bytes, const std::string& where);

} // namespace hpak::formats
