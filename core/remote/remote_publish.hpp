// Publishing a library as plain files for any web server or S3 bucket
// (`hpak publish LIB DEST`). The remote layout (man/hpak-format.5, "REMOTE LAYOUT"):
//
//   DEST/HPAKROOT                   the root (formats/remote_root_format.hpp): the
//                                   only mutable file clients read; names the rest
//                                   by digest; signed when a key is given
//   DEST/packs/pack-<sha256>.hpak   copied verbatim from the library, never rewritten
//   DEST/packs/pack-<sha256>.hidx   its index, verbatim
//   DEST/roots/<sha256>.root        a copy of every root published, named by the
//                                   SHA-256 of its bytes (for --prune; never read
//                                   by clients)
//   DEST/roots/history              the roots published, oldest first (publisher only):
//                                     "hpak-remote-history 1\n"
//                                     ("root " sha256 " " generation " " unix_ms "\n")*
//   DEST/.hpak-publish.lock         flock'd by a publish (one at a time; a directory
//                                   DEST only: an S3 DEST takes one publisher on trust)
//
// Order (a client never sees a root naming a file that is not there): every
// pack the library holds and DEST lacks is copied (checked against its name as
// it is copied), then its index, each to a temp name, fsync'd and renamed;
// the directory is fsync'd; then the root's copy under roots/, the history,
// and last the root itself, with a generation above the one it replaces.
//
// Publish never rewrites a pack. Without `prune` it deletes nothing. With
// `prune`, after the new root is in place, it deletes the packs (and indexes)
// named only by roots that stopped being the current root more than `grace`
// ago: a root superseded within the grace period keeps every pack it names,
// so a client that read it lately still finds its packs. Only packs a
// recorded root named are ever candidates: what publish did not write stays.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/library/library.hpp"
#include "base/progress.hpp"
#include "core/remote/remote_http.hpp"

namespace hpak {

struct PublishOptions {
  uint64_t generation = 0; // 0: one above the published root's
  std::string sign_key;    // OpenSSH Ed25519 private key: sign the root ("" = unsigned)
  bool prune = false;
  int64_t grace_seconds = 7 * 86400;
  int64_t expires_seconds = 90 * 86400; // clients refuse the root this long after it was published
  HttpOptions http;        // an s3:// DEST: credentials, endpoint
  Progress progress;
};

struct PublishResult {
  uint64_t generation = 0, previous_generation = 0; // previous 0: nothing was published
  uint64_t packs = 0, packs_copied = 0, bytes_copied = 0;
  uint64_t catalogs = 0;
  bool signed_root = false;
  uint64_t packs_removed = 0, bytes_removed = 0, roots_removed = 0, roots_kept = 0;
};

// DEST: a directory, or s3://bucket/prefix (opts.http.s3 gives the endpoint
// and credentials).
PublishResult publish(const Library& lib, const std::string& dest, const PublishOptions& opts);

} // namespace hpak
