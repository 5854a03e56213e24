// Finding one object of a pack the way a user names it (`hpak cat`): an
// object digest (hex, or a unique prefix of 4+ digits), else a path in the
// pack's catalog (a trailing '/' and a leading "./" ignored; a hard link
// followed to the file it names). Throws a one-line Error naming what and
// where when it is ambiguous, missing, a directory or a symlink.
#pragma once

#include <string>

#include "core/pack/pack_reader.hpp"

namespace hpak {

// `catalog`: which catalog resolves paths when the pack holds several ("" if one).
formats::IndexRecord lookup_object(const PackReader& pack, const std::string& what, const std::string& catalog = "");

} // namespace hpak
