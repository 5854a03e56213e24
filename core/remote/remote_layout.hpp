// Every name of a published library (man/hpak-format.5, "REMOTE LAYOUT"),
// relative to its base: fetch and publish ask here, never spell one out.
//
//   HPAKROOT                   the root (formats/remote_root_format.hpp): the
//                              only mutable file clients read; names the rest
//                              by digest; signed when a key is given
//   packs/pack-<sha256>.hpak   copied verbatim from the library, never rewritten
//   packs/pack-<sha256>.hidx   its index, verbatim
//   roots/<sha256>.root        a copy of every root published, named by the
//                              SHA-256 of its bytes (for --prune; never read
//                              by clients)
//   roots/history              the roots published, oldest first (publisher only):
//                                "hpak-remote-history 1\n"
//                                ("root " sha256 " " generation " " unix_ms "\n")*
//   .hpak-publish.lock         the writer lock of a directory (one publish at a
//                              time; an S3 bucket takes one publisher on trust)
#pragma once

#include <string>

#include "formats/pack_name.hpp"
#include "formats/remote_root_format.hpp"

namespace hpak::remote::layout {

inline constexpr const char* kRoot = formats::kRemoteRootFile;
inline constexpr const char* kPacks = "packs/";
inline constexpr const char* kHistory = "roots/history";
inline constexpr const char* kPublishLock = ".hpak-publish.lock";
// The folders of the layout, which a store with folders makes when it is
// opened for writing.
inline constexpr const char* kFolders[] = {"packs", "roots"};

inline std::string pack(const std::string& pack_name) { return kPacks + pack_name; }
inline std::string index(const std::string& pack_name) { return kPacks + formats::pack_index_name(pack_name); }
inline std::string root_copy(const std::string& hex_sha256) { return "roots/" + hex_sha256 + ".root"; }

} // namespace hpak::remote::layout
