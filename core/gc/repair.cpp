#include "core/gc/repair.hpp"
#include "base/os/sys.hpp"

#include <set>

#include "core/gc/gc.hpp"
#include "core/store/condemn.hpp"
#include "core/store/lock.hpp"
#include "core/pack/pack_trust.hpp"
#include "core/pack/pack_writer.hpp"
#include "base/os/file.hpp"
#include "core/verify/verify.hpp"

namespace hpak {

using namespace formats;

namespace {

// Whether repair may copy bytes out of `p` into a pack of this user's: the
// trust rule of add and restore (core/pack/pack_trust.hpp) — a private library, or
// a pack (and index) owned by this user or root and writable by no one else.
// Another member's pack of a shared library is never salvaged: the copy would
// be this user's pack, which every member (and this user's restores) then
// trusts without verifying — a forgery laundered by whoever ran repair.
bool salvage_allowed(const Library& lib, const PackReader& p) { return !lib.shared() || pack_owned_safely(p); }

std::string owner_name(os::Uid uid) {
  std::string name;
  return (os::user_of(uid, &name, nullptr) && !name.empty() ? "'" + name + "' " : std::string()) + "(uid " + std::to_string(uid) + ")";
}

// A visible pack verified in full, as a pack of a library.
VerifyReport verify_library_pack(const PackReader& p, const RepairOptions& opts) {
  VerifyOptions vo;
  vo.threads = opts.threads;
  vo.standalone = false;
  vo.progress = opts.progress;
  return verify_pack(p.path(), vo);
}

// Writes the index of `p` again from a scan of the pack.
void rebuild_index(const PackReader& p) {
  PackReader scanned(p.path(), /*use_index_file=*/false, true, Follow::NoLinks);
  std::vector<IndexRecord> recs;
  for (uint64_t i = 0; i < scanned.index().count(); i++) recs.push_back(scanned.index().record_at(i));
  AtomicFile f(index_path_for(p.path()), 0444);
  f.write(encode_index(recs, scanned.bytes().size(), scanned.stored_trailer(), scanned.index_version()));
  f.commit(/*durable=*/true); // replaces the old index: never by an empty one after a crash
}

struct Damaged {
  const PackReader* pack;
  std::set<uint64_t> bad_offsets;
};

// What the verify pass decided, pack by pack.
struct Survey {
  std::vector<Damaged> damaged;              // to rewrite
  std::vector<const PackReader*> left_alone; // damaged packs of other members (see salvage_allowed)
  DigestSet intact_elsewhere;                // digests with an intact copy in a pack that is not rewritten
};

// Verifies every visible pack; rebuilds the indexes that are the only fault
// and sorts the damaged packs into those to rewrite and those left alone.
Survey survey_packs(Library& lib, const RepairOptions& opts, RepairResult& res) {
  Survey s;
  for (const PackReader* p : lib.packs()) {
    VerifyReport r = verify_library_pack(*p, opts);
    res.packs_checked++;
    PackRepair action = pack_repair_for(r);
    if (action != PackRepair::Rewrite) {
      if (action == PackRepair::RebuildIndex) {
        if (!opts.dry_run) rebuild_index(*p);
        res.indexes_rebuilt++;
        res.notes.push_back(std::string(opts.dry_run ? "would rebuild" : "rebuilt") + " the index of '" + base_name(p->path()) + "'");
      }
      const IndexView& v = p->index();
      for (uint64_t i = 0; i < v.count(); i++) s.intact_elsewhere.insert(v.digest_at(i));
      continue;
    }
    if (!salvage_allowed(lib, *p)) {
      s.left_alone.push_back(p);
      res.notes.push_back("left alone '" + p->path() + "' (owned by " + owner_name(p->map().stat().st_uid) +
                          "): it has damaged or forged entries and is another member's pack; nothing is copied out of it "
                          "(its owner can repair it, or remove it)");
      continue;
    }
    Damaged d{p, {}};
    for (auto& b : r.bad_objects) d.bad_offsets.insert(b.offset);
    s.damaged.push_back(std::move(d));
  }
  return s;
}

// What only a pack left alone holds is lost to this user: its restores do
// not take bytes from a pack that fails verification either.
void add_lost_with_left_alone(const Survey& s, DigestSet& lost) {
  for (const PackReader* p : s.left_alone)
    for (uint64_t i = 0; i < p->index().count(); i++)
      if (!s.intact_elsewhere.count(p->index().digest_at(i))) lost.insert(p->index().digest_at(i));
}

// The entries a scan of the pack finds (so entries missing from a damaged
// index are found too), in pack order.
std::vector<IndexRecord> entries_in_order(const PackReader& scanned) {
  const IndexView& v = scanned.index();
  std::vector<IndexRecord> recs;
  for (uint64_t i = 0; i < v.count(); i++) recs.push_back(v.record_at(i));
  std::sort(recs.begin(), recs.end(), [](auto& a, auto& b) { return a.offset != b.offset ? a.offset < b.offset : a.member < b.member; });
  return recs;
}

// An entry verify did not call bad, and that reads back now.
bool entry_intact(const PackReader& scanned, const IndexRecord& r, const std::set<uint64_t>& bad_offsets) {
  if (bad_offsets.count(r.offset)) return false;
  try {
    if (r.raw_len > (64ull << 20)) scanned.read_stream(r, [](ByteSpan) {});
    else scanned.read(r);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// One intact entry into the new pack.
void copy_entry(PackWriter& w, const PackReader& scanned, const IndexRecord& r, bool mirror) {
  if (r.member != kNoMember) {
    // A v2 block member: salvaged alone, re-blocked (or a raw entry in a v1 writer).
    Bytes raw = scanned.read(r);
    if (w.is_small(raw.size())) w.append_small(r.digest, raw);
    else w.append(Kind::Blob, Codec::Raw, r.digest, raw.size(), raw);
  } else {
    IndexRecord c = scanned.complete(r); // a v2 index leaves stored_len and stored_xxh to the entry header
    w.append_copy(c, scanned.checked_stored(c), mirror);
  }
}

// Every intact entry of the damaged pack, once (a catalog with its mirror),
// into `w` (none on a dry run). Returns the digests salvaged.
DigestSet salvage_entries(const PackReader& scanned, const Damaged& d, PackWriter* w, RepairResult& res) {
  DigestSet salvaged;
  for (auto& r : entries_in_order(scanned)) {
    if (!entry_intact(scanned, r, d.bad_offsets)) continue;
    bool mirror = salvaged.count(r.digest) != 0;
    if (mirror && r.kind != Kind::Catalog) continue;
    if (w) copy_entry(*w, scanned, r, mirror);
    if (!mirror) res.objects_salvaged++;
    salvaged.insert(r.digest);
  }
  return salvaged;
}

// Digests the old index or the scan knew that did not survive: lost, unless
// intact in a pack that is not rewritten.
void add_unsalvaged(const Damaged& d, const IndexView& scanned, const DigestSet& salvaged, const DigestSet& intact_elsewhere,
                    DigestSet& lost, RepairResult& res) {
  for (uint64_t i = 0; i < d.pack->index().count(); i++) {
    Digest dg = d.pack->index().digest_at(i);
    if (salvaged.count(dg)) continue;
    if (intact_elsewhere.count(dg)) res.objects_elsewhere++;
    else lost.insert(dg);
  }
  for (uint64_t i = 0; i < scanned.count(); i++) {
    Digest dg = scanned.digest_at(i);
    if (!salvaged.count(dg) && !intact_elsewhere.count(dg)) lost.insert(dg);
  }
}

// The damaged pack out of packs/, into LIB/damaged/, then its index removed:
// a crash in between leaves an index without its pack (readers skip it,
// verify notes it), never a damaged pack without an index, which no later
// repair would look at and every verify would fail on.
void move_to_damaged(Library& lib, const PackReader& pack, RepairResult& res) {
  const std::string dmg = lib.layout().damaged_dir();
  if (os::mkdir_path(dmg.c_str(), lib.shared() ? 02775 : 0755) != 0 && errno != EEXIST) throw_errno("unable to create '" + dmg + "'");
  if (lib.shared()) os::chmod_path(dmg.c_str(), 02775);
  std::string dest = dmg + "/" + base_name(pack.path());
  if (os::rename_path(pack.path().c_str(), dest.c_str()) != 0) throw_errno("unable to move '" + pack.path() + "' to '" + dest + "'");
  os::unlink_path(index_path_for(pack.path()).c_str());
  res.moved.push_back(dest);
}

// A damaged pack rewritten with its intact entries (published pack-then-index,
// durable before the damaged one is moved away); on a dry run only counted.
void rewrite_pack(Library& lib, const Damaged& d, const DigestSet& intact_elsewhere, DigestSet& lost, const RepairOptions& opts,
                  RepairResult& res) {
  PackReader scanned(d.pack->path(), /*use_index_file=*/false, true, Follow::NoLinks);
  scanned.set_base_source([&lib](const Digest& base) { return lib.read_base_catalog(base); });
  // Opened again by its path: it must still be the file judged salvageable.
  const os::FileStat &was = d.pack->map().stat(), &now = scanned.map().stat();
  if (now.st_dev != was.st_dev || now.st_ino != was.st_ino || !salvage_allowed(lib, scanned))
    throw Error("pack '" + d.pack->path() + "' was replaced while repair was checking it; nothing was copied out of it (run repair again)");
  std::optional<AtomicFile> tmp;
  std::optional<PackWriter> w;
  if (!opts.dry_run) {
    tmp.emplace(lib.layout().temp_pack("repair-pack"), 0644);
    w.emplace(tmp->fd(), tmp->temp_path(), scanned.level());
  }
  DigestSet salvaged = salvage_entries(scanned, d, w ? &*w : nullptr, res);
  add_unsalvaged(d, scanned.index(), salvaged, intact_elsewhere, lost, res);
  if (!opts.dry_run) {
    PackResult pr = w->finish();
    tmp->commit_as(tmp->temp_path() + ".done");
    lib.publish_pack(tmp->final_path(), pr); // durable (pack, index, packs/) before the damaged one goes
    move_to_damaged(lib, *d.pack, res);
  }
  res.packs_rewritten++;
  for (auto& dg : salvaged) lost.erase(dg);
}

// Every catalog path that lost data, and the catalogs that cannot be restored.
void name_lost(Library& lib, const DigestSet& lost, RepairResult& res) {
  DigestMap<size_t> lost_at;
  for (auto& dg : lost) {
    lost_at.emplace(dg, res.lost.size());
    res.lost.push_back({to_hex(dg), {}});
  }
  for (auto& name : lib.catalog_names()) {
    std::optional<Digest> cd;
    try {
      cd = lib.catalog_digest(name);
    } catch (const Error&) {
      res.broken_catalogs.push_back(name);
      continue;
    }
    if (!cd) continue;
    if (lost.count(*cd)) {
      res.broken_catalogs.push_back(name);
      res.lost[lost_at.at(*cd)].paths.push_back(name + ": (the catalog itself)");
      continue;
    }
    Catalog c;
    try {
      c = lib.load_catalog_by_digest(*cd);
    } catch (const Error&) {
      res.broken_catalogs.push_back(name);
      continue;
    }
    bool broken = false;
    for (auto& n : c.nodes) {
      if (n.type != NodeType::File) continue;
      auto it = lost_at.find(n.digest);
      if (it != lost_at.end()) {
        res.lost[it->second].paths.push_back(name + ":" + n.path);
        broken = true;
      }
    }
    if (broken) res.broken_catalogs.push_back(name);
  }
}

// Junk under valid names in catalogs/, moved into LIB/quarantine/ (as it is:
// renamed, never followed or deleted), so that gc can run again.
void quarantine_junk_names(Library& lib, const RepairOptions& opts, RepairResult& res) {
  for (auto& name : lib.catalog_names()) {
    std::string why;
    if (lib.catalog_entry(name, &why) != Library::CatalogEntry::Junk) continue;
    const std::string from = lib.layout().catalog_path(name);
    std::string to = opts.dry_run ? lib.layout().quarantine_dir() + "/" : lib.quarantine_catalog(name);
    res.quarantined.push_back("'" + from + "' (" + why + ") -> '" + to + "'");
  }
}

// The multi-pack index, rewritten when it is unusable or wrong (after any
// pack was rewritten it is rewritten anyway).
void check_midx(Library& lib, const RepairOptions& opts, RepairResult& res) {
  lib.refresh();
  std::string stale, why = lib.midx_problem(&stale);
  if (why.empty() && stale.empty() && !res.packs_rewritten) return;
  res.midx_rebuilt = !why.empty() ? why : !stale.empty() ? stale : "packs were rewritten";
  if (!opts.dry_run) lib.write_midx();
}

} // namespace

PackRepair pack_repair_for(const VerifyReport& r) {
  bool index_bad = false;
  if (!r.bad_objects.empty()) return PackRepair::Rewrite;
  for (auto& p : r.problems) {
    if (!is_index_problem(p.kind)) return PackRepair::Rewrite;
    index_bad = true;
  }
  return index_bad ? PackRepair::RebuildIndex : PackRepair::None;
}

RepairResult repair(Library& lib, const RepairOptions& opts) {
  store::GcLock lock(lib.layout(), lib.shared());
  RepairResult res;
  if (!opts.dry_run) store::recover_condemned(lib.layout());
  quarantine_junk_names(lib, opts, res);
  lib.refresh();
  Survey survey = survey_packs(lib, opts, res);
  DigestSet lost;
  add_lost_with_left_alone(survey, lost);
  for (auto& d : survey.damaged) rewrite_pack(lib, d, survey.intact_elsewhere, lost, opts, res);
  // An object salvaged from one damaged pack is not lost because another lost it.
  lib.refresh();
  if (!opts.dry_run)
    for (auto it = lost.begin(); it != lost.end();) it = lib.locate_loaded(*it) ? lost.erase(it) : std::next(it);
  name_lost(lib, lost, res);
  check_midx(lib, opts, res);
  return res;
}

} // namespace hpak
