// The dirty restore (a target restored before, maybe changed since, maybe
// another environment) as three passes; core/restore/restore.cpp runs them in order.
//
//   scan   scan_target(): one parallel pass of getdents64 + fstatat over the
//          catalog's directories, each opened beneath the target (never
//          through a symlink, never into a mount: RESOLVE_NO_XDEV). Records
//          what is at each catalog path (TargetScan::seen) and the entries
//          the catalog does not name (strays). A directory unchanged since
//          the last complete restore of this catalog (ctime below its fence)
//          is not read: its entries are the catalog's, stat'ed by name.
//          A mount point at a path the
//          restore would touch is refused here, before any change. Writes
//          nothing.
//   plan   plan_dirty(): decides, from the scan, the catalog and the previous
//          restore's trust basis (its catalog and ctime fence, from the state
//          file), what to do with every entry: a DirtyPlan value. Its only
//          I/O reads the bytes of same-size files it cannot trust (a forged
//          object stops the restore here, or with `partial` is reported and
//          its file left alone). Writes nothing.
//   apply  apply_dirty_plan(): checks free space, marks the state
//          incomplete, then makes the changes: kept files' modes and mtimes,
//          removals, missing directories, file writes, links and symlinks,
//          directory modes and mtimes last, deepest first.
//
// A file is kept unread when its ctime is below the last restore's fence (a
// fence taken in this boot), its size and link count fit, and the previous
// catalog had the same object and relocations at that path. An unchanged
// space costs about one fstatat per file and no writes at all.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/os/sys.hpp"
#include "core/restore/restore.hpp"
#include "core/restore/restore_state.hpp"

namespace hpak {

// ---- what the passes share ----

// The catalog's shape, computed once: directory slots (0 = the target, then
// each catalog directory in catalog order), each slot's children in name
// order (binary-searchable), and its hardlinks.
struct CatalogShape {
  formats::DirSlots slots;
  std::vector<uint32_t> child_begin; // children of slot s: child_node[child_begin[s] .. child_begin[s + 1])
  std::vector<uint32_t> child_node;
  std::vector<std::string_view> child_leaf; // the leaf name of child_node[k]: views into the catalog, which outlives the shape
  // The links a catalog file may have: itself and its hardlinks. An inode
  // with more is shared with a file the catalog does not name (`ln
  // outside/f target/f`): it is replaced, never chmod'ed or utimens'ed.
  std::vector<uint32_t> links;
  // The symlink and hardlink nodes, in catalog order (the passes over links
  // walk these, not every node), and beside each the file node a hardlink
  // links to (0 for a symlink).
  std::vector<uint32_t> link_nodes;
  std::vector<uint32_t> link_target;

  explicit CatalogShape(const formats::Catalog& cat);
  size_t slot_count() const { return slots.dir_nodes.size(); }
  // The catalog node named `name` in slot `slot`, if any.
  std::optional<size_t> find_child(const formats::Catalog& cat, size_t slot, std::string_view name) const;
};

// What the last restore of this target lets the plan trust (from its state
// file, when the state was written for this very target).
struct TrustBasis {
  bool state_ours = false;   // a valid state recording this target's real path
  bool same_catalog = false; // ... of a restore of this very catalog
  std::optional<formats::Catalog> old_cat; // ... else its catalog, when readable
  int64_t fence_ns = 0; // files with a ctime below were last changed by that restore (0: none)
  // That restore completed with this very catalog: a directory whose ctime is
  // below the fence still holds exactly the catalog's entries (creating,
  // removing or renaming an entry moves its directory's ctime), so the scan
  // need not read it.
  bool listings = false;
  // The catalog the last restore wrote (nullptr: unknown).
  const formats::Catalog* prev(const formats::Catalog& cat) const {
    return same_catalog ? &cat : old_cat ? &*old_cat : nullptr;
  }
};
// Reads the trust basis from the target's state `old` (absent or damaged:
// nothing trusted). The fence counts only in the boot that took it.
TrustBasis trust_basis(const std::optional<RestoreState>& old, const std::string& real_target, const Digest& digest,
                       const std::string& target);

struct DirtyContext {
  const Library& lib;
  const formats::Catalog& cat;
  const CatalogShape& shape;
  int tfd;                        // the target, open and locked
  const std::string& target;      // as named (messages)
  const std::string& real_target; // the relocation root
  const RelocTo& reloc;           // real_target, and what --keep-unrelocated says
  const TrustBasis& trust;
  const RestoreOptions& opts;
  unsigned threads;
};

// ---- scan ----

enum class EntryKind : uint8_t { Absent, Dir, File, Symlink, Other };

// What the scan found at one catalog path (fields from fstatat, unless a
// directory was known from its dirent type alone).
struct SeenEntry {
  EntryKind kind = EntryKind::Absent;
  bool link_matches = false; // a symlink whose text is the catalog's (relocated) target
  uint32_t mode = 0;         // permission bits (07777)
  uint64_t nlink = 0, size = 0, blocks_bytes = 0;
  os::Ino ino = 0;
  int64_t ctime_ns = 0, mtime_ns = 0;
};

// An entry of a catalog directory that the catalog does not name.
struct Stray {
  uint32_t slot;
  std::string name;
  bool temp_state; // a temp state file a killed restore left in the target
};

struct TargetScan {
  std::vector<SeenEntry> seen; // by catalog node
  std::vector<int> dir_fd;     // by slot, owned; -1: missing, not a directory or a symlink
  std::vector<uint32_t> dir_mode;
  std::vector<int64_t> dir_mtime;
  std::vector<uint8_t> dir_listed; // by slot: 1 when its entries were taken from the catalog, unread
  std::vector<Stray> strays; // sorted by (slot, name)

