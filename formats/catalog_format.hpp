// HPAK catalog, format version 3 (versions 1 and 2 are read forever): the
// tree of one environment. A catalog is stored in a pack as an entry of
// kind=catalog (zstd-compressed, named by the SHA-256 of these raw bytes like
// any object), and is covered by the pack trailer.
//
// Version 3 stores each object's digest once, in a sorted table, and the
// nodes in columns (all types, then all modes, ...), so zstd finds like next
// to like; paths are prefix-compressed against the previous path:
//
//   catalog3 ::= "HPCT" version:u32(=3) flags:u32(=0) name:vstr
//                nroots:var root:vstr * nroots
//                ndigests:var digest:[32] * ndigests   -- sorted bytewise, each once,
//                                                       -- each named by a file
//                node_count:var
//                type:u8 * node_count
//                mode:var * node_count
//                mtime:zz * node_count                  -- delta to the previous node's
//                                                       -- mtime_ns (the first: to 0)
//                plen:var * node_count                  -- bytes shared with the previous
//                                                       -- path (as many as there are)
//                slen:var * node_count  suffix bytes    -- the rest of each path
//                size:var * files                       -- the unrelocated object size
//                ref:var * files                        -- the file's digest: a table index
//                target:vstr * (symlinks and hardlinks, in node order)
//                relocs3 * (files and symlinks, in node order)
//                kind:u8 * (files with relocs)          -- RelocKind, as in version 2
//   relocs3  ::= n:var (root:var if nroots > 1, gap:var) * n
//                                                       -- offset = the end of the previous
//                                                       -- occurrence (0 for the first) + gap
//   var      ::= LEB128, shortest form   zz ::= var of the zigzagged delta
//   vstr     ::= len:var bytes
//
// A symlink's size is its target's length; a hardlink's is its file's; a
// directory's 0. Each value has one encoding, so a tree has one catalog.
//
// Versions 1 and 2, one node after another:
//
//   catalog  ::= "HPCT" version:u32(=1|2) flags:u32(=0) name:str
//                nroots:u32 root:str * nroots  node_count:u64 node*
//   node     ::= type:u8 mode:u32 mtime_ns:i64 size:u64 path:str body
//   body     ::= digest:[32] relocs how              -- type 2, regular file
//              | ε                                      -- type 1, directory
//              | target:str relocs                      -- type 3, symlink
//              | target:str                             -- type 4, hardlink to an earlier file
//   relocs   ::= n:u32 reloc:u64 * n                    -- where a root occurs in the bytes:
//                                                       -- low 56 bits offset, high 8 bits root index
//   how      ::= ε                                      -- version 1, or n = 0
//              | kind:u8                                -- version 2 and n > 0: how the file may be
//                                                       -- relocated (RelocKind: 1 text, 2 in-place,
//                                                       -- 3 same-length, 4 verbatim)
//   str      ::= len:u32 bytes                          -- no NUL; paths <= 4095, names <= 255
//
// Paths are relative, '/'-separated, with no empty, "." or ".." component; nodes
// come in depth-first order, siblings sorted bytewise by name, and every node's
// parent is an earlier directory node (or the root). These rules are checked on
// decode, so a catalog can never name a path outside its target, nor a path
// through a symlink (a symlink is never a parent). `mode` holds permission bits
// only (07777). `size` of a file is the unrelocated object size.
//
// Relocation: `roots` are the absolute paths the tree was packed from (by
// default the packed directory; more with --relocate, at most 16). A file's
// relocs are the offsets in its object where a root occurs (ascending,
// non-overlapping, longest root first at one offset). Objects stay
// unrelocated, so their digest is always checkable. How a restore into T
// writes T in their place depends on the file's kind, decided at pack time
// from its bytes (core/pack/relocation.hpp, classify_relocated):
//   text        (no NUL or control byte, no archive magic): T spliced in at any
//               length, so the restored file may differ in size;
//   in-place    (ELF, Mach-O, PE, ar: NUL-terminated strings): T written over
//               the root and the rest of that string moved up, NUL-padded
//               before its terminator: same size, so T may not be longer;
//   same-length (.pyc, other binaries: strings that carry their length):
//               rewritten only when T has the root's length, else left as packed;
//   verbatim    (zip/jar/whl, gzip, zstd, xz, bzip2: checksummed): never rewritten.
// A version 1 catalog has no kinds: a reader classifies its relocated files
// from their objects before it relocates any (Unclassified in memory).
// Symlink targets carry relocs the same way and are always text.
//
// mtime policy: pack records each node's mtime (ns) unless --no-mtime (then 0);
// `unpack` restores file, symlink and directory mtimes; `restore` into a holotree
// space does not (environments do not need them; it saves a syscall per file).
// Owners, groups, xattrs and ACLs are not recorded.
#pragma once

