#include "core/verify.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/pack_reader.hpp"
#include "core/pack_writer.hpp"
#include "core/util/parallel.hpp"

namespace hpak {

using namespace formats;

uint64_t VerifyReport::lost_objects() const {
  uint64_t n = 0;
  for (auto& b : bad_objects) n += b.lost;
  return n;
}

static void check_index_file(const PackReader& pack, VerifyReport& rep, Follow follow) {
  std::string ip = index_path_for(pack.path());
  if (!path_exists(ip)) {
    rep.notes.push_back("no index file '" + ip + "' (rebuild it with 'hpak index')");
    return;
  }
  try {
    MappedFile im(ip, follow);
    IndexView v(im.bytes(), ip);
    if (v.pack_size() != pack.bytes().size() || v.pack_sum() != pack.stored_trailer()) {
      rep.problems.push_back("index '" + ip + "' does not belong to this pack (size or trailer differ)");
      return;
    }
    const IndexView& scanned = pack.index();
    bool same = v.count() == scanned.count();
    same = same && v.version() == scanned.version();
    for (uint64_t i = 0; same && i < v.count(); i++) {
      IndexRecord a = v.record_at(i), b = scanned.record_at(i);
      same = a.digest == b.digest && a.offset == b.offset && a.stored_len == b.stored_len && a.raw_len == b.raw_len &&
             a.stored_xxh == b.stored_xxh && a.kind == b.kind && a.codec == b.codec && a.member == b.member;
    }
    if (!same) rep.problems.push_back("index '" + ip + "' does not list the entries the pack holds (rebuild it with 'hpak index')");
  } catch (const Error& e) {
    rep.problems.push_back(std::string("index: ") + e.what());
  }
}

VerifyReport verify_pack(const std::string& path, const VerifyOptions& opts) {
  // A pack that is not standalone is in a library: a symlink there is refused.
  Follow follow = opts.standalone ? Follow::Links : Follow::NoLinks;
  PackReader pack(path, /*use_index_file=*/false, true, follow);
  VerifyReport rep;
  rep.pack = path;
  for (auto& d : pack.damage()) rep.problems.push_back("offset " + std::to_string(d.offset) + ": " + d.why);
  check_index_file(pack, rep, follow);

  const IndexView& idx = pack.index();
  const uint64_t n = idx.count();
  std::vector<std::string> errors(n);
  std::atomic<uint64_t> raw{0}, stored{0}, done{0};
  // v2: the members of one block are checked together (one decompression);
  // members_of[i] lists the record indices of the block whose first-listed
  // record is i, and block members other than that first one have no task.
  std::unordered_map<uint64_t, std::vector<uint64_t>> members_of;
  std::vector<uint8_t> skip(n, 0);
  {
    std::unordered_map<uint64_t, uint64_t> first_of_block;
    for (uint64_t i = 0; i < n; i++) {
      IndexRecord r = idx.record_at(i);
      if (r.member == kNoMember) continue;
      auto [it, fresh] = first_of_block.emplace(r.offset, i);
      if (!fresh) skip[i] = 1;
      members_of[it->second].push_back(i);
    }
  }
  auto check_block = [&](uint64_t first) {
    const std::vector<uint64_t>& recs = members_of.at(first);
    uint64_t off = idx.record_at(first).offset;
    try {
      PackReader::Block bl = pack.checked_block(off);
      Bytes all_raw = pack.read_block(bl, off);
      std::vector<uint64_t> starts(bl.members.size() + 1, 0);
      for (size_t m = 0; m < bl.members.size(); m++) starts[m + 1] = starts[m] + bl.members[m].raw_len;
      for (uint64_t i : recs) {
        IndexRecord r = idx.record_at(i);
        if (r.member >= bl.members.size() || bl.members[r.member].digest != r.digest || bl.members[r.member].raw_len != r.raw_len)
          errors[i] = "block member at offset " + std::to_string(off) + " does not match the index";
        else if (sha256(ByteSpan(all_raw).subspan(starts[r.member], r.raw_len)) != r.digest)
          errors[i] = "content of " + to_hex(r.digest) + " in the block at offset " + std::to_string(off) + " does not match its name";
        else
          raw += r.raw_len;
      }
      stored += block_item_size(bl.header);
    } catch (const Error& e) {
      for (uint64_t i : recs) errors[i] = e.what();
    }
  };
  bool trailer_ok = true;
  ByteSpan all = pack.bytes();
  unsigned threads = opts.threads ? opts.threads : default_threads();
  pack.map().advise_sequential();
  // Task 0 hashes the whole pack for the trailer; tasks 1..n check objects.
  parallel_for(n + 1, threads, 1, [&](size_t task, unsigned tid) {
    if (task == 0) {
      if (all.size() < kTrailerSize) {
        trailer_ok = false;
        return;
      }
      Sha256 sha;
      const size_t step = 4 << 20;
      for (size_t pos = 0; pos < all.size() - kTrailerSize; pos += step)
        sha.update(all.subspan(pos, std::min(step, all.size() - kTrailerSize - pos)));
      trailer_ok = sha.finish() == pack.stored_trailer();
      return;
    }
    IndexRecord r = idx.record_at(task - 1);
    if (skip[task - 1]) {
      // checked with its block
    } else if (r.member != kNoMember) {
      check_block(task - 1);
    } else try {
      r = pack.complete(r);
      if (r.raw_len > (64ull << 20)) pack.read_stream(r, [](ByteSpan) {});
      else pack.read(r);
      raw += r.raw_len;
      stored += r.stored_len;
    } catch (const Error& e) {
      errors[task - 1] = e.what();
    }
    uint64_t d = ++done;
    if (tid == 0 && (d & 1023) == 0) report(opts.progress, "verify", d, n);
  });
  report(opts.progress, "verify", n, n);
  if (all.size() >= kPackMinSize) {
    try {
      Footer f = decode_footer(all.subspan(all.size() - kTrailerSize - kFooterSize, kFooterSize), path, all.size() - kTrailerSize - kFooterSize);
      if (f.entry_count != n) rep.problems.push_back("footer counts " + std::to_string(f.entry_count) + " entries, the pack holds " + std::to_string(n));
    } catch (const Corrupt&) {
      // already reported by the reader
    }
  }
  if (!trailer_ok) rep.problems.push_back("pack checksum (trailer) mismatch: the pack has been modified or damaged");
  rep.raw_bytes = raw;
  rep.stored_bytes = stored;

  // Which digests have at least one intact copy.
  DigestSet good;
  for (uint64_t i = 0; i < n; i++)
    if (errors[i].empty()) good.insert(idx.digest_at(i));
  std::unordered_map<Digest, size_t, DigestHash> bad_at;
  DigestSet counted;
  for (uint64_t i = 0; i < n; i++) {
    IndexRecord r = idx.record_at(i);
    if (r.kind == Kind::Blob && counted.insert(r.digest).second) rep.objects++;
    if (errors[i].empty()) continue;
    BadObject b;
    b.digest = to_hex(r.digest);
    b.kind = kind_name(r.kind);
    b.offset = r.offset;
    b.why = errors[i];
    b.lost = !good.count(r.digest);
    bad_at.emplace(r.digest, rep.bad_objects.size());
    rep.bad_objects.push_back(std::move(b));
  }

  // Catalogs: each readable one is validated, and its references checked.
  DigestSet cats_done;
  bool any_catalog = false;
  for (auto& r : pack.catalog_records()) {
    if (cats_done.count(r.digest)) continue;
    if (!good.count(r.digest)) continue;
    Catalog c;
    try {
      c = pack.load_catalog_record(r);
    } catch (const Error& e) {
      // A catalog that fails to validate fails the same way in its mirror: report once.
      std::string msg = std::string("catalog: ") + e.what();
      if (std::find(rep.problems.begin(), rep.problems.end(), msg) == rep.problems.end()) rep.problems.push_back(msg);
      continue;
    }
    cats_done.insert(r.digest);
    rep.catalog_digests.push_back(to_hex(r.digest));
    any_catalog = true;
    rep.catalogs++;
    for (auto& node : c.nodes) {
      if (node.type != NodeType::File) continue;
      auto it = bad_at.find(node.digest);
      auto found = idx.find(node.digest);
      if (it != bad_at.end()) {
        rep.bad_objects[it->second].paths.push_back(c.name + ":" + node.path);
      } else if (found && idx.record_at(*found).raw_len != node.size) {
        // Restoring would refuse it: the catalog and the object disagree.
        rep.problems.push_back("catalog '" + c.name + "': '" + node.path + "' is " + std::to_string(node.size) +
                               " bytes but its object " + to_hex(node.digest) + " has " +
                               std::to_string(idx.record_at(*found).raw_len));
      } else if (opts.standalone && !found) {
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
  if (!any_catalog && opts.standalone) rep.problems.push_back("no readable catalog in the pack");
  return rep;
}

} // namespace hpak
