#include "core/mount/mount_tree.hpp"

#include <algorithm>

#include "base/os/sys.hpp"
#include "base/error.hpp"
#include "core/restore/materialize.hpp"

namespace hpak {

using namespace formats;

std::string_view leaf_name_of(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

MountTree::MountTree(Catalog cat, const MountTreeOptions& opts, const std::string& shown) : cat_(std::move(cat)), opts_(opts) {
  if (cat_.nodes.size() >= UINT32_MAX - 2) throw Error("catalog '" + cat_.name + "' has too many entries to mount");
  reloc_ = opts_.relocate_to.active() ? check_relocation(cat_, opts_.relocate_to, shown) : RelocationPlan{};
  build_inodes();
  build_children();
}

// One inode per node, a hardlink sharing its file's; link counts.
void MountTree::build_inodes() {
  const size_t n = cat_.nodes.size();
  inodes_.resize(n + 1);
  ino_of_node_.resize(n);
  inodes_[0] = MountInode{UINT32_MAX, 2, S_IFDIR | (opts_.root_mode & 07777), 0, opts_.root_mtime_ns};
  for (size_t i = 0; i < n; i++) {
    const Node& node = cat_.nodes[i];
    MountInode& in = inodes_[i + 1];
    in.node = uint32_t(i);
    in.mtime_ns = node.mtime_ns;
    in.mode = wanted_mode(node, opts_.preserve_setid);
    ino_of_node_[i] = i + 2;
    switch (node.type) {
    case NodeType::Dir: in.mode |= S_IFDIR, in.nlink = 2; break;
    case NodeType::File:
      in.mode |= S_IFREG;
      in.size = relocated_size(node, cat_.roots, opts_.relocate_to.path);
      break;
    case NodeType::Symlink:
      in.mode = S_IFLNK | 0777;
      in.size = relocated_link(node, cat_.roots, opts_.relocate_to.path).size();
      break;
    case NodeType::Hardlink: {
      // Decoding checked that the target is an earlier file node.
      auto t = find_path(cat_, node.target);
      if (!t || cat_.nodes[*t].type != NodeType::File) throw Error("internal error: hardlink target '" + node.target + "' is not a file");
      ino_of_node_[i] = ino_of_node_[*t];
      inodes_[ino_of_node_[i] - 1].nlink++;
      in = MountInode{}; // unused: its number is the file's
      in.node = uint32_t(i);
      break;
    }
    }
  }
}

// Each directory's children in catalog order; directories count their subdirectories.
void MountTree::build_children() {
  DirSlots slots = dir_slots(cat_);
  const size_t nslots = slots.dir_nodes.size();
  dir_ino_of_slot_.assign(nslots, kMountRootIno);
  slot_of_ino_.assign(inodes_.size() + 1, UINT32_MAX);
  slot_of_ino_[kMountRootIno] = 0;
  for (size_t s = 1; s < nslots; s++) {
    dir_ino_of_slot_[s] = ino_of_node_[slots.dir_nodes[s]];
    slot_of_ino_[dir_ino_of_slot_[s]] = uint32_t(s);
  }
  children_.assign(nslots, {});
  parent_of_node_.resize(cat_.nodes.size());
  for (size_t i = 0; i < cat_.nodes.size(); i++) {
    uint32_t s = slots.parent[i];
    children_[s].push_back(uint32_t(i));
    parent_of_node_[i] = dir_ino_of_slot_[s];
    if (cat_.nodes[i].type == NodeType::Dir) inodes_[dir_ino_of_slot_[s] - 1].nlink++;
  }
}

const MountInode* MountTree::inode(uint64_t ino) const {
  if (ino < 1 || ino > inodes_.size()) return nullptr;
  const MountInode& in = inodes_[ino - 1];
  if (ino != kMountRootIno && ino_of_node_[in.node] != ino) return nullptr; // a hardlink's unused number
  return &in;
}

const Node* MountTree::node_of(uint64_t ino) const {
  const MountInode* in = inode(ino);
  return in && in->node != UINT32_MAX ? &cat_.nodes[in->node] : nullptr;
}

std::optional<uint64_t> MountTree::lookup(uint64_t dir, std::string_view name) const {
  if (dir >= slot_of_ino_.size() || slot_of_ino_[dir] == UINT32_MAX) return std::nullopt;
  const std::vector<uint32_t>& kids = children_[slot_of_ino_[dir]];
  auto it = std::lower_bound(kids.begin(), kids.end(), name,
                             [&](uint32_t i, std::string_view nm) { return leaf_name_of(cat_.nodes[i].path) < nm; });
  if (it == kids.end() || leaf_name_of(cat_.nodes[*it].path) != name) return std::nullopt;
  return ino_of_node_[*it];
}

std::vector<MountTree::Entry> MountTree::entries(uint64_t dir) const {
  std::vector<Entry> out;
  if (dir >= slot_of_ino_.size() || slot_of_ino_[dir] == UINT32_MAX) return out;
  const std::vector<uint32_t>& kids = children_[slot_of_ino_[dir]];
  out.reserve(kids.size());
  for (uint32_t i : kids) out.push_back({leaf_name_of(cat_.nodes[i].path), ino_of_node_[i]});
  return out;
}

uint64_t MountTree::parent(uint64_t ino) const {
  const MountInode* in = inode(ino);
  if (!in || in->node == UINT32_MAX) return kMountRootIno;
  return parent_of_node_[in->node];
}

std::string MountTree::link_target(uint64_t ino) const {
  const Node* n = node_of(ino);
  if (!n || n->type != NodeType::Symlink) return {};
  return relocated_link(*n, cat_.roots, opts_.relocate_to.path);
}

} // namespace hpak