#include <compare>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "base/hash.hpp"

namespace hpak::formats {

enum class NodeType : uint8_t { Dir = 1, File = 2, Symlink = 3, Hardlink = 4 };
const char* node_type_name(NodeType t);

// How a relocated file may be rewritten (see above). Unclassified: read from a
// version 1 catalog (or not decided yet); never encoded.
enum class RelocKind : uint8_t { Unclassified = 0, Text = 1, InPlace = 2, SameLength = 3, Verbatim = 4 };
const char* reloc_kind_name(RelocKind k);

// A node's path: a view of bytes its catalog keeps (Catalog::keep, a few
// blocks of up to 1 MiB) rather than a string of its own, so a decode makes a
// few allocations for all its paths, not one per path. Made only by a PathStore or
// from a string literal: a path cannot silently point into a temporary. A
// copied Node's path still points into its catalog's blocks; Catalog's copy
// re-keeps every path in the copy's own.
class PathRef {
public:
  constexpr PathRef() = default;
  // A string literal (consteval: a buffer on the stack is refused at compile time).
  consteval PathRef(const char* literal) : p_(literal), n_(uint32_t(std::char_traits<char>::length(literal))) {}
  std::string_view view() const { return {p_, n_}; }
  operator std::string_view() const { return view(); }
  std::string str() const { return std::string(view()); }
  const char* data() const { return p_; }
  const char* c_str() const { return p_; } // kept with a NUL after it, as a literal is
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  char operator[](size_t i) const { return p_[i]; }
  const char* begin() const { return p_; }
  const char* end() const { return p_ + n_; }
  char back() const { return p_[n_ - 1]; }
  size_t find(char c, size_t from = 0) const { return view().find(c, from); }
  size_t find(std::string_view s, size_t from = 0) const { return view().find(s, from); }
  size_t rfind(char c, size_t from = std::string_view::npos) const { return view().rfind(c, from); }
  size_t rfind(std::string_view s, size_t from = std::string_view::npos) const { return view().rfind(s, from); }
  std::string_view substr(size_t from, size_t count = std::string_view::npos) const { return view().substr(from, count); }
  bool starts_with(std::string_view s) const { return view().starts_with(s); }
  bool starts_with(char c) const { return view().starts_with(c); }
  bool ends_with(std::string_view s) const { return view().ends_with(s); }
  int compare(std::string_view s) const { return view().compare(s); }
  int compare(size_t pos, size_t count, std::string_view s) const { return view().compare(pos, count, s); }
  friend bool operator==(PathRef a, PathRef b) { return a.view() == b.view(); }
  friend bool operator==(PathRef a, std::string_view b) { return a.view() == b; }
  friend bool operator==(PathRef a, const std::string& b) { return a.view() == b; }
  friend bool operator==(PathRef a, const char* b) { return a.view() == b; }
  friend auto operator<=>(PathRef a, PathRef b) { return a.view() <=> b.view(); }
  friend std::string operator+(std::string a, PathRef b) { return a.append(b.view()); }
  friend std::string operator+(PathRef a, std::string_view b) { return std::string(a.view()).append(b); }
  friend std::string operator+(PathRef a, const char* b) { return std::string(a.view()).append(b); }
  friend std::string operator+(const char* a, PathRef b) { return std::string(a).append(b.view()); }

private:
  friend class PathStore;
  PathRef(const char* p, uint32_t n) : p_(p), n_(n) {}
  const char* p_ = "";
  uint32_t n_ = 0;
};
std::ostream& operator<<(std::ostream& o, PathRef p);

// The blocks a catalog's paths live in: keep() copies bytes into the current
// block (a new one when it is full) and returns a view that stays valid, at
// the same address, until the store is destroyed (moving a store moves its
// blocks, not their bytes). Each kept path is followed by a NUL (c_str()).
class PathStore {
public:
  PathStore() = default;
  // A moved-from store is empty (it hands out nothing in the blocks it gave up).
  PathStore(PathStore&& o) noexcept { *this = std::move(o); }
  PathStore& operator=(PathStore&& o) noexcept;
  PathStore(const PathStore&) = delete;
  PathStore& operator=(const PathStore&) = delete;

