// Signed packs and signed library names (man/hpak-sign.1, hpak-library.7
// "How an enterprise checks what it runs"). Signatures are SSHSIG (core/trust/sshsig.hpp)
// in namespace "hpak", checkable with `ssh-keygen -Y verify`.
//
// A standalone pack: FILE.sig beside FILE, an SSHSIG over the pack's bytes.
//
// A library name: LIB/signatures/NAME holds a statement and its SSHSIG:
//
//   hpak-signed-name 1\n
//   library <32 hex: LIB/id>\n      the library's identity (random, made once)
//   name <NAME>\n
//   catalog <64 hex>\n               the digest LIB/catalogs/NAME must hold
//   generation <N>\n                 grows by one with each signature of NAME
//   time <unix seconds>\n            when it was signed
//   -----BEGIN SSH SIGNATURE-----\n  over exactly the lines above
//   ...
//   -----END SSH SIGNATURE-----\n
//
// A restore under a signature policy (--allowed-signers, or LIB/allowed_signers
// made by `hpak init --require-signatures`) accepts the name only when the
// signature is valid, by an allowed signer, for this library, this name and
// the digest the name holds, and its generation is not below the highest this
// user has seen for the library and name (kept in $XDG_STATE_HOME/hpak/generations,
// or ~/.local/state/hpak/generations, a directory closed to others).
#pragma once

#include <optional>
#include <string>

#include "core/library/library.hpp"
#include "core/trust/sshsig.hpp"

namespace hpak {

constexpr const char* kSignatureNamespace = "hpak";

// `hpak sign -k KEY FILE`: writes FILE.sig; returns its path.
std::string sign_pack_file(const std::string& pack_path, const std::string& key_path);
// Checks FILE.sig against the allowed signers; a missing or unreadable
// signature is a failed verdict (never an exception).
sshsig::Verdict verify_pack_file(const std::string& pack_path, const std::vector<sshsig::AllowedSigner>& allowed);

// LIB/id, created when `create` and missing; "" when absent. In a shared
// library LIB/id (like LIB/allowed_signers) is taken only from the library's
// owner (the owner of its folder) or root, and writable by no one else: any
// member can put a file in the folder. Only they may create it.
std::string library_id(const Library& lib, bool create);

// True when this user is root or owns the library's folder (who may make
// LIB/id and LIB/allowed_signers of a shared library).
bool is_library_owner(const Library& lib);

// `hpak init`'s trust files: a shared library's LIB/id, made when this user
// owns it (or is root); with `allowed_signers` non-empty, that OpenSSH
// allowed_signers file (read through links, at most 1 MiB, parsed first: a
// bad file is refused) copied to LIB/allowed_signers, after which restores
// require a signed name. A member of a shared library who is not its owner
// may not require signatures.
void init_trust_files(const Library& lib, const std::string& allowed_signers);

struct NameStatement {
  std::string library, name, catalog; // catalog: hex digest
  uint64_t generation = 0;
  int64_t time = 0;
  std::string text() const;
};

struct SignedName {
  NameStatement statement;
  sshsig::Verdict verdict; // meaningful when checked against allowed signers
  std::string key;         // the signing key's fingerprint
};

// `hpak sign -k KEY LIB NAME`: signs the digest NAME holds now with the next
// generation; returns the statement signed.
NameStatement sign_name(Library& lib, const std::string& name, const std::string& key_path);

// The state of NAME's signature. `allowed` null: parsed only (verdict.ok
// false, verdict.why "not checked"). Throws nothing for a bad signature; the
// verdict says why. nullopt: NAME has no signature.
std::optional<SignedName> read_name_signature(const Library& lib, const std::string& name,
                                              const std::vector<sshsig::AllowedSigner>* allowed);

// The signature policy of a restore: checks NAME (see above) and remembers its
// generation; returns the catalog digest the restore must find under NAME.
// Throws a one-line Error naming the reason and the signer or key.
Digest enforce_name_policy(const Library& lib, const std::string& name, const std::vector<sshsig::AllowedSigner>& allowed);

// The signature policy a command applies: the allowed_signers file `given`
// (--allowed-signers), else LIB/allowed_signers when the library requires
// signatures (read from one descriptor: a regular file of at most 1 MiB, in
// a shared library its owner's or root's, see library_id); nullopt: none.
struct SignaturePolicy {
  std::string file;
  std::vector<sshsig::AllowedSigner> signers;
};
std::optional<SignaturePolicy> signature_policy(const Library& lib, const std::string& given);

} // namespace hpak
