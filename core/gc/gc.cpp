#include "core/gc/gc.hpp"
#include "base/os/sys.hpp"

#include <algorithm>
#include <queue>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>
#include <optional>

#include "core/pack/pack_writer.hpp"
#include "formats/catalog_digests.hpp"
#include "core/store/condemn.hpp"
#include "core/store/dir_stream.hpp"
#include "core/store/lock.hpp"
#include "core/store/packs_listing.hpp"
#include "core/store/quarantine.hpp"
#include "core/store/workspace_roots.hpp"
#include "base/os/file.hpp"
#include "base/compress_rule.hpp"
#include "base/parallel.hpp"
#include "base/progress.hpp"

namespace hpak {

using namespace formats;

namespace {

std::string idx_of(const PackReader* p) { return index_path_for(p->path()); }

void step(const GcOptions& opts, const char* name) {
  if (opts.on_step) opts.on_step(name);
}

// The digest a name holds (nullopt: removed concurrently). Junk under a
// valid name (a directory, a link, a malformed file) may name any object, so
// nothing may go while it is there: gc stops; the operator moves it aside.
std::optional<Digest> named_digest(const Library& lib, const std::string& name) {
  try {
    return lib.catalog_digest(name);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + "; gc aborted, nothing deleted (an unreadable name may refer to any object): 'hpak repair " +
                lib.root() + "' moves it into '" + lib.layout().quarantine_dir() + "', as does 'hpak catalogs rm " + lib.root() + " " +
                name + "'");
  }
}

// The pack pages a read of [offset, offset + len) may have mapped, read-around
// included (the kernel maps up to 64 KiB around a faulting page), unmapped
// again: gc's passes over catalogs and entry headers keep the pack pages
// they hold (RssFile) bounded, not the library's size.
constexpr uint64_t kFaultAround = 64 << 10;
void release_pages(const PackReader& p, uint64_t offset, uint64_t len) {
  const uint64_t from = offset / kFaultAround * kFaultAround;
  const uint64_t to = (offset + len + kFaultAround - 1) / kFaultAround * kFaultAround;
  p.map().release(from, to - from);
}

// A mark worker's means of reading catalogs without mapping them:
// descriptors of the packs it read last (opened by name, and used only when
// each is the very file mapped: same device and inode) and buffers reused from
// catalog to catalog. Reading with pread instead of through the mapping
// spares faulting the pages in and unmapping them again (MADV_DONTNEED), whose
// TLB shootdowns stall the other workers.
struct CatalogReader {
  static constexpr size_t kOpenPacks = 16; // descriptors kept (the packs read last)
  std::vector<std::pair<const PackReader*, Fd>> open; // most recent last; an empty Fd: read through the mapping
  Bytes stored, raw;
};

// The descriptor of `p` for reader `cr` (-1: none, read through the mapping).
int pack_fd(CatalogReader& cr, const PackReader* p) {
  auto it = std::find_if(cr.open.begin(), cr.open.end(), [&](const auto& o) { return o.first == p; });
  if (it != cr.open.end()) return it->second.get();
  if (cr.open.size() == CatalogReader::kOpenPacks) cr.open.erase(cr.open.begin());
  cr.open.emplace_back(p, p->open_same_file(Follow::NoLinks));
  return cr.open.back().second.get();
}

// One copy of a catalog read and checked (PackReader::read_pread, or read
// through the mapping with the pages it mapped released after), and the
// digests of its files.
std::vector<Digest> catalog_copy_files(const PackReader& p, const IndexRecord& rec, const Digest& d, CatalogReader& cr) {
  const std::string where = p.path() + ": catalog " + to_hex(d).substr(0, 12);
  if (rec.member == kNoMember)
    if (int fd = pack_fd(cr, &p); fd >= 0) return catalog_file_digests(p.read_pread(fd, rec, cr.stored, cr.raw), where);
  struct Release { // the pages the read may have mapped, whatever it throws
    const PackReader& p;
    const IndexRecord& rec;
    ~Release() {
      IndexRecord r = p.complete_or_same(rec);
      release_pages(p, r.offset, kEntryHeaderSize + r.stored_len);
    }
  } release{p, rec};
  Bytes raw = p.read(rec, /*verify_digest=*/true);
  return catalog_file_digests(raw, where);
}

// The objects catalog `d` names, from the first intact copy (SHA-256
// checked) in a usable pack, as Library::load_catalog_by_digest picks it, read
// without decoding the catalog (formats/catalog_digests.hpp).
// (Whether any usable pack holds it is asked of the indexes only: Library::
// locate would read the entry's header through the mapping. Only when none
// does is Library::locate asked, for its rescan: a name published since the
// library was loaded names a catalog in a pack not loaded yet.)
std::vector<Digest> catalog_files(const Library& lib, const Digest& d, CatalogReader& cr) {
  std::string first_error = "no usable copy";
  for (int pass = 0; pass < 2; pass++) {
    bool held = false;
    for (const PackReader* p : lib.packs()) {
      auto idx = p->index().find(d);
      if (!idx || !lib.pack_usable(p)) continue;
      held = true;
      for (uint64_t i = *idx; i < p->index().count() && p->index().digest_at(i) == d; i++) {
        try {
          IndexRecord rec = p->index().record_at(i);
          if (rec.digest != d) continue; // an index rewritten under its mapping
          if (rec.raw_len > (1ull << 32)) throw Error(p->path() + ": catalog larger than 4 GiB");
          return catalog_copy_files(*p, rec, d, cr);
        } catch (const Error& e) {
          if (first_error == "no usable copy") first_error = e.what();
        }
      }
    }
    if (held) throw Error("catalog " + to_hex(d) + " is unreadable: " + first_error);
    if (pass == 0 && !lib.locate(d)) break; // rescans the packs (twice) before calling it missing
  }
  throw Error("catalog object " + to_hex(d) + " is missing from library '" + lib.root() + "'");
}

// The live set, and which catalogs' files were marked in it: a catalog can
// be live only as the base of another's mirror copy (its object kept, not its
// files) and be named later, when the re-mark must mark its files.
// `mirrors`: the live catalogs' copies stored against a base (each one's pack
// and base). A base is live only while such a copy stays where it is
// (bases_of_staying); a mirror in a pack gc rewrites is written whole
// instead (Repacker::mirror_whole), so a base no name needs goes.
struct LiveSet : FlatDigestSet {
  FlatDigestSet catalogs_marked;
  std::vector<Library::CatalogMirror> mirrors;

