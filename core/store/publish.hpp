// Writing into a library: the marker, its folders, packs and names, each
// following the durability protocol of man/hpak-library.7 (data durable
// before a name points at it; the folder synced before success is reported;
// HPAK_FSYNC=0 skips the syncs, for throwaway libraries only).
#pragma once

#include <optional>
#include <string>

#include "core/store/layout.hpp"
#include "base/bytes.hpp"

namespace hpak::store {

// LIB/HPAKLIB: "hpak-library 1\n", then "shared\n" and "level N\n" if set.
struct Marker {
  bool shared = false;
  int level = -1; // default zstd level of adds, or -1 (unset)
};
constexpr const char* kMarkerLine = "hpak-library 1";
// Throws (naming the failed read) when it cannot be told: an I/O error is not "no library".
bool has_marker(const Layout& layout);
// Throws a one-line Error if the marker is missing, not a marker, or another version.
Marker read_marker(const Layout& layout);
// Creates the library's folders that do not exist; `shared`: setgid and
// group-writable whatever the umask, and the library folder itself sticky
// (members create files there, but only a file's owner, the folder's owner
// or root may remove or replace it: HPAKLIB, id, allowed_signers). Durable:
// a new subfolder's entry is synced in the library folder, a new library
// folder's in its parent.
void create_dirs(const Layout& layout, bool shared);
// Whether only this user (or root) can put a file in packs/: the library
// folder and packs/ are directories owned by this user or root and writable
// by no one else. Otherwise the library is shared whatever its marker says
// (anyone who can write there could have rewritten the marker too).
bool folders_private(const Layout& layout);
// A new library's marker (durable; a marker another init wrote first is kept).
void create_marker(const Layout& layout, const Marker& m);
// Replaces the marker of an existing library (atomically, durably).
void write_marker(const Layout& layout, const Marker& m);

// Publishes a finished pack written to `tmp_path` (in tmp/) under its name:
// pack data durable, linked in (never replacing another pack; the name is the
// content's SHA-256), its index (`index_bytes`) durable and renamed in, packs/
// synced. The temp file is consumed either way. Returns the pack's file name.
std::string publish_pack(const Layout& layout, bool shared, const std::string& tmp_path, const Digest& file_sum, uint64_t size,
                         const Bytes& index_bytes);

// LIB/catalogs/NAME: "hpak-catalog 1\n<hex digest>\n". `name` must be valid.
// Durable when it returns (text synced, renamed in, catalogs/ synced); if the
// sync of catalogs/ fails after the rename, the name is put back as it was
// (the digest it named, or no name) before the error is thrown.
void write_name_file(const Layout& layout, bool shared, const std::string& name, const Digest& d);
// The digest NAME names, or nullopt when there is no such name. Throws on a
// malformed file; never blocks on a FIFO or follows a link.
std::optional<Digest> read_name_file(const Layout& layout, const std::string& name);

} // namespace hpak::store
