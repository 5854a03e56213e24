// SSHSIG encoding and parsing (core/trust/sshsig.hpp) against fixed vectors made by
// OpenSSH 9.2 (`ssh-keygen -t ed25519 -N '' -C test@hpak`, then
// `ssh-keygen -Y sign -f k -n hpak msg` with msg = "hello\n"). Ed25519 is
// deterministic, so hpak must write the very same signature, byte for byte.
#include <doctest/doctest.h>

#include <ctime>

#include "core/trust/sshsig.hpp"
#include "base/error.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::sshsig;

namespace {

const std::string kKey = R"(-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACAX5++YUJVjAv6BoytRy62wE3CQidF/gWH1tsvap8mU3QAAAJCQ2VAukNlQ
LgAAAAtzc2gtZWQyNTUxOQAAACAX5++YUJVjAv6BoytRy62wE3CQidF/gWH1tsvap8mU3Q
AAAEDQssN5d+QvHeBjCZY2IGPrkfluasjXFjcw6CXLX+v6gRfn75hQlWMC/oGjK1HLrbAT
cJCJ0X+BYfW2y9qnyZTdAAAACXRlc3RAaHBhawECAwQ=
-----END OPENSSH PRIVATE KEY-----
)";
const std::string kPub = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBfn75hQlWMC/oGjK1HLrbATcJCJ0X+BYfW2y9qnyZTd test@hpak";
const std::string kFingerprint = "SHA256:uH91EH1FmL5s6o4uynPbVlnhOckNEpJx8apq0qwdvFI";
const std::string kSig = R"(-----BEGIN SSH SIGNATURE-----
U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAgF+fvmFCVYwL+gaMrUcutsBNwkI
nRf4Fh9bbL2qfJlN0AAAAEaHBhawAAAAAAAAAGc2hhNTEyAAAAUwAAAAtzc2gtZWQyNTUx
OQAAAEDt/UZ0YXfO00MIxvm8HD7t8uxcr4KD9Xq+13CAT1a6VPKD1qHkM/NkmXFoF8xQJk
N3DY6N8TTFkByvszEvqkIN
-----END SSH SIGNATURE-----
)";
// An unrelated key (the public half of another ssh-keygen key).
const std::string kOtherPub = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBfn75hQlWMC/oGjK1HLrbATcJCJ0X+BYfW2y9qnyZTe";

Bytes msg() { return Bytes{'h', 'e', 'l', 'l', 'o', '\n'}; }
auto hasher(const Bytes& m) {
  return [m](const std::string& alg) { return hash_message(alg, m); };
}
} // namespace

TEST_CASE("sshsig: base64 round trip and RFC 4648 vectors") {
  CHECK(base64_encode(Bytes{}) == "");
  CHECK(base64_encode(Bytes{'f'}) == "Zg==");
  CHECK(base64_encode(Bytes{'f', 'o'}) == "Zm8=");
  CHECK(base64_encode(Bytes{'f', 'o', 'o', 'b', 'a', 'r'}) == "Zm9vYmFy");
  CHECK(*base64_decode("Zm9v\nYmE=") == Bytes{'f', 'o', 'o', 'b', 'a'});
  CHECK_FALSE(base64_decode("Zm9v!"));
  CHECK_FALSE(base64_decode("Zg==Zg"));
  Bytes all(256);
  for (int i = 0; i < 256; i++) all[size_t(i)] = uint8_t(i);
  CHECK(*base64_decode(base64_encode(all)) == all);
}

TEST_CASE("sshsig: an OpenSSH private key parses; its fingerprint is ssh-keygen -l's") {
  auto k = parse_private_key(kKey, "k");
  REQUIRE(k);
  CHECK(k->comment == "test@hpak");
  CHECK(k->pub.fingerprint() == kFingerprint);
  CHECK(k->pub.blob == parse_public_key_line(kPub, "k.pub").blob);
  CHECK(fx::error_of([] { parse_private_key("not a key", "x"); }).find("not an OpenSSH private key") != std::string::npos);
}

TEST_CASE("sshsig: hpak's signature is ssh-keygen's, byte for byte, 70-column armor") {
  auto k = parse_private_key(kKey, "k");
  REQUIRE(k);
  std::string mine = armor(sign(*k, "hpak", hash_message("sha512", msg())));
  CHECK(mine == kSig);
}