  // Adds to `into` the base of every mirror in a pack `stays` says stays as
  // it is; true if one was not there before.
  template <class Stays> bool bases_of_staying(Stays&& stays, FlatDigestSet& into) const {
    bool grew = false;
    for (const Library::CatalogMirror& m : mirrors)
      if (stays(m.pack)) grew |= into.insert(m.base);
    return grew;
  }
  // Whether pack `p` holds the base of a mirror.
  bool holds_a_base(const PackReader& p) const {
    for (const Library::CatalogMirror& m : mirrors)
      if (p.index().find(m.base)) return true;
    return false;
  }
};

void note_mirrors(const Library& lib, const Digest& d, LiveSet& live) {
  for (Library::CatalogMirror& m : lib.catalog_mirrors_of(d)) live.mirrors.push_back(std::move(m));
}

void mark_catalog(const Library& lib, const std::string& name, const Digest& d, FlatDigestSet& live, CatalogReader& cr) {
  std::vector<Digest> files;
  try {
    files = catalog_files(lib, d, cr);
  } catch (const Error& e) {
    throw Error("catalog '" + name + "' is unreadable (" + e.what() + "); gc aborted, nothing deleted (see 'hpak verify' and 'hpak repair')");
  }
  live.insert_all(files);
}

// Every digest the named catalogs need (catalog objects included). Throws if
// a catalog cannot be read: then nothing may be swept. The catalogs are
// read (catalog_files) on `threads` workers, each taking the next catalog
// and marking into a set of its own (merged at the end): reading them is
// most of a gc that has little to rewrite.
unsigned mark_threads(const GcOptions& opts) { return opts.threads ? opts.threads : default_threads(); }

void mark(const Library& lib, const std::vector<std::string>& names, LiveSet& live, unsigned threads, const Progress& progress) {
  std::vector<std::pair<const std::string*, Digest>> todo;
  for (auto& name : names) {
    auto d = named_digest(lib, name);
    if (!d) continue;
    // Its mirror copies (formats::Codec::ZstdBase), asked again at the
    // re-mark of a catalog marked before: an add may have published another
    // copy since, against another base.
    note_mirrors(lib, *d, live);
    live.insert(*d);
    if (live.catalogs_marked.insert(*d)) todo.push_back({&name, *d});
  }
  threads = std::max(1u, std::min<unsigned>(threads, unsigned(todo.size())));
  std::vector<FlatDigestSet> marked(threads);
  std::vector<CatalogReader> readers(threads);
  PassProgress pass(progress, "mark", todo.size());
  parallel_for(todo.size(), threads, 1, [&](size_t i, unsigned tid) {
    mark_catalog(lib, *todo[i].first, todo[i].second, marked[tid], readers[tid]);
    pass.tick(tid);
  });
  pass.finish();
  for (FlatDigestSet& m : marked) live.merge(std::move(m));
}

// The catalogs of writable workspaces (core/store/workspace_roots.hpp) are
// roots like names: a kept workspace shows and commits its base catalog by
// digest, whatever its name names now. A root whose workspace is known to be
// gone protects nothing, and is removed (not in a dry run) under the
// exclusive publish lock (`locked`: the re-mark holds it already; else it is
// taken for that), where no mount is between writing a workspace's state and
// its root: a workspace made again at the same path keeps its new root. Read
// again by the re-mark, under that lock: a mount writes its root under the
// shared lock, after reading the name.
void remove_gone_roots(const Library& lib, const std::string& lib_real) {
  for (const store::WorkspaceRoot& r : store::read_workspace_roots(lib.layout()))
    if (store::workspace_root_gone(r, lib_real)) os::unlink_path(r.file.c_str());
}

void mark_workspaces(const Library& lib, LiveSet& live, const GcOptions& opts, bool locked) {
  std::vector<store::WorkspaceRoot> found;
  try {
    found = store::read_workspace_roots(lib.layout());
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + "; gc aborted, nothing deleted (a workspace root may protect any catalog): remove it if no workspace needs it");
  }
  if (found.empty()) return;
  const std::string lib_real = real_path(lib.root());
  bool gone = false;
  for (const store::WorkspaceRoot& r : found) {
    if (store::workspace_root_gone(r, lib_real)) {
      gone = true;
      continue;
    }
    note_mirrors(lib, r.digest, live);
    live.insert(r.digest);
    if (!live.catalogs_marked.insert(r.digest)) continue;
    Catalog c;
    try {
      c = lib.load_catalog_by_digest(r.digest);
    } catch (const Error& e) {
      throw Error("the base catalog of workspace '" + r.workspace + "' (root '" + r.file + "') is unreadable (" + e.what() +
                  "); gc aborted, nothing deleted ('hpak umount --discard' of its view removes the root)");
    }
    for_each_file(c, [&](const Node& n) { live.insert(n.digest); });
  }
  if (!gone || opts.dry_run) return;
  if (locked) return remove_gone_roots(lib, lib_real);
  store::PublishLock publishing(lib.layout(), lib.shared(), /*exclusive=*/true);
  remove_gone_roots(lib, lib_real);
}

// Step 2: packs and indexes a killed gc left condemned are made visible again.
void recover_interrupted(Library& lib, const GcOptions& opts, GcResult& res) {
  if (!opts.dry_run && store::recover_condemned(lib.layout()) > 0) res.warnings.push_back("recovered indexes condemned by an interrupted gc");
  lib.refresh();
}

// --unused: drops the catalog names not restored for that long; returns the others.
std::vector<std::string> drop_unused(Library& lib, const GcOptions& opts, int64_t now, GcResult& res) {
  std::vector<std::string> kept_names;
  for (auto& name : lib.catalog_names()) {
    if (opts.unused_seconds >= 0 && now - lib.last_used(name) > opts.unused_seconds) {
      res.dropped_catalogs.push_back(name);
      if (!opts.dry_run) lib.remove_catalog(name, /*durable=*/false); // synced once, below
    } else {
      kept_names.push_back(name);
    }
  }
  // A dropped name must not come back after a power loss once its packs are gone.
  if (!opts.dry_run && !res.dropped_catalogs.empty()) sync_dir(lib.layout().catalogs_dir());
  return kept_names;
}

// Step 3: the live set, from the names that stay.
LiveSet roots(Library& lib, const GcOptions& opts, int64_t now, GcResult& res) {
  LiveSet live;
  mark(lib, drop_unused(lib, opts, now, res), live, mark_threads(opts), opts.progress);
  mark_workspaces(lib, live, opts, /*locked=*/false);
  return live;
}

// The headers of a pack's entries and blocks, read with pread(2) from a
// descriptor of the pack (no page of it mapped: faulting tens of thousands of
// pages in, one per header, and unmapping them cost more than the reads), or
// copied from the mapping when the file cannot be opened again.
class PackHeaders {
public:
  explicit PackHeaders(const PackReader& p) : p_(p), fd_(p.open_same_file(Follow::NoLinks)) {}
  const PackReader& pack() const { return p_; }
  // The `out.size()` bytes at `offset` (false: the pack ends before).
  bool read(uint64_t offset, std::span<uint8_t> out) const {
    const uint64_t size = p_.bytes().size();
    if (offset > size || size - offset < out.size()) return false;
    if (!fd_) {
      std::memcpy(out.data(), p_.bytes().data() + offset, out.size());
      return true;
    }
    // cut short or unreadable: counted as damaged
    return pread_full(fd_.get(), out, offset) == long(out.size());
  }
  bool mapped() const { return !fd_; }

private:
  const PackReader& p_;
  Fd fd_;
};

// PackReader::complete_or_same, from a header read by `h`.
IndexRecord completed(const PackHeaders& h, const IndexRecord& r) {
  if (h.pack().version() != kPackVersion2 || r.member != kNoMember || r.stored_len != 0 || r.stored_xxh != 0) return r;
  uint8_t b[kEntryHeaderSize];
  if (!h.read(r.offset, b)) return r;
  try {
    EntryHeader e = decode_entry_header(ByteSpan(b, sizeof b), h.pack().path(), r.offset);
    IndexRecord c = r;
    c.stored_len = e.stored_len;
    c.stored_xxh = e.stored_xxh;
    return c;
  } catch (const Corrupt&) {
    return r;
  }
}

// The share of its block a member takes: the block's bytes (header, table,
// stored payload) in proportion to its raw size. Members are described in
// pack order, so a block's members come together: its header is read once;
// a damaged header counts the member's raw bytes.
class BlockShares {
public:
  explicit BlockShares(const PackHeaders& h) : h_(h) {}
  uint64_t share(const IndexRecord& r) {
    if (!have_ || offset_ != r.offset) header_ = read_header(r.offset), offset_ = r.offset, have_ = true;
    if (header_.raw_len == 0) return r.raw_len + kBlockMemberSize;
    return uint64_t((unsigned __int128)block_item_size(header_) * r.raw_len / header_.raw_len);
  }

private:
  BlockHeader read_header(uint64_t offset) const {
    BlockHeader none;
    none.raw_len = 0;
    uint8_t b[kBlockHeaderSize];
    if (!h_.read(offset, b)) return none;
    try {
      return decode_block_header(ByteSpan(b, sizeof b), h_.pack().path(), offset);
    } catch (const Corrupt&) {
      return none;
    }
  }
  const PackHeaders& h_;
  BlockHeader header_{};
  uint64_t offset_ = 0;
  bool have_ = false;
};

