#include "core/verify/verify_library.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "core/library/library.hpp"
#include "core/pack/pack_reader.hpp"
#include "core/store/packs_listing.hpp"
#include "formats/pack_name.hpp"

namespace hpak {

using namespace formats;

bool LibraryVerifyReport::ok() const {
  if (!problems.empty() || !bad_objects.empty()) return false;
  for (auto& p : packs)
    if (!p.ok()) return false;
  for (auto& c : catalogs)
    if (!c.error.empty()) return false;
  return true;
}

uint64_t LibraryVerifyReport::lost_objects() const {
  uint64_t n = 0;
  for (auto& b : bad_objects) n += b.lost;
  return n;
}

std::vector<std::string> LibraryVerifyReport::broken_catalogs() const {
  std::vector<std::string> out;
  for (auto& c : catalogs)
    if (c.broken()) out.push_back(c.name);
  return out;
}

namespace {

std::string base_of(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// The pack files of packs/ (their names, sorted); every other file there is
// noted, and so is an index without its pack.
std::vector<std::string> list_pack_files(const store::Layout& layout, LibraryVerifyReport& rep) {
  const store::PacksListing l = store::list_packs(layout);
  for (auto& n : l.condemned) rep.notes.push_back("'" + n + "' was condemned by a gc that did not finish (the next gc recovers it)");
  for (auto& n : l.temps) rep.notes.push_back("temp file '" + n + "' (being written, or left by a killed writer)");
  for (auto& n : l.other) rep.notes.push_back("unexpected file '" + layout.packs_dir() + "/" + n + "'");
  for (const Digest& d : l.index_files)
    if (!l.has_pack_file(d)) rep.notes.push_back("index '" + formats::index_file_name(d) + "' has no pack beside it (readers skip it)");
  std::vector<std::string> pack_files;
  for (const Digest& d : l.pack_files) pack_files.push_back(formats::pack_file_name(d));
  return pack_files;
}

// Sorted vectors, not hash sets, hold what this step keeps per object: 32
// bytes a digest (a DigestSet took about 80), so a library of 10^7 objects
// costs its digests once per pack and once merged, nothing more.
bool holds(const std::vector<Digest>& sorted, const Digest& d) { return std::binary_search(sorted.begin(), sorted.end(), d); }

// Sorts and drops repeats.
void sort_unique(std::vector<Digest>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  v.shrink_to_fit();
}

struct PackSeen {
  std::string name;
  bool visible = false;
  std::vector<Digest> intact; // sorted: the digests with an intact copy in this pack
};

// One library pack verified end to end, with the digests it holds intact and
// its blobs (from the entries verify saw).
struct PackChecked {
  VerifyReport report;
  PackSeen seen;
  std::vector<Digest> blobs;
};

PackChecked check_pack(const std::string& path, const std::string& name, const VerifyOptions& opts) {
  VerifyOptions vo = opts;
  vo.standalone = false;
  PackChecked out;
  out.seen.name = name;
  PackDigests held;
  out.report = verify_pack(path, vo, &held);
  out.seen.intact = std::move(held.intact);
  out.blobs = std::move(held.blobs);
  return out;
}

// What an object is to the catalogs that need it.
enum class ObjectStatus { Fine, Degraded /* bad, but intact in another visible pack */, Lost };

// The state one library verify builds up: the packs seen in step 1, the bad
// objects merged across packs, and each object's status once looked up.
class LibraryAudit {
public:
  LibraryAudit(const std::string& root, LibraryVerifyReport& rep) : lib_(root), rep_(rep) { rep_.library = root; }

  // 1. Every pack, end to end.
  void check_packs(const VerifyOptions& opts) {
    const std::string dir = lib_.packs_dir();
    std::vector<std::string> pack_files = list_pack_files(lib_.layout(), rep_);
    lib_.refresh();
    for (const PackReader* p : lib_.packs()) visible_[base_of(p->path())] = p;
    std::vector<Digest> blobs_visible;
    for (auto& name : pack_files) check_one_pack(dir + "/" + name, name, opts, blobs_visible);
    sort_unique(blobs_visible);
    rep_.objects = blobs_visible.size();
    sort_unique(intact_visible_);
    status_intact_.assign(intact_visible_.size(), kUnknown);
  }

  // 1b. The multi-pack index against the packs' own indexes: a bad one is
  // ignored by readers, but a valid one that misses digests hides objects
  // from every lookup that trusts it.
  void check_midx() {
    std::string stale, why = lib_.midx_problem(&stale);
    if (!why.empty()) rep_.problems.push_back({ProblemKind::MidxBad, why});
    else if (!stale.empty()) rep_.notes.push_back(stale);
  }

  // 2. Every catalog: name file, catalog object, every object it needs. The
  // library's lookups and its catalog reads go through the packs' mappings (a
  // lookup reads an entry's header there, and the kernel maps up to 64 KiB
  // around it): the pages mapped are unmapped after each catalog and every
  // kReleaseEvery lookups (the first catalog looks up all its objects), so
  // what this step holds of the packs is bounded (kReleaseEvery x 64 KiB and a
  // catalog), not every page the library's objects touch (171 MiB of a 1 GiB
  // library at K = 1,000).
  void check_catalogs() {
    for (auto& name : lib_.catalog_names()) {
      check_catalog(name);
      release_packs();
    }
  }

  // Lost or not: an intact copy in a visible pack keeps the data.
  void settle_lost() {
    for (auto& b : rep_.bad_objects) {
      Digest d = *digest_from_hex(b.digest);
      b.intact_in = intact_in(d, true);
      b.lost = b.intact_in.empty();
      if (b.lost && b.missing.empty())
        if (auto hidden = intact_in(d, false); !hidden.empty())
          rep_.notes.push_back("object " + b.digest + " has an intact copy only in '" + hidden[0] + "', which readers do not see");
    }
  }

private:
  void check_one_pack(const std::string& path, const std::string& name, const VerifyOptions& opts, std::vector<Digest>& blobs_visible) {
    PackChecked pc;
    try {
      VerifyOptions vo = opts;
      vo.base_source = [this](const Digest& d) { return lib_.read_base_catalog(d); };
      pc = check_pack(path, name, vo);
    } catch (const Error& e) {
      if (!path_exists(path)) rep_.notes.push_back("pack '" + name + "' was removed while being verified (a gc)");
      else rep_.problems.push_back({ProblemKind::PackUnreadable, "pack '" + name + "' cannot be read: " + e.what()});
      return;
    }
    pc.seen.visible = is_visible(path, name);
    merge_bad_copies(pc.report, name);
    if (pc.seen.visible) {
      intact_visible_.insert(intact_visible_.end(), pc.seen.intact.begin(), pc.seen.intact.end());
      blobs_visible.insert(blobs_visible.end(), pc.blobs.begin(), pc.blobs.end());
    }
    rep_.raw_bytes += pc.report.raw_bytes;
    rep_.packs.push_back(std::move(pc.report));
    seen_.push_back(std::move(pc.seen));
  }

  // Whether readers see the pack; a pack they do not see is noted (or, with an
  // index beside it, a problem).
  bool is_visible(const std::string& path, const std::string& name) {
    bool has_index = path_exists(index_path_for(path));
    if (!visible_.count(name) && has_index) {
      lib_.refresh(); // its index may have been published since we looked
      for (const PackReader* p : lib_.packs()) visible_.emplace(base_of(p->path()), p);
    }
    if (visible_.count(name)) return true;
    if (path_exists(index_path_for(path)))
      rep_.problems.push_back({ProblemKind::IndexRejected, "pack '" + name + "' has an index, but readers cannot open it"});
    else
      rep_.notes.push_back("pack '" + name + "' has no index: it is not visible to readers (being published, or condemned by a gc)");
    return false;
  }

  // The pack's bad objects, merged into the library's: one entry per digest,
  // with every bad copy.
  void merge_bad_copies(const VerifyReport& r, const std::string& name) {
    for (auto& b : r.bad_objects) {
      LibraryBadObject& lb = entry_for(*digest_from_hex(b.digest), b.kind.c_str());
      lb.bad_copies.push_back({name, b.offset, b.why});
    }
  }

  LibraryBadObject& entry_for(const Digest& d, const char* kind) {
    auto [it, fresh] = bad_at_.emplace(d, rep_.bad_objects.size());
    if (fresh) {
      LibraryBadObject lb;
      lb.digest = to_hex(d);
      lb.kind = kind;
      rep_.bad_objects.push_back(std::move(lb));
    }
    return rep_.bad_objects[it->second];
  }

  // The packs seen in step 1, visible or not, that hold `d` intact.
  std::vector<std::string> intact_in(const Digest& d, bool want_visible) const {
    std::vector<std::string> out;
    for (auto& ps : seen_)
      if (ps.visible == want_visible && holds(ps.intact, d)) out.push_back(ps.name);
    return out;
  }

  // An object found in a pack that was not visible when step 1 looked at it
  // (its index was published since: adds run while we verify): intact if step 1
  // found it intact there, or, for a pack listed after step 1, if it reads now.
  // `why` gets what was wrong when it is not.
  bool intact_where_found(const ObjectRef& ref, const Digest& d, std::string& why) const {
    std::string name = base_of(ref.pack->path());
    for (auto& ps : seen_)
      if (ps.name == name) {
        const bool intact = holds(ps.intact, d);
        if (!intact) why = "pack '" + name + "' lists it, but verifying that pack found no intact copy";
        return intact;
      }
    try {
      ref.pack->read_stream(ref.rec, [](ByteSpan) {});
      return true;
    } catch (const Error& e) {
      why = std::string("reading it from pack '") + name + "' failed: " + e.what();
      return false;
    }
  }

  // Looked up as a restore would (once per object); a lost object gets an
  // entry saying why.
  // (Cached: beside intact_visible_ for the objects it holds, in a map for the others, which are damaged or
  // missing.)
  ObjectStatus status_of(const Digest& d, const char* kind) {
    auto at = std::lower_bound(intact_visible_.begin(), intact_visible_.end(), d);
    if (at != intact_visible_.end() && *at == d) {
      uint8_t& cached = status_intact_[size_t(at - intact_visible_.begin())];
      if (cached == kUnknown) cached = uint8_t(lookup_status(d, kind, true));
      return ObjectStatus(cached);
    }
    auto it = status_other_.find(d);
    if (it != status_other_.end()) return it->second;
    ObjectStatus s = lookup_status(d, kind, false);
    status_other_.emplace(d, s);
    return s;
  }

  static constexpr uint64_t kReleaseEvery = 128;
  void release_packs() {
    for (const PackReader* p : lib_.packs()) p->map().release(0, p->bytes().size());
  }

  // `intact`: a visible pack holds `d` intact (step 1).
  ObjectStatus lookup_status(const Digest& d, const char* kind, bool intact) {
    if (++lookups_ % kReleaseEvery == 0) release_packs();
    auto ref = lib_.locate(d); // rescans on a miss: packs are published while we verify
    std::string why;
    if (ref && !intact) intact = intact_where_found(*ref, d, why);
    if (!ref) {
      LibraryBadObject& b = entry_for(d, kind);
      if (intact)
        b.missing = "intact in pack '" + intact_in(d, true)[0] + "', but the library's lookup does not find it (a wrong multi.midx; 'hpak repair' rebuilds it)";
      else if (auto hidden = intact_in(d, false); !hidden.empty())
        b.missing = "not in any visible pack; an intact copy is in '" + hidden[0] + "', which readers do not see";
      else
        b.missing = "not in any pack of the library";
      return ObjectStatus::Lost;
    }
    if (!intact) {
      LibraryBadObject& b = entry_for(d, kind);
      if (b.bad_copies.empty()) b.missing = "listed by a pack's index, but no intact entry holds it" + (why.empty() ? "" : " (" + why + ")");
      return ObjectStatus::Lost;
    }
    return bad_at_.count(d) ? ObjectStatus::Degraded : ObjectStatus::Fine;
  }

  void check_catalog(const std::string& name) {
    LibraryCatalogReport c;
    c.name = name;
    std::optional<Digest> d;
    try {
      d = lib_.catalog_digest(name);
    } catch (const Error& e) {
      c.error = std::string(e.what()) + " (not a name file: 'hpak repair' moves it into '" + lib_.layout().quarantine_dir() + "')";
      rep_.catalogs.push_back(std::move(c));
      return;
    }
    if (!d) {
      rep_.notes.push_back("catalog '" + name + "' was removed while being verified");
      return;
    }
    c.digest = to_hex(*d);
    ObjectStatus cs = status_of(*d, "catalog");
    Catalog cat;
    try {
      cat = lib_.load_catalog_by_digest(*d);
    } catch (const Error& e) {
      c.error = e.what();
      entry_for(*d, "catalog").paths.push_back(name);
      rep_.catalogs.push_back(std::move(c));
      return;
    }
    if (cs != ObjectStatus::Fine) entry_for(*d, "catalog").paths.push_back(name);
    if (cs == ObjectStatus::Degraded) c.degraded_objects++;
    check_catalog_objects(cat, c);
    rep_.catalogs.push_back(std::move(c));
  }

  // The digest of each file a hardlink of the catalog names (a map of the
  // hardlinks' targets only: most catalogs have none).
  static std::unordered_map<std::string_view, const Digest*> hardlink_targets(const Catalog& cat) {
    std::unordered_map<std::string_view, const Digest*> out;
    for (const Node& n : cat.nodes)
      if (n.type == NodeType::Hardlink) out.emplace(n.target, nullptr);
    if (out.empty()) return out;
    for (const Node& n : cat.nodes)
      if (auto it = out.find(n.path); n.type == NodeType::File && it != out.end()) it->second = &n.digest;
    return out;
  }

  // Every object a file or hardlink of the catalog needs.
  void check_catalog_objects(const Catalog& cat, LibraryCatalogReport& c) {
    const std::unordered_map<std::string_view, const Digest*> file_digest = hardlink_targets(cat);
    DigestSet counted;
    for (const Node& n : cat.nodes) {
      const Digest* od = nullptr;
      if (n.type == NodeType::File) {
        c.files++;
        od = &n.digest;
      } else if (n.type == NodeType::Hardlink) {
        auto it = file_digest.find(n.target);
        if (it != file_digest.end()) od = it->second;
      }
      if (!od) continue;
      ObjectStatus s = status_of(*od, "blob");
      if (s == ObjectStatus::Fine) continue;
      entry_for(*od, "blob").paths.push_back(c.name + ":" + n.path);
      if (counted.insert(*od).second) (s == ObjectStatus::Lost ? c.lost_objects : c.degraded_objects)++;
    }
  }

  Library lib_;
  LibraryVerifyReport& rep_;
  std::map<std::string, const PackReader*> visible_;
  std::vector<PackSeen> seen_;
  DigestMap<size_t> bad_at_;
  std::vector<Digest> intact_visible_; // sorted: intact in a visible pack
  static constexpr uint8_t kUnknown = 0xff;
  std::vector<uint8_t> status_intact_; // an ObjectStatus per digest of intact_visible_, or kUnknown
  DigestMap<ObjectStatus> status_other_;
  uint64_t lookups_ = 0;
};

} // namespace

LibraryVerifyReport verify_library(const std::string& root, const VerifyOptions& opts) {
  LibraryVerifyReport rep;
  LibraryAudit audit(root, rep);
  audit.check_packs(opts);
  audit.check_midx();
  audit.check_catalogs();
  audit.settle_lost();
  return rep;
}

} // namespace hpak