TEST_CASE("sshsig: ssh-keygen's signature parses and verifies; tampering is caught") {
  Signature s = parse_signature(dearmor(kSig, "msg.sig"), "msg.sig");
  CHECK(s.ns == "hpak");
  CHECK(s.hash_alg == "sha512");
  CHECK(s.key.fingerprint() == kFingerprint);
  CHECK(signature_valid(s, hash_message("sha512", msg())));
  Bytes other = msg();
  other[0] = 'H';
  CHECK_FALSE(signature_valid(s, hash_message("sha512", other)));
  Signature flipped = s;
  flipped.sig[10] ^= 1;
  CHECK_FALSE(signature_valid(flipped, hash_message("sha512", msg())));
  // A blob cut short or with trailing bytes is a clear error.
  Bytes blob = dearmor(kSig, "msg.sig");
  Bytes cut(blob.begin(), blob.end() - 3);
  CHECK(fx::error_of([&] { parse_signature(cut, "cut.sig"); }).find("'cut.sig' is truncated or malformed") != std::string::npos);
  blob.push_back(0);
  CHECK(fx::error_of([&] { parse_signature(blob, "long.sig"); }).find("bytes after") != std::string::npos);
}

TEST_CASE("sshsig: allowed_signers lines and every refusal, each naming signer or key") {
  std::string key_field = kPub.substr(0, kPub.rfind(' '));
  auto allowed = parse_allowed_signers("# comment\n\nalice@example.com," + std::string("*@ops ") + key_field + " trailing comment\n", "as");
  REQUIRE(allowed.size() == 1);
  CHECK(allowed[0].principals == std::vector<std::string>{"alice@example.com", "*@ops"});
  Signature s = parse_signature(dearmor(kSig, "msg.sig"), "msg.sig");
  int64_t now = int64_t(time(nullptr));

  Verdict good = check(allowed, s, "hpak", hasher(msg()), now);
  CHECK(good.ok);
  CHECK(good.signer.find("alice@example.com") != std::string::npos);
  CHECK(check(allowed, s, "hpak", hasher(msg()), now, "bob@ops").ok);         // principal pattern
  CHECK_FALSE(check(allowed, s, "hpak", hasher(msg()), now, "mallory").ok);   // -I that does not match

  Bytes tampered = msg();
  tampered.push_back('!');
  Verdict bad = check(allowed, s, "hpak", hasher(tampered), now);
  CHECK_FALSE(bad.ok);
  CHECK(bad.why.find(kFingerprint) != std::string::npos);
  CHECK(bad.why.find("does not match the data") != std::string::npos);

  Verdict ns = check(allowed, s, "git", hasher(msg()), now);
  CHECK(ns.why == "signature by key " + kFingerprint + " is for namespace 'hpak', not 'git'");

  auto others = parse_allowed_signers("bob " + kOtherPub + "\n", "as2");
  Verdict unknown = check(others, s, "hpak", hasher(msg()), now);
  CHECK(unknown.why == "key " + kFingerprint + " is not an allowed signer");

  auto ns_limited = parse_allowed_signers("alice namespaces=\"git,file\" " + key_field + "\n", "as3");
  Verdict not_ns = check(ns_limited, s, "hpak", hasher(msg()), now);
  CHECK(not_ns.why.find("'alice' (" + kFingerprint + ") is not allowed to sign namespace 'hpak'") != std::string::npos);

  auto expired = parse_allowed_signers("alice valid-after=\"20200101Z\",valid-before=\"20210101Z\" " + key_field + "\n", "as4");
  REQUIRE(expired[0].valid_before);
  CHECK(*expired[0].valid_before == 1609459200);
  Verdict old = check(expired, s, "hpak", hasher(msg()), now);
  CHECK(old.why == "signer 'alice' (" + kFingerprint + ") expired on 2021-01-01 00:00:00 UTC");
  auto future = parse_allowed_signers("alice valid-after=20990101000000Z " + key_field + "\n", "as5");
  CHECK(check(future, s, "hpak", hasher(msg()), now).why.find("valid only after 2099-01-01") != std::string::npos);

  CHECK(fx::error_of([] { parse_allowed_signers("alice bogus=1 ssh-ed25519 AAAA\n", "as6"); }).find("'as6:1' has an unknown option 'bogus'") !=
        std::string::npos);
  CHECK(fx::error_of([&] { parse_allowed_signers("alice valid-before=\"2021\" " + key_field + "\n", "as7"); }).find("bad valid-before") !=
        std::string::npos);
  // Keys of other types are skipped, not errors; a cert-authority line never matches a plain signature.
  CHECK(parse_allowed_signers("carol ssh-rsa AAAAB3NzaC1yc2E=\n", "as8").empty());
  auto ca = parse_allowed_signers("alice cert-authority " + key_field + "\n", "as9");
  CHECK_FALSE(check(ca, s, "hpak", hasher(msg()), now).ok);
}