// One object of a pack as the plan sees it: its share of the pack (every
// object: --min-garbage weighs the dead ones) and, when live, what copying
// it takes (an entry's stored size is in its header).
GcObject describe_object(const PackHeaders& h, const IndexRecord& rec, bool live, BlockShares& blocks) {
  GcObject o{rec.digest, 0, 0};
  if (rec.member != kNoMember) {
    o.share = blocks.share(rec);
    if (live) o.bytes = rec.raw_len + kBlockMemberSize; // v2 records leave stored sizes to the pack: raw bytes for block members
    return o;
  }
  o.share = completed(h, rec).stored_len + kEntryHeaderSize;
  if (live) o.bytes = o.share;
  return o;
}

// Describes the records of `order` (pack order: offset, record) into
// `described`: one worker's share of a pack. Read through the mapping, the
// pages read are unmapped a window at a time behind (release_pages).
void describe_range(const PackHeaders& h, const FlatDigestSet& live, const std::vector<std::pair<uint64_t, uint64_t>>& order,
                    std::vector<GcObject>& described) {
  const PackReader& p = h.pack();
  const IndexView& v = p.index();
  BlockShares blocks(h);
  constexpr uint64_t kWindow = 16 << 20;
  uint64_t window = order.empty() ? 0 : order.front().first / kFaultAround * kFaultAround;
  for (const auto& [offset, i] : order) {
    if (h.mapped() && offset >= window + kWindow) {
      release_pages(p, window, offset / kFaultAround * kFaultAround - window);
      window = offset / kFaultAround * kFaultAround;
    }
    described[i] = describe_object(h, v.record_at(i), live.count(v.digest_at(i)) != 0, blocks);
  }
  if (h.mapped() && !order.empty()) release_pages(p, window, order.back().first + kFaultAround - window);
}

// One visible pack as the plan sees it. Its records are cut into `threads`
// ranges of offsets (a large pack's), each sorted into pack order and
// described on a worker of its own (reading its own headers); the objects
// are then listed in index order.
GcPackInput describe_pack(const Library& lib, const PackReader* p, const FlatDigestSet& live, int64_t now, unsigned threads) {
  GcPackInput in;
  in.name = base_name(p->path());
  os::FileStat st;
  in.mtime = now;
  if (os::lstat_path(idx_of(p).c_str(), st) == 0) {
    in.mtime = st.st_mtim.tv_sec;
    in.size += uint64_t(st.st_size);
  }
  in.pack_bytes = p->bytes().size();
  in.size += in.pack_bytes;
  in.usable = lib.pack_usable(p);
  in.version = p->version();
  const IndexView& v = p->index();
  constexpr uint64_t kMinRange = 4096; // records: fewer are not worth a thread
  const size_t parts = size_t(std::max<uint64_t>(1, std::min<uint64_t>(threads, v.count() / kMinRange)));
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> ranges(parts); // (offset, record)
  const uint64_t width = in.pack_bytes / parts + 1;
  for (uint64_t i = 0; i < v.count(); i++) {
    const uint64_t offset = v.record_at(i).offset;
    ranges[std::min<uint64_t>(parts - 1, offset / width)].emplace_back(offset, i);
  }
  std::vector<GcObject> described(v.count());
  const PackHeaders headers(*p);
  parallel_for(parts, unsigned(parts), 1, [&](size_t part, unsigned) {
    std::sort(ranges[part].begin(), ranges[part].end());
    describe_range(headers, live, ranges[part], described);
  });
  // Each digest once: an index is sorted by digest (checked when it is
  // opened), so the copies of one object are next to each other.
  for (uint64_t i = 0; i < v.count(); i++)
    if (i == 0 || v.digest_at(i) != v.digest_at(i - 1)) in.objects.push_back(described[i]);
  return in;
}

std::vector<GcPackInput> describe_packs(const Library& lib, const std::vector<const PackReader*>& packs, const FlatDigestSet& live,
                                        int64_t now, unsigned threads, const Progress& progress) {
  std::vector<GcPackInput> out;
  for (const PackReader* p : packs) {
    report(progress, "scan", out.size(), packs.size());
    out.push_back(describe_pack(lib, p, live, now, threads));
  }
  report(progress, "scan", out.size(), packs.size());
  return out;
}

// Every distinct object the visible packs hold (the plan's description:
// each pack's digests once): what objects_kept and objects_dropped count from.
FlatDigestSet objects_held(const std::vector<GcPackInput>& described) {
  size_t most = 0;
  for (const GcPackInput& p : described) most += p.objects.size();
  FlatDigestSet held(most);
  for (const GcPackInput& p : described)
    for (const GcObject& o : p.objects) held.insert(o.digest);
  return held;
}

// objects_kept: the objects of `held` (the library before) still held by
// `after` or by the records of a new pack; objects_dropped: the others.
// Each object counts once, however many packs hold it. The packs' indexes
// (sorted by digest: IndexView checks it) and the new pack's records, sorted,
// are walked merged, each digest once: no set of every object is built (a
// second set of the 203,000 digests, and its growth, cost the dry run
// 28 MiB of heap at K = 1,000, bench/RESULTS.md).
void count_objects(const FlatDigestSet& held, const std::vector<const IndexView*>& after, const std::vector<IndexRecord>& more, GcResult& res) {
  std::vector<Digest> extra;
  extra.reserve(more.size());
  for (const IndexRecord& r : more) extra.push_back(r.digest);
  std::sort(extra.begin(), extra.end());
  const size_t lists = after.size() + 1; // the last one: `extra`
  auto size_of = [&](size_t l) { return l < after.size() ? after[l]->count() : uint64_t(extra.size()); };
  auto digest_of = [&](size_t l, uint64_t i) { return l < after.size() ? after[l]->digest_at(i) : extra[i]; };
  using Head = std::pair<Digest, size_t>; // the next digest of list .second
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  std::vector<uint64_t> at(lists, 0);
  for (size_t l = 0; l < lists; l++)
    if (size_of(l) > 0) heads.emplace(digest_of(l, 0), l);
  uint64_t kept = 0;
  std::optional<Digest> last;
  while (!heads.empty()) {
    const auto [d, l] = heads.top();
    heads.pop();
    if (d != last) kept += held.count(d), last = d;
    if (++at[l] < size_of(l)) heads.emplace(digest_of(l, at[l]), l);
  }
  res.objects_kept = kept;
  res.objects_dropped = held.size() - kept;
}

// Step 5's copy: the objects the plan needs, into one writer, in pack then
// offset order: verbatim (stored checksum checked) where an entry or a whole
// block can go as it is, else stored again (the live members of a block
// holding a dead one), each item prepared ahead on worker threads.
class Repacker {
  // A source's records in offset order, a block's members consecutive
  // (member order); an item is one entry, or one block's members.
  struct Item {
    size_t first = 0, count = 0;
    std::span<const IndexRecord> recs(const std::vector<IndexRecord>& all) const { return {all.data() + first, count}; }
  };
  struct Member {
    IndexRecord rec;
    Bytes raw;         // decoded, SHA-256 checked
    std::string error; // or why not
  };
  struct Prepared {
    PackReader::Block block; // loaded and checked (its spans into the source, or into `checked`)
    Bytes checked;           // another user's pack: the block copied out and checked there
    bool whole = false;      // every member live: copied verbatim unless the new pack has one
    std::vector<Member> members; // else: the live ones, to be stored again
    std::string error;       // the block could not be loaded
  };

public:
  Repacker(PackWriter& w, const GcPlan& plan, const FlatDigestSet& live, GcResult& res, const Progress& progress, uint64_t total,
           unsigned threads)
      : w_(w), plan_(plan), live_(live), res_(res), progress_(progress), total_(total), threads_(threads) {}

