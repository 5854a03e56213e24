// Catalog entries stored against a base catalog (formats::Codec::ZstdBase):
// read back with the base in the same pack, from a base source, and refused
// cleanly when the base is missing, is the entry itself, is not a catalog, is
// itself stored against another, or is not the base the frame was made with.
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

// Catalog-like bytes: a digest table in which `changed` of every 10 entries
// differ from seed 1's (what two environments sharing 90% look like).
Bytes catalog_like(uint64_t seed, size_t entries = 2000) {
  Bytes out;
  for (size_t i = 0; i < entries; i++) {
    Bytes name = {uint8_t('p'), uint8_t(i), uint8_t(i >> 8)};
    if (seed != 1 && i % 10 == 0) name.push_back(uint8_t(seed));
    Digest d = sha256(name);
    out.insert(out.end(), d.begin(), d.end());
    out.insert(out.end(), name.begin(), name.end());
  }
  return out;
}

Bytes against(const Digest& base_digest, ByteSpan raw, ByteSpan base) {
  Bytes frame;
  zstd_compress_against(raw, base, 3, frame);
  Bytes stored(base_digest.begin(), base_digest.end());
  stored.insert(stored.end(), frame.begin(), frame.end());
  return stored;
}

Bytes compressed(ByteSpan raw) {
  Bytes out;
  zstd_compress(raw, 3, nullptr, out);
  return out;
}

struct Built {
  std::string path;
  Digest x{}, y{};
  Bytes x_raw, y_raw;
};

// A pack: catalog X stored whole (unless `x_whole` is false), then catalog Y
// whose stored bytes `y_stored(x digest, x raw, y raw)` gives, as ZstdBase.
template <class F> Built build(const fx::TempDir& dir, const std::string& name, F y_stored, bool with_x = true, Kind x_kind = Kind::Catalog) {
  Built b;
  b.path = dir / name;
  b.x_raw = catalog_like(1);
  b.y_raw = catalog_like(2);
  b.x = sha256(b.x_raw);
  b.y = sha256(b.y_raw);
  int fd = ::open(b.path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  PackWriter w(fd, b.path, 3);
  if (with_x) w.append(x_kind, Codec::Zstd, b.x, b.x_raw.size(), compressed(b.x_raw));
  Bytes ys = y_stored(b);
  w.append(Kind::Catalog, Codec::ZstdBase, b.y, b.y_raw.size(), ys);
  w.finish();
  ::close(fd);
  return b;
}

Bytes read_y(const PackReader& p, const Digest& y) {
  auto i = p.index().find(y);
  REQUIRE(i);
  return p.read(p.index().record_at(*i));
}

void expect_refused(const PackReader& p, const Digest& y, const std::string& why) {
  try {
    read_y(p, y);
    FAIL("read; expected: " << why);
  } catch (const Error& e) {
    CHECK_MESSAGE(std::string(e.what()).find(why) != std::string::npos, e.what());
  }
}

} // namespace

TEST_CASE("catalog stored against a base: read with its base") {
  fx::TempDir dir;
  Built b = build(dir, "ok.hpak", [](const Built& k) { return against(k.x, k.y_raw, k.x_raw); });
  PackReader p(b.path);
  CHECK(read_y(p, b.y) == b.y_raw);
  // Much smaller than stored alone: most of it is in the base.
  auto i = p.index().find(b.y);
  IndexRecord r = p.complete(p.index().record_at(*i));
  CHECK(r.codec == Codec::ZstdBase);
  CHECK(r.stored_len * 3 < compressed(b.y_raw).size());
  CHECK(PackReader::base_of(p.checked_stored(r)) == b.x);
  REQUIRE(p.read_base_catalog(b.x));
  CHECK(*p.read_base_catalog(b.x) == b.x_raw);
  CHECK_FALSE(p.read_base_catalog(sha256(Bytes{1})));
}

TEST_CASE("catalog stored against a base: the base elsewhere") {
  fx::TempDir dir;
  Built b = build(dir, "alone.hpak", [](const Built& k) { return against(k.x, k.y_raw, k.x_raw); }, /*with_x=*/false);
  PackReader p(b.path);
  expect_refused(p, b.y, "which this pack does not hold");
  int asked = 0;
  p.set_base_source([&](const Digest& d) {
    asked++;
    CHECK(d == b.x);
    return b.x_raw;
  });
  CHECK(read_y(p, b.y) == b.y_raw);
  CHECK(asked == 1);
  // A source that hands other bytes: the frame does not decode to Y.
  p.set_base_source([&](const Digest&) { return catalog_like(3); });
  CHECK_THROWS_AS(read_y(p, b.y), Error);
}

