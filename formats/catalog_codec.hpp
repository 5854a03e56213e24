// Internal to formats/: what the catalog codecs of every version share (the
// checks a decoded node must pass, whatever its encoding) and the version 3
// codec (formats/catalog_v3.cpp). Readers and writers use catalog_format.hpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "formats/catalog_format.hpp"

namespace hpak::formats {

// A path from a (possibly hostile) catalog, made safe for a one-line message.
std::string shown(std::string_view s);

// "HPCT" version flags(=0): the version, refused unless one this build reads.
uint32_t catalog_version(ByteReader& r);
// A relocation root as read, refused if empty or holding a NUL byte.
std::string checked_root(ByteReader& r, std::string_view root);
RelocKind get_reloc_kind(ByteReader& r);

// Checks that node `n` may be node `i` after nodes[0, i): a valid relative
// path, after nodes[i - 1] in path_less order, its parent a directory of the
// catalog. `added(n, i)` is called once it is node i. `shared`: how many
// leading bytes n's path is known to share with node i - 1's (a decoder that
// copied them from it), which the order check then skips.
class NodePlacer {
public:
  void place(const std::vector<Node>& nodes, size_t i, const Node& n, const std::string& where, uint64_t at,
             size_t shared = 0);
  void added(const Node& n, size_t i);

private:
  std::vector<size_t> open_dirs_; // the directories enclosing the last node
};

// The file node a hardlink names among c.nodes[0, before); refused unless
// there is one.
const Node& hardlinked_file(const Catalog& c, size_t before, const Node& link, ByteReader& r);
void check_symlink_target(const Node& n, ByteReader& r);

Bytes encode_catalog_v3(const Catalog& c);
// `r` is past the header (magic, version, flags).
Catalog decode_catalog_v3(ByteReader& r, const std::string& where);
// The digest table of a version 3 catalog (`r` past the header): sorted,
// each digest once, checked to be strictly increasing.
std::vector<Digest> catalog_v3_digest_table(ByteReader& r);

} // namespace hpak::formats