  // Copies what the plan needs of `src`; false when a damaged object of it
  // was left behind. Its items (an entry, or a v2 block: its members are
  // consecutive here) are prepared on `threads_` workers, a few ahead (a
  // block loaded, the members it stores again decoded and SHA-256 checked),
  // and copied on this thread in offset order.
  bool copy_pack(const PackReader& src) {
    bool damaged = false;
    const std::vector<IndexRecord> recs = records_by_offset(src);
    const std::vector<Item> items = items_of(recs);
    std::vector<Prepared> ready(items.size());
    uint64_t window = 0; // the source's pages behind the copy are unmapped a window at a time (release_pages)
    parallel_ordered(
        items.size(), threads_, InFlight{16}, [](size_t) { return uint64_t(1); },
        [&](size_t i) { ready[i] = prepare(src, items[i].recs(recs)); },
        [&](size_t i) {
          const uint64_t offset = recs[items[i].first].offset;
          if (offset >= window + (16u << 20)) {
            const uint64_t to = offset / kFaultAround * kFaultAround;
            if (to > window + kFaultAround) release_pages(src, window, to - kFaultAround - window), window = to - kFaultAround;
          }
          const uint64_t before = done_;
          done_ += items[i].count;
          if (before / 4096 != done_ / 4096) report(progress_, "repack", done_, total_);
          std::span<const IndexRecord> group = items[i].recs(recs);
          if (group[0].member == kNoMember) copy_entry(src, group[0], damaged);
          else copy_block(src, group, std::move(ready[i]), damaged);
          ready[i] = Prepared();
        });
    release_pages(src, 0, src.bytes().size());
    return !damaged;
  }

  void report_done() { report(progress_, "repack", total_, total_); }

private:
  static std::vector<IndexRecord> records_by_offset(const PackReader& src) {
    const IndexView& v = src.index();
    std::vector<IndexRecord> recs;
    recs.reserve(v.count());
    for (uint64_t i = 0; i < v.count(); i++) recs.push_back(v.record_at(i));
    std::sort(recs.begin(), recs.end(), [](auto& a, auto& b) { return a.offset != b.offset ? a.offset < b.offset : a.member < b.member; });
    return recs;
  }

  static std::vector<Item> items_of(const std::vector<IndexRecord>& recs) {
    std::vector<Item> items;
    for (size_t k = 0; k < recs.size();) {
      size_t e = k + 1;
      if (recs[k].member != kNoMember)
        while (e < recs.size() && recs[e].offset == recs[k].offset) e++;
      items.push_back({k, e - k});
      k = e;
    }
    return items;
  }

  bool wanted(const Digest& d) const { return plan_.to_copy(d, live_); }
  // copied_objects counts distinct objects (the writer refuses a digest
  // twice, mirror copies aside); copied_bytes every stored byte copied.
  void counted(uint64_t bytes, uint64_t objects = 1) {
    res_.copied_objects += objects;
    res_.copied_bytes += bytes;
  }
  // A catalog copy stored against a base is copied only with its base live:
  // a base is live while a mirror against it stays where it is
  // (LiveSet::bases_of_staying); else the copy is written whole
  // (mirror_whole), and so is a copy that appeared after the mark, against
  // another base. With no whole copy to write, its pack is kept (pinned).
  bool base_live(const PackReader& src, const IndexRecord& r, bool& damaged) {
    try {
      return live_.count(src.base_named(src.complete(r)));
    } catch (const Error& e) {
      damaged_entry("damaged entry not copied: ", e, damaged);
      return false;
    }
  }
  // In place of a mirror whose base is not live: a whole copy of the same
  // catalog from `src` again (the mirror, or the first copy when the mirror
  // comes first).
  void mirror_whole(const PackReader& src, const Digest& d, bool& damaged) {
    const IndexView& v = src.index();
    auto at = v.find(d);
    for (uint64_t i = at ? *at : v.count(); i < v.count() && v.digest_at(i) == d; i++) {
      IndexRecord w = v.record_at(i);
      if (w.kind != Kind::Catalog || w.codec == Codec::ZstdBase) continue;
      Bytes checked;
      try {
        w = src.complete(w);
        ByteSpan stored = src.checks_every_read() ? ByteSpan(checked = src.stored_copy_checked(w)) : src.checked_stored(w);
        const bool mirror = w_.contains(d);
        w_.append_copy(w, stored, mirror);
        if (!checked.empty()) w_.wait_hashed();
        counted(w.stored_len, mirror ? 0 : 1);
        return;
      } catch (const Error& e) {
        damaged_entry("damaged entry not copied: ", e, damaged);
      }
    }
  }
  // A damaged copy is never spread; if no intact copy is written by the
  // end, its pack is kept (pinned_by_damage).
  void damaged_entry(const char* what, const Error& e, bool& damaged) { damaged_entry(what, std::string(e.what()), damaged); }
  void damaged_entry(const char* what, const std::string& why, bool& damaged) {
    damaged = true;
    res_.warnings.push_back(what + why);
  }

  void copy_entry(const PackReader& src, IndexRecord r, bool& damaged) {
    if (!wanted(r.digest)) return;
    bool mirror = w_.contains(r.digest);
    if (mirror && r.kind != Kind::Catalog) return;
    if (r.codec == Codec::ZstdBase && !base_live(src, r, damaged)) {
      mirror_whole(src, r.digest, damaged); // keep two copies
      return;
    }
    if (r.codec == Codec::ZstdDict) {
      copy_member(src, r, damaged); // its dictionary stays behind: stored again without one
      return;
    }
    ByteSpan stored;
    Bytes checked; // another user's pack: a private copy, its SHA-256 checked (core/pack/pack_trust.hpp)
    try {
      r = src.complete(r);
      if (w_.is_small(r.raw_len) && r.kind == Kind::Blob) {
        // A v1 entry going into a v2 pack: its block (the one recompression).
        w_.append_small(r.digest, src.read(r));
        counted(r.raw_len);
        return;
      }
      stored = src.checks_every_read() ? ByteSpan(checked = src.stored_copy_checked(r)) : src.checked_stored(r);
    } catch (const Error& e) {
      damaged_entry("damaged entry not copied: ", e, damaged);
      return;
    }
    w_.append_copy(r, stored, mirror);
    if (!checked.empty()) w_.wait_hashed(); // before `checked` goes
    counted(r.stored_len, mirror ? 0 : 1); // a catalog's mirror copy is not another object
  }

  // What a worker prepares of a v2 block (`recs`, all at one offset), by the
  // rule of formats/pack_format.hpp: the whole block, loaded and checked, when
  // every member is live (the copy then takes it verbatim unless the new pack
  // has one of them already); otherwise its live members, each decoded and
  // its SHA-256 checked, to be stored again in the writer's own blocks (gc's
  // recompression: a pack rewritten keeps none of its garbage, as the plan
  // counted). A v1 writer takes them as single entries. A block made with a
  // dictionary (pack -o) is never copied verbatim: gc's packs carry no
  // dictionary, so its live members are stored again.
  Prepared prepare(const PackReader& src, std::span<const IndexRecord> recs) const {
    Prepared p;
    if (recs[0].member == kNoMember) return p;
    bool any_wanted = false;
    for (auto& r : recs) any_wanted |= wanted(r.digest);
    if (!any_wanted) return p;
    try {
      p.block = src.checks_every_read() ? src.block_copy_checked(recs[0].offset, p.checked) : src.checked_block(recs[0].offset);
    } catch (const Error& e) {
      p.error = e.what();
      return p;
    }
    uint64_t live_raw = 0;
    bool clash = !named_by_records(p.block, recs); // a member the index does not name: copied one by one
    for (auto& m : p.block.members) {
      if (wanted(m.digest)) live_raw += m.raw_len;
      clash |= plan_.kept_objects.count(m.digest) != 0;
    }
    p.whole = w_.version() >= kPackVersion2 && !clash && live_raw == p.block.header.raw_len && p.block.header.codec != Codec::ZstdDict;
    if (p.whole) return p;
    for (auto& r : recs)
      if (wanted(r.digest)) p.members.push_back(read_member(src, r));
    return p;
  }

