#include "core/verify_library.hpp"

#include <algorithm>
#include <dirent.h>
#include <map>
#include <set>
#include <unordered_map>

#include "core/library.hpp"
#include "core/pack_reader.hpp"

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

bool is_pack_name(const std::string& n, const char* ext) {
  return n.size() == 5 + 64 + 5 && n.rfind("pack-", 0) == 0 && n.compare(69, 5, ext) == 0 && is_hex(std::string_view(n).substr(5, 64));
}

std::string base_of(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

struct PackSeen {
  std::string name;
  bool visible = false;
  DigestSet good; // digests with an intact copy in this pack
};

} // namespace

LibraryVerifyReport verify_library(const std::string& root, const VerifyOptions& opts) {
  Library lib(root);
  LibraryVerifyReport rep;
  rep.library = root;
  const std::string dir = lib.packs_dir();

  std::vector<std::string> pack_files;
  std::vector<std::string> index_files;
  {
    DIR* d = opendir(dir.c_str());
    if (!d) throw_errno("unable to read '" + dir + "'");
    while (auto* e = readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == ".." || n == "multi.midx") continue;
      if (is_pack_name(n, ".hpak")) pack_files.push_back(n);
      else if (is_pack_name(n, ".hidx")) index_files.push_back(n);
      else if (n.size() > 10 && n.compare(n.size() - 10, 10, ".condemned") == 0)
        rep.notes.push_back("'" + n + "' was condemned by a gc that did not finish (the next gc recovers it)");
      else if (n.rfind(".tmp-", 0) == 0) rep.notes.push_back("temp file '" + n + "' (being written, or left by a killed writer)");
      else rep.notes.push_back("unexpected file '" + dir + "/" + n + "'");
    }
    closedir(d);
  }
  std::sort(pack_files.begin(), pack_files.end());
  for (auto& i : index_files) {
    std::string p = i.substr(0, i.size() - 5) + ".hpak";
    if (!std::binary_search(pack_files.begin(), pack_files.end(), p))
      rep.notes.push_back("index '" + i + "' has no pack beside it (readers skip it)");
  }

  lib.refresh();
  std::map<std::string, const PackReader*> visible;
  for (const PackReader* p : lib.packs()) visible[base_of(p->path())] = p;

  // 1. Every pack, end to end.
  std::vector<PackSeen> seen;
  DigestMap<size_t> bad_at;
  DigestSet intact_visible, blobs_visible;
  for (auto& name : pack_files) {
    std::string path = dir + "/" + name;
    VerifyOptions vo = opts;
    vo.standalone = false;
    VerifyReport r;
    PackSeen ps;
    ps.name = name;
    std::vector<Digest> blobs;
    try {
      r = verify_pack(path, vo);
      PackReader scan(path, /*use_index_file=*/false, true, Follow::NoLinks); // the entries verify saw
      DigestSet lost_here;
      for (auto& b : r.bad_objects)
        if (b.lost) lost_here.insert(*digest_from_hex(b.digest));
      const IndexView& idx = scan.index();
      for (uint64_t i = 0; i < idx.count(); i++) {
        Digest d = idx.digest_at(i);
        if (!lost_here.count(d)) ps.good.insert(d);
        if (idx.record_at(i).kind == Kind::Blob) blobs.push_back(d);
      }
    } catch (const Error& e) {
      if (!path_exists(path)) {
        rep.notes.push_back("pack '" + name + "' was removed while being verified (a gc)");
        continue;
      }
      rep.problems.push_back("pack '" + name + "' cannot be read: " + e.what());
      continue;
    }
    ps.visible = visible.count(name) > 0;
    if (!ps.visible && path_exists(index_path_for(path))) {
      lib.refresh(); // its index may have been published since we looked
      for (const PackReader* p : lib.packs()) visible.emplace(base_of(p->path()), p);
      ps.visible = visible.count(name) > 0;
    }
    if (!ps.visible) {
      if (path_exists(index_path_for(path)))
        rep.problems.push_back("pack '" + name + "' has an index, but readers cannot open it");
      else
        rep.notes.push_back("pack '" + name + "' has no index: it is not visible to readers (being published, or condemned by a gc)");
    }
    for (auto& b : r.bad_objects) {
      Digest d = *digest_from_hex(b.digest);
      auto [it, fresh] = bad_at.emplace(d, rep.bad_objects.size());
      if (fresh) {
        LibraryBadObject lb;
        lb.digest = b.digest;
        lb.kind = b.kind;
        rep.bad_objects.push_back(std::move(lb));
      }
      rep.bad_objects[it->second].bad_copies.push_back({name, b.offset, b.why});
    }
    if (ps.visible) {
      intact_visible.insert(ps.good.begin(), ps.good.end());
      blobs_visible.insert(blobs.begin(), blobs.end());
    }
    rep.raw_bytes += r.raw_bytes;
    rep.packs.push_back(std::move(r));
    seen.push_back(std::move(ps));
  }
  rep.objects = blobs_visible.size();

  auto intact_in = [&](const Digest& d, bool want_visible) {
    std::vector<std::string> out;
    for (auto& ps : seen)
      if (ps.visible == want_visible && ps.good.count(d)) out.push_back(ps.name);
    return out;
  };
  // An object found in a pack that was not visible when step 1 looked at it
  // (its index was published since: adds run while we verify): intact if step 1
  // found it intact there, or, for a pack listed after step 1, if it reads now.
  // `why` gets what was wrong when it is not.
  auto intact_where_found = [&](const ObjectRef& ref, const Digest& d, std::string& why) {
    std::string name = base_of(ref.pack->path());
    for (auto& ps : seen)
      if (ps.name == name) {
        if (!ps.good.count(d)) why = "pack '" + name + "' lists it, but verifying that pack found no intact copy";
        return ps.good.count(d) > 0;
      }
    try {
      ref.pack->read_stream(ref.rec, [](ByteSpan) {});
      return true;
    } catch (const Error& e) {
      why = std::string("reading it from pack '") + name + "' failed: " + e.what();
      return false;
    }
  };
  auto entry_for = [&](const Digest& d, const char* kind) -> LibraryBadObject& {
    auto [it, fresh] = bad_at.emplace(d, rep.bad_objects.size());
    if (fresh) {
      LibraryBadObject lb;
      lb.digest = to_hex(d);
      lb.kind = kind;
      rep.bad_objects.push_back(std::move(lb));
    }
    return rep.bad_objects[it->second];
  };

  // 2. Every catalog: name file, catalog object, every object it needs.
  // status: 0 fine, 1 bad but intact in another visible pack, 2 lost.
  DigestMap<int> status;
  auto status_of = [&](const Digest& d, const char* kind) {
    auto it = status.find(d);
    if (it != status.end()) return it->second;
    int s = 0;
    bool intact = intact_visible.count(d) > 0;
    auto ref = lib.locate(d); // rescans on a miss: packs are published while we verify
    bool locatable = ref.has_value();
    std::string why;
    if (locatable && !intact) intact = intact_where_found(*ref, d, why);
    if (!locatable) {
      LibraryBadObject& b = entry_for(d, kind);
      if (intact)
        b.missing = "intact in pack '" + intact_in(d, true)[0] + "', but the library's lookup does not find it (a wrong multi.midx; 'hpak repair' rebuilds it)";
      else if (auto hidden = intact_in(d, false); !hidden.empty())
        b.missing = "not in any visible pack; an intact copy is in '" + hidden[0] + "', which readers do not see";
      else
        b.missing = "not in any pack of the library";
      s = 2;
    } else if (!intact) {
      LibraryBadObject& b = entry_for(d, kind);
      if (b.bad_copies.empty()) b.missing = "listed by a pack's index, but no intact entry holds it" + (why.empty() ? "" : " (" + why + ")");
      s = 2;
    } else if (bad_at.count(d)) {
      s = 1;
    }
    status.emplace(d, s);
    return s;
  };

  for (auto& name : lib.catalog_names()) {
    LibraryCatalogReport c;
    c.name = name;
    std::optional<Digest> d;
    try {
      d = lib.catalog_digest(name);
    } catch (const Error& e) {
      c.error = e.what();
      rep.catalogs.push_back(std::move(c));
      continue;
    }
    if (!d) {
      rep.notes.push_back("catalog '" + name + "' was removed while being verified");
      continue;
    }
    c.digest = to_hex(*d);
    int cs = status_of(*d, "catalog");
    Catalog cat;
    try {
      cat = lib.load_catalog_by_digest(*d);
    } catch (const Error& e) {
      c.error = e.what();
      entry_for(*d, "catalog").paths.push_back(name);
      rep.catalogs.push_back(std::move(c));
      continue;
    }
    if (cs) entry_for(*d, "catalog").paths.push_back(name);
    if (cs == 1) c.degraded_objects++;
    std::unordered_map<std::string_view, const Digest*> file_digest;
    DigestSet counted;
    for (const Node& n : cat.nodes) {
      const Digest* od = nullptr;
      if (n.type == NodeType::File) {
        c.files++;
        od = &n.digest;
        file_digest.emplace(n.path, od);
      } else if (n.type == NodeType::Hardlink) {
        auto it = file_digest.find(n.target);
        if (it != file_digest.end()) od = it->second;
      }
      if (!od) continue;
      int s = status_of(*od, "blob");
      if (!s) continue;
      entry_for(*od, "blob").paths.push_back(name + ":" + n.path);
      if (counted.insert(*od).second) (s == 2 ? c.lost_objects : c.degraded_objects)++;
    }
    rep.catalogs.push_back(std::move(c));
  }

  // Lost or not: an intact copy in a visible pack keeps the data.
  for (auto& b : rep.bad_objects) {
    Digest d = *digest_from_hex(b.digest);
    b.intact_in = intact_in(d, true);
    b.lost = b.intact_in.empty();
    if (b.lost && b.missing.empty())
      if (auto hidden = intact_in(d, false); !hidden.empty())
        rep.notes.push_back("object " + b.digest + " has an intact copy only in '" + hidden[0] + "', which readers do not see");
  }
  return rep;
}

} // namespace hpak
