// core/pack_writer + core/pack_reader: packs written with PackWriter (plain,
// compressed, dictionary, streamed and mirrored entries) read back through the
// .hidx and through a scan; scan_pack resyncing past damage; index selection.
#include <cstring>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/pack/pack_reader.hpp"
#include "core/pack/pack_writer.hpp"
#include "core/pack/packer.hpp"
#include "base/zstd_codec.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

struct Obj {
  Kind kind = Kind::Blob;
  Bytes raw;
  Digest digest{};
};

struct Written {
  std::string pack, index;
  PackResult res;
  std::vector<Obj> objs;     // every distinct object, in write order
  Digest catalog_digest{};
  Catalog catalog;
};

// Writes a pack with raw, zstd, dictionary-compressed and streamed objects,
// an empty object, and a catalog naming them (mirrored), plus its index.
Written write_sample(const fx::TempDir& dir, const std::string& name = "p.hpak", uint64_t seed = 1) {
  Written w;
  w.pack = dir / name;
  w.index = index_path_for(w.pack);
  fx::Rng rng(seed);
  int fd = ::open(w.pack.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  PackWriter pw(fd, w.pack, 3, kPackVersion); // this file checks the format-1 layout (format 2: test_core_pack_v2.cpp)
  auto add = [&](Bytes raw, Codec codec, const ZstdDict* dict = nullptr) {
    Obj o;
    o.raw = std::move(raw);
    o.digest = sha256(o.raw);
    Bytes stored;
    if (codec == Codec::Raw) stored = o.raw;
    else zstd_compress(o.raw, 3, dict, stored);
    pw.append(Kind::Blob, codec, o.digest, o.raw.size(), stored);
    w.objs.push_back(std::move(o));
  };
  add(fx::make_content(rng, 3000, true), Codec::Zstd);
  add(fx::make_content(rng, 700, false), Codec::Raw);
  add(Bytes{}, Codec::Raw);
  add(fx::make_content(rng, 200000, true), Codec::Zstd); // several zstd blocks
  // A dictionary entry, and objects compressed with it.
  Bytes samples;
  std::vector<size_t> sizes;
  for (int i = 0; i < 300; i++) {
    Bytes s = fx::make_content(rng, 400 + rng.below(400), true);
    samples.insert(samples.end(), s.begin(), s.end());
    sizes.push_back(s.size());
  }
  Bytes dict_bytes = zstd_train_dict(samples, sizes, 16384, 3);
  REQUIRE_FALSE(dict_bytes.empty());
  ZstdDict dict(dict_bytes, 3);
  {
    Obj d;
    d.kind = Kind::Dict;
    d.raw = dict_bytes;
    d.digest = sha256(dict_bytes);
    pw.append(Kind::Dict, Codec::Raw, d.digest, dict_bytes.size(), dict_bytes);
    w.objs.push_back(std::move(d));
  }
  add(fx::make_content(rng, 900, true), Codec::ZstdDict, &dict);
  add(fx::make_content(rng, 1500, true), Codec::ZstdDict, &dict);
  // A streamed object: raw bytes in uneven chunks.
  {
    Obj o;
    o.raw = fx::make_content(rng, 123457, false);
    o.digest = sha256(o.raw);
    const IndexRecord& r = pw.append_stream(Kind::Blob, Codec::Raw, o.digest, o.raw.size(), [&](const std::function<void(ByteSpan)>& sink) {
      for (size_t pos = 0; pos < o.raw.size(); pos += 10007) sink(ByteSpan(o.raw).subspan(pos, std::min<size_t>(10007, o.raw.size() - pos)));
    });
    CHECK(r.stored_len == o.raw.size());
    w.objs.push_back(std::move(o));
  }
  // A streamed zstd object.
  {
    Obj o;
    o.raw = fx::make_content(rng, 300000, true);
    o.digest = sha256(o.raw);
    Bytes stored;
    zstd_compress(o.raw, 3, nullptr, stored);
    pw.append_stream(Kind::Blob, Codec::Zstd, o.digest, o.raw.size(), [&](const std::function<void(ByteSpan)>& sink) {
      for (size_t pos = 0; pos < stored.size(); pos += 999) sink(ByteSpan(stored).subspan(pos, std::min<size_t>(999, stored.size() - pos)));
    });
    w.objs.push_back(std::move(o));
  }
  add(fx::make_content(rng, 50, true), Codec::Raw); // after the streamed ones
  // The catalog: one file per blob.
  w.catalog.name = "sample";
  for (size_t i = 0; i < w.objs.size(); i++) {
    if (w.objs[i].kind != Kind::Blob) continue;
    Node n;
    n.type = NodeType::File;
    n.mode = 0644;
    n.size = w.objs[i].raw.size();
    n.path = w.catalog.keep("f" + std::to_string(100 + i));
    n.digest = w.objs[i].digest;
    w.catalog.nodes.push_back(n);
  }
  w.catalog_digest = append_catalog(pw, w.catalog, 3);
  w.res = pw.finish();
  ::close(fd);
  fx::write_file(w.index, encode_index(w.res.records, w.res.size, w.res.pack_sum));
  return w;
}

void check_reads_all(const PackReader& r, const Written& w) {
  for (auto& o : w.objs) {
    auto rec = r.find(o.digest);
    REQUIRE_MESSAGE(rec.has_value(), to_hex(o.digest));
    CHECK(rec->kind == o.kind);
    CHECK(rec->raw_len == o.raw.size());
    CHECK(r.read(*rec) == o.raw);
    Bytes streamed;
    r.read_stream(*rec, [&](ByteSpan c) { streamed.insert(streamed.end(), c.begin(), c.end()); });
    CHECK(streamed == o.raw);
    Bytes into(o.raw.size());
    r.read_into(*rec, into);
    CHECK(into == o.raw);
  }
  Catalog c = r.load_catalog();
  CHECK(c.name == "sample");
  CHECK(encode_catalog(c) == encode_catalog(w.catalog));
  CHECK(r.load_catalog("sample").nodes.size() == w.catalog.nodes.size());
  CHECK_THROWS_AS(r.load_catalog("other"), Error);
  CHECK(r.catalog_names() == std::vector<std::string>{"sample"});
}

} // namespace