  // The members of one v2 block, as prepared: the whole block verbatim when
  // that was prepared and none of its members is in the new pack yet;
  // otherwise its live members the new pack lacks, stored again.
  void copy_block(const PackReader& src, std::span<const IndexRecord> recs, Prepared p, bool& damaged) {
    bool any_wanted = false;
    for (auto& r : recs) any_wanted |= wanted(r.digest) && !w_.contains(r.digest);
    if (!any_wanted) return;
    if (!p.error.empty()) {
      damaged_entry("damaged block not copied: ", p.error, damaged);
      return;
    }
    if (p.whole) {
      bool clash = false;
      for (auto& m : p.block.members) clash |= w_.contains(m.digest);
      if (!clash) {
        w_.append_block_copy(p.block.header, p.block.members, p.block.table, p.block.payload);
        if (!p.checked.empty()) w_.wait_hashed();
        counted(block_item_size(p.block.header), p.block.members.size());
        return;
      }
      for (auto& r : recs)
        if (wanted(r.digest) && !w_.contains(r.digest)) p.members.push_back(read_member(src, r));
    }
    for (auto& m : p.members)
      if (!w_.contains(m.rec.digest)) store_member(src, m, damaged);
  }

  // A lengths-only block's members named by the index records at its offset
  // (block_copy_checked named them already, by hashing). False if one is
  // left unnamed or two share a name: then it is not copied whole.
  static bool named_by_records(PackReader::Block& bl, std::span<const IndexRecord> recs) {
    if (bl.header.named()) return true;
    for (auto& r : recs)
      if (r.member < bl.members.size() && bl.members[r.member].digest == Digest{} && bl.members[r.member].raw_len == r.raw_len)
        bl.members[r.member].digest = r.digest;
    for (auto& m : bl.members)
      if (m.digest == Digest{}) return false;
    return distinct_names(bl.members);
  }

  // A live object of a block (or one compressed with a dictionary), decoded
  // and its SHA-256 checked; what failed is kept as the reason.
  static Member read_member(const PackReader& src, const IndexRecord& r) {
    Member m{r, {}, {}};
    try {
      m.raw = src.read(r);
    } catch (const Error& e) {
      m.error = e.what();
    }
    return m;
  }

  void store_member(const PackReader& src, const Member& m, bool& damaged) {
    if (!m.error.empty()) {
      damaged_entry("damaged entry not copied: ", m.error, damaged);
      return;
    }
    if (w_.is_small(m.raw.size())) {
      w_.append_small(m.rec.digest, m.raw);
    } else {
      Bytes frame;
      bool zstd = compress_if_smaller(m.raw, src.level(), frame);
      w_.append(Kind::Blob, zstd ? Codec::Zstd : Codec::Raw, m.rec.digest, m.raw.size(), zstd ? frame : m.raw);
      w_.wait_hashed(); // written and hashed before `frame` (or the member's bytes) go: gc's spans must outlive the writer
    }
    counted(m.raw.size());
  }

  void copy_member(const PackReader& src, const IndexRecord& r, bool& damaged) { store_member(src, read_member(src, r), damaged); }

  PackWriter& w_;
  const GcPlan& plan_;
  const FlatDigestSet& live_;
  GcResult& res_;
  const Progress& progress_;
  uint64_t total_, done_ = 0;
  unsigned threads_;
};

// A source that left a damaged object behind is kept (pinned) only when it
// holds the only copy of a live object: one with an intact copy in the new
// pack or in a pack that stays does not pin it.
bool pinned_by_damage(const PackReader& src, const std::string& name, const GcPlan& plan, const FlatDigestSet& live,
                      const PackWriter& w, GcResult& res) {
  const IndexView& v = src.index();
  bool pinned = false;
  for (uint64_t i = 0; i < v.count(); i++) {
    Digest d = v.digest_at(i);
    if (plan.to_copy(d, live) && !w.contains(d)) pinned = true;
  }
  if (pinned) res.warnings.push_back("pack '" + name + "' kept: it holds the only (damaged) copy of a live object; run 'hpak repair'");
  return pinned;
}

// What step 5 left for step 6.
struct Repacked {
  std::string new_name;     // of the new pack ("" if nothing was copied)
  std::vector<bool> pinned; // per plan.sources: kept for a damaged live object
  // A dry run's new pack: its bytes with its index, and its records.
  uint64_t new_bytes = 0;
  std::vector<IndexRecord> records;
};

// Copies the live objects of the plan's sources into `w`; returns, per
// source, whether it is pinned by a damaged live object.
std::vector<bool> copy_sources(PackWriter& w, const std::vector<const PackReader*>& packs, const GcPlan& plan, const FlatDigestSet& live,
                               const GcOptions& opts, GcResult& res) {
  const unsigned threads = opts.threads ? opts.threads : default_threads();
  w.hash_in_background(/*spans_outlive_writer=*/true); // copied spans point into the mapped sources, alive until finish()
  w.compress_in_background(threads);                   // the blocks of objects stored again
  uint64_t total = 0;
  for (size_t i : plan.sources) total += packs[i]->index().count();
  w.reserve(std::min<uint64_t>(total, plan.objects_kept + 64));
  Repacker copier(w, plan, live, res, opts.progress, total, threads);
  std::vector<bool> damaged;
  for (size_t i : plan.sources) damaged.push_back(!copier.copy_pack(*packs[i]));
  copier.report_done();
  std::vector<bool> pinned;
  for (size_t k = 0; k < plan.sources.size(); k++) {
    size_t i = plan.sources[k];
    pinned.push_back(damaged[k] && pinned_by_damage(*packs[i], plan.packs[i].pack, plan, live, w, res));
  }
  return pinned;
}

// Copies the live objects of the plan's sources into one new pack, published
// (pack, index, packs/ durable) before anything is condemned.
Repacked write_new_pack(Library& lib, const std::vector<const PackReader*>& packs, const GcPlan& plan, const FlatDigestSet& live,
                        const GcOptions& opts, GcResult& res) {
  Repacked out;
  const uint64_t copied_before = res.copied_objects;
  AtomicFile tmp(lib.tmp_dir() + "/gc-pack", 0644);
  PackWriter w(tmp.fd(), tmp.temp_path(), packs[plan.sources[0]]->level());
  out.pinned = copy_sources(w, packs, plan, live, opts, res);
  if (res.copied_objects > copied_before) {
    PackResult written = w.finish();
    tmp.commit_as(tmp.temp_path() + ".done");
    out.new_name = lib.publish_pack(tmp.final_path(), written); // durable: pack, index, packs/ before any condemn
  }
  return out;
}