  // `head` then `tail`, one path (a decoder's shared prefix and suffix).
  PathRef keep(std::string_view head, std::string_view tail = {});
  // Makes room for `bytes` more in one block (a decoder that knows the sum).
  void reserve(size_t bytes);

private:
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* next_ = nullptr;
  size_t left_ = 0;
  size_t last_size_ = 0;
};

struct Node {
  NodeType type = NodeType::File;
  RelocKind reloc_kind = RelocKind::Unclassified; // File with relocs (a symlink's are text)
  uint32_t mode = 0;
  int64_t mtime_ns = 0;
  uint64_t size = 0;
  PathRef path;                 // in the catalog's PathStore (Catalog::keep)
  Digest digest{};              // File
  std::string target;           // Symlink target, or Hardlink: path of the first link
  std::vector<uint64_t> relocs; // File / Symlink
};
static_assert(sizeof(Node) <= 128, "a decoded catalog holds one Node per entry: keep it small");

constexpr uint32_t kCatalogVersion = 3;       // written
constexpr uint32_t kOldestCatalogVersion = 1; // read
constexpr uint32_t kNewestCatalogVersion = 3; // read

constexpr uint64_t kRelocOffsetMask = (uint64_t(1) << 56) - 1;
inline uint64_t reloc_offset(uint64_t r) { return r & kRelocOffsetMask; }
inline unsigned reloc_root(uint64_t r) { return unsigned(r >> 56); }
inline uint64_t make_reloc(uint64_t offset, unsigned root) { return offset | (uint64_t(root) << 56); }
constexpr size_t kMaxRoots = 16;

struct Catalog {
  uint32_t version = kCatalogVersion; // as decoded (1: no relocation kinds)
  std::string name;
  std::vector<std::string> roots;
  std::vector<Node> nodes;
  PathStore paths; // every node's path

  // A path kept as long as this catalog: what every node's path is set to.
  PathRef keep(std::string_view path) { return paths.keep(path); }

  Catalog() = default;
  Catalog(Catalog&&) = default;
  Catalog& operator=(Catalog&&) = default;
  // A copy keeps every path again, in its own store.
  Catalog(const Catalog& o);
  Catalog& operator=(const Catalog& o);
};

// Calls f(node) for every file node of `c`, the nodes that name an object
// (directories, links and hardlinks name none): the one walk over "the
// objects a catalog needs".
template <class F> void for_each_file(const Catalog& c, F&& f) {
  for (const Node& n : c.nodes)
    if (n.type == NodeType::File) f(n);
}

constexpr size_t kMaxPath = 4095;
// A catalog of more nodes is refused (before anything is reserved for them):
// 16 Mi, a hundred times a large environment, and a bound on what a hostile
// catalog can make a reader allocate.
constexpr uint64_t kMaxNodes = uint64_t(1) << 24;
constexpr size_t kMaxName = 255;

// Bytewise order of paths compared component by component (so "a/b" < "a-b").
bool path_less(std::string_view a, std::string_view b);
// Index of the node at `path` (binary search: nodes are in path_less order).
std::optional<size_t> find_path(const Catalog& c, std::string_view path);

// Directory slots of a decoded catalog: slot 0 is the root (the target),
// slot k >= 1 the k-th directory node in catalog order (dir_nodes[k]; [0] is
// SIZE_MAX); parent[i] is the slot of node i's directory. Computed with a
// stack of enclosing directories (path_less order lists each directory's
// subtree right after it), no lookups.
struct DirSlots {
  std::vector<size_t> dir_nodes;
  std::vector<uint32_t> parent;
};
DirSlots dir_slots(const Catalog& c);
// Empty string if `path` is a valid relative catalog path, else why not.
std::string check_path(std::string_view path);
// The same rules, without a message (what a decode checks of every path); the
// components before `from` (the start of one) are known valid.
bool path_ok(std::string_view path, size_t from = 0);
std::string check_name(std::string_view name);

// Writes `version` (kCatalogVersion unless a test or a reader of an old
// catalog asks for 1, which drops the relocation kinds).
Bytes encode_catalog(const Catalog& c, uint32_t version = kCatalogVersion);
// Fully validates (see above); throws Corrupt naming `where` and the offset.
Catalog decode_catalog(ByteSpan bytes, const std::string& where);

// The size of a symlink target, or a text file, spliced with a root of
// length `new_root_len` (core/pack/relocation.hpp says which files are spliced).
uint64_t spliced_size(const Node& n, const std::vector<std::string>& roots, size_t new_root_len);

} // namespace hpak::formats
