#include "core/verify/verify.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "core/library/library.hpp"
#include "core/pack/pack_reader.hpp"
#include "core/pack/pack_writer.hpp"
#include "base/parallel.hpp"

namespace hpak {

using namespace formats;

uint64_t VerifyReport::lost_objects() const {
  uint64_t n = 0;
  for (auto& b : bad_objects) n += b.lost;
  return n;
}

bool is_index_problem(ProblemKind k) {
  return k == ProblemKind::IndexForeign || k == ProblemKind::IndexStale || k == ProblemKind::IndexUnreadable;
}

std::vector<std::string> messages_of(const std::vector<Problem>& problems) {
  std::vector<std::string> out;
  out.reserve(problems.size());
  for (auto& p : problems) out.push_back(p.message);
  return out;
}

namespace {

void add_problem(VerifyReport& rep, ProblemKind kind, std::string message) { rep.problems.push_back({kind, std::move(message)}); }

bool same_records(const IndexView& a, const IndexView& b) {
  if (a.count() != b.count() || a.version() != b.version()) return false;
  for (uint64_t i = 0; i < a.count(); i++) {
    IndexRecord x = a.record_at(i), y = b.record_at(i);
    if (!(x.digest == y.digest && x.offset == y.offset && x.stored_len == y.stored_len && x.raw_len == y.raw_len &&
          x.stored_xxh == y.stored_xxh && x.kind == y.kind && x.codec == y.codec && x.member == y.member))
      return false;
  }
  return true;
}

// The .hidx beside the pack: its own checksum, its tie to the pack, and that it
// lists exactly the entries the scan found.
void check_index_file(const PackReader& pack, VerifyReport& rep, Follow follow) {
  std::string ip = index_path_for(pack.path());
  if (!path_exists(ip)) {
    rep.notes.push_back("no index file '" + ip + "' (rebuild it with 'hpak index')");
    return;
  }
  try {
    MappedFile im(ip, follow);
    IndexView v(im.bytes(), ip);
    if (v.pack_size() != pack.bytes().size() || v.pack_sum() != pack.stored_trailer()) {
      add_problem(rep, ProblemKind::IndexForeign, "index '" + ip + "' does not belong to this pack (size or trailer differ)");
      return;
    }
    if (!same_records(v, pack.index()))
      add_problem(rep, ProblemKind::IndexStale, "index '" + ip + "' does not list the entries the pack holds (rebuild it with 'hpak index')");
  } catch (const Error& e) {
    add_problem(rep, ProblemKind::IndexUnreadable, std::string("index: ") + e.what());
  }
}

// v2: the members of one block are checked together (one decompression).
// members_of[i] lists the record indices of the block whose first-listed record
// is i; block members other than that first one are skipped (no task of their own).
struct BlockPlan {
  std::unordered_map<uint64_t, std::vector<uint64_t>> members_of;
  std::vector<uint8_t> skip;
};

BlockPlan plan_blocks(const IndexView& idx) {
  BlockPlan plan;
  plan.skip.assign(idx.count(), 0);
  std::unordered_map<uint64_t, uint64_t> first_of_block;
  for (uint64_t i = 0; i < idx.count(); i++) {
    IndexRecord r = idx.record_at(i);
    if (r.member == kNoMember) continue;
    auto [it, fresh] = first_of_block.emplace(r.offset, i);
    if (!fresh) plan.skip[i] = 1;
    plan.members_of[it->second].push_back(i);
  }
  return plan;
}

// What the object pass found: why each bad record is bad (by its position in
// the index; a record not listed is intact). Kept sparse: a pack of 10^7
// objects costs nothing here while it is intact.
struct ObjectChecks {
  std::map<uint64_t, std::string> errors;
  std::mutex errors_mu; // the pass's threads add to `errors`
  std::atomic<uint64_t> raw{0}, stored{0};
  bool trailer_ok = true;

