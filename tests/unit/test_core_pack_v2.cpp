// Pack and index format v2 (issue 15): blocks of small objects, aligned raw
// entries, 24-byte index records. Round trip through the .hidx and a scan,
// determinism, index rebuilt byte for byte, corruption costing only one
// block, bad padding, truncation, lying lengths, v1 packs still read.
#include <cstring>
#include <algorithm>
#include <atomic>
#include <random>
#include <set>
#include <thread>
#include <doctest/doctest.h>
#define ZSTD_STATIC_LINKING_ONLY // the test walks a frame zstd block by zstd block
#include <zstd.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/pack/pack_reader.hpp"
#include "core/pack/pack_writer.hpp"
#include "base/hash.hpp"
#include "base/zstd_codec.hpp"
#include "core/pack/block_compressor.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

struct V2Obj {
  Bytes raw;
  Digest digest{};
};

struct V2Pack {
  std::string pack;
  PackResult res;
  std::vector<V2Obj> objs;
};

// Many small objects (several blocks), a large compressible object, a large
// incompressible raw one (aligned), an empty object, and a mirrored catalog.
V2Pack write_v2(const fx::TempDir& dir, const std::string& name = "v2.hpak", int level = 3, uint16_t version = kPackVersion2) {
  V2Pack w;
  w.pack = dir / name;
  fx::Rng rng(7);
  int fd = ::open(w.pack.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  PackWriter pw(fd, w.pack, level, version);
  auto add = [&](Bytes raw) {
    V2Obj o;
    o.raw = std::move(raw);
    o.digest = sha256(o.raw);
    if (pw.is_small(o.raw.size())) {
      CHECK(pw.append_small(o.digest, o.raw));
    } else {
      Bytes stored;
      Codec codec = Codec::Raw;
      if (level > 0) zstd_compress(o.raw, level, nullptr, stored);
      if (level > 0 && stored.size() < o.raw.size()) codec = Codec::Zstd;
      else stored = o.raw;
      pw.append(Kind::Blob, codec, o.digest, o.raw.size(), stored);
    }
    w.objs.push_back(std::move(o));
  };
  for (int i = 0; i < 300; i++) add(fx::make_content(rng, 100 + size_t(i) * 7, i % 3 != 0));
  add(Bytes{});
  add(fx::make_content(rng, 200000, true));
  add(fx::make_content(rng, 100000, false)); // incompressible: raw, aligned
  add(fx::make_content(rng, 5000, true));
  Bytes cat = fx::make_content(rng, 900, true);
  Digest cd = sha256(cat);
  pw.append(Kind::Catalog, Codec::Raw, cd, cat.size(), cat);
  pw.append(Kind::Catalog, Codec::Raw, cd, cat.size(), cat, kEflagMirror, true);
  w.res = pw.finish();
  ::close(fd);
  return w;
}

void write_index(const V2Pack& w) {
  fx::write_file(index_path_for(w.pack), encode_index(w.res.records, w.res.size, w.res.pack_sum, w.res.index_version()));
}

// Reads each object (only those of block `damaged` if `only_damaged`): each
// gives its bytes or fails, and only an object of block `damaged` may fail.
std::pair<size_t, size_t> tally_reads(const PackReader& r, const std::vector<V2Obj>& objs, uint64_t damaged, bool only_damaged) {
  size_t good = 0, bad = 0;
  for (auto& o : objs) {
    auto rec = r.find(o.digest);
    REQUIRE(rec);
    if (only_damaged && rec->offset != damaged) continue;
    try {
      Bytes got = r.read(*rec);
      CHECK(got == o.raw);
      good++;
    } catch (const Error&) {
      bad++;
      CHECK(rec->offset == damaged);
    }
  }
  return {good, bad};
}

void check_all_read(const PackReader& r, const std::vector<V2Obj>& objs) {
  for (auto& o : objs) {
    auto rec = r.find(o.digest);
    REQUIRE(rec);
    CHECK(r.read(*rec) == o.raw);
  }
}

} // namespace

