#include "core/store/publish.hpp"

#include <cerrno>
#include <cstdlib>

#include "base/os/sys.hpp"
#include "base/error.hpp"
#include "base/os/file.hpp"
#include "formats/pack_name.hpp"

namespace hpak::store {

namespace {

// Bounds on what is read from the small files of a library (hostile input
// like any other: a symlink to /dev/zero must not grow memory).
constexpr uint64_t kMaxMarkerSize = 4096;
constexpr uint64_t kMaxNameFileSize = 4096;
constexpr const char* kNameFileHead = "hpak-catalog 1\n";

ByteSpan text_bytes(const std::string& s) { return ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

std::string marker_text(const Marker& m) {
  return std::string(kMarkerLine) + "\n" + (m.shared ? "shared\n" : "") + (m.level >= 0 ? "level " + std::to_string(m.level) + "\n" : "");
}

// True if this call created the folder.
bool make_dir(const std::string& p, os::Mode mode) {
  if (os::mkdir_path(p.c_str(), mode) == 0) return true;
  if (errno != EEXIST) throw_errno("unable to create '" + p + "'");
  return false;
}

// The folder holding `dir` ("lib/" is in ".", like "lib").
std::string parent_dir(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir_name(dir);
}

// Size of a regular file, or -1 if there is none.
int64_t file_size(const std::string& path) {
  os::FileStat st;
  if (os::lstat_path(path.c_str(), st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return int64_t(st.st_size);
}

// fsync of a file found already published (by another writer, or left over
// by one killed before its own fsync or run with HPAK_FSYNC=0) before it is
// relied on. Gone meanwhile (a gc swept it): nothing to sync; the add's check
// of its objects under the publish lock finds them missing and writes them.
void sync_existing(const std::string& path) {
  if (!fsync_enabled()) return;
  if (Fd fd = open_regular_if_exists(path, Follow::NoLinks)) sync_fd(fd.get(), path);
}

// Links the temp pack in under `final_pack`; true if this call created the
// name. An existing file of another size is not this pack, whatever its name
// says: a leftover of a power loss before its data was durable (written with
// HPAK_FSYNC=0, or by an hpak that did not sync); it is replaced.
bool link_pack(const std::string& tmp_path, const std::string& final_pack, uint64_t size) {
  // link() never replaces and works on NFS (renameat2's RENAME_NOREPLACE does not).
  bool created = os::link_path(tmp_path.c_str(), final_pack.c_str()) == 0;
  if (!created && errno == EEXIST && file_size(final_pack) != int64_t(size)) {
    created = os::rename_path(tmp_path.c_str(), final_pack.c_str()) == 0;
    if (!created) errno = EEXIST;
  }
  if (!created && errno != EEXIST) {
    int err = errno;
    os::unlink_path(tmp_path.c_str());
    throw_errno("unable to publish pack '" + final_pack + "'", err);
  }
  os::unlink_path(tmp_path.c_str());
  return created;
}

} // namespace

bool has_marker(const Layout& layout) {
  os::FileStat st;
  if (os::lstat_path(layout.marker().c_str(), st) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  // Not "no library here" (an add would then try to create one): the read
  // that failed, named (EIO on a failing disk, EACCES).
  throw_errno("unable to look for the library marker '" + layout.marker() + "'");
}

Marker read_marker(const Layout& layout) {
  const std::string root = layout.root(), marker = layout.marker();
  os::FileStat st;
  if (os::stat_path(root.c_str(), st) != 0) throw_errno("unable to open library '" + root + "'");
  if (!S_ISDIR(st.st_mode)) throw Error("'" + root + "' is not a library (not a directory)");
  if (!has_marker(layout)) throw Error("'" + root + "' is not an hpak library (no HPAKLIB file; create one with 'hpak init')");
  Bytes b = read_regular(marker, Follow::NoLinks, kMaxMarkerSize);
  std::string text(b.begin(), b.end());
  if (text.rfind("hpak-library ", 0) != 0) throw Error("'" + marker + "' is not an hpak library marker");
  if (text.rfind(std::string(kMarkerLine) + "\n", 0) != 0)
    throw Error("library '" + root + "' has format '" + text.substr(0, text.find('\n')) + "'; this hpak reads '" + kMarkerLine + "'");
  Marker m;
  m.shared = text.find("\nshared\n") != std::string::npos;
  if (auto at = text.find("\nlevel "); at != std::string::npos) {
    int lv = std::atoi(text.c_str() + at + 7);
    if (lv < 0 || lv > 19) throw Error("'" + marker + "' names level " + std::to_string(lv) + " (0-19 expected)");
    m.level = lv;
  }
  return m;
}

void create_dirs(const Layout& layout, bool shared) {
  const os::Mode dmode = shared ? 02775 : 0755;
  const bool root_created = make_dir(layout.root(), dmode);
  bool sub_created = false;
  for (const char* sub : kLibrarySubdirs) {
    std::string p = layout.subdir(sub);
    sub_created |= make_dir(p, dmode);
    if (shared) os::chmod_path(p.c_str(), dmode); // setgid + group-writable regardless of umask
  }
  if (shared) os::chmod_path(layout.root().c_str(), dmode | S_ISVTX); // fails (and is left) unless the owner's or root's
  // Durability: the new folders' entries, then the library's own entry in
  // its parent (a power loss must not take back a library init reported).
  if (sub_created) sync_dir(layout.root());
  if (root_created) sync_dir(parent_dir(layout.root()));
}

bool folders_private(const Layout& layout) {
  for (const std::string& d : {layout.root(), layout.packs_dir()}) {
    os::FileStat st;
    if (os::lstat_path(d.c_str(), st) != 0 || !S_ISDIR(st.st_mode) || (st.st_uid != os::euid() && st.st_uid != 0) || (st.st_mode & 022)) return false;
  }
  return true;
}

void create_marker(const Layout& layout, const Marker& m) {
  AtomicFile f(layout.marker(), m.shared ? 0664 : 0644);
  f.write(text_bytes(marker_text(m)));
  try {
    f.commit(/*durable=*/true, /*no_replace=*/true); // also syncs the root: its subdirectories' entries
  } catch (const Error&) {
    if (!has_marker(layout)) throw; // someone else initialised it at the same time: fine
  }
}

void write_marker(const Layout& layout, const Marker& m) {
  AtomicFile f(layout.marker(), m.shared ? 0664 : 0644);
  f.write(text_bytes(marker_text(m)));
  f.commit(/*durable=*/true);
}

std::string publish_pack(const Layout& layout, bool shared, const std::string& tmp_path, const Digest& file_sum, uint64_t size,
                         const Bytes& index_bytes) {
  const std::string final_pack = layout.pack_path(file_sum);
  if (shared) os::chmod_path(tmp_path.c_str(), 0444);
  // Durability: the pack's data is on disk before a name points at it, the
  // index's before it is renamed in, and packs/ (both entries) before this
  // returns and anything relies on them.
  try {
    sync_path(tmp_path);
  } catch (const Error&) {
    os::unlink_path(tmp_path.c_str());
    throw;
  }
  const bool created = link_pack(tmp_path, final_pack, size);
  if (!created) sync_existing(final_pack); // the same pack, already there: maybe not durable yet
  const std::string idx_path = layout.index_path(file_sum);
  if (file_size(idx_path) == int64_t(index_bytes.size())) {
    sync_existing(idx_path);
    sync_dir(layout.packs_dir()); // published by another writer, maybe not synced yet
    return formats::pack_file_name(file_sum);
  }
  try { // absent, or a leftover as above
    AtomicFile idx(idx_path, 0444);
    idx.write(index_bytes);
    idx.commit(/*durable=*/true); // syncs the index, then packs/
  } catch (const Error&) {
    // Without its index the pack is invisible garbage: take back the one we
    // just linked (an identical pack that was already there is not ours).
    if (created) os::unlink_path(final_pack.c_str());
    throw;
  }
  return formats::pack_file_name(file_sum);
}

namespace {

// A name set by a write_name_file that fails before it is durable goes back
// to what it was: the digest it named before, or no name — unless another
// writer replaced it meanwhile. Best effort: the failure is reported anyway.
void take_back_name(const Layout& layout, bool shared, const std::string& name, const Digest& d, const std::optional<Digest>& before) {
  try {
    if (read_name_file(layout, name) != d) return; // another writer's now
    if (!before) {
      os::unlink_path(layout.catalog_path(name).c_str());
      return;
    }
    AtomicFile f(layout.catalog_path(name), shared ? 0664 : 0644);
    f.write(text_bytes(kNameFileHead + to_hex(*before) + "\n"));
    f.commit();
  } catch (const Error&) {
  }
}

std::optional<Digest> name_before(const Layout& layout, const std::string& name) {
  try {
    return read_name_file(layout, name);
  } catch (const Error&) {
    return std::nullopt; // junk there: replaced like a missing name
  }
}

} // namespace

void write_name_file(const Layout& layout, bool shared, const std::string& name, const Digest& d) {
  const std::optional<Digest> before = name_before(layout, name);
  AtomicFile f(layout.catalog_path(name), shared ? 0664 : 0644);
  f.write(text_bytes(kNameFileHead + to_hex(d) + "\n"));
  sync_fd(f.fd(), f.temp_path()); // the name's text, durable before it is renamed in
  f.commit();
  try {
    sync_dir(layout.catalogs_dir()); // then catalogs/, before success is reported
  } catch (const Error& e) {
    if (before != d) take_back_name(layout, shared, name, d, before);
    throw Error(std::string(e.what()) + "; catalog '" + name + "' not set");
  }
}

std::optional<Digest> read_name_file(const Layout& layout, const std::string& name) {
  const std::string p = layout.catalog_path(name);
  // Opened once: a name removed between a check and the open (catalogs rm,
  // gc --unused) is simply absent, not an error. Anything but a small regular
  // file (a FIFO, a symlink, a device) is refused without blocking.
  Fd fd = open_regular_if_exists(p, Follow::NoLinks, kMaxNameFileSize);
  if (!fd) return std::nullopt;
  Bytes b = read_fd_bounded(fd.get(), p, kMaxNameFileSize);
  std::string text(b.begin(), b.end());
  const std::string head = kNameFileHead;
  if (text.rfind(head, 0) != 0 || text.size() != head.size() + 65 || text.back() != '\n')
    throw Error("catalog name file '" + p + "' is malformed");
  auto d = digest_from_hex(std::string_view(text).substr(head.size(), 64));
  if (!d) throw Error("catalog name file '" + p + "' does not hold a digest");
  return d;
}

} // namespace hpak::store
