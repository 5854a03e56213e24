// Fetching a catalog from a published library (`hpak fetch URL NAME --into
// LIB`, `hpak restore URL NAME TARGET`): only the objects the local library
// lacks travel, in range reads planned from the remote indexes, through the
// URL's backend (core/remote/backend.hpp: HTTP(S), S3, a directory).
//
//  1. root: GET URL/HPAKROOT (no-cache) -> the catalog's digest, the packs.
//  2. indexes: each pack's .hidx, checked against the SHA-256 the root gives
//     and kept in LIB/remote/indexes/ (immutable: fetched once).
//  3. catalog: located in the indexes, its entry range-requested and checked
//     (unless the library has it).
//  4. plan: the catalog's objects the library lacks, located in the remote
//     indexes, sorted by pack and offset, entries closer than `gap` merged into
//     one range (up to `max_range`); a pack of which `whole_pack` or more is
//     needed is fetched in full ranges.
//  5. fetch: the ranges in parallel (over HTTP: core/remote/http/). Every entry is
//     checked before it is stored: its header against the index record, its
//     XXH3, and the SHA-256 of its decoded bytes against its name. A mismatch
//     stores nothing of the pack being written and fails. A v2 index gives
//     no item lengths: an item is fetched up to the next item's offset (its
//     header bounds it); an object in a v2 block brings the whole block,
//     whose header, table and XXH3 are checked and every member's SHA-256.
//  6. store: the entries (and blocks) are copied verbatim into new packs of the library
//     (a new pack every `subpack_bytes`, published like any add), so an
//     interrupted fetch keeps what it stored and the next one fetches only
//     the rest; on a transport failure the objects checked so far are
//     published before the error is raised.
//  7. name: under LIB/locks/publish.lock (shared), every object is checked
//     visible (a gc may have raced: fetched again, bounded), then the name is
//     set — the protocol of core/gc/gc.hpp.
// A pack or index not found (HTTP 404: a remote gc removed it) refetches the
// root once and plans again; a second one fails naming the pack.
#pragma once

#include <cstdint>
#include <string>

#include "base/progress.hpp"
#include "core/library/library.hpp"
#include "core/remote/schemes.hpp"
#include "core/trust/sshsig.hpp"

namespace hpak {

struct FetchOptions {
  remote::BackendOptions remote; // how the URL is reached (HTTP transfers, the S3 endpoint)
  uint64_t gap = 256u << 10;
  uint64_t max_range = 16u << 20;
  double whole_pack = 0.9;
  uint64_t subpack_bytes = 64u << 20;
  std::string local_name; // the name set in the library ("" = the remote name)
  // Set: the root must carry a valid signature (namespace "hpak") by one of
  // these signers, checked before anything in it is used, and its generation
  // must not be below the highest seen for its library (kept in
  // $XDG_STATE_HOME/hpak/generations/remote-library-<id>; for a version 1
  // root, which names no library, remote-<sha256 of the URL>).
  std::optional<std::vector<sshsig::AllowedSigner>> allowed_signers;
  // Refuse a root below this generation, or published longer ago than
  // this (seconds; < 0: any age). A root past its own expiry is always refused.
  uint64_t min_generation = 0;
  int64_t max_age_seconds = -1;
  Progress progress;
};

struct FetchResult {
  uint64_t generation = 0;
  Digest catalog_digest{};
  uint64_t objects = 0;           // distinct objects of the catalog
  uint64_t objects_fetched = 0;   // the ones the library lacked
  uint64_t needed_bytes = 0;      // their stored size (entry headers included)
  uint64_t range_bytes = 0;       // bytes of the ranges asked for
  uint64_t transferred_bytes = 0; // every byte received (HTTP bodies; root and indexes too)
  uint64_t requests = 0, retries = 0, ranges = 0;
  uint64_t indexes_fetched = 0;
  uint64_t packs_written = 0;
  uint64_t replans = 0;
  std::string signer; // the root's signer, when a signature was required
};

// Whether `s` is written as a URL (SCHEME://...): `hpak restore` reads it as
// a remote, anything else as a library directory.
bool is_remote_url(const std::string& s);
// The default cache library: $XDG_CACHE_HOME/hpak, else $HOME/.cache/hpak.
std::string default_remote_cache();
// The name a restore through a cache gives a remote catalog there:
// "NAME@" + 16 hex digits of the SHA-256 of the URL without its trailing
// slashes (remotes never clash).
std::string remote_cache_name(const std::string& url, const std::string& name);

// URL: any the scheme table reads (core/remote/remote_url.hpp).
FetchResult fetch(Library& lib, const std::string& url, const std::string& name, const FetchOptions& opts);

} // namespace hpak
