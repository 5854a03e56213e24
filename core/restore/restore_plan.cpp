// The plan pass of the dirty restore (see core/restore/restore_plan.hpp).
#include <algorithm>
#include <atomic>
#include <mutex>

#include "base/os/sys.hpp"
#include "base/os/fs_ops.hpp"
#include "base/progress.hpp"
#include "core/restore/restore_plan.hpp"
#include "base/parallel.hpp"

namespace hpak {

using namespace formats;

TrustBasis trust_basis(const std::optional<RestoreState>& old, const std::string& real_target, const Digest& digest,
                       const std::string& target) {
  TrustBasis t;
  t.state_ours = old && old->target == real_target;
  if (!t.state_ours) return t;
  t.fence_ns = old->fence_trusted() ? old->fence_ns : 0; // after a reboot, compare content
  if (old->catalog_digest == digest) {
    t.same_catalog = true;
    t.listings = old->complete && t.fence_ns > 0;
    return t;
  }
  try {
    t.old_cat = decode_catalog(old->catalog_raw(), target + "/" + kStateName);
  } catch (const Error&) {
    t.fence_ns = 0;
  }
  return t;
}

const char* why_name(Why w) {
  switch (w) {
  case Why::Same: return "same";
  case Why::Missing: return "missing";
  case Why::WrongType: return "wrong type";
  case Why::SizeDiffers: return "size differs";
  case Why::SharedInode: return "shared inode";
  case Why::ContentDiffers: return "content differs";
  case Why::FileUnreadable: return "file unreadable";
  case Why::ObjectUnreadable: return "object unreadable";
  case Why::SymlinkDiffers: return "symlink differs";
  case Why::StaleHardlink: return "stale hardlink";
  case Why::Forged: return "forged object";
  case Why::MetaRefused: return "inode changed";
  case Why::NotInCatalog: return "not in catalog";
  case Why::TempState: return "temp state";
  }
  return "?";
}

bool DirtyPlan::changes() const {
  if (!removals.empty() || !failures.empty()) return true;
  for (auto& s : nodes)
    if (s.act != Act::Keep || s.chmod || s.retime) return true;
  for (size_t s = 1; s < dirs.size(); s++)
    if (dirs[s].chmod || dirs[s].retime) return true;
  return false;
}

namespace {

// Same offsets of the same roots, and the same kind (a version 1 state's
// unclassified file is compared once: an older hpak may have spliced it).
bool same_relocation(const Node& a, const Catalog& ca, const Node& b, const Catalog& cb) {
  if (a.relocs.size() != b.relocs.size()) return false;
  if (!a.relocs.empty() && a.reloc_kind != b.reloc_kind) return false;
  for (size_t i = 0; i < a.relocs.size(); i++) {
    if (reloc_offset(a.relocs[i]) != reloc_offset(b.relocs[i])) return false;
    if (ca.roots[reloc_root(a.relocs[i])] != cb.roots[reloc_root(b.relocs[i])]) return false;
  }
  return true;
}

// Whether the file at catalog node `n` may be kept unread: its ctime is below
// the last restore's fence and that restore wrote the same object, relocated
// the same way, at this path.
bool trusted(const DirtyContext& cx, const Node& n, const SeenEntry& s) {
  const Catalog* prev = cx.trust.prev(cx.cat);
  if (!prev || s.ctime_ns >= cx.trust.fence_ns) return false;
  const Node* o = nullptr;
  if (prev == &cx.cat) o = &n;
  else if (auto pi = find_path(*prev, n.path)) o = &prev->nodes[*pi];
  return o && o->type == NodeType::File && o->digest == n.digest && same_relocation(*o, *prev, n, cx.cat);
}

NodeStep create(Why why) { return {Act::Create, why}; }

NodeStep decide_file(const DirtyContext& cx, size_t i, const SeenEntry& s) {
  const Node& n = cx.cat.nodes[i];
  if (s.kind != EntryKind::File) return create(Why::WrongType);
  if (s.size != relocated_size(n, cx.cat.roots, cx.real_target)) return {Act::Rewrite, Why::SizeDiffers};
  if (s.nlink > cx.shape.links[i]) return {Act::Rewrite, Why::SharedInode};
  NodeStep st;
  st.compared = !trusted(cx, n, s) || cx.opts.verify_content;
  st.chmod = s.mode != wanted_mode(n, cx.opts.preserve_setid);
  st.retime = s.mtime_ns != n.mtime_ns;
  return st;
}

// One entry, from what the scan saw at its path alone (same-size files are
// marked for comparison; hardlinks are checked against their files later).
NodeStep decide_entry(const DirtyContext& cx, size_t i, const SeenEntry& s) {
  const Node& n = cx.cat.nodes[i];
  if (s.kind == EntryKind::Absent) return create(Why::Missing);
  switch (n.type) {
  case NodeType::Dir: return s.kind == EntryKind::Dir ? NodeStep{} : create(Why::WrongType);
  case NodeType::File: return decide_file(cx, i, s);
  case NodeType::Symlink: {
    if (s.kind != EntryKind::Symlink) return create(Why::WrongType);
    if (!s.link_matches || s.nlink != 1) return create(Why::SymlinkDiffers);
    NodeStep st;
    st.retime = s.mtime_ns != n.mtime_ns;
    return st;
  }
  case NodeType::Hardlink: return s.kind == EntryKind::File ? NodeStep{} : create(Why::WrongType);
  }
  return create(Why::WrongType);
}

void decide_entries(const DirtyContext& cx, const TargetScan& sc, DirtyPlan& p) {
  const CatalogShape& sh = cx.shape;
  for (auto& s : sc.strays) p.removals.push_back({s.slot, s.name, s.temp_state ? Why::TempState : Why::NotInCatalog});
  for (size_t i = 0; i < cx.cat.nodes.size(); i++) {
    p.nodes[i] = decide_entry(cx, i, sc.seen[i]);
    // Something of another kind is there: removed before the entry is made.
    if (p.nodes[i].act == Act::Create && p.nodes[i].why != Why::Missing)
      p.removals.push_back({sh.slots.parent[i], std::string(leaf_of(cx.cat.nodes[i].path)), p.nodes[i].why});
  }
}

// Same-size files that cannot be trusted: compare bytes, rewrite if
// different; in bounded chunks (never a whole file or object in memory). An
// object whose bytes do not match its name fails the restore (with
// `partial`: that file is reported and left as it is), before any change.
void compare_untrusted(const DirtyContext& cx, const TargetScan& sc, DirtyPlan& p) {
  std::vector<size_t> compare;
  for (size_t i = 0; i < p.nodes.size(); i++)
    if (p.nodes[i].compared) compare.push_back(i);
  std::vector<Bytes> scratch(cx.threads);
  std::vector<std::pair<size_t, std::string>> forged;
  std::mutex mu;
  std::atomic<uint64_t> kept_bytes{0}; // reserved, whether kept or not: a bound, not a count
  PassProgress progress(cx.opts.progress, "compare", compare.size());
  parallel_for(compare.size(), cx.threads, 4, [&](size_t k, unsigned tid) {
    progress.tick(tid);
    size_t j = compare[k];
    const Node& n = cx.cat.nodes[j];
    NodeStep& st = p.nodes[j];
    int fd = os::open_at(sc.dir_fd[cx.shape.slots.parent[j]], std::string(leaf_of(n.path)).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      st.act = Act::Rewrite, st.why = Why::FileUnreadable;
      return;
    }
    Fd guard(fd);
    std::string why;
    Bytes kept;
    const bool keep = n.size <= DirtyPlan::kKeptObjectMax && kept_bytes.fetch_add(n.size) + n.size <= DirtyPlan::kKeptBytesMax;
    switch (compare_file_content(n, cx.cat, cx.lib, fd, cx.reloc, scratch[tid], &why, keep ? &kept : nullptr)) {
    case ContentMatch::Same: break;
    case ContentMatch::Differs: {
      st.act = Act::Rewrite, st.why = Why::ContentDiffers;
      if (!keep || kept.size() != n.size) break;
      std::lock_guard lk(mu);
      p.fetched.emplace(j, std::move(kept));
      break;
    }
    case ContentMatch::Unreadable: st.act = Act::Rewrite, st.why = Why::ObjectUnreadable; break;
    case ContentMatch::Forged: {
      std::lock_guard lk(mu);
      forged.emplace_back(j, std::move(why));
      break;
    }
    }
  });
  std::sort(forged.begin(), forged.end());
  for (auto& [j, why] : forged) {
    const Node& n = cx.cat.nodes[j];
    if (!cx.opts.partial) throw Error("'" + cx.target + "/" + n.path + "' cannot be checked: " + why);
    p.failures.push_back({n.path.str(), to_hex(n.digest), why});
    p.nodes[j] = {Act::Leave, Why::Forged, false, false, true}; // left exactly as it is
  }
  if (!compare.empty()) progress.finish();
  p.compared = compare.size();
  for (size_t j : compare)
    if (p.nodes[j].act == Act::Rewrite) p.nodes[j].chmod = p.nodes[j].retime = false; // written with both
}

// Directories: made when missing (or removed first); a directory there gets
// its mode and mtime fixed when they differ.
void decide_dirs(const DirtyContext& cx, const TargetScan& sc, DirtyPlan& p) {
  const CatalogShape& sh = cx.shape;
  p.dirs.assign(sh.slot_count(), DirStep{});
  for (size_t s = 1; s < sh.slot_count(); s++) {
    const Node& d = cx.cat.nodes[sh.slots.dir_nodes[s]];
    DirStep& ds = p.dirs[s];
    bool there = sc.dir_fd[s] >= 0;
    ds.create = p.nodes[sh.slots.dir_nodes[s]].act == Act::Create || !there;
    ds.chmod = there && sc.dir_mode[s] != wanted_mode(d, cx.opts.preserve_setid);
    ds.retime = there && sc.dir_mtime[s] != d.mtime_ns;
  }
}

} // namespace

void drop_stale_hardlinks(const DirtyContext& cx, const TargetScan& sc, DirtyPlan& p) {
  for (size_t k = 0; k < cx.shape.link_nodes.size(); k++) {
    const size_t i = cx.shape.link_nodes[k];
    const Node& n = cx.cat.nodes[i];
    if (n.type != NodeType::Hardlink || p.nodes[i].act == Act::Create) continue;
    size_t t = cx.shape.link_target[k];
    if (p.nodes[t].act == Act::Create || p.nodes[t].act == Act::Rewrite || sc.seen[i].ino != sc.seen[t].ino) {
      p.removals.push_back({cx.shape.slots.parent[i], std::string(leaf_of(n.path)), Why::StaleHardlink});
      p.nodes[i] = create(Why::StaleHardlink);
    }
  }
}

DirtyPlan plan_dirty(const DirtyContext& cx, const TargetScan& sc) {
  DirtyPlan p;
  p.nodes.resize(cx.cat.nodes.size());
  decide_entries(cx, sc, p);
  compare_untrusted(cx, sc, p);
  drop_stale_hardlinks(cx, sc, p);
  decide_dirs(cx, sc, p);
  return p;
}

} // namespace hpak
