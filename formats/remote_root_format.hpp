// The root of a published (remote) library: the one mutable file of the
// remote layout (man/hpak-format.5, "REMOTE LAYOUT"). Text, one record per
// line, fields separated by one space. Format version 2 (written), version 1
// (read):
//
//   root     ::= "hpak-remote 2\n" "generation " N "\n" identity pack* catalog* "end\n"
//              | "hpak-remote 1\n" "generation " N "\n" pack* catalog* "end\n"
//   identity ::= "library " 32 lower-case hex "\n"   -- LIB/id of the library published
//                "time " T "\n"                       -- when it was published
//                "expires " T "\n"                    -- after this no client uses it (>= time)
//   pack     ::= "pack " packname " " pack_size " " index_sha256 " " index_size "\n"
//   catalog  ::= "catalog " name " " catalog_digest "\n"
//   packname ::= "pack-" 64 lower-case hex ".hpak"    -- SHA-256 of the pack file
//   N, T, sizes ::= decimal, no sign or leading zero, < 2^63 (T: Unix seconds)
//
// The identity makes replay protection per library rather than per URL: a
// client keeps the highest generation it accepted for each library id, so an
// older signed root of the same library served from another URL (a mirror,
// an alias) is refused too; the expiry bounds how long a frozen root (a
// server that keeps serving an old one) is accepted. A version 1 root has
// neither: its generation is remembered per URL.
//
// The root names every other file of the remote by digest: packs by their
// file's SHA-256 (the name), their indexes (`packs/pack-<hex>.hidx`) by the
// SHA-256 of the index file, catalogs by the digest of their object (stored in
// one of the packs). `generation` only grows: a publisher refuses to replace a
// root by one with a lower or equal generation, and counts on from the
// highest its library published anywhere. An index is at most
// max_index_size(pack_size) bytes (formats/index_format.hpp). The final "end"
// line tells a complete root from a truncated one. Packs are listed in name
// order, catalogs in name order, with no duplicates; at most 16 MiB.
//
// A signed root (`hpak publish -k KEY`) is the root text followed at once by
// an armored SSHSIG (core/trust/sshsig.hpp, namespace "hpak") over exactly the root
// text, "hpak-remote" to "end\n" included:
//
//   signed   ::= root "-----BEGIN SSH SIGNATURE-----\n" base64 lines "-----END SSH SIGNATURE-----\n"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/hash.hpp"
#include "formats/pack_name.hpp" // packname

namespace hpak::formats {

constexpr size_t kRemoteRootMaxSize = 16u << 20;
constexpr const char* kRemoteRootFile = "HPAKROOT";

struct RemotePackEntry {
  std::string name; // pack-<hex>.hpak
  uint64_t size = 0;
  Digest index_sum{};
  uint64_t index_size = 0;
};

struct RemoteCatalogEntry {
  std::string name;
  Digest digest{};
};

struct RemoteRoot {
  uint32_t version = 2;
  uint64_t generation = 0;
  std::string library;           // version 2: the library's id (32 hex)
  uint64_t time = 0, expires = 0; // version 2: Unix seconds
  std::vector<RemotePackEntry> packs;       // sorted by name
  std::vector<RemoteCatalogEntry> catalogs; // sorted by name
};


std::string encode_remote_root(RemoteRoot root);

// The root text and its signature ("" when unsigned), split where a line
// starts with "-----BEGIN SSH SIGNATURE-----" (no root line starts with '-').
struct RemoteRootParts {
  ByteSpan text;
  std::string signature;
};
RemoteRootParts split_remote_root(ByteSpan bytes);
// Throws Corrupt (naming `where`) on any deviation from the grammar.
RemoteRoot decode_remote_root(ByteSpan bytes, const std::string& where);

} // namespace hpak::formats