TEST_CASE("catalog stored against a base: hostile bases are refused") {
  fx::TempDir dir;
  SUBCASE("against itself") {
    Built b = build(dir, "self.hpak", [](const Built& k) { return against(k.y, k.y_raw, k.x_raw); });
    expect_refused(PackReader(b.path), b.y, "is stored against itself");
  }
  SUBCASE("against a blob") {
    Built b = build(dir, "blob.hpak", [](const Built& k) { return against(k.x, k.y_raw, k.x_raw); }, true, Kind::Blob);
    expect_refused(PackReader(b.path), b.y, "which this pack does not hold");
  }
  SUBCASE("against a catalog stored against another") {
    // X itself is ZstdBase (against some Z): one level only.
    std::string path = dir / "chain.hpak";
    Bytes z_raw = catalog_like(5), x_raw = catalog_like(1), y_raw = catalog_like(2);
    Digest z = sha256(z_raw), x = sha256(x_raw), y = sha256(y_raw);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    {
      PackWriter w(fd, path, 3);
      w.append(Kind::Catalog, Codec::Zstd, z, z_raw.size(), compressed(z_raw));
      w.append(Kind::Catalog, Codec::ZstdBase, x, x_raw.size(), against(z, x_raw, z_raw));
      w.append(Kind::Catalog, Codec::ZstdBase, y, y_raw.size(), against(x, y_raw, x_raw));
      w.finish();
    }
    ::close(fd);
    PackReader p(path);
    CHECK(read_y(p, x) == x_raw); // one level reads
    expect_refused(p, y, "is itself stored against another catalog");
  }
  SUBCASE("a frame made against another base") {
    Built b = build(dir, "other.hpak", [](const Built& k) { return against(k.x, k.y_raw, catalog_like(7)); });
    CHECK_THROWS_AS(read_y(PackReader(b.path), b.y), Error);
  }
  SUBCASE("no room for the base's digest") {
    Built b = build(dir, "short.hpak", [](const Built& k) { return Bytes(k.x.begin(), k.x.begin() + 20); });
    PackReader p(b.path); // no .hidx: a scan, which takes the header for damage
    CHECK_FALSE(p.index().find(b.y));
    CHECK_FALSE(p.damage().empty());
  }
}

namespace {

// A catalog of `n` files; with `seed` != 1, every 10th file's content differs.
Catalog files_catalog(const std::string& name, uint64_t seed, int n = 2000) {
  Catalog c;
  c.name = name;
  for (int i = 0; i < n; i++) {
    Node f;
    f.type = NodeType::File;
    f.mode = 0644;
    char path[32];
    snprintf(path, sizeof path, "lib/f%05d.py", i);
    f.path = c.keep(path);
    std::string content = "content " + std::to_string(i) + (seed != 1 && i % 10 == 0 ? " v" + std::to_string(seed) : "");
    f.digest = sha256(Bytes(content.begin(), content.end()));
    f.size = content.size();
    c.nodes.push_back(f);
  }
  Node lib;
  lib.type = NodeType::Dir;
  lib.mode = 0755;
  lib.path = "lib";
  c.nodes.insert(c.nodes.begin(), lib);
  return c;
}

CatalogBase base_of_catalog(const Catalog& c) {
  Bytes raw = encode_catalog(c, c.version);
  return {sha256(raw), raw};
}

// The codecs of the copies of `d` in the pack at `path`, in pack order.
std::vector<Codec> copies(const std::string& path, const Digest& d, const PackReader::BaseSource& bases = {}) {
  PackReader p(path);
  p.set_base_source(bases);
  std::vector<Codec> out;
  for (const IndexRecord& r : p.catalog_records())
    if (r.digest == d) {
      out.push_back(r.codec);
      CHECK(sha256(p.read(r)) == d); // every copy reads, the mirror through its base
    }
  return out;
}

} // namespace

TEST_CASE("append_catalog: the mirror against a base when it pays, never against itself") {
  fx::TempDir dir;
  const Catalog a = files_catalog("a", 1), b = files_catalog("b", 2), other = files_catalog("x", 1, 300);
  const CatalogBase base = base_of_catalog(a);
  auto write = [&](const std::string& name, const Catalog& c, const std::vector<CatalogBase>& bases, std::optional<Digest>* used) {
    std::string path = dir / name;
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    Digest d;
    {
      PackWriter w(fd, path, 3);
      d = append_catalog(w, c, 3, bases, used);
      w.finish();
    }
    ::close(fd);
    return std::make_pair(path, d);
  };
  SUBCASE("a similar base: the first copy alone, the mirror against it") {
    std::optional<Digest> used;
    auto [path, d] = write("b.hpak", b, {base_of_catalog(other), base}, &used);
    REQUIRE(used);
    CHECK(*used == base.digest); // the best of the candidates
    CHECK(copies(path, d, [&](const Digest& x) {
            REQUIRE(x == base.digest);
            return base.raw;
          }) == std::vector<Codec>{Codec::Zstd, Codec::ZstdBase});
  }
  SUBCASE("itself as a candidate (the same catalog added again): both copies alone") {
    std::optional<Digest> used;
    auto [path, d] = write("a.hpak", a, {base}, &used);
    CHECK(d == base.digest);
    CHECK_FALSE(used);
    CHECK(copies(path, d) == std::vector<Codec>{Codec::Zstd, Codec::Zstd});
  }
  SUBCASE("an unrelated base does not pay: both copies alone") {
    std::optional<Digest> used;
    auto [path, d] = write("x.hpak", b, {base_of_catalog(other)}, &used);
    CHECK_FALSE(used);
    CHECK(copies(path, d) == std::vector<Codec>{Codec::Zstd, Codec::Zstd});
  }
  SUBCASE("a candidate whose bytes are not its digest's is no base") {
    CatalogBase lying = base;
    lying.raw.back() ^= 1;
    std::optional<Digest> used;
    write("lie.hpak", b, {lying}, &used);
    CHECK_FALSE(used);
  }
}