TEST_CASE("pack writer: layout, trailer and result") {
  fx::TempDir dir("pw");
  Written w = write_sample(dir);
  Bytes b = fx::read_file(w.pack);
  CHECK(b.size() == w.res.size);
  CHECK(std::memcmp(b.data(), "HPAK", 4) == 0);
  Digest trailer;
  std::memcpy(trailer.data(), b.data() + b.size() - 32, 32);
  CHECK(trailer == w.res.pack_sum);
  CHECK(sha256(ByteSpan(b.data(), b.size() - 32)) == w.res.pack_sum); // streamed headers were re-hashed
  CHECK(sha256(b) == w.res.file_sum);
  Footer f = decode_footer(ByteSpan(b).subspan(b.size() - 64, 32), "x", 0);
  CHECK(f.entry_count == w.res.records.size());
  CHECK(w.res.records.size() == w.objs.size() + 2); // two catalog copies
  uint64_t raw_total = 0;
  for (auto& o : w.objs)
    if (o.kind == Kind::Blob) raw_total += o.raw.size();
  CHECK(f.raw_total == raw_total);
  CHECK(w.res.raw_total == raw_total);
  // Every record points at a valid entry header that agrees with it, in order.
  uint64_t expect_off = kPackHeaderSize;
  for (auto& r : w.res.records) {
    CHECK(r.offset == expect_off);
    EntryHeader h = decode_entry_header(ByteSpan(b).subspan(r.offset, kEntryHeaderSize), "x", r.offset);
    CHECK(h.digest == r.digest);
    CHECK(h.stored_len == r.stored_len);
    CHECK(h.raw_len == r.raw_len);
    CHECK(h.stored_xxh == xxh64(ByteSpan(b).subspan(r.offset + kEntryHeaderSize, r.stored_len)));
    expect_off += kEntryHeaderSize + r.stored_len;
  }
  CHECK(expect_off == b.size() - 64);
  // The catalog is stored twice, the second copy flagged as a mirror.
  int copies = 0;
  for (auto& r : w.res.records)
    if (r.kind == Kind::Catalog) {
      CHECK(r.digest == w.catalog_digest);
      EntryHeader h = decode_entry_header(ByteSpan(b).subspan(r.offset, kEntryHeaderSize), "x", r.offset);
      CHECK(h.eflags == (copies ? 1 : 0));
      copies++;
    }
  CHECK(copies == 2);
}

