// Publishing a library as plain files for any web server or S3 bucket
// (`hpak publish LIB DEST`), through DEST's backend (core/remote/backend.hpp:
// a directory, s3://BUCKET/PREFIX), in the remote layout of
// core/remote/remote_layout.hpp (man/hpak-format.5, "REMOTE LAYOUT"). A publish
// holds DEST's writer lock (a directory's .hpak-publish.lock; an S3 DEST takes
// one publisher on trust).
//
// Order (a client never sees a root naming a file that is not there): every
// pack the library holds and DEST lacks is copied (checked against its name as
// it is copied), then its index, each written atomically and durably (a
// directory: a temp name, fsync'd, renamed, the folder fsync'd); then the
// root's copy under roots/, the history, and last the root itself, with a
// generation above the one it replaces. What is already there is learnt from
// a listing of packs/ when DEST can list (a directory), else from the
// published root (S3).
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

#include "base/progress.hpp"
#include "core/library/library.hpp"
#include "core/remote/schemes.hpp"

namespace hpak {

struct PublishOptions {
  uint64_t generation = 0; // 0: one above the published root's
  std::string sign_key;    // OpenSSH Ed25519 private key: sign the root ("" = unsigned)
  bool prune = false;
  int64_t grace_seconds = 7 * 86400;
  int64_t expires_seconds = 90 * 86400; // clients refuse the root this long after it was published
  remote::BackendOptions remote; // how DEST is reached (an s3:// DEST: its endpoint, TLS)
  Progress progress;
};

struct PublishResult {
  uint64_t generation = 0, previous_generation = 0; // previous 0: nothing was published
  uint64_t packs = 0, packs_copied = 0, bytes_copied = 0;
  uint64_t catalogs = 0;
  bool signed_root = false;
  uint64_t packs_removed = 0, bytes_removed = 0, roots_removed = 0, roots_kept = 0;
};

// DEST: a directory (also file:///DIR), or s3://BUCKET/PREFIX (credentials
// from the environment: core/remote/s3/s3_backend.hpp).
PublishResult publish(const Library& lib, const std::string& dest, const PublishOptions& opts);

} // namespace hpak
