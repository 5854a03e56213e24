// formats/pack_name: the pack, index and condemned names of packs/, built and
// parsed in one place; anything else is not a pack name.
#include <doctest/doctest.h>

#include "formats/pack_name.hpp"
#include "fixture_data.hpp"

using namespace hpak;
using namespace hpak::formats;

TEST_CASE("pack_name: names round-trip through the parser") {
  Digest d = fx::digest_filled(0xab);
  auto pack = parse_pack_file_name(pack_file_name(d));
  REQUIRE(pack);
  CHECK(pack->sum == d);
  CHECK(pack->kind == PackFileKind::Pack);
  CHECK_FALSE(pack->condemned);
  auto idx = parse_pack_file_name(index_file_name(d));
  REQUIRE(idx);
  CHECK(idx->kind == PackFileKind::Index);
  auto gone = parse_pack_file_name(index_file_name(d) + ".condemned");
  REQUIRE(gone);
  CHECK(gone->kind == PackFileKind::Index);
  CHECK(gone->condemned);
  CHECK(pack_index_name(pack_file_name(d)) == index_file_name(d));
  CHECK(is_pack_name(pack_file_name(d)));
  CHECK_FALSE(is_pack_name(index_file_name(d)));
  CHECK_FALSE(is_pack_name(pack_file_name(d) + ".condemned"));
}

TEST_CASE("pack_name: near misses are not pack names") {
  const std::string hex = to_hex(fx::digest_filled(0x5c));
  std::string upper = hex;
  for (auto& c : upper) c = char(toupper(c));
  for (const std::string& n : {"pack-" + upper + ".hpak", "pack-" + hex.substr(1) + ".hpak", "pack-" + hex + "0.hpak",
                               "Pack-" + hex + ".hpak", "pack-" + hex + ".hpak.old", "pack-" + hex + ".condemned",
                               "pack-" + hex + ".HPAK", "x" + ("pack-" + hex + ".hpak"), std::string(".hpak"), std::string("multi.midx"),
                               ".tmp-pack-" + hex + ".hpak-x1", std::string()})
    CHECK_MESSAGE(!parse_pack_file_name(n), n);
}