TEST_CASE("pack writer: duplicates are refused unless allowed") {
  fx::TempDir dir("pw");
  std::string p = dir / "d.hpak";
  int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  PackWriter pw(fd, p, 3);
  Bytes x = fx::to_bytes("hello");
  Digest d = sha256(x);
  CHECK_FALSE(pw.contains(d));
  pw.append(Kind::Blob, Codec::Raw, d, x.size(), x);
  CHECK(pw.contains(d));
  CHECK_THROWS_AS(pw.append(Kind::Blob, Codec::Raw, d, x.size(), x), Error);
  CHECK_THROWS_AS(pw.append_stream(Kind::Blob, Codec::Raw, d, x.size(), [&](auto& sink) { sink(x); }), Error);
  CHECK_NOTHROW(pw.append(Kind::Blob, Codec::Raw, d, x.size(), x, 0, true));
  // append_catalog of an identical catalog a second time adds nothing.
  Catalog c;
  c.name = "c";
  Digest cd = append_catalog(pw, c, 3);
  uint64_t before = pw.bytes_written();
  CHECK(append_catalog(pw, c, 3) == cd);
  CHECK(pw.bytes_written() == before);
  PackResult res = pw.finish();
  ::close(fd);
  CHECK(res.records.size() == 4);
  CHECK(res.size == fx::read_file(p).size());
}

TEST_CASE("pack writer: append_copy moves an entry between packs verbatim") {
  fx::TempDir dir("pw");
  Written w = write_sample(dir);
  PackReader src(w.pack);
  std::string p = dir / "copy.hpak";
  int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  PackResult res;
  {
    PackWriter pw(fd, p, 3, kPackVersion);
    for (uint64_t i = 0; i < src.index().count(); i++) {
      IndexRecord r = src.index().record_at(i);
      if (r.kind == Kind::Catalog || pw.contains(r.digest)) continue;
      pw.append_copy(r, src.checked_stored(r));
    }
    append_catalog(pw, w.catalog, 3);
    res = pw.finish();
  }
  ::close(fd);
  fx::write_file(index_path_for(p), encode_index(res.records, res.size, res.pack_sum));
  PackReader copy(p);
  CHECK(copy.index_source() == PackReader::IndexSource::File);
  check_reads_all(copy, w);
}

TEST_CASE("pack writer: hashing in the background gives the same pack, byte for byte") {
  fx::TempDir dir("pw");
  Written w = write_sample(dir);
  PackReader src(w.pack);
  // Large raw objects (written past the buffer) and many small copies
  // (several buffer swaps), all kept alive until finish() as promised.
  fx::Rng rng(9);
  std::vector<Bytes> big;
  for (int i = 0; i < 3; i++) big.push_back(fx::make_content(rng, (1 << 20) + 1000 * i, false));
  auto write = [&](const std::string& p, bool background) {
    int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    PackResult res;
    {
      PackWriter pw(fd, p, 3, kPackVersion);
      if (background) pw.hash_in_background();
      for (int round = 0; round < 40; round++) {
        for (uint64_t i = 0; i < src.index().count(); i++) {
          IndexRecord r = src.index().record_at(i);
          if (r.kind == Kind::Catalog) continue;
          pw.append_copy(r, src.checked_stored(r), /*allow_duplicate=*/true);
        }
        if (round % 13 == 0) {
          const Bytes& b = big[size_t(round / 13) % big.size()];
          pw.append(Kind::Blob, Codec::Raw, sha256(b), b.size(), b, 0, true);
        }
      }
      res = pw.finish();
    }
    ::close(fd);
    return res;
  };
  PackResult a = write(dir / "sync.hpak", false), b = write(dir / "async.hpak", true);
  CHECK(a.size > (4u << 20));
  CHECK(a.pack_sum == b.pack_sum);
  CHECK(a.file_sum == b.file_sum);
  CHECK(fx::read_file(dir / "sync.hpak") == fx::read_file(dir / "async.hpak"));
  CHECK(sha256(fx::read_file(dir / "async.hpak")) == b.file_sum);
}