  void fail(uint64_t i, std::string why) {
    std::lock_guard lock(errors_mu);
    errors[i] = std::move(why);
  }
  bool intact(uint64_t i) const { return !errors.count(i); }
};

// What one thread of the pass reads into, reused from object to object: no
// buffer holds more than PackReader::kPreadWhole bytes (a larger entry is read
// in pieces), and no page of the pack is mapped.
struct ReadBuffers {
  Bytes stored, raw;
};

// One v2 block: read with pread, decoded once, each member listed in `recs`
// checked against it.
void check_block(const PackReader& pack, int fd, const std::vector<uint64_t>& recs, ReadBuffers& b, ObjectChecks& out) {
  const IndexView& idx = pack.index();
  uint64_t off = idx.record_at(recs.front()).offset;
  try {
    PackReader::Block bl = pack.block_pread(fd, off, b.stored);
    if (pack.named_by_scan(off)) { // decoded and hashed by the scan: its records are those hashes
      for (uint64_t i : recs) out.raw += idx.record_at(i).raw_len;
      out.stored += block_item_size(bl.header);
      return;
    }
    Bytes all_raw = pack.read_block(bl, off);
    std::vector<uint64_t> starts(bl.members.size() + 1, 0);
    for (size_t m = 0; m < bl.members.size(); m++) starts[m + 1] = starts[m] + bl.members[m].raw_len;
    for (uint64_t i : recs) {
      IndexRecord r = idx.record_at(i);
      if (r.member >= bl.members.size() || (bl.header.named() && bl.members[r.member].digest != r.digest) ||
          bl.members[r.member].raw_len != r.raw_len)
        out.fail(i, "block member at offset " + std::to_string(off) + " does not match the index");
      else if (sha256(ByteSpan(all_raw).subspan(starts[r.member], r.raw_len)) != r.digest)
        out.fail(i, "content of " + to_hex(r.digest) + " in the block at offset " + std::to_string(off) + " does not match its name");
      else
        out.raw += r.raw_len;
    }
    out.stored += block_item_size(bl.header);
  } catch (const Error& e) {
    for (uint64_t i : recs) out.fail(i, e.what());
  }
}

// One entry of its own: header vs index, XXH3 of the stored bytes,
// decompression, SHA-256 of the content vs its name (PackReader::check_pread).
void check_entry(const PackReader& pack, int fd, uint64_t i, ReadBuffers& b, ObjectChecks& out) {
  try {
    IndexRecord r = pack.check_pread(fd, pack.index().record_at(i), b.stored, b.raw);
    out.raw += r.raw_len;
    out.stored += r.stored_len;
  } catch (const Error& e) {
    out.fail(i, e.what());
  }
}

// The pass goes through a pack one window of this many bytes at a time, in
// order: the trailer's SHA-256 is fed the windows in order while the objects
// that start in a window are checked beside it. Every byte is read with pread
// into buffers of each thread's own (ReadBuffers, and 1 MiB for the trailer),
// never through the mapping: what verify holds of a pack is those buffers,
// whatever the pack's size. (Reading through the mapping and unmapping each
// window behind, as verify did before, left what the kernel maps around a
// fault and what the large objects and the catalogs mapped: 173 MiB of a
// 1 GiB library at K = 1,000, bench/RESULTS.md.)
constexpr uint64_t kVerifyWindow = 16ull << 20;

// The objects in pack order, one task each (a block with its first-listed member).
std::vector<std::pair<uint64_t, uint64_t>> object_tasks(const IndexView& idx, const BlockPlan& plan) {
  std::vector<std::pair<uint64_t, uint64_t>> tasks; // (offset, record)
  for (uint64_t i = 0; i < idx.count(); i++)
    if (!plan.skip[i]) tasks.emplace_back(idx.record_at(i).offset, i);
  std::sort(tasks.begin(), tasks.end());
  return tasks;
}

// Bytes [from, to) of the pack into the trailer's SHA-256; `read` is left
// false when the file no longer has them (it shrank while verified: then the
// trailer does not match, as a mapped page the file lost reads as zeros).
void hash_range(const PackReader& pack, int fd, uint64_t from, uint64_t to, Bytes& buf, Sha256& sha, bool& read) {
  try {
    pack.pread_range(fd, from, to - from, buf, [&](ByteSpan p) { sha.update(p); });
  } catch (const Error&) {
    read = false;
  }
}

// The parallel pass, window by window in pack order: task 0 hashes the
// window's bytes into the trailer's SHA-256; the others check the objects
// that start in the window.
void check_objects(const PackReader& pack, int fd, const VerifyOptions& opts, ObjectChecks& out) {
  const IndexView& idx = pack.index();
  BlockPlan plan = plan_blocks(idx);
  const std::vector<std::pair<uint64_t, uint64_t>> tasks = object_tasks(idx, plan);
  std::atomic<uint64_t> done{0};
  unsigned threads = opts.threads ? opts.threads : default_threads();
  std::vector<ReadBuffers> bufs(threads);
  Bytes trailer_buf;
  const uint64_t size = pack.bytes().size();
  const uint64_t hashed = size >= kTrailerSize ? size - kTrailerSize : 0;
  Sha256 sha;
  bool trailer_read = true;
  size_t t = 0;
  for (uint64_t start = 0; start < size || t < tasks.size(); start += kVerifyWindow) {
    const uint64_t end = start + kVerifyWindow;
    size_t t_end = t;
    while (t_end < tasks.size() && (tasks[t_end].first < end || end >= size)) t_end++;
    parallel_for(t_end - t + 1, threads, 1, [&](size_t task, unsigned tid) {
      if (task == 0) {
        if (start < hashed && trailer_read) hash_range(pack, fd, start, std::min(end, hashed), trailer_buf, sha, trailer_read);
        return;
      }
      uint64_t i = tasks[t + task - 1].second;
      if (idx.record_at(i).member != kNoMember) check_block(pack, fd, plan.members_of.at(i), bufs[tid], out);
      else check_entry(pack, fd, i, bufs[tid], out);
      uint64_t d = ++done;
      if (tid == 0 && (d & 1023) == 0) report(opts.progress, "verify", d, tasks.size());
    });
    t = t_end;
  }
  out.trailer_ok = size >= kTrailerSize && trailer_read && sha.finish() == pack.stored_trailer();
  report(opts.progress, "verify", tasks.size(), tasks.size());
}

// The footer's entry count against the entries the scan found.
void check_footer_count(const PackReader& pack, VerifyReport& rep) {
  ByteSpan all = pack.bytes();
  if (all.size() < kPackMinSize) return;
  const uint64_t n = pack.index().count();
  try {
    Footer f = decode_footer(all.subspan(all.size() - kTrailerSize - kFooterSize, kFooterSize), pack.path(),
                             all.size() - kTrailerSize - kFooterSize);
    if (f.entry_count != n)
      add_problem(rep, ProblemKind::FooterCount, "footer counts " + std::to_string(f.entry_count) + " entries, the pack holds " + std::to_string(n));
  } catch (const Corrupt&) {
    // already reported by the reader
  }
}

// The records of `idx` that hold the digest at position `first` (the index is
// sorted by digest: they follow one another), as [first, end).
uint64_t run_end(const IndexView& idx, uint64_t first) {
  uint64_t end = first + 1;
  while (end < idx.count() && idx.digest_at(end) == idx.digest_at(first)) end++;
  return end;
}

// Whether a record of [first, end) is intact.
bool run_has_intact(const ObjectChecks& checks, uint64_t first, uint64_t end) {
  for (uint64_t i = first; i < end; i++)
    if (checks.intact(i)) return true;
  return false;
}

// Whether a record of [first, end) holds a blob (a file's bytes may also be a
// catalog's).
bool run_has_blob(const IndexView& idx, uint64_t first, uint64_t end) {
  for (uint64_t i = first; i < end; i++)
    if (idx.record_at(i).kind == Kind::Blob) return true;
  return false;
}

// Whether the pack holds an intact copy of `d`.
bool has_intact(const IndexView& idx, const ObjectChecks& checks, const Digest& d) {
  auto first = idx.find(d);
  return first && run_has_intact(checks, *first, run_end(idx, *first));
}

// Bad objects from the object pass (lost when no record of the same digest is
// intact), and the distinct blobs counted; the index is walked in digest
// order, one run of equal digests at a time, so nothing here grows with the
// pack. Returns where each bad digest is in rep.bad_objects.
DigestMap<size_t> collect_bad_objects(const IndexView& idx, const ObjectChecks& checks, VerifyReport& rep) {
  DigestMap<size_t> bad_at;
  for (uint64_t first = 0; first < idx.count();) {
    const uint64_t end = run_end(idx, first);
    rep.objects += run_has_blob(idx, first, end);
    const bool lost = !run_has_intact(checks, first, end);
    for (uint64_t i = first; i < end; i++) {
      auto bad = checks.errors.find(i);
      if (bad == checks.errors.end()) continue;
      IndexRecord r = idx.record_at(i);
      BadObject b;
      b.digest = to_hex(r.digest);
      b.kind = kind_name(r.kind);
      b.offset = r.offset;
      b.why = bad->second;
      b.lost = lost;
      bad_at.emplace(r.digest, rep.bad_objects.size());
      rep.bad_objects.push_back(std::move(b));
    }
    first = end;
  }
  return bad_at;
}

// Every file of a readable catalog: a bad object gets the path; an object of
// another size than the catalog says is a problem; in a standalone pack, an
// object not found is lost.
void check_catalog_files(const Catalog& c, const IndexView& idx, bool standalone, DigestMap<size_t>& bad_at, VerifyReport& rep) {
  for (auto& node : c.nodes) {
    if (node.type != NodeType::File) continue;
    auto it = bad_at.find(node.digest);
    auto found = idx.find(node.digest);
    if (it != bad_at.end()) {
      rep.bad_objects[it->second].paths.push_back(c.name + ":" + node.path);
    } else if (found && idx.record_at(*found).raw_len != node.size) {
      // Restoring would refuse it: the catalog and the object disagree.
      add_problem(rep, ProblemKind::CatalogSizeMismatch,
                  "catalog '" + c.name + "': '" + node.path + "' is " + std::to_string(node.size) + " bytes but its object " +
                      to_hex(node.digest) + " has " + std::to_string(idx.record_at(*found).raw_len));
    } else if (standalone && !found) {
      // Its entry is unreadable beyond recognition (e.g. a destroyed header): lost.
      BadObject b;
      b.digest = to_hex(node.digest);
      b.kind = "blob";
      b.why = "not found in the pack (its entry is damaged or missing)";
      b.paths.push_back(c.name + ":" + node.path);
      bad_at.emplace(node.digest, rep.bad_objects.size());
      rep.bad_objects.push_back(std::move(b));
    }
  }
}

// The catalog records in pack order (as PackReader::catalog_records, but
// left as the index has them: completing one reads its header through the
// mapping, and read_pread completes it anyway).
std::vector<IndexRecord> catalog_records(const IndexView& idx) {
  std::vector<IndexRecord> out;
  for (uint64_t i = 0; i < idx.count(); i++)
    if (IndexRecord r = idx.record_at(i); r.kind == Kind::Catalog) out.push_back(r);
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
  return out;
}

// A catalog read with pread and decoded (PackReader::load_catalog_record's
// checks and messages).
Catalog read_catalog(const PackReader& pack, int fd, const IndexRecord& r, ReadBuffers& b) {
  if (r.raw_len > (1ull << 32)) throw Corrupt(pack.path(), r.offset, "catalog larger than 4 GiB");
  ByteSpan raw = pack.read_pread(fd, r, b.stored, b.raw);
  return decode_catalog(raw, pack.path() + ": catalog " + to_hex(r.digest).substr(0, 12));
}

// Catalogs: each one with an intact copy is validated, and its files checked.
void check_catalogs(const PackReader& pack, int fd, const ObjectChecks& checks, DigestMap<size_t>& bad_at, bool standalone, VerifyReport& rep) {
  DigestSet cats_done;
  ReadBuffers b;
  for (auto& r : catalog_records(pack.index())) {
    if (cats_done.count(r.digest)) continue;
    if (!has_intact(pack.index(), checks, r.digest)) continue;
    Catalog c;
    try {
      c = read_catalog(pack, fd, r, b);
    } catch (const Error& e) {
      // A catalog that fails to validate fails the same way in its mirror: report once.
      Problem p{ProblemKind::CatalogInvalid, std::string("catalog: ") + e.what()};
      if (std::find(rep.problems.begin(), rep.problems.end(), p) == rep.problems.end()) rep.problems.push_back(std::move(p));
      continue;
    }
    cats_done.insert(r.digest);
    rep.catalog_digests.push_back(to_hex(r.digest));
    rep.catalogs++;
    check_catalog_files(c, pack.index(), standalone, bad_at, rep);
  }
  if (rep.catalogs == 0 && standalone) add_problem(rep, ProblemKind::NoCatalog, "no readable catalog in the pack");
}

// What the pack holds, for PackDigests.
PackDigests held_digests(const IndexView& idx, const ObjectChecks& checks) {
  PackDigests out;
  for (uint64_t first = 0; first < idx.count();) {
    const uint64_t end = run_end(idx, first);
    if (run_has_intact(checks, first, end)) out.intact.push_back(idx.digest_at(first));
    if (run_has_blob(idx, first, end)) out.blobs.push_back(idx.digest_at(first));
    first = end;
  }
  return out;
}

} // namespace

// The objects of blocks the scan could not name (a lengths-only block that
// does not decode names none), named by the .hidx beside the pack when it
// belongs to it: bad, lost, at their block's offset, for the reason the scan
// gave there.
void name_lost_block_members(const PackReader& pack, Follow follow, DigestMap<size_t>& bad_at, VerifyReport& rep) {
  std::map<uint64_t, std::string> damaged;
  for (auto& d : pack.damage()) damaged.emplace(d.offset, d.why);
  std::string ip = index_path_for(pack.path());
  if (damaged.empty() || !path_exists(ip)) return;
  try {
    MappedFile im(ip, follow);
    IndexView v(im.bytes(), ip);
    if (v.pack_size() != pack.bytes().size() || v.pack_sum() != pack.stored_trailer()) return;
    for (uint64_t i = 0; i < v.count(); i++) {
      IndexRecord r = v.record_at(i);
      auto why = damaged.find(r.offset);
      if (r.member == kNoMember || why == damaged.end() || pack.index().find(r.digest) || bad_at.count(r.digest)) continue;
      BadObject b;
      b.digest = to_hex(r.digest);
      b.kind = kind_name(r.kind);
      b.offset = r.offset;
      b.why = why->second + " (named by the index file)";
      bad_at.emplace(r.digest, rep.bad_objects.size());
      rep.bad_objects.push_back(std::move(b));
    }
  } catch (const Error&) {
    // an unreadable index file is reported by check_index_file
  }
}

VerifyReport verify_pack(const std::string& path, const VerifyOptions& opts, PackDigests* held) {
  // A pack that is not standalone is in a library: a symlink there is refused.
  Follow follow = opts.standalone ? Follow::Links : Follow::NoLinks;
  PackReader pack(path, /*use_index_file=*/false, true, follow);
  pack.set_base_source(opts.base_source ? opts.base_source : enclosing_library_bases(path));
  VerifyReport rep;
  rep.pack = path;
  for (auto& d : pack.damage()) add_problem(rep, ProblemKind::EntryDamage, "offset " + std::to_string(d.offset) + ": " + d.why);
  check_index_file(pack, rep, follow);

  Fd fd = pack.open_same_file(follow);
  if (!fd) throw Error("'" + path + "' was removed or replaced while being verified");
  ObjectChecks checks;
  check_objects(pack, fd.get(), opts, checks);
  check_footer_count(pack, rep);
  if (!checks.trailer_ok) add_problem(rep, ProblemKind::TrailerMismatch, "pack checksum (trailer) mismatch: the pack has been modified or damaged");
  rep.raw_bytes = checks.raw;
  rep.stored_bytes = checks.stored;

  DigestMap<size_t> bad_at = collect_bad_objects(pack.index(), checks, rep);
  name_lost_block_members(pack, follow, bad_at, rep);
  check_catalogs(pack, fd.get(), checks, bad_at, opts.standalone, rep);
  if (held) *held = held_digests(pack.index(), checks);
  return rep;
}

} // namespace hpak