  TargetScan() = default;
  TargetScan(const TargetScan&) = delete;
  TargetScan& operator=(const TargetScan&) = delete;
  TargetScan(TargetScan&&) = default; // leaves the source without fds
  ~TargetScan();
};

// Throws on a mount point at any path the restore would touch, a catalog
// directory that exists but cannot be opened, or an unreadable directory.
TargetScan scan_target(const DirtyContext& cx);

// ---- plan ----

// What the restore does with one catalog entry.
enum class Act : uint8_t {
  Keep,    // there and right (its mode or mtime may still be fixed: NodeStep)
  Rewrite, // a regular file there, replaced by a new one (unlink, create, write)
  Create,  // not there, or removed first (a Removal names it): made
  Leave,   // its object cannot be checked (`partial`): left exactly as it is
};
// Why (Keep: Same; Removals: the last three or the entry's own reason).
enum class Why : uint8_t {
  Same,             // size, links and trust (or compared bytes) agree
  Missing,          // nothing at the path
  WrongType,        // another kind of entry at the path
  SizeDiffers,      // a file of another size
  SharedInode,      // a file with more links than the catalog gives it
  ContentDiffers,   // same size, other bytes
  FileUnreadable,   // could not be opened to compare
  ObjectUnreadable, // its object is missing or damaged (the write reports why)
  SymlinkDiffers,   // a symlink with another target, or with more than one link
  StaleHardlink,    // a hardlink not sharing the inode of its kept file
  Forged,           // the object's bytes do not match its name
  MetaRefused,      // apply: the inode changed (or is shared) before its mode/mtime fix
  NotInCatalog,     // a stray entry
  TempState,        // a temp state file of a killed restore
};
const char* why_name(Why w);

struct NodeStep {
  Act act = Act::Keep;
  Why why = Why::Same;
  bool chmod = false;    // Keep: its mode differs (files)
  bool retime = false;   // Keep: its mtime differs (files, symlinks)
  bool compared = false; // its bytes were compared (not trusted, or `verify_content`)
};

struct DirStep {
  bool create = false; // missing (or removed first)
  bool chmod = false;  // there, mode differs
  bool retime = false; // there, mtime differs (apply also retimes every directory it changes)
};

struct Removal {
  uint32_t slot; // the directory holding it
  std::string name;
  Why why;
};

struct DirtyPlan {
  std::vector<NodeStep> nodes;   // by catalog node
  std::vector<DirStep> dirs;     // by slot ([0], the target itself, unused)
  std::vector<Removal> removals; // strays, then entries of the wrong kind, then stale hardlinks
  std::vector<Failure> failures; // forged objects (`partial`), their files left
  uint64_t compared = 0;
  // The objects of compared files found different (ContentDiffers), as the
  // compare read and checked them (SHA-256), by catalog node: the write uses
  // them instead of decoding the object's block a second time. Small objects
  // only (kKeptObjectMax each, kKeptBytesMax in all); the others are read again.
  std::unordered_map<size_t, Bytes> fetched;
  static constexpr uint64_t kKeptObjectMax = 1u << 20, kKeptBytesMax = 64u << 20;
  // Whether applying the plan changes anything.
  bool changes() const;
};

DirtyPlan plan_dirty(const DirtyContext& cx, const TargetScan& sc);
// Hardlinks are right only if they share the inode of a kept file; the others
// are planned for removal and linking again. Part of plan_dirty; apply runs
// it again after it replaced kept files.
void drop_stale_hardlinks(const DirtyContext& cx, const TargetScan& sc, DirtyPlan& p);

// ---- apply ----

// A state to write before the first change, and how (see write_state).
struct IncompleteState {
  const RestoreState& state;
  StateMark mark;
};

// Executes `plan` (and fills `stats`): checks free space, writes `incomplete`
// as the state, then makes the changes. A kept file whose inode changed under
// the restore is rewritten instead (the plan is updated: MetaRefused).
void apply_dirty_plan(const DirtyContext& cx, TargetScan& sc, DirtyPlan& plan, const IncompleteState& incomplete,
                      RestoreStats& stats);

// ---- helpers of the passes ----

// The text a catalog symlink gets in this target (relocated).
std::string expected_symlink(const formats::Node& n, const formats::Catalog& cat, const std::string& real_target);
// A directory of the catalog that is there but cannot be opened beneath the
// target: a mount point (EXDEV: it, or the shallowest mount on its path, is
// named) or unreadable. One line, before anything in it is touched.
[[noreturn]] void refuse_unopenable_dir(int tfd, const std::string& target, const std::string& rel, int err);

} // namespace hpak