TEST_CASE("pack reader: reads every object through the index and through a scan") {
  fx::TempDir dir("pr");
  Written w = write_sample(dir);
  SUBCASE("index file") {
    PackReader r(w.pack);
    CHECK(r.index_source() == PackReader::IndexSource::File);
    CHECK(r.index_problem().empty());
    CHECK(r.damage().empty());
    CHECK(r.level() == 3);
    check_reads_all(r, w);
  }
  SUBCASE("scan forced") {
    PackReader r(w.pack, false);
    CHECK(r.index_source() == PackReader::IndexSource::Scan);
    CHECK(r.damage().empty());
    check_reads_all(r, w);
    // The scanned index equals the written one, byte for byte.
    std::vector<IndexRecord> recs;
    for (uint64_t i = 0; i < r.index().count(); i++) recs.push_back(r.index().record_at(i));
    CHECK(encode_index(recs, r.bytes().size(), r.stored_trailer()) == fx::read_file(w.index));
  }
  SUBCASE("no index file") {
    ::unlink(w.index.c_str());
    PackReader r(w.pack);
    CHECK(r.index_source() == PackReader::IndexSource::Scan);
    CHECK(r.index_problem().find("no index file") != std::string::npos);
    check_reads_all(r, w);
  }
  SUBCASE("index of another pack") {
    fx::TempDir other_dir("pr2");
    Written other = write_sample(other_dir, "p.hpak", 2);
    fx::copy_file(other.index, w.index);
    PackReader r(w.pack);
    CHECK(r.index_source() == PackReader::IndexSource::Scan);
    CHECK_FALSE(r.index_problem().empty());
    check_reads_all(r, w);
  }
  SUBCASE("index of another pack of the same size") {
    // Same size, different bytes: only the trailer tie can tell.
    Bytes b = fx::read_file(w.pack);
    Digest fake = sha256(fx::to_bytes("other"));
    fx::write_file(w.index, encode_index(w.res.records, b.size(), fake));
    PackReader r(w.pack);
    CHECK(r.index_source() == PackReader::IndexSource::Scan);
    CHECK(r.index_problem().find("another pack") != std::string::npos);
    check_reads_all(r, w);
  }
  SUBCASE("damaged index file") {
    Bytes ib = fx::read_file(w.index);
    ib[100] ^= 0xff;
    fx::write_file(w.index, ib);
    PackReader r(w.pack);
    CHECK(r.index_source() == PackReader::IndexSource::Scan);
    CHECK(r.index_problem().find("checksum") != std::string::npos);
    check_reads_all(r, w);
  }
  SUBCASE("missing objects") {
    PackReader r(w.pack);
    CHECK_FALSE(r.find(sha256(fx::to_bytes("absent"))).has_value());
  }
}

TEST_CASE("pack reader: a record that disagrees with the entry is refused") {
  fx::TempDir dir("pr");
  Written w = write_sample(dir);
  PackReader r(w.pack);
  IndexRecord good = *r.find(w.objs[0].digest);
  auto refused = [&](IndexRecord bad) {
    CHECK_THROWS_AS(r.read(bad), Corrupt);
    CHECK_THROWS_AS(r.read_stream(bad, [](ByteSpan) {}), Error);
    CHECK_THROWS_AS(r.checked_stored(bad), Corrupt);
  };
  IndexRecord x = good;
  x.offset += 1;
  refused(x);
  x = good;
  x.offset = r.bytes().size() - 10;
  refused(x);
  x = good;
  x.offset = ~uint64_t(0) - 5;
  refused(x);
  x = good;
  x.stored_len = ~uint64_t(0);
  refused(x);
  x = good;
  x.raw_len += 1;
  refused(x);
  x = good;
  x.digest[3] ^= 1;
  refused(x);
  x = good;
  x.stored_xxh ^= 1;
  refused(x);
  x = good;
  x.kind = Kind::Catalog;
  refused(x);
}

