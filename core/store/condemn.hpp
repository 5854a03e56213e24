// How a pack leaves a library (core/gc/gc.hpp, steps 2, 6 and 8): its index,
// then the pack file, are renamed to `.condemned` names (invisible to readers,
// and never created by a writer: one publishing an identical pack afterwards
// makes a new file), and only `.condemned` names are deleted. A gc killed in
// between leaves condemned names, which the next gc or repair renames back.
#pragma once

#include <string>

#include "core/store/layout.hpp"

namespace hpak::store {

// Index, then pack, renamed to `.condemned`; false (nothing changed) if either fails.
bool condemn_pack(const std::string& pack_path);
// A pack without an index (an orphan): the pack file alone.
bool condemn_orphan(const std::string& pack_path);
// Back to visible: pack, then index (publish order). Throws on failure.
void uncondemn_pack(const std::string& pack_path);
void uncondemn_orphan(const std::string& pack_path);
// Unlinks the `.condemned` names of a pack (and its index).
void delete_condemned(const std::string& pack_path);
// Makes every condemned pack of packs/ visible again (recovery after a killed
// gc); an index whose pack is gone is deleted. Returns the packs recovered.
size_t recover_condemned(const Layout& layout);

} // namespace hpak::store
