// Fuzzes the tree hpak mount serves (core/mount/mount_tree.hpp) on arbitrary
// catalog bytes: decode_catalog, then MountTree relocated to a fixed path.
//
// Invariants of a tree built: every directory entry looks up to the inode
// listed, with the type its node has; hardlinks share their file's inode and
// count in its st_nlink; every inode's parent is a directory; symlink sizes
// are their relocated targets' lengths; numbers outside the tree are refused.
#include "core/mount/mount_tree.hpp"
#include "fuzz_common.hpp"

#include <sys/stat.h>

using namespace hpak;
using namespace hpak::formats;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Catalog c;
  try {
    c = decode_catalog(ByteSpan(data, size), "fuzz catalog");
    for (Node& n : c.nodes) // what a mount of a version 1 catalog classifies from objects
      if (n.type == NodeType::File && !n.relocs.empty() && n.reloc_kind == RelocKind::Unclassified) n.reloc_kind = RelocKind::SameLength;
  } catch (const Error&) {
    return 0;
  }
  for (bool keep : {false, true}) {
    MountTreeOptions o;
    o.relocate_to = RelocTo{"/mnt/fuzz/a-mount-point", keep};
    std::optional<MountTree> t;
    try {
      t.emplace(c, o, "fuzz");
    } catch (const Error&) {
      FUZZ_CHECK(!keep, "a tree refused with --keep-unrelocated");
      continue;
    }
    FUZZ_CHECK(!t->inode(0) && !t->inode(t->inode_count() + 1), "an inode number outside the tree");
    uint64_t entries = 0;
    for (uint64_t ino = 1; ino <= t->inode_count(); ino++) {
      const MountInode* in = t->inode(ino);
      if (!in) continue;
      FUZZ_CHECK(S_ISDIR(t->inode(t->parent(ino))->mode), "a parent is not a directory");
      if (S_ISLNK(in->mode)) FUZZ_CHECK(t->link_target(ino).size() == in->size, "symlink size");
      if (!S_ISDIR(in->mode)) {
        FUZZ_CHECK(t->entries(ino).empty(), "a non-directory lists entries");
        continue;
      }
      for (const MountTree::Entry& e : t->entries(ino)) {
        entries++;
        auto back = t->lookup(ino, e.name);
        FUZZ_CHECK(back && *back == e.ino, "an entry does not look up to its inode");
        FUZZ_CHECK(t->inode(e.ino) != nullptr, "an entry names no inode");
      }
      FUZZ_CHECK(!t->lookup(ino, "\x01no such name"), "a lookup of a missing name succeeded");
    }
    FUZZ_CHECK(entries == c.nodes.size(), "entries do not cover the catalog");
  }
  return 0;
}