TEST_CASE("pack v2: small objects go into blocks; every object reads back through the index and through a scan") {
  fx::TempDir dir;
  V2Pack w = write_v2(dir);
  write_index(w);
  size_t members = 0;
  for (auto& r : w.res.records) members += r.member != kNoMember;
  CHECK(members >= 300);
  PackReader via_index(w.pack);
  CHECK(via_index.version() == kPackVersion2);
  CHECK(via_index.index_source() == PackReader::IndexSource::File);
  CHECK(via_index.damage().empty());
  check_all_read(via_index, w.objs);
  PackReader scanned(w.pack, /*use_index_file=*/false);
  CHECK(scanned.damage().empty());
  check_all_read(scanned, w.objs);
  // Blocks: each at most the target, several of them.
  Bytes b = fx::read_file(w.pack);
  std::set<uint64_t> blocks;
  for (auto& r : w.res.records)
    if (r.member != kNoMember) blocks.insert(r.offset);
  CHECK(blocks.size() >= 3);
  for (uint64_t off : blocks) {
    BlockHeader h = decode_block_header(ByteSpan(b).subspan(off), "x", off);
    CHECK(h.raw_len <= kDefaultBlockTarget);
    CHECK(h.codec == Codec::Zstd);
  }
}

TEST_CASE("pack v2: the large raw object sits at 4 KiB alignment behind verified zero padding") {
  fx::TempDir dir;
  V2Pack w = write_v2(dir);
  const V2Obj& big = w.objs[302];
  REQUIRE(big.raw.size() == 100000);
  PackReader r(w.pack, false);
  auto rec = r.find(big.digest);
  REQUIRE(rec);
  CHECK(rec->codec == Codec::Raw);
  auto ext = r.raw_extent(*rec);
  REQUIRE(ext);
  CHECK(ext->first % kAlign == 0);
  CHECK(ext->second == big.raw.size());
  Bytes b = fx::read_file(w.pack);
  CHECK(std::memcmp(b.data() + ext->first, big.raw.data(), big.raw.size()) == 0);
  // Bad padding: a non-zero byte in it is reported, and costs no object.
  uint64_t pad_byte = rec->offset - 1;
  REQUIRE(b[pad_byte] == 0);
  b[pad_byte] = 0x5a;
  std::string bad = dir / "badpad.hpak";
  fx::write_file(bad, b);
  PackReader d(bad, false);
  CHECK_FALSE(d.damage().empty());
  check_all_read(d, w.objs);
}

TEST_CASE("pack v2: output is deterministic and the index is rebuilt from the pack byte for byte") {
  fx::TempDir dir;
  V2Pack a = write_v2(dir, "a.hpak"), b = write_v2(dir, "b.hpak");
  CHECK(fx::read_file(a.pack) == fx::read_file(b.pack));
  Bytes written = encode_index(a.res.records, a.res.size, a.res.pack_sum, a.res.index_version());
  PackReader scanned(a.pack, false);
  std::vector<IndexRecord> recs;
  for (uint64_t i = 0; i < scanned.index().count(); i++) recs.push_back(scanned.index().record_at(i));
  Bytes rebuilt = encode_index(recs, scanned.bytes().size(), scanned.stored_trailer(), scanned.index_version());
  CHECK(rebuilt == written);
  IndexView v(written, "x");
  CHECK(v.version() == kIndexVersion2);
  CHECK(written.size() == kIndexHeaderSize + 1024 + a.res.records.size() * (32 + kIndexRecordSize2) + 32);
}

TEST_CASE("pack v2: one bad byte in a block costs that block's objects only") {
  fx::TempDir dir;
  V2Pack w = write_v2(dir);
  write_index(w);
  Bytes b = fx::read_file(w.pack);
  uint64_t victim = 0;
  for (auto& r : w.res.records)
    if (r.member == 5) victim = r.offset; // a block with at least 6 members
  REQUIRE(victim != 0);
  BlockHeader h = decode_block_header(ByteSpan(b).subspan(victim), "x", victim);
  CHECK_FALSE(h.named()); // what the writer makes: each member named once, by the index
  uint64_t payload = victim + kBlockHeaderSize + block_table_size(h);
  b[payload + h.stored_len / 2] ^= 0x40;
  std::string bad = dir / "bad.hpak";
  fx::write_file(bad, b);
  fx::write_file(index_path_for(bad), fx::read_file(index_path_for(w.pack)));
  for (bool use_index : {true, false}) {
    PackReader r(bad, use_index);
    size_t lost = 0;
    for (auto& o : w.objs) {
      auto rec = r.find(o.digest);
      if (!rec) { // a scan names a lengths-only block's members by decoding it: not this one's
        CHECK_FALSE(use_index);
        lost++;
        continue;
      }
      try {
        Bytes got = r.read(*rec);
        CHECK(got == o.raw);
      } catch (const Corrupt&) {
        lost++;
        CHECK(rec->offset == victim);
      }
    }
    CHECK(lost == h.count);
    if (!use_index) CHECK_FALSE(r.damage().empty());
  }
  // A bad byte in the member table: the block's objects are lost, the scan goes on.
  Bytes t = fx::read_file(w.pack);
  t[victim + kBlockHeaderSize + 3] ^= 0x01;
  fx::write_file(bad, t);
  PackReader s(bad, false);
  CHECK_FALSE(s.damage().empty());
  size_t found = 0;
  for (auto& o : w.objs) found += s.find(o.digest).has_value();
  CHECK(found == w.objs.size() - h.count);
}