TEST_CASE("pack reader: damaged payloads fail their own object only") {
  fx::TempDir dir("pr");
  Written w = write_sample(dir);
  Bytes b = fx::read_file(w.pack);
  // Flip one payload byte of each object in turn.
  for (size_t k = 0; k < w.res.records.size(); k++) {
    const IndexRecord& victim = w.res.records[k];
    if (victim.stored_len == 0) continue;
    CAPTURE(k);
    Bytes d = b;
    d[victim.offset + kEntryHeaderSize + victim.stored_len / 2] ^= 0x01;
    fx::write_file(w.pack, d);
    for (bool use_index : {true, false}) {
      PackReader r(w.pack, use_index);
      bool dict_lost = victim.kind == Kind::Dict;
      if (dict_lost) {
        // Design: a dictionary is stored once, so its loss takes the objects
        // compressed with it along; the reader must say so, not crash.
        bool reported = false;
        for (auto& dmg : r.damage()) reported |= dmg.why.find("dictionary unreadable") != std::string::npos;
        CHECK(reported);
      }
      for (auto& rec : w.res.records) {
        if (rec.offset == victim.offset) {
          CHECK_THROWS_AS(r.read(rec), Error);
          continue;
        }
        if (rec.kind == Kind::Catalog) continue;
        if (dict_lost && rec.codec == Codec::ZstdDict) {
          CHECK_THROWS_AS(r.read(rec), Error);
          continue;
        }
        auto found = r.find(rec.digest);
        REQUIRE(found.has_value());
        for (auto& o : w.objs)
          if (o.digest == rec.digest) CHECK(r.read(*found) == o.raw);
      }
      // The catalog survives damage to either copy.
      CHECK(encode_catalog(r.load_catalog()) == encode_catalog(w.catalog));
    }
  }
}

TEST_CASE("scan_pack: finds every entry of an intact pack") {
  fx::TempDir dir("scan");
  Written w = write_sample(dir);
  Bytes b = fx::read_file(w.pack);
  ScanResult s = scan_pack(b, "x");
  CHECK(s.problems.empty());
  CHECK(s.end == b.size() - 64);
  REQUIRE(s.records.size() == w.res.records.size());
  for (size_t i = 0; i < s.records.size(); i++) {
    CHECK(s.records[i].offset == w.res.records[i].offset);
    CHECK(s.records[i].digest == w.res.records[i].digest);
    CHECK(s.records[i].stored_len == w.res.records[i].stored_len);
  }
}

TEST_CASE("scan_pack: resyncs past a damaged entry header") {
  fx::TempDir dir("scan");
  Written w = write_sample(dir);
  const Bytes b = fx::read_file(w.pack);
  const auto& recs = w.res.records;
  for (size_t k = 0; k < recs.size(); k++) {
    for (size_t field : {size_t(0), size_t(5), size_t(9), size_t(30), size_t(60), size_t(66), size_t(70)}) {
      CAPTURE(k);
      CAPTURE(field);
      Bytes d = b;
      d[recs[k].offset + field] ^= 0x20;
      ScanResult s = scan_pack(d, "x");
      REQUIRE(s.problems.size() >= 1);
      CHECK(s.problems[0].offset == recs[k].offset);
      // Every other entry is found at its place; the damaged one is not.
      std::vector<uint64_t> found;
      for (auto& r : s.records) found.push_back(r.offset);
      for (size_t j = 0; j < recs.size(); j++) {
        bool present = std::find(found.begin(), found.end(), recs[j].offset) != found.end();
        CHECK(present == (j != k));
      }
      CHECK(s.records.size() == recs.size() - 1);
    }
  }
}

TEST_CASE("scan_pack: truncation and a lost footer") {
  fx::TempDir dir("scan");
  Written w = write_sample(dir);
  const Bytes b = fx::read_file(w.pack);
  for (size_t len = 0; len <= b.size(); len += (len < 200 ? 1 : 97)) {
    CAPTURE(len);
    ScanResult s = scan_pack(ByteSpan(b.data(), len), "x");
    // Entries found are exactly the complete ones, at their right offsets.
    size_t complete = 0;
    for (auto& r : w.res.records) complete += r.offset + kEntryHeaderSize + r.stored_len <= std::min<size_t>(len, b.size() - 64);
    CHECK(s.records.size() == complete);
    for (size_t i = 0; i < s.records.size(); i++) CHECK(s.records[i].offset == w.res.records[i].offset);
  }
}

TEST_CASE("index_path_for") {
  CHECK(index_path_for("a/env.hpak") == "a/env.hidx");
  CHECK(index_path_for("env.pack") == "env.pack.hidx");
  CHECK(index_path_for(".hpak") == ".hpak.hidx");
  CHECK(index_path_for("x.hpak.old") == "x.hpak.old.hidx");
}