// A dry run's step 5: the same copy (every entry read and checked) into a
// writer whose bytes go to /dev/null, so the new pack's size, name and
// objects are what the real run's would be; its index is encoded, not written.
Repacked rehearse_new_pack(const Library& lib, const std::vector<const PackReader*>& packs, const GcPlan& plan, const FlatDigestSet& live,
                           const GcOptions& opts, GcResult& res) {
  Repacked out;
  const uint64_t copied_before = res.copied_objects;
  Fd sink(os::open_path("/dev/null", O_WRONLY | O_CLOEXEC));
  if (!sink) throw Error(std::string("gc --dry-run: cannot open /dev/null: ") + strerror(errno));
  PackWriter w(sink.get(), "/dev/null (gc --dry-run)", packs[plan.sources[0]]->level());
  out.pinned = copy_sources(w, packs, plan, live, opts, res);
  if (res.copied_objects > copied_before) {
    PackResult r = w.finish();
    out.new_name = base_name(lib.layout().pack_path(r.file_sum));
    out.new_bytes = r.size + encode_index(r.records, r.size, r.pack_sum, r.index_version()).size();
    out.records = std::move(r.records);
  }
  return out;
}

// Step 5, timed (the temp file and the writer are gone when it returns);
// in a dry run, into /dev/null.
Repacked repack(Library& lib, const std::vector<const PackReader*>& packs, const GcPlan& plan, const FlatDigestSet& live,
                const GcOptions& opts, GcResult& res) {
  auto t0 = std::chrono::steady_clock::now();
  Repacked out = opts.dry_run ? rehearse_new_pack(lib, packs, plan, live, opts, res) : write_new_pack(lib, packs, plan, live, opts, res);
  res.copy_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

// Every object of a visible pack whose name is not in `superseded`.
FlatDigestSet objects_outside(const Library& lib, const std::set<std::string>& superseded) {
  FlatDigestSet safe;
  for (const PackReader* p : lib.packs()) {
    if (superseded.count(base_name(p->path()))) continue;
    const IndexView& v = p->index();
    for (uint64_t i = 0; i < v.count(); i++) safe.insert(v.digest_at(i));
  }
  return safe;
}

// The sources condemn keeps: pinned, the new pack itself, and each holding
// an object a name needs that no pack which stays holds (a catalog published
// during gc, or the base of a mirror in a pack kept). A pack kept keeps its
// mirrors' bases live: until no pack is added.
std::vector<bool> kept_sources(const std::vector<const PackReader*>& packs, const GcPlan& plan, const Repacked& repacked,
                               const LiveSet& live, FlatDigestSet& bases, FlatDigestSet& safe, GcResult& res) {
  std::vector<bool> keep(plan.sources.size());
  for (size_t k = 0; k < keep.size(); k++) keep[k] = repacked.pinned[k] || plan.packs[plan.sources[k]].pack == repacked.new_name;
  for (bool added = true; added;) {
    added = false;
    for (size_t k = 0; k < keep.size(); k++) {
      if (keep[k]) continue;
      const GcPackPlan& s = plan.packs[plan.sources[k]];
      const IndexView& v = packs[plan.sources[k]]->index();
      bool needed = false;
      for (uint64_t i = 0; i < v.count() && !needed; i++) {
        const Digest& d = v.digest_at(i);
        needed = (live.count(d) || bases.count(d)) && !safe.count(d);
      }
      if (!needed) continue;
      res.warnings.push_back("pack '" + s.pack + "' kept: it holds the only copy of an object a catalog needs (published during gc, or the base of a copy kept)");
      for (uint64_t i = 0; i < v.count(); i++) safe.insert(v.digest_at(i));
      live.bases_of_staying([&](const std::string& pack) { return pack == s.pack; }, bases);
      keep[k] = added = true;
    }
  }
  return keep;
}

// Step 6: re-mark and condemn under the exclusive publish lock. No add is
// then between checking its objects and setting its name, so the names read
// here are every name whose objects must stay visible: a superseded pack
// holding the only copy of an object one of them needs is kept. An add that
// sets its name after this section checks its objects after it, finds a
// condemned pack's objects gone, and writes them again. Condemning renames
// the index, then the pack, to `.condemned` names, so a writer that publishes
// an identical pack (same content, same name) afterwards creates a new file,
// which gc never deletes. Returns the packs condemned.
std::vector<const PackReader*> condemn(Library& lib, const std::vector<const PackReader*>& packs, const GcPlan& plan,
                                       const Repacked& repacked, LiveSet& live, const GcOptions& opts, GcResult& res) {
  std::vector<const PackReader*> out;
  store::PublishLock publishing(lib.layout(), lib.shared(), /*exclusive=*/true);
  lib.refresh();
  mark(lib, lib.catalog_names(), live, mark_threads(opts), opts.progress); // the first mark's objects stay marked: cheap, conservative
  mark_workspaces(lib, live, opts, /*locked=*/true);
  // Every removal the two marks saw (a `catalogs rm`, an older hpak's, not
  // yet synced) is made durable before the objects it freed are condemned:
  // a power loss must not bring back a name whose objects are gone.
  sync_dir(lib.layout().catalogs_dir());
  std::set<std::string> superseded, pinned;
  for (size_t k = 0; k < plan.sources.size(); k++) {
    const std::string& name = plan.packs[plan.sources[k]].pack;
    if (name == repacked.new_name) continue; // (our output may be identical to a source)
    superseded.insert(name);
    if (repacked.pinned[k]) pinned.insert(name);
  }
  FlatDigestSet bases; // of the mirrors that stay: live for this step only
  live.bases_of_staying([&](const std::string& pack) { return !superseded.count(pack) || pinned.count(pack); }, bases);
  FlatDigestSet safe = objects_outside(lib, superseded); // in a visible pack this gc does not supersede
  std::vector<bool> keep = kept_sources(packs, plan, repacked, live, bases, safe, res);
  for (size_t k = 0; k < plan.sources.size(); k++) {
    const PackReader* p = packs[plan.sources[k]];
    if (!keep[k] && store::condemn_pack(p->path())) out.push_back(p);
  }
  return out;
}

// After the publish lock is released: gc deletes only `.condemned` names,
// then unmaps them (their space is freed only then: a full disk needs it for
// what comes next). The readers are gone afterwards.
void delete_condemned(Library& lib, const std::vector<const PackReader*>& packs) {
  for (const PackReader* p : packs) store::delete_condemned(p->path());
  lib.unmap_gone(packs);
}

// Step 7: the midx over the packs that remain (a layer over the new packs
// and over those whose layer named a pack now gone; the other layers are
// kept: Library::update_midx_or_warn), and their count, size and objects.
// The midx is disposable: one that cannot be written (a full disk) is a
// warning.
void rebuild_midx(Library& lib, FlatDigestSet&& held, GcResult& res) {
  lib.update_midx_or_warn(res.warnings);
  lib.refresh();
  res.packs_after = 0;
  std::vector<const IndexView*> after;
  for (const PackReader* p : lib.packs()) {
    res.packs_after++;
    os::FileStat st;
    res.bytes_after += p->bytes().size();
    if (os::lstat_path(idx_of(p).c_str(), st) == 0) res.bytes_after += uint64_t(st.st_size);
    after.push_back(&p->index());
  }
  count_objects(std::move(held), after, {}, res);
}

// A leftover (temp file, pack without index) younger than this may belong to
// an add in progress, whatever --grace says: removing it fails that add.
// Unless its writer is known to be gone (see sweep_leftovers).
constexpr int64_t kLeftoverMinAge = 3600;

bool has_index(const std::string& pack) {
  return path_exists(index_path_for(pack)) || path_exists(store::condemned_path(index_path_for(pack)));
}

// Orphan packs, condemned under the exclusive publish lock and checked again:
// one whose index appeared meanwhile is put back. Deleted after the lock is
// released; counted in tmp_removed.
void remove_orphans(const Library& lib, const std::vector<std::string>& orphans, const GcOptions& opts, GcResult& res) {
  std::vector<std::string> condemned_orphans;
  {
    store::PublishLock publishing(lib.layout(), lib.shared(), /*exclusive=*/true);
    for (auto& p : orphans) {
      if (has_index(p) || !store::condemn_orphan(p)) continue;
      step(opts, "orphan-condemned");
      if (has_index(p)) { // published between the check and the rename: a pack again
        try {
          store::uncondemn_orphan(p);
        } catch (const Error& e) {
          res.warnings.push_back(e.what());
        }
        continue;
      }
      condemned_orphans.push_back(p);
    }
  }
  for (auto& p : condemned_orphans) {
    os::unlink_path(store::condemned_path(p).c_str());
    res.tmp_removed++;
  }
}

// Step 8, sweep: leftovers of writers (or gcs) that died long ago: temp
// files, and packs whose index was never published (invisible to everyone,
// so unreferenced). An orphan pack is removed like a superseded one (step 6),
// under the exclusive publish lock: condemned (renamed to `.condemned`), then
// checked again, and put back if its index appeared meanwhile — a writer
// re-adding an identical pack (same content, same name) finds the orphan
// (link: EEXIST), publishes its index and sets a name on it. A writer whose
// index comes after the condemn checks its objects under the shared lock,
// finds the pack gone and writes them again. Only `.condemned` names are
// deleted, after the lock is released.
// A leftover goes when it is older than the grace period and an hour, or at
// once when its writer is known to be gone: a temp file whose name records a
// process of this host that no longer exists and whose flock nobody holds
// (base/os/file.hpp, AtomicFile); an orphan pack whose flock nobody holds
// (its writer holds the lock of the temp file it linked in until its index is
// published).
void sweep_leftovers(const Library& lib, const GcOptions& opts, int64_t now, GcResult& res) {
  auto old_enough = [&](const std::string& p) {
    os::FileStat st;
    return os::lstat_path(p.c_str(), st) == 0 && now - st.st_mtim.tv_sec > std::max<int64_t>(opts.grace_seconds, kLeftoverMinAge);
  };
  auto stale_temp = [&](const std::string& dir, const std::string& name) {
    return old_enough(dir + "/" + name) || store::temp_writer_gone(dir, name);
  };
  auto is_regular = [](const std::string& p) { // a symlink or FIFO planted in packs/ is not ours
    os::FileStat st;
    return os::lstat_path(p.c_str(), st) == 0 && S_ISREG(st.st_mode);
  };
  auto remove_leftover = [&](const std::string& p) {
    if (!opts.dry_run) os::unlink_path(p.c_str());
    res.tmp_removed++;
  };
  const store::Layout& layout = lib.layout();
  for (auto& name : store::list_dir(layout.tmp_dir()))
    if (stale_temp(layout.tmp_dir(), name)) remove_leftover(layout.tmp_dir() + "/" + name);
  const store::PacksListing packs = store::list_packs(layout);
  for (auto& name : packs.temps)
    if (stale_temp(layout.packs_dir(), name)) remove_leftover(layout.packs_dir() + "/" + name);
  for (const std::string& dir : {layout.catalogs_dir(), layout.used_dir(), layout.workspaces_dir()})
    for (auto& name : dir == layout.workspaces_dir() && !path_exists(dir) ? std::vector<std::string>{} : store::list_dir(dir))
      if (store::is_temp_name(name) && stale_temp(dir, name)) remove_leftover(dir + "/" + name);
  std::vector<std::string> orphans;
  for (const Digest& d : packs.pack_files) {
    const std::string p = layout.pack_path(d);
    if (is_regular(p) && !has_index(p) && (old_enough(p) || unlocked_regular_file(p))) orphans.push_back(p);
  }
  step(opts, "sweep");
  if (orphans.empty()) return;
  if (opts.dry_run) res.tmp_removed += orphans.size();
  else remove_orphans(lib, orphans, opts, res);
}

// ---- carrying the plan out, dead packs first (a full disk, issue 28) ----

// What the file system of `dir` can still take from this process (root may
// use the blocks reserved for it), or nullopt when it cannot be told.
std::optional<uint64_t> free_space(const std::string& dir) {
  Fd fd(os::open_path(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  os::FsSpace v;
  if (!fd || !os::fs_free_space(fd.get(), v)) return std::nullopt;
  return (os::euid() == 0 ? v.blocks_free_root : v.blocks_free) * v.block_size;
}

// Room the new pack of `sources` takes, generously: their live objects as
// stored, an entry header and an index record each, block and file slack.
uint64_t space_for(const GcPlan& plan, const std::vector<size_t>& sources) {
  uint64_t need = 64 << 10;
  for (size_t i : sources) need += plan.packs[i].live_bytes + plan.packs[i].live_bytes / 64 + 128 * plan.packs[i].live_objects;
  return need;
}

// False (and the figures recorded) when the file system has less free space
// than the new pack of `sources` takes: writing it would only fill the disk.
bool room_for(const Library& lib, const GcPlan& plan, const std::vector<size_t>& sources, GcResult& res) {
  std::optional<uint64_t> room = free_space(lib.tmp_dir());
  uint64_t need = space_for(plan, sources);
  if (!room || need <= *room) return true;
  res.space_needed = need;
  res.space_free = *room;
  return false;
}

// A pack with no live object goes before any copy (collect_dead), unless it
// holds the base of a mirror: then with the packs rewritten, once their
// mirrors are written whole (were one left for lack of space, its base stays).
bool dead_first(const GcPlan& plan, size_t i) {
  return plan.packs[i].action == GcAction::Delete && !(i < plan.delete_last.size() && plan.delete_last[i]);
}

// Step 6 for packs with no live object: nothing to copy, so they go before
// any new pack is written (on a full disk their space may be the room it
// needs), under the same re-mark and condemn; a dead pack holding the only
// copy of an object a name set meanwhile needs is kept.
void collect_dead(Library& lib, const std::vector<const PackReader*>& packs, const GcPlan& plan, LiveSet& live, const GcOptions& opts,
                  GcResult& res) {
  GcPlan dead;
  dead.packs = plan.packs;
  for (size_t i : plan.sources)
    if (dead_first(plan, i)) dead.sources.push_back(i);
  if (dead.sources.empty()) return;
  Repacked none;
  none.pinned.assign(dead.sources.size(), false);
  std::vector<const PackReader*> condemned_packs = condemn(lib, packs, dead, none, live, opts, res);
  step(opts, "dead-condemned");
  delete_condemned(lib, condemned_packs);
  step(opts, "dead-deleted");
}

// Steps 5 and 6 for `part` of the plan (its sources; the objects of packs
// outside it are in its kept_objects): copy, publish, re-mark and condemn,
// delete. False, with nothing changed, when the new pack could not be
// written for lack of space.
bool rewrite_part(Library& lib, const std::vector<const PackReader*>& packs, const GcPlan& part, LiveSet& live, const GcOptions& opts,
                  GcResult& res) {
  const uint64_t objects = res.copied_objects, bytes = res.copied_bytes;
  const size_t warnings = res.warnings.size();
  Repacked repacked;
  try {
    repacked = repack(lib, packs, part, live, opts, res);
  } catch (const Error& e) {
    if (!is_out_of_space(e)) throw;
    res.copied_objects = objects; // the temp file is gone, and with it what was copied
    res.copied_bytes = bytes;
    res.warnings.resize(warnings);
    res.space_needed = space_for(part, part.sources);
    res.space_free = free_space(lib.tmp_dir()).value_or(0);
    res.space_error = e.what();
    return false;
  }
  step(opts, "published");
  std::vector<const PackReader*> condemned_packs = condemn(lib, packs, part, repacked, live, opts, res);
  step(opts, "condemned");
  delete_condemned(lib, condemned_packs);
  step(opts, "deleted");
  return true;
}

// A source left as it is for lack of space: its garbage stays.
void leave_for_space(const GcPlan& plan, size_t i, GcResult& res) {
  res.left_for_space.push_back(plan.packs[i].pack);
  res.packs[i].why += "; left: no room to copy its live objects";
}

// No room for one new pack with every source's live objects: one pack at a
// time, those with garbage only (a merge or upgrade frees nothing), the
// cheapest to copy first, so that each frees its garbage before the next
// needs room. What does not fit is left as it is.
void rewrite_one_by_one(Library& lib, const std::vector<const PackReader*>& packs, const GcPlan& rest, LiveSet& live,
                        const GcOptions& opts, GcResult& res) {
  std::vector<size_t> order = rest.sources;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rest.packs[a].live_bytes < rest.packs[b].live_bytes; });
  for (size_t i : order) {
    bool done = false;
    if (rest.packs[i].live_objects < rest.packs[i].objects) {
      lib.refresh();
      GcPlan one;
      one.packs = rest.packs;
      one.sources = {i};
      one.kept_objects = objects_outside(lib, {rest.packs[i].pack}); // every other pack stays, for now
      done = room_for(lib, one, one.sources, res) && rewrite_part(lib, packs, one, live, opts, res);
    }
    if (!done) leave_for_space(rest, i, res);
  }
}

// Steps 5 and 6 for the sources with live objects: one new pack for all of
// them when there is room, otherwise pack by pack.
// The plan without the packs collect_dead takes (dead_first): the sources
// whose live objects are copied, and the dead packs holding a mirror's base.
GcPlan without_dead(GcPlan&& plan) {
  GcPlan rest = std::move(plan);
  std::vector<size_t> sources;
  for (size_t i : rest.sources)
    if (!dead_first(rest, i)) sources.push_back(i);
  rest.sources = std::move(sources);
  return rest;
}

void rewrite_rest(Library& lib, const std::vector<const PackReader*>& packs, GcPlan&& plan, LiveSet& live, const GcOptions& opts,
                  GcResult& res) {
  GcPlan rest = without_dead(std::move(plan));
  if (rest.sources.empty()) return;
  if (room_for(lib, rest, rest.sources, res) && rewrite_part(lib, packs, rest, live, opts, res)) return;
  rewrite_one_by_one(lib, packs, rest, live, opts, res);
}

// A dry run says when the new pack would not fit (a real run then goes pack
// by pack and may leave some: see rewrite_rest).
void warn_if_no_room(const Library& lib, const GcPlan& plan, GcResult& res) {
  std::vector<size_t> sources;
  for (size_t i : plan.sources)
    if (!dead_first(plan, i)) sources.push_back(i);
  GcResult probe;
  if (sources.empty() || room_for(lib, plan, sources, probe)) return;
  res.warnings.push_back("the new pack would need about " + std::to_string(probe.space_needed >> 20) + " MiB, and the file system has " +
                         std::to_string(probe.space_free >> 20) + " MiB free: gc would delete the packs with no live object, then "
                         "rewrite the others one at a time, leaving what does not fit");
}

// A dry run's steps 4b to 7: the packs the real run would delete and the
// new pack it would write (the same copy, into /dev/null: rehearse_new_pack),
// hence the same figures. It assumes room for one new pack (warn_if_no_room
// says when there is none) and nobody changing the library meanwhile.
void rehearse(Library& lib, const std::vector<const PackReader*>& packs, const std::vector<GcPackInput>& described, GcPlan&& plan,
              const LiveSet& live, FlatDigestSet&& held, const GcOptions& opts, GcResult& res) {
  std::vector<bool> gone(packs.size(), false);
  for (size_t i : plan.sources) gone[i] = plan.packs[i].action == GcAction::Delete;
  GcPlan rest = without_dead(std::move(plan));
  Repacked repacked;
  if (!rest.sources.empty()) repacked = repack(lib, packs, rest, live, opts, res);
  for (size_t k = 0; k < rest.sources.size(); k++) {
    const size_t i = rest.sources[k];
    gone[i] = !repacked.pinned[k] && rest.packs[i].pack != repacked.new_name; // (the new pack may be identical to a source)
  }
  std::vector<const IndexView*> after;
  bool new_pack_is_there = false;
  for (size_t i = 0; i < packs.size(); i++) {
    if (gone[i]) continue;
    res.packs_after++;
    res.bytes_after += described[i].size;
    after.push_back(&packs[i]->index());
    new_pack_is_there |= described[i].name == repacked.new_name;
  }
  if (!repacked.new_name.empty() && !new_pack_is_there) {
    res.packs_after++;
    res.bytes_after += repacked.new_bytes;
  }
  count_objects(std::move(held), after, repacked.records, res);
}

// A plan with nothing to do: the library stays as it is.
void unchanged(const FlatDigestSet& held, GcResult& res) {
  res.packs_after = res.packs_before;
  res.bytes_after = res.bytes_before;
  res.objects_kept = held.size();
  res.objects_dropped = 0;
}

GcPlanOptions plan_options(const GcOptions& opts) {
  GcPlanOptions o;
  o.grace_seconds = opts.grace_seconds;
  o.min_garbage_pct = opts.min_garbage_pct;
  o.upgrade = opts.upgrade;
  o.full = opts.full;
  return o;
}

// Step 4: the packs described and the plan, with the base of every mirror
// that stays where it is (in a pack the plan does not rewrite) live. Marking
// a base can keep a pack out of the plan, which can make another base live:
// planned again until no base is added (each round adds one at least).
GcPlan plan_with_bases(const Library& lib, const std::vector<const PackReader*>& packs, LiveSet& live, const GcOptions& opts,
                       int64_t now, std::vector<GcPackInput>& described) {
  for (;;) {
    described = describe_packs(lib, packs, live, now, mark_threads(opts), opts.progress);
    GcPlan plan = plan_gc(described, live, plan_options(opts), now);
    std::set<std::string> rewritten;
    for (size_t i : plan.sources) rewritten.insert(plan.packs[i].pack);
    if (live.bases_of_staying([&](const std::string& pack) { return !rewritten.count(pack); }, live)) continue;
    plan.delete_last.resize(packs.size());
    for (size_t i : plan.sources) plan.delete_last[i] = plan.packs[i].action == GcAction::Delete && live.holds_a_base(*packs[i]);
    return plan;
  }
}

} // namespace