TEST_CASE("pack v2: a truncated pack and a block that lies about its lengths are damage, never a crash") {
  fx::TempDir dir;
  V2Pack w = write_v2(dir);
  Bytes b = fx::read_file(w.pack);
  std::string bad = dir / "t.hpak";
  for (size_t len : {size_t(40), b.size() / 3, b.size() / 2, b.size() - 70}) {
    fx::write_file(bad, ByteSpan(b).first(len));
    PackReader r(bad, false);
    CHECK_FALSE(r.damage().empty());
    for (auto& o : w.objs)
      if (auto rec = r.find(o.digest)) CHECK(r.read(*rec) == o.raw);
  }
  // Lying lengths: a block header whose stored_len reaches past the pack, with
  // its header checksum recomputed so only the lengths tell the lie.
  uint64_t first_block = w.res.records[0].offset;
  REQUIRE(w.res.records[0].member == 0);
  BlockHeader h = decode_block_header(ByteSpan(b).subspan(first_block), "x", first_block);
  for (uint32_t lie : {uint32_t(0xfffffff0u), uint32_t(h.stored_len + 1)}) {
    Bytes l = b;
    BlockHeader liar = h;
    liar.stored_len = lie;
    encode_block_header(liar, l.data() + first_block);
    fx::write_file(bad, l);
    PackReader r(bad, false);
    CHECK_FALSE(r.damage().empty());
    for (auto& o : w.objs)
      if (auto rec = r.find(o.digest)) {
        try {
          Bytes got = r.read(*rec);
          CHECK(got == o.raw);
        } catch (const Corrupt&) {
          CHECK(rec->offset == first_block); // only the lying block's objects
        }
      }
  }
  // A raw-sized lie on the member count is refused by the header check itself.
  BlockHeader many = h;
  many.count = kBlockMaxCount + 1;
  uint8_t hb[kBlockHeaderSize];
  encode_block_header(many, hb);
  CHECK_FALSE(looks_like_block_header(ByteSpan(hb, sizeof hb)));
  CHECK_THROWS_AS(decode_block_header(ByteSpan(hb, sizeof hb), "x", 0), Corrupt);
}

TEST_CASE("pack v2: level 0 stores blocks raw and checked_stored gives a member's bytes") {
  fx::TempDir dir;
  V2Pack w = write_v2(dir, "l0.hpak", 0);
  PackReader r(w.pack, false);
  CHECK(r.damage().empty());
  check_all_read(r, w.objs);
  auto rec = r.find(w.objs[10].digest);
  REQUIRE(rec);
  CHECK(rec->member != kNoMember);
  ByteSpan s = r.checked_stored(*rec);
  CHECK(Bytes(s.begin(), s.end()) == w.objs[10].raw);
  auto ext = r.raw_extent(*rec);
  REQUIRE(ext);
  CHECK(std::memcmp(r.bytes().data() + ext->first, w.objs[10].raw.data(), w.objs[10].raw.size()) == 0);
}

TEST_CASE("pack v2: a v1 pack written by the same writer still reads, and an index of the wrong version is not used") {
  fx::TempDir dir;
  V2Pack w = write_v2(dir, "v1.hpak", 3, kPackVersion);
  for (auto& r : w.res.records) CHECK(r.member == kNoMember);
  write_index(w);
  PackReader r(w.pack);
  CHECK(r.version() == kPackVersion);
  CHECK(r.index_source() == PackReader::IndexSource::File);
  check_all_read(r, w.objs);
  // A v2 index beside a v1 pack: refused, the pack is scanned instead.
  fx::write_file(index_path_for(w.pack), encode_index(w.res.records, w.res.size, w.res.pack_sum, kIndexVersion2));
  PackReader s(w.pack);
  CHECK(s.index_source() == PackReader::IndexSource::Scan);
  check_all_read(s, w.objs);
}

