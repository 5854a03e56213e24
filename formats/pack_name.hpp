// The names of a library's pack files, shared by a library's packs/ folder
// (man/hpak-library.7) and a published library's (man/hpak-format.5, REMOTE
// LAYOUT):
//
//   packfile  ::= "pack-" hex64 ".hpak"          -- hex64: SHA-256 of the pack file, lower case
//   indexfile ::= "pack-" hex64 ".hidx"          -- that pack's index
//   condemned ::= (packfile | indexfile) ".condemned"   -- being deleted by a gc (library only)
//   midxlayer ::= "midx-" hex64 ".midx"          -- a multi-pack index layer (library only,
//                                                   formats/midx_format.hpp); hex64: its trailer
//
// This header is the only code that builds or parses these names.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/hash.hpp"

namespace hpak::formats {

enum class PackFileKind { Pack, Index };

struct PackFileName {
  Digest sum{};
  PackFileKind kind = PackFileKind::Pack;
  bool condemned = false;
};

constexpr std::string_view kPackSuffix = ".hpak";
constexpr std::string_view kIndexSuffix = ".hidx";
constexpr std::string_view kCondemnedSuffix = ".condemned";

// "pack-<hex>.hpak" / "pack-<hex>.hidx".
std::string pack_file_name(const Digest& file_sum);
std::string index_file_name(const Digest& file_sum);
// Any of the three forms above, or nullopt.
std::optional<PackFileName> parse_pack_file_name(std::string_view name);
// True if `name` is a packfile (not an index, not condemned).
bool is_pack_name(std::string_view name);
// The index file name of a packfile name.
std::string pack_index_name(std::string_view pack_name);
// "midx-<hex>.midx", named by the layer's trailer (the SHA-256 of its other bytes).
std::string midx_layer_name(const Digest& trailer);
// The trailer a midx layer's name gives, or nullopt for any other name.
std::optional<Digest> parse_midx_layer_name(std::string_view name);

} // namespace hpak::formats
