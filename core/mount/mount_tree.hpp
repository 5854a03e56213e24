// The tree a mount serves (hpak mount, core/mount/fuse_mount.hpp): a catalog
// turned into inodes, exactly as a restore into the mount's path would leave
// it, with nothing read but the catalog.
//
// Inode numbers: 1 is the mount's root (the restore's target); catalog node i
// is inode i + 2, except that a hardlink node shares the inode of the file it
// links to (so `stat` shows one inode with st_nlink links, as the restored
// hard links have). A directory's st_nlink is 2 + its subdirectories.
// Modes are the catalog's with set-uid and set-gid dropped unless
// `preserve_setid` (wanted_mode, as restore), mtimes the catalog's, sizes
// as the restore writes them (relocated_size), symlink targets relocated
// (relocated_link). A file that cannot take the mount's path (an in-place
// binary, a mount path longer than its root) is refused at build time as a
// restore refuses it (check_relocation), or served as packed with
// `keep_unrelocated`.
//
// Lookups: each directory's children are kept in catalog order, which sorts
// siblings bytewise by name, so a lookup is a binary search over them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/os/sys.hpp"
#include "core/pack/relocation.hpp"
#include "formats/catalog_format.hpp"

namespace hpak {

constexpr uint64_t kMountRootIno = 1;

struct MountInode {
  uint32_t node = UINT32_MAX; // catalog node (UINT32_MAX: the root)
  uint32_t nlink = 1;
  os::Mode mode = 0;          // with the file type bits (S_IFREG, ...)
  uint64_t size = 0;          // as a restore writes it
  int64_t mtime_ns = 0;
};

struct MountTreeOptions {
  RelocTo relocate_to;         // the mount's real path (empty: served as packed)
  bool preserve_setid = false;
  os::Mode root_mode = 0755;   // the mount point's own mode and mtime
  int64_t root_mtime_ns = 0;
};

class MountTree {
public:
  // Checks the relocation (throws the restore's refusal naming `shown`).
  MountTree(formats::Catalog cat, const MountTreeOptions& opts, const std::string& shown);

  const formats::Catalog& catalog() const { return cat_; }
  const RelocTo& relocate_to() const { return opts_.relocate_to; }
  size_t inode_count() const { return inodes_.size(); } // inodes 1 .. inode_count()
  // nullptr for an inode number that is not one of this tree's.
  const MountInode* inode(uint64_t ino) const;
  const formats::Node* node_of(uint64_t ino) const;
  // The inode named `name` in directory `dir`, or nullopt.
  std::optional<uint64_t> lookup(uint64_t dir, std::string_view name) const;
  // The entries of directory `dir` (name, inode) in order; empty for a non-directory.
  struct Entry {
    std::string_view name;
    uint64_t ino;
  };
  std::vector<Entry> entries(uint64_t dir) const;
  // The directory holding `ino` (the root's parent is the root).
  uint64_t parent(uint64_t ino) const;
  // A symlink's target as the restore writes it.
  std::string link_target(uint64_t ino) const;
  // Counts by what the relocation does (the mount's summary).
  const RelocationPlan& relocation() const { return reloc_; }

private:
  void build_inodes();
  void build_children();
  formats::Catalog cat_;
  MountTreeOptions opts_;
  RelocationPlan reloc_;
  std::vector<MountInode> inodes_;        // [ino - 1]
  std::vector<uint64_t> ino_of_node_;     // catalog node -> inode
  std::vector<uint64_t> parent_of_node_;  // catalog node -> inode of its directory
  std::vector<uint64_t> dir_ino_of_slot_; // dir_slots slot -> inode
  std::vector<uint32_t> slot_of_ino_;     // directory inode -> slot (UINT32_MAX: not a directory)
  std::vector<std::vector<uint32_t>> children_; // slot -> catalog nodes, in order
};

// The last component of a catalog path.
std::string_view leaf_name_of(std::string_view path);

} // namespace hpak