TEST_CASE("pack v2: the per-thread decoded block serves any read order, two readers, and a damaged block") {
  fx::TempDir dir;
  V2Pack a = write_v2(dir, "a.hpak");
  V2Pack b = write_v2(dir, "b.hpak", 0); // same objects, raw blocks at other offsets
  write_index(a);
  write_index(b);
  {
    PackReader ra(a.pack), rb(b.pack);
    // Reverse order (the second read of a block decodes it whole), then
    // interleaved between two readers whose blocks share offsets and digests.
    std::vector<V2Obj> rev(a.objs.rbegin(), a.objs.rend());
    check_all_read(ra, rev);
    for (auto& o : a.objs) {
      auto x = ra.find(o.digest), y = rb.find(o.digest);
      REQUIRE(x);
      REQUIRE(y);
      CHECK(ra.read(*x) == o.raw);
      CHECK(rb.read(*y) == o.raw);
    }
  }
  // A reader made after another was destroyed never sees the old one's block.
  Bytes bytes = fx::read_file(a.pack);
  uint64_t first_block = UINT64_MAX;
  for (auto& r : a.res.records)
    if (r.member != kNoMember) first_block = std::min(first_block, r.offset);
  {
    PackReader r1(a.pack);
    check_all_read(r1, a.objs); // this thread's cache now holds a block of r1
  }
  // Damage the first block's payload: its members fail, the others still read.
  BlockHeader fh = decode_block_header(ByteSpan(bytes).subspan(first_block), "x", first_block);
  bytes[first_block + kBlockHeaderSize + uint64_t(fh.count) * kBlockMemberSize + fh.stored_len / 2] ^= 0x5a;
  fx::write_file(a.pack, bytes);
  PackReader r2(a.pack);
  auto [good, bad] = tally_reads(r2, a.objs, first_block, false);
  CHECK(bad >= 1);
  CHECK(good >= a.objs.size() - bad);
}