// Streamed entries in one pass: the pack hash is computed while writing (or
// read back for just the patched entry), whatever the chunking, whether it is
// hashed on a helper thread, and even when the producer reuses its buffer.
TEST_CASE("pack writer: streamed entries keep the trailer right, on one thread or two") {
  for (bool background : {false, true}) {
    CAPTURE(background);
    fx::TempDir t("stream1");
    const std::string path = t / "s.hpak";
    fx::Rng rng(7);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    Fd guard(fd);
    PackWriter pw(fd, path, 3);
    if (background) pw.hash_in_background();
    std::vector<Bytes> objs;
    auto small = [&](size_t n) {
      objs.push_back(fx::make_content(rng, n, true));
      pw.append(Kind::Blob, Codec::Raw, sha256(objs.back()), objs.back().size(), objs.back());
    };
    // One reused buffer, overwritten after each chunk is handed over.
    auto stream_from_reused = [&](const Bytes& raw, size_t piece) {
      return [&raw, piece](const std::function<void(ByteSpan)>& sink) {
        Bytes buf(piece);
        for (size_t pos = 0; pos < raw.size(); pos += piece) {
          size_t n = std::min(piece, raw.size() - pos);
          std::copy_n(raw.begin() + long(pos), n, buf.begin());
          sink(ByteSpan(buf.data(), n));
          std::fill(buf.begin(), buf.end(), uint8_t(0xee));
        }
      };
    };
    small(3000);
    objs.push_back(fx::make_content(rng, (5u << 20) + 123, false));
    const Bytes& big = objs.back();
    pw.append_raw_stream(Kind::Blob, sha256(big), big.size(), xxh64(big), "big", stream_from_reused(big, 2u << 20));
    small(100);
    objs.push_back(fx::make_content(rng, 3u << 20, true));
    Bytes z;
    zstd_compress(objs.back(), 3, nullptr, z);
    pw.append_stream(Kind::Blob, Codec::Zstd, sha256(objs.back()), objs.back().size(), stream_from_reused(z, 700u << 10));
    small(5000);
    PackResult r = pw.finish();
    Bytes file = fx::read_file(path);
    REQUIRE(file.size() == r.size);
    CHECK(sha256(ByteSpan(file).first(file.size() - 32)) == r.pack_sum);
    CHECK(Digest{} != r.pack_sum);
    CHECK(std::equal(r.pack_sum.begin(), r.pack_sum.end(), file.end() - 32));
    CHECK(sha256(file) == r.file_sum);
    PackReader reader(path, /*use_index_file=*/false, /*check_trailer=*/true, Follow::NoLinks);
    for (const Bytes& o : objs) {
      auto rec = reader.find(sha256(o));
      REQUIRE(rec);
      CHECK(reader.read(*rec) == o);
    }
  }
}

TEST_CASE("pack writer: a raw stream whose bytes changed since they were hashed is refused") {
  fx::TempDir t("stream2");
  const std::string path = t / "c.hpak";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  Fd guard(fd);
  PackWriter pw(fd, path, 3);
  Bytes before(1u << 20, 'a'), after = before;
  after[12345] = 'b';
  std::string e = fx::error_of([&] {
    pw.append_raw_stream(Kind::Blob, sha256(before), before.size(), xxh64(before), "dir/model.bin", [&](auto& sink) { sink(after); });
  });
  CHECK(e == "'dir/model.bin' changed while being packed (its bytes differ from those hashed a moment before)");
  Bytes shorter(before.begin(), before.end() - 1);
  PackWriter pw2(fd, path, 3);
  e = fx::error_of([&] {
    pw2.append_raw_stream(Kind::Blob, sha256(before), before.size(), xxh64(before), "x", [&](auto& sink) { sink(shorter); });
  });
  CHECK(e.find("changed while being packed") != std::string::npos);
}

