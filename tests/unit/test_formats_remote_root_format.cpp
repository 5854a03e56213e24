// formats/remote_root_format: round trip and every rule of decode_remote_root
// (each deviation refused with a Corrupt, never accepted).
#include <doctest/doctest.h>

#include <string>

#include "base/error.hpp"
#include "formats/remote_root_format.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string hex64(char c) { return std::string(64, c); }

RemoteRoot sample() {
  RemoteRoot r;
  r.generation = 7;
  r.library = std::string(32, 'c');
  r.time = 1700000000;
  r.expires = 1700086400;
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
  refused("hpak-remote 3\ngeneration 1\nend\n"); // version
  refused("hpak-remote 2\ngeneration 1\nend\n"); // version 2 without its identity
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

TEST_CASE("remote root: version 2 names its library, time and expiry; version 1 is still read") {
  std::string text = encode_remote_root(sample());
  CHECK(text.rfind("hpak-remote 2\ngeneration 7\nlibrary " + std::string(32, 'c') + "\ntime 1700000000\nexpires 1700086400\n", 0) == 0);
  RemoteRoot back = decode_remote_root(bytes_of(text), "root");
  CHECK(back.version == 2);
  CHECK(back.library == std::string(32, 'c'));
  CHECK(back.time == 1700000000);
  CHECK(back.expires == 1700086400);
  RemoteRoot v1 = decode_remote_root(bytes_of("hpak-remote 1\ngeneration 3\ncatalog a " + hex64('1') + "\nend\n"), "root");
  CHECK(v1.version == 1);
  CHECK(v1.library.empty());
  CHECK(v1.generation == 3);
  RemoteRoot old = sample();
  old.version = 1;
  CHECK(encode_remote_root(old).rfind("hpak-remote 1\ngeneration 7\npack ", 0) == 0);
  const std::string head = "hpak-remote 2\ngeneration 1\n";
  refused(head + "library " + std::string(31, 'c') + "\ntime 1\nexpires 2\nend\n");
  refused(head + "library " + std::string(32, 'C') + "\ntime 1\nexpires 2\nend\n");
  refused(head + "library " + std::string(32, 'c') + "\nexpires 2\nend\n");
  refused(head + "library " + std::string(32, 'c') + "\ntime 1\nend\n");
  refused(head + "library " + std::string(32, 'c') + "\ntime 5\nexpires 4\nend\n"); // expires before it was published
  refused(head + "time 1\nlibrary " + std::string(32, 'c') + "\nexpires 2\nend\n");
  CHECK_NOTHROW(decode_remote_root(bytes_of(head + "library " + std::string(32, 'c') + "\ntime 5\nexpires 5\nend\n"), "root"));
}