TEST_CASE("pack v2: random reads over more blocks than a thread caches, from two threads and two readers") {
  // ~90 blocks of small objects: more than the 64 blocks (8 MiB) a thread
  // keeps decoded, so reads in random order both hit and evict.
  fx::TempDir dir;
  std::string paths[2] = {dir / "r0.hpak", dir / "r1.hpak"};
  std::vector<V2Obj> objs;
  fx::Rng rng(11);
  for (int i = 0; i < 6000; i++) {
    V2Obj o;
    o.raw = fx::make_content(rng, 500 + size_t(i % 700), i % 4 != 0);
    o.digest = sha256(o.raw);
    objs.push_back(std::move(o));
  }
  for (int k = 0; k < 2; k++) {
    int fd = ::open(paths[k].c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    PackWriter pw(fd, paths[k], k == 0 ? 3 : 0, kPackVersion2);
    for (size_t i = k; i < objs.size() + k; i++) REQUIRE(pw.append_small(objs[i % objs.size()].digest, objs[i % objs.size()].raw));
    PackResult res = pw.finish();
    ::close(fd);
    std::set<uint64_t> blocks;
    for (auto& r : res.records) blocks.insert(r.offset);
    CHECK(blocks.size() > 64);
    fx::write_file(index_path_for(paths[k]), encode_index(res.records, res.size, res.pack_sum, res.index_version()));
  }
  PackReader r0(paths[0]), r1(paths[1]);
  std::atomic<size_t> wrong{0}, read{0};
  auto reader = [&](unsigned seed) {
    std::vector<size_t> order(objs.size() * 2);
    for (size_t i = 0; i < order.size(); i++) order[i] = i % objs.size();
    std::shuffle(order.begin(), order.end(), std::mt19937(seed));
    for (size_t n = 0; n < order.size(); n++) {
      const PackReader& r = (n + seed) % 3 == 0 ? r1 : r0;
      const V2Obj& o = objs[order[n]];
      auto rec = r.find(o.digest);
      if (!rec || r.read(*rec) != o.raw) wrong++;
      read++;
    }
  };
  std::thread t1(reader, 1), t2(reader, 2);
  t1.join();
  t2.join();
  CHECK(wrong == 0);
  CHECK(read == objs.size() * 4);
}

TEST_CASE("pack v2: a block names its members once, in the index: its table holds 4-byte lengths") {
  fx::TempDir dir;
  V2Pack w = write_v2(dir);
  Bytes b = fx::read_file(w.pack);
  std::set<uint64_t> blocks;
  for (auto& r : w.res.records)
    if (r.member != kNoMember) blocks.insert(r.offset);
  REQUIRE(blocks.size() >= 2);
  for (uint64_t off : blocks) {
    BlockHeader h = decode_block_header(ByteSpan(b).subspan(off), "x", off);
    CHECK_FALSE(h.named());
    CHECK(block_table_size(h) == uint64_t(h.count) * kBlockLengthSize);
    // No member's digest is anywhere in the block.
    ByteSpan item = ByteSpan(b).subspan(off, block_item_size(h));
    for (auto& r : w.res.records)
      if (r.offset == off) CHECK(std::search(item.begin(), item.end(), r.digest.begin(), r.digest.end()) == item.end());
  }
  // A scan names them by hashing: the same records as the writer's.
  PackReader scanned(w.pack, /*use_index_file=*/false);
  CHECK(scanned.damage().empty());
  check_all_read(scanned, w.objs);
  for (uint64_t off : blocks) CHECK(scanned.named_by_scan(off));
}

TEST_CASE("pack v2: a block whose table names its members (written before 2026-12-06) reads as before") {
  fx::TempDir dir;
  fx::Rng rng(11);
  std::vector<V2Obj> objs;
  std::vector<BlockMember> members;
  Bytes payload;
  for (int i = 0; i < 5; i++) {
    V2Obj o;
    o.raw = fx::make_content(rng, 300 + size_t(i) * 50, true);
    o.digest = sha256(o.raw);
    members.push_back({o.digest, uint32_t(o.raw.size())});
    payload.insert(payload.end(), o.raw.begin(), o.raw.end());
    objs.push_back(std::move(o));
  }
  BlockHeader h;
  h.codec = Codec::Raw; // flags 0: named
  h.count = uint32_t(members.size());
  h.raw_len = h.stored_len = uint32_t(payload.size());
  h.stored_xxh = xxh64(payload);
  Bytes table = encode_block_table(h, members);
  CHECK(table.size() == members.size() * kBlockMemberSize);
  h.table_xxh = xxh64(table);
  std::string p = dir / "named.hpak";
  int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  PackResult res;
  {
    PackWriter pw(fd, p, 3, kPackVersion2);
    pw.append_block_copy(h, members, table, payload);
    res = pw.finish();
  }
  ::close(fd);
  PackReader scanned(p, /*use_index_file=*/false);
  CHECK(scanned.damage().empty());
  check_all_read(scanned, objs);
  CHECK_FALSE(scanned.named_by_scan(res.records[0].offset)); // its table named them
  fx::write_file(index_path_for(p), encode_index(res.records, res.size, res.pack_sum, res.index_version()));
  PackReader indexed(p);
  CHECK(indexed.index_source() == PackReader::IndexSource::File);
  check_all_read(indexed, objs);
  // Its names are still checked against the index: a record naming member 0
  // by member 1's digest is refused.
  IndexRecord wrong = *indexed.find(objs[1].digest);
  wrong.member = 0;
  CHECK_THROWS_AS(indexed.read(wrong, /*verify_digest=*/false), Corrupt);
}

namespace {

// Small objects with large entries, an explicit close_block and a streamed
// object between them, with or without a dictionary; `helpers` > 0
// compresses the blocks on that many threads (compress_in_background).
// `outlive`: the writer is told spans outlive it (as gc does), and each large
// entry is passed from a buffer freed right after wait_hashed().
V2Pack write_mixed(const fx::TempDir& dir, const std::string& name, unsigned helpers, bool with_dict, bool outlive = false) {
  V2Pack w;
  w.pack = dir / name;
  fx::Rng rng(11);
  int fd = ::open(w.pack.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  PackWriter pw(fd, w.pack, 3);
  pw.hash_in_background(outlive);
  std::vector<Bytes> samples;
  Bytes joined;
  std::vector<size_t> sizes;
  for (int i = 0; i < 300; i++) {
    samples.push_back(fx::make_content(rng, 300 + rng.below(500), true));
    joined.insert(joined.end(), samples.back().begin(), samples.back().end());
    sizes.push_back(samples.back().size());
  }
  if (with_dict) pw.use_dictionary(zstd_train_dict(joined, sizes, 16384, 3));
  if (helpers) pw.compress_in_background(helpers);
  auto add = [&](Bytes raw) {
    V2Obj o{std::move(raw), {}};
    o.digest = sha256(o.raw);
    if (pw.is_small(o.raw.size())) {
      CHECK(pw.append_small(o.digest, o.raw));
    } else if (outlive) {
      auto own = std::make_unique<Bytes>(o.raw);
      pw.append(Kind::Blob, Codec::Raw, o.digest, own->size(), *own);
      pw.wait_hashed(); // before `own` goes: spoiling it now changes nothing written
      std::fill(own->begin(), own->end(), uint8_t(0xEE));
    } else {
      pw.append(Kind::Blob, Codec::Raw, o.digest, o.raw.size(), o.raw);
    }
    w.objs.push_back(std::move(o));
  };
  for (int i = 0; i < 1500; i++) {
    add(i % 97 == 0 ? fx::make_content(rng, 40000 + size_t(i), i % 2 == 0) : fx::make_content(rng, 50 + size_t(i % 400) * 9, i % 5 != 0));
    if (i == 700) pw.close_block();
    if (i == 900) {
      Bytes big = fx::make_content(rng, 300000, true);
      Digest d = sha256(big);
      pw.append_stream(Kind::Blob, Codec::Raw, d, big.size(), [&](const std::function<void(ByteSpan)>& sink) { sink(big); });
      w.objs.push_back({big, d});
    }
  }
  uint64_t blocks = pw.block_bytes();
  CHECK(blocks > 0);
  w.res = pw.finish();
  ::close(fd);
  return w;
}

} // namespace

TEST_CASE("pack v2: blocks compressed on helper threads make the same pack, byte for byte") {
  fx::TempDir dir;
  for (bool with_dict : {false, true}) {
    CAPTURE(with_dict);
    V2Pack one = write_mixed(dir, "one.hpak", 0, with_dict);
    size_t blocks = 0;
    for (auto& r : one.res.records) blocks += r.member == 0;
    CHECK(blocks >= 10);
    for (auto [helpers, outlive] : {std::pair{1u, false}, std::pair{3u, false}, std::pair{2u, true}}) {
      CAPTURE(helpers);
      CAPTURE(outlive);
      V2Pack bg = write_mixed(dir, "bg" + std::to_string(helpers) + ".hpak", helpers, with_dict, outlive);
      CHECK(fx::read_file(bg.pack) == fx::read_file(one.pack));
      CHECK(bg.res.file_sum == one.res.file_sum);
      REQUIRE(bg.res.records.size() == one.res.records.size());
      for (size_t i = 0; i < one.res.records.size(); i++) {
        CHECK(bg.res.records[i].digest == one.res.records[i].digest);
        CHECK(bg.res.records[i].offset == one.res.records[i].offset);
      }
      write_index(bg);
      PackReader r(bg.pack);
      CHECK(r.damage().empty());
      check_all_read(r, bg.objs);
    }
  }
}

namespace {
// The raw size of each zstd block of `frame`, in order (zstd's bufferless API).
std::vector<size_t> zstd_block_sizes(ByteSpan frame, size_t raw_len) {
  std::vector<size_t> sizes;
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> d(ZSTD_createDCtx(), ZSTD_freeDCtx);
  REQUIRE(!ZSTD_isError(ZSTD_decompressBegin(d.get())));
  Bytes out(raw_len);
  size_t src = 0, dst = 0;
  for (size_t need; (need = ZSTD_nextSrcSizeToDecompress(d.get())) != 0;) {
    REQUIRE(need <= frame.size() - src);
    const bool body = ZSTD_nextInputType(d.get()) == ZSTDnit_block || ZSTD_nextInputType(d.get()) == ZSTDnit_lastBlock;
    size_t got = ZSTD_decompressContinue(d.get(), out.data() + dst, out.size() - dst, frame.data() + src, need);
    REQUIRE(!ZSTD_isError(got));
    if (body) sizes.push_back(got);
    src += need, dst += got;
  }
  CHECK(dst == raw_len);
  return sizes;
}
} // namespace

TEST_CASE("pack v2: a block's frame ends a zstd block every 16 KiB of members, at a member's end; reads in any order give the members") {
  SUBCASE("block_cuts") {
    auto m = [](std::vector<uint32_t> lens) {
      std::vector<BlockMember> v;
      for (uint32_t l : lens) v.push_back({Digest{}, l});
      return v;
    };
    CHECK(block_cuts(m({10000, 10000, 10000, 3000}), 16384) == std::vector<size_t>{20000});
    CHECK(block_cuts(m({16384, 16384, 16384}), 16384) == std::vector<size_t>{16384, 32768}); // never at the end
    CHECK(block_cuts(m({5000, 5000}), 16384).empty());
    CHECK(block_cuts(m({}), 16384).empty());
  }
  fx::TempDir dir;
  V2Pack w = write_v2(dir);
  write_index(w);
  PackReader r(w.pack);
  // Every block's zstd blocks end where block_cuts says: at members' ends.
  std::set<uint64_t> offsets;
  for (auto& rec : w.res.records)
    if (rec.member != kNoMember) offsets.insert(rec.offset);
  REQUIRE(offsets.size() >= 2);
  size_t multi = 0;
  for (uint64_t off : offsets) {
    PackReader::Block bl = r.checked_block(off);
    if (bl.header.codec != Codec::Zstd) continue;
    std::vector<size_t> ends;
    size_t at = 0;
    for (size_t cut : block_cuts(bl.members, kBlockCutEvery)) ends.push_back(cut - at), at = cut;
    ends.push_back(bl.header.raw_len - at);
    CHECK(zstd_block_sizes(bl.payload, bl.header.raw_len) == ends);
    multi += ends.size() > 1;
  }
  CHECK(multi >= 2);
  // Reads that stop at a cut, go on in the same frame, restart after another
  // block's frame, and come back inside what is decoded.
  std::vector<std::vector<const V2Obj*>> by_block(offsets.size());
  for (auto& o : w.objs) {
    auto rec = r.find(o.digest);
    REQUIRE(rec);
    if (rec->member != kNoMember) by_block[size_t(std::distance(offsets.begin(), offsets.find(rec->offset)))].push_back(&o);
  }
  auto read_ok = [&](const V2Obj* o) { return r.read(*r.find(o->digest)) == o->raw; };
  auto& a = by_block[0];
  auto& b = by_block[1];
  CHECK(read_ok(a.front()));          // a prefix of a
  CHECK(read_ok(a[a.size() / 2]));    // on in a's frame
  CHECK(read_ok(b.front()));          // another frame
  CHECK(read_ok(a.back()));           // a again: from the start, whole
  CHECK(read_ok(a[1]));               // inside what is decoded
  CHECK(read_ok(b.back()));           // a's frame was last: b from the start
  for (auto it = b.rbegin(); it != b.rend(); ++it) CHECK(read_ok(*it));
  check_all_read(r, w.objs);
}

TEST_CASE("pack v2: damage behind a block's first cut costs the members behind it, never wrong bytes") {
  fx::TempDir dir;
  V2Pack w = write_v2(dir);
  write_index(w);
  Bytes bytes = fx::read_file(w.pack);
  uint64_t first_block = UINT64_MAX;
  for (auto& rec : w.res.records)
    if (rec.member != kNoMember) first_block = std::min(first_block, rec.offset);
  BlockHeader h = decode_block_header(ByteSpan(bytes).subspan(first_block), "x", first_block);
  REQUIRE(h.codec == Codec::Zstd);
  // A byte late in the frame flipped, and the stored checksum made to agree,
  // as a forger would: only the decoder can tell.
  const uint64_t payload = first_block + kBlockHeaderSize + uint64_t(h.count) * 4;
  PackReader clean(w.pack);
  REQUIRE(clean.checked_block(first_block).payload.data() - clean.checked_block(first_block).table.data() == int64_t(h.count) * 4);
  bytes[payload + h.stored_len - 20] ^= 0x5a;
  h.stored_xxh = xxh64(ByteSpan(bytes).subspan(payload, h.stored_len));
  encode_block_header(h, bytes.data() + first_block);
  fx::write_file(w.pack, bytes);
  PackReader r(w.pack);
  auto [good, bad] = tally_reads(r, w.objs, first_block, true);
  CHECK(good >= 1); // the members before the damaged zstd block still read
  CHECK(bad >= 1);
}
