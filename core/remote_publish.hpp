// Publishing a library as plain files for any web server (`hpak publish LIB
// DEST`). The remote layout (man/hpak-format.5, "REMOTE LAYOUT"):
//
//   DEST/HPAKROOT                   the root (formats/remote_root_format.hpp): the
//                                   only mutable file; names the rest by digest
//   DEST/packs/pack-<sha256>.hpak   copied verbatim from the library, never rewritten
//   DEST/packs/pack-<sha256>.hidx   its index, verbatim
//   DEST/.hpak-publish.lock         flock'd by a publish (one at a time)
//
// Order (a client never sees a root naming a file that is not there): every
// pack the library holds and DEST lacks is copied (checked against its name as
// it is copied), then its index, each to a temp name, fsync'd and renamed;
// the directory is fsync'd; last the root is written the same way with a
// generation above the one it replaces. Publish never deletes or rewrites a
// file in DEST: packs the new root no longer names stay for clients that are
// still fetching through an older root.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/library.hpp"
#include "core/progress.hpp"

namespace hpak {

struct PublishOptions {
  uint64_t generation = 0; // 0: one above the published root's
  Progress progress;
};

struct PublishResult {
  uint64_t generation = 0, previous_generation = 0; // previous 0: nothing was published
  uint64_t packs = 0, packs_copied = 0, bytes_copied = 0;
  uint64_t catalogs = 0;
};

PublishResult publish(const Library& lib, const std::string& dest, const PublishOptions& opts);

} // namespace hpak