TEST_CASE("pack reader: check_every_read checks the SHA-256 of the bytes it hands out, whatever the file became") {
  fx::TempDir dir("pr");
  for (bool checked : {false, true}) {
    CAPTURE(checked);
    Written w = write_sample(dir, checked ? "checked.hpak" : "plain.hpak");
    const Obj& o = w.objs[1]; // 700 bytes, stored raw
    PackReader r(w.pack);
    if (checked) r.check_every_read();
    auto rec = r.find(o.digest);
    REQUIRE(rec);
    CHECK(r.read(*rec, /*verify_digest=*/false) == o.raw);
    // The file's owner rewrites the object in place while it is mapped:
    // other bytes, its entry header's and its index record's checksum
    // recomputed (what another member can do to her pack of a shared library).
    Bytes evil = o.raw;
    for (auto& c : evil) c ^= 0x5a;
    Fd pf(::open(w.pack.c_str(), O_WRONLY | O_CLOEXEC));
    REQUIRE(pf);
    pwrite_all(pf.get(), evil, off_t(rec->offset + kEntryHeaderSize), w.pack);
    EntryHeader h = decode_entry_header(ByteSpan(fx::read_file(w.pack)).subspan(rec->offset, kEntryHeaderSize), w.pack, rec->offset);
    h.stored_xxh = xxh64(evil);
    uint8_t hdr[kEntryHeaderSize];
    encode_entry_header(h, hdr);
    pwrite_all(pf.get(), ByteSpan(hdr, sizeof hdr), off_t(rec->offset), w.pack);
    Bytes idx = fx::read_file(w.index);
    IndexView v(idx, w.index);
    uint64_t i = *v.find(o.digest);
    Fd xf(::open(w.index.c_str(), O_WRONLY | O_CLOEXEC));
    REQUIRE(xf);
    uint64_t x = h.stored_xxh;
    pwrite_all(xf.get(), ByteSpan(reinterpret_cast<const uint8_t*>(&x), 8),
               off_t(kIndexHeaderSize + 1024 + 32 * v.count() + kIndexRecordSize * i + 24), w.index);
    auto again = r.find(o.digest);
    REQUIRE(again);
    if (!checked) {
      CHECK(r.read(*again, false) == evil); // the hazard: a mapping follows the file
      continue;
    }
    CHECK_THROWS_WITH_AS(r.read(*again, false), doctest::Contains("does not match its name"), Corrupt);
    CHECK_THROWS_WITH_AS(r.read_stream(*again, [](ByteSpan) {}, false), doctest::Contains("does not match its name"), Corrupt);
    CHECK_THROWS_WITH_AS(r.stored_copy_checked(*again), doctest::Contains("does not match its name"), Corrupt);
    // Another object, untouched, still reads.
    auto other = r.find(w.objs[0].digest);
    REQUIRE(other);
    CHECK(r.read(*other, false) == w.objs[0].raw);
    CHECK(r.stored_copy_checked(*other).size() == other->stored_len);
  }
}

TEST_CASE("pack reader: a pack truncated while mapped fails its reads with a Corrupt saying so, never SIGBUS") {
  fx::TempDir dir("pwshrink");
  Written w = write_sample(dir);
  PackReader r(w.pack);
  check_reads_all(r, w); // every page read once: cached pages must not hide the truncation
  REQUIRE(::truncate(w.pack.c_str(), 4096) == 0);
  int failed = 0;
  for (auto& o : w.objs) {
    auto rec = r.find(o.digest);
    REQUIRE(rec);
    if (rec->offset + rec->stored_len <= 4096) continue; // still in the file
    try {
      Bytes got = r.read(*rec, false);
      FAIL("read of " << to_hex(o.digest) << " past the new end succeeded");
    } catch (const Corrupt& e) {
      INFO(std::string(e.what()));
      CHECK(std::string(e.what()).find("shrank") != std::string::npos);
      failed++;
    }
  }
  CHECK(failed >= 5);
  CHECK(r.map().shrunk());
}