// The steps of the protocol in core/gc/gc.hpp, in order.
GcResult gc(Library& lib, const GcOptions& opts) {
  store::GcLock lock(lib.layout(), lib.shared()); // step 1
  GcResult res;
  recover_interrupted(lib, opts, res);
  const int64_t now = time(nullptr);
  LiveSet live = roots(lib, opts, now, res);

  const std::vector<const PackReader*> packs = lib.packs();
  std::vector<GcPackInput> described;
  GcPlan plan = plan_with_bases(lib, packs, live, opts, now, described);
  for (auto& p : described) res.bytes_before += p.size;
  res.packs_before = described.size();
  FlatDigestSet held = objects_held(described);
  res.packs = plan.packs;

  if (opts.dry_run) {
    warn_if_no_room(lib, plan, res);
    rehearse(lib, packs, described, std::move(plan), live, std::move(held), opts, res);
    sweep_leftovers(lib, opts, now, res); // counts what it would remove
    return res;
  }
  const bool act = !plan.sources.empty();
  if (act) collect_dead(lib, packs, plan, live, opts, res); // 6, for packs with nothing to copy
  sweep_leftovers(lib, opts, now, res); // 8, before any copy: a dead writer's leftovers may be the room it needs
  if (!act) {
    lib.remove_unusable_midx_files(); // 7 without packs rewritten: only stale layers go
    unchanged(held, res);
    return res;
  }
  rewrite_rest(lib, packs, std::move(plan), live, opts, res); // 5 and 6 for the others
  rebuild_midx(lib, std::move(held), res);
  return res;
}

} // namespace hpak
