// formats/remote_root_format: round trip and every rule of decode_remote_root
// (each deviation refused with a Corrupt, never accepted).
#include <doctest/doctest.h>

#include <string>

#include "core/util/error.hpp"
#include "formats/remote_root_format.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string hex64(char c) { return std::string(64, c); }

RemoteRoot sample() {
  RemoteRoot r;
  r.generation = 7;
  r.packs.push_back({"pack-" + hex64('b') + ".hpak", 1234, *digest_from_hex(hex64('1')), 99});
  r.packs.push_back({"pack-" + hex64('a') + ".hpak", 5, *digest_from_hex(hex64('2')), 56});
  r.catalogs.push_back({"py311", *digest_from_hex(hex64('3'))});
  r.catalogs.push_back({"env@x", *digest_from_hex(hex64('4'))});
  return r;
}

void refused(const std::string& text) {
  Bytes b = bytes_of(text);
  CHECK_THROWS_AS(decode_remote_root(b, "root"), Corrupt);
}

} // namespace

TEST_CASE("remote root: round trip, sorted") {
  std::string text = encode_remote_root(sample());
  RemoteRoot back = decode_remote_root(bytes_of(text), "root");
  CHECK(back.generation == 7);
  REQUIRE(back.packs.size() == 2);
  CHECK(back.packs[0].name == "pack-" + hex64('a') + ".hpak");
  CHECK(back.packs[1].size == 1234);
  CHECK(back.packs[1].index_size == 99);
  REQUIRE(back.catalogs.size() == 2);
  CHECK(back.catalogs[0].name == "env@x");
  CHECK(encode_remote_root(back) == text);
  CHECK(text.substr(text.size() - 4) == "end\n");
}

TEST_CASE("remote root: deviations are refused") {
  std::string good = encode_remote_root(sample());
  refused("");
  refused(good.substr(0, good.size() - 4));     // no end line
  refused(good.substr(0, good.size() - 1));     // no final newline
  refused(good + "x\n");                         // after end
  refused("hpak-remote 2\ngeneration 1\nend\n"); // version
  refused("hpak-remote 1\ngeneration 01\nend\n");
  refused("hpak-remote 1\ngeneration -1\nend\n");
  refused("hpak-remote 1\ngeneration 99999999999999999999\nend\n");
  refused("hpak-remote 1\ngeneration 1\npack ../x 1 " + hex64('1') + " 1\nend\n");
  refused("hpak-remote 1\ngeneration 1\npack pack-" + hex64('A') + ".hpak 1 " + hex64('1') + " 1\nend\n");
  refused("hpak-remote 1\ngeneration 1\npack pack-" + hex64('a') + ".hpak 1 " + hex64('1') + "\nend\n");
  refused("hpak-remote 1\ngeneration 1\ncatalog ../etc " + hex64('1') + "\nend\n");
  refused("hpak-remote 1\ngeneration 1\ncatalog a " + hex64('1') + "\ncatalog a " + hex64('1') + "\nend\n");
  refused("hpak-remote 1\ngeneration 1\ncatalog a " + hex64('1') + "\npack pack-" + hex64('a') + ".hpak 1 " + hex64('1') +
          " 1\nend\n");
  refused("hpak-remote 1\ngeneration 1\ncatalog  a " + hex64('1') + "\nend\n");
  CHECK_NOTHROW(decode_remote_root(bytes_of("hpak-remote 1\ngeneration 0\nend\n"), "root"));
}

TEST_CASE("remote root: pack names") {
  CHECK(is_pack_name("pack-" + hex64('0') + ".hpak"));
  CHECK_FALSE(is_pack_name("pack-" + hex64('0') + ".hidx"));
  CHECK_FALSE(is_pack_name("pack-" + hex64('0').substr(1) + ".hpak"));
  CHECK(pack_index_name("pack-" + hex64('0') + ".hpak") == "pack-" + hex64('0') + ".hidx");
}

TEST_CASE("remote root: a signature is split off at its armor line") {
  std::string text = encode_remote_root(sample());
  std::string sig = "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n";
  Bytes signed_root = bytes_of(text + sig);
  RemoteRootParts parts = split_remote_root(signed_root);
  CHECK(std::string(parts.text.begin(), parts.text.end()) == text);
  CHECK(parts.signature == sig);
  CHECK(decode_remote_root(parts.text, "root").generation == 7);
  Bytes plain = bytes_of(text);
  RemoteRootParts none = split_remote_root(plain);
  CHECK(none.text.size() == text.size());
  CHECK(none.signature.empty());
  // The whole signed root is not a root: a client that ignores the split refuses it.
  CHECK_THROWS_AS(decode_remote_root(signed_root, "root"), Corrupt);
}