TEST_CASE("pack reader: read_pread returns what read() returns, with the same checks, through a descriptor") {
  fx::TempDir dir("prpread");
  Written w = write_sample(dir);
  PackReader r(w.pack);
  Fd fd(::open(w.pack.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  Bytes stored, raw; // reused from read to read, as gc's mark does
  for (auto& o : w.objs) {
    auto rec = r.find(o.digest);
    REQUIRE(rec);
    ByteSpan got = r.read_pread(fd.get(), *rec, stored, raw);
    CHECK(Bytes(got.begin(), got.end()) == o.raw);
  }
  auto cat = r.find(w.catalog_digest);
  REQUIRE(cat);
  ByteSpan c = r.read_pread(fd.get(), *cat, stored, raw);
  CHECK(Bytes(c.begin(), c.end()) == r.read(*cat));

  // A record its entry header does not match.
  IndexRecord wrong = *r.find(w.objs[0].digest);
  wrong.raw_len += 1;
  CHECK_THROWS_WITH_AS(r.read_pread(fd.get(), wrong, stored, raw), doctest::Contains("does not match the index"), Corrupt);
  // One stored byte flipped: the stored checksum fails (as read() fails).
  const Obj& big = w.objs[3]; // 200,000 bytes, zstd
  auto rec = r.find(big.digest);
  REQUIRE(rec);
  const off_t at = off_t(rec->offset + kEntryHeaderSize + rec->stored_len / 2);
  uint8_t b = 0;
  REQUIRE(::pread(fd.get(), &b, 1, at) == 1);
  b ^= 0xff;
  Fd wf(::open(w.pack.c_str(), O_WRONLY | O_CLOEXEC));
  REQUIRE(wf);
  pwrite_all(wf.get(), ByteSpan(&b, 1), at, w.pack);
  CHECK_THROWS_WITH_AS(r.read_pread(fd.get(), *rec, stored, raw), doctest::Contains("fail their checksum"), Corrupt);
  CHECK_THROWS_AS(r.read(*rec), Corrupt);
  // The file cut short after it was opened: the read says so, and the
  // objects before the cut still read.
  auto last = r.find(w.objs.back().digest);
  REQUIRE(last);
  REQUIRE(::truncate(w.pack.c_str(), off_t(last->offset + 10)) == 0);
  CHECK_THROWS_WITH_AS(r.read_pread(fd.get(), *last, stored, raw), doctest::Contains("shorter"), Corrupt);
  auto first = r.find(w.objs[0].digest);
  REQUIRE(first);
  ByteSpan again = r.read_pread(fd.get(), *first, stored, raw);
  CHECK(Bytes(again.begin(), again.end()) == w.objs[0].raw);
}

// Flips the byte at `at` of `path`.
static void flip_byte(const std::string& path, off_t at) {
  Fd f(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  REQUIRE(f);
  uint8_t b = 0;
  REQUIRE(::pread(f.get(), &b, 1, at) == 1);
  b ^= 0x5a;
  pwrite_all(f.get(), ByteSpan(&b, 1), at, path);
}

TEST_CASE("pack reader: check_pread reads an entry above kPreadWhole in pieces, with read()'s results and messages") {
  fx::TempDir dir("prpieces");
  const std::string pack = dir / "big.hpak";
  fx::Rng rng(7);
  Bytes text = fx::make_content(rng, 9u << 20, true), noise = fx::make_content(rng, 5u << 20, false);
  {
    int fd = ::open(pack.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    PackWriter pw(fd, pack, 3, kPackVersion);
    Bytes stored;
    zstd_compress(text, 3, nullptr, stored);
    pw.append(Kind::Blob, Codec::Zstd, sha256(text), text.size(), stored);
    pw.append(Kind::Blob, Codec::Raw, sha256(noise), noise.size(), noise);
    pw.finish();
    ::close(fd);
  }
  PackReader r(pack, /*use_index_file=*/false);
  Fd fd = r.open_same_file(Follow::Links);
  REQUIRE(fd);
  Bytes stored, raw;
  auto zrec = r.find(sha256(text)), rrec = r.find(sha256(noise));
  REQUIRE(zrec);
  REQUIRE(rrec);
  CHECK(r.check_pread(fd.get(), *zrec, stored, raw).raw_len == text.size());
  CHECK(r.check_pread(fd.get(), *rrec, stored, raw).stored_len == noise.size());
  CHECK(stored.capacity() <= PackReader::kPreadWhole); // what it held: pieces, not the entries
  CHECK(raw.capacity() <= PackReader::kPreadWhole);
  // A stored byte flipped in each: the stored checksum fails, as read() says.
  flip_byte(pack, off_t(zrec->offset + kEntryHeaderSize + zrec->stored_len / 2));
  flip_byte(pack, off_t(rrec->offset + kEntryHeaderSize + rrec->stored_len - 1));
  for (const IndexRecord& rec : {*zrec, *rrec}) {
    std::string by_read;
    try {
      r.read(rec);
    } catch (const Corrupt& e) {
      by_read = e.what();
    }
    CHECK(by_read.find("fail their checksum") != std::string::npos);
    CHECK_THROWS_WITH_AS(r.check_pread(fd.get(), rec, stored, raw), by_read.c_str(), Corrupt);
  }
}
