// OpenSSH-compatible signatures: Ed25519 keys in OpenSSH format, SSHSIG
// signatures (what `ssh-keygen -Y sign` writes and `ssh-keygen -Y verify`
// checks; also git's ssh signing) and the allowed_signers file.
// Written from openssh's PROTOCOL.sshsig and PROTOCOL.key; crypto is OpenSSL
// libcrypto (EVP Ed25519, SHA-512). All integers big-endian (RFC 4251).
//
//   sshsig blob  ::= "SSHSIG" version:u32(=1) string(publickey) string(namespace)
//                    string(reserved="") string(hash_algorithm) string(signature)
//   signed data  ::= "SSHSIG" string(namespace) string(reserved="")
//                    string(hash_algorithm) string(H(message))
//   publickey    ::= string("ssh-ed25519") string(32-byte key)
//   signature    ::= string("ssh-ed25519") string(64-byte signature)
//   armored      ::= "-----BEGIN SSH SIGNATURE-----\n" base64 of the blob in
//                    70-column lines "\n-----END SSH SIGNATURE-----\n"
//
//   private key  ::= "-----BEGIN OPENSSH PRIVATE KEY-----" base64 of
//                    "openssh-key-v1\0" string(cipher) string(kdf) string(kdfopts)
//                    nkeys:u32(=1) string(publickey) string(private section)
//   private section (cipher "none") ::= check:u32 check:u32 string("ssh-ed25519")
//                    string(pk:32) string(seed:32 || pk:32) string(comment) padding 1,2,3..
//
// hpak signs with sha512 and verifies sha256 or sha512; only ssh-ed25519 keys
// (no certificates, no security keys).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/bytes.hpp"

namespace hpak::sshsig {

std::string base64_encode(ByteSpan data);
// Whitespace is skipped; nullopt on any other non-base64 byte or bad padding.
std::optional<Bytes> base64_decode(std::string_view text);

struct PublicKey {
  Bytes blob;                         // the wire form: string(type) string(key)
  std::array<uint8_t, 32> key{};      // the Ed25519 public key
  // "SHA256:<base64, unpadded>", as `ssh-keygen -l` prints it.
  std::string fingerprint() const;
  // "ssh-ed25519 AAAA..." (an authorized_keys / allowed_signers key field).
  std::string line() const;
};
PublicKey parse_public_key_blob(ByteSpan blob, const std::string& where);
// "ssh-ed25519 AAAA... [comment]".
PublicKey parse_public_key_line(const std::string& line, const std::string& where);

struct PrivateKey {
  PublicKey pub;
  std::array<uint8_t, 32> seed{};
  std::string comment;
};
// nullopt when the key is passphrase-protected (sign through ssh-agent then).
std::optional<PrivateKey> parse_private_key(const std::string& text, const std::string& where);
// The public key of a private key file, passphrase-protected or not (the
// openssh-key-v1 header holds it in clear).
PublicKey private_key_file_public(const std::string& text, const std::string& where);

struct Signature {
  PublicKey key;
  std::string ns;
  std::string hash_alg;
  std::array<uint8_t, 64> sig{};
};

Bytes hash_message(const std::string& alg, ByteSpan message); // "sha256" | "sha512"
Bytes hash_file(const std::string& alg, const std::string& path);

// The SSHSIG blob signing `message_hash` (SHA-512 of the message).
Bytes sign(const PrivateKey& k, const std::string& ns, ByteSpan message_hash);
std::string armor(ByteSpan blob);
Bytes dearmor(const std::string& text, const std::string& where);
Signature parse_signature(ByteSpan blob, const std::string& where);
// Is `s` a valid signature over the message hashed with s.hash_alg?
bool signature_valid(const Signature& s, ByteSpan message_hash);

// One line of an allowed_signers file (ssh-keygen(1), ALLOWED SIGNERS):
//   principals [options] keytype base64-key [comment]
// options: cert-authority, namespaces="a,b", valid-after="YYYYMMDD[HHMM[SS]][Z]",
// valid-before=... (without Z: local time).
struct AllowedSigner {
  std::vector<std::string> principals; // patterns (* ?), "!" negates
  std::vector<std::string> namespaces; // patterns; empty = any
  std::optional<int64_t> valid_after, valid_before;
  bool cert_authority = false;         // not supported by hpak: such lines never match
  PublicKey key;
  int line = 0;
};
std::vector<AllowedSigner> parse_allowed_signers(const std::string& text, const std::string& where);
std::vector<AllowedSigner> load_allowed_signers(const std::string& path);

struct Verdict {
  bool ok = false;
  std::string signer; // the matching principals (as written in the file)
  std::string why;    // one line, naming the signer or the key fingerprint
};
// Checks `s` over a message whose hash (with s.hash_alg) the caller supplies
// through `hash_for`, as `ssh-keygen -Y verify -n NS` would, and that an
// allowed_signers line lists its key for namespace `ns` at time `now`
// (`identity` non-empty: that line's principals must match it, like -I).
Verdict check(const std::vector<AllowedSigner>& allowed, const Signature& s, const std::string& ns,
              const std::function<Bytes(const std::string& alg)>& hash_for, int64_t now, const std::string& identity = "");

// Signs `message` with the key file at `key_path`: in process when the key is
// an unencrypted Ed25519 key. A passphrase-protected key is signed by the
// ssh-agent at $SSH_AUTH_SOCK when it holds the key (agent protocol
// SSH_AGENTC_SIGN_REQUEST over the SSHSIG signed data; the raw Ed25519
// signature is checked, then wrapped in SSHSIG); else, with a terminal to ask
// on, by `ssh-keygen -Y sign` (which prompts for the passphrase); else a
// one-line Error says to load it with ssh-add. Returns the armored signature.
std::string sign_with_key_file(const std::string& key_path, const std::string& ns, ByteSpan message);

} // namespace hpak::sshsig
