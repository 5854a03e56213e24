// Fuzzes decode_catalog, and gc's catalog_file_digests (the objects a
// catalog names, read without decoding it), on arbitrary bytes.
//
// Invariants of an accepted catalog: it re-encodes to exactly the input (the
// encoding is canonical, so nothing was skipped or misread); every path passes
// check_path, paths are strictly ordered, every parent is an earlier
// directory, hardlinks name an earlier file, relocations lie inside the
// object and name an existing root; spliced_size() is computable; a version 2
// file with relocations has a kind. catalog_file_digests never crashes, and
// on an accepted catalog it gives exactly the decoded files' digests, in order
// (version 3: sorted, each once).
#include <algorithm>
#include <unordered_map>

#include "formats/catalog_digests.hpp"
#include "formats/catalog_format.hpp"
#include "fuzz_common.hpp"

using namespace hpak;
using namespace hpak::formats;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<Digest> marked;
  bool read = true;
  try {
    marked = catalog_file_digests(ByteSpan(data, size), "fuzz catalog");
  } catch (const Error&) {
    read = false;
  }
  Catalog c;
  try {
    c = decode_catalog(ByteSpan(data, size), "fuzz catalog");
  } catch (const Error&) {
    return 0;
  }
  std::vector<Digest> files;
  for (const Node& n : c.nodes)
    if (n.type == NodeType::File) files.push_back(n.digest);
  if (c.version >= 3) {
    std::sort(files.begin(), files.end());
    files.erase(std::unique(files.begin(), files.end()), files.end());
  }
  FUZZ_CHECK(read && marked == files, "gc's digest reader disagrees with decode_catalog on an accepted catalog");
  Bytes again = encode_catalog(c, c.version);
  FUZZ_CHECK(again.size() == size && std::memcmp(again.data(), data, size) == 0, "catalog does not re-encode to its bytes");
  FUZZ_CHECK(c.roots.size() <= kMaxRoots, "too many roots");
  std::unordered_map<std::string, NodeType> seen;
  for (size_t i = 0; i < c.nodes.size(); i++) {
    const Node& n = c.nodes[i];
    FUZZ_CHECK(check_path(n.path).empty(), "bad path accepted");
    FUZZ_CHECK(i == 0 || path_less(c.nodes[i - 1].path, n.path), "order");
    auto slash = n.path.rfind('/');
    if (slash != std::string::npos) {
      auto it = seen.find(std::string(n.path.substr(0, slash)));
      FUZZ_CHECK(it != seen.end() && it->second == NodeType::Dir, "parent of a node is not an earlier directory");
    }
    FUZZ_CHECK((n.mode & ~07777u) == 0, "mode bits");
    if (n.type == NodeType::Hardlink) {
      auto it = seen.find(n.target);
      FUZZ_CHECK(it != seen.end() && it->second == NodeType::File, "hardlink to a non-file");
    }
    if (n.type == NodeType::File || n.type == NodeType::Symlink) {
      uint64_t limit = n.type == NodeType::File ? n.size : n.target.size();
      uint64_t next = 0;
      for (uint64_t r : n.relocs) {
        FUZZ_CHECK(reloc_root(r) < c.roots.size(), "reloc root");
        uint64_t o = reloc_offset(r), len = c.roots[reloc_root(r)].size();
        FUZZ_CHECK(o >= next && o <= limit && limit - o >= len, "reloc range");
        next = o + len;
      }
      (void)spliced_size(n, c.roots, 4096);
      if (c.version >= 2 && n.type == NodeType::File && !n.relocs.empty())
        FUZZ_CHECK(n.reloc_kind != RelocKind::Unclassified, "a version 2 file with relocations and no kind");
    }
    seen.emplace(n.path, n.type);
  }
  return 0;
}
