#include "core/library.hpp"

#include <algorithm>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pack_trust.hpp"
#include "core/util/edit_distance.hpp"
#include "core/util/file.hpp"

namespace hpak {

using namespace formats;

struct Library::Loaded {
  std::vector<std::shared_ptr<PackReader>> packs; // sorted by name
  std::vector<Digest> names;
  std::vector<std::shared_ptr<PackTrust>> trust; // per pack: may lookups use it (core/pack_trust.hpp)
  MappedFile midx_map;
  MidxView midx;
  bool midx_ok = false;
  std::vector<int> midx_to_pack;      // midx pack id -> index in packs (-1 if gone)
  std::vector<size_t> uncovered;      // packs not in the midx
};

static const char* kMarkerLine = "hpak-library 1";
// Bounds on what is read from the small files of a library (hostile input
// like any other: a symlink to /dev/zero must not grow memory).
constexpr uint64_t kMaxMarkerSize = 4096;
constexpr uint64_t kMaxNameFileSize = 4096;

std::string pack_file_name(const Digest& file_sum) { return "pack-" + to_hex(file_sum) + ".hpak"; }

static void make_dir(const std::string& p, mode_t mode) {
  if (mkdir(p.c_str(), mode) != 0 && errno != EEXIST) throw_errno("unable to create '" + p + "'");
}

void Library::init(const std::string& root, bool shared, int level) {
  mode_t dmode = shared ? 02775 : 0755;
  make_dir(root, dmode);
  for (const char* sub : {"packs", "catalogs", "used", "tmp", "locks"}) {
    std::string p = root + "/" + sub;
    make_dir(p, dmode);
    if (shared) chmod(p.c_str(), dmode); // setgid + group-writable regardless of umask
  }
  if (shared) chmod(root.c_str(), dmode);
  std::string marker = root + "/HPAKLIB";
  if (path_exists(marker)) {
    // An existing library: its settings change only when asked (atomically).
    Library lib(root);
    bool want_shared = lib.shared() || shared;
    int want_level = level >= 0 ? level : lib.default_level();
    if (want_shared == lib.shared() && want_level == lib.default_level()) return;
    AtomicFile f(marker, want_shared ? 0664 : 0644);
    std::string text = std::string(kMarkerLine) + "\n" + (want_shared ? "shared\n" : "") +
                       (want_level >= 0 ? "level " + std::to_string(want_level) + "\n" : "");
    f.write(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    f.commit(/*durable=*/true);
    return;
  }
  AtomicFile f(marker, shared ? 0664 : 0644);
  std::string text = std::string(kMarkerLine) + "\n" + (shared ? "shared\n" : "") +
                     (level >= 0 ? "level " + std::to_string(level) + "\n" : "");
  f.write(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  try {
    f.commit(/*durable=*/true, /*no_replace=*/true); // also syncs the root: its subdirectories' entries
  } catch (const Error&) {
    if (!path_exists(marker)) throw; // someone else initialised it at the same time: fine
  }
}

bool Library::is_library(const std::string& root) { return path_exists(root + "/HPAKLIB"); }

Library::Library(const std::string& root, bool check_index_trailers) : root_(root), check_index_trailers_(check_index_trailers) {
  struct stat st;
  if (stat(root.c_str(), &st) != 0) throw_errno("unable to open library '" + root + "'");
  if (!S_ISDIR(st.st_mode)) throw Error("'" + root + "' is not a library (not a directory)");
  std::string marker = root + "/HPAKLIB";
  if (!path_exists(marker)) throw Error("'" + root + "' is not an hpak library (no HPAKLIB file; create one with 'hpak init')");
  Bytes m = read_regular(marker, Follow::NoLinks, kMaxMarkerSize);
  std::string text(m.begin(), m.end());
  if (text.rfind("hpak-library ", 0) != 0) throw Error("'" + marker + "' is not an hpak library marker");
  if (text.rfind(std::string(kMarkerLine) + "\n", 0) != 0)
    throw Error("library '" + root + "' has format '" + text.substr(0, text.find('\n')) + "'; this hpak reads '" + kMarkerLine + "'");
  shared_ = text.find("\nshared\n") != std::string::npos;
  if (auto at = text.find("\nlevel "); at != std::string::npos) {
    int lv = std::atoi(text.c_str() + at + 7);
    if (lv < 0 || lv > 19) throw Error("'" + marker + "' names level " + std::to_string(lv) + " (0-19 expected)");
    level_ = lv;
  }
  std::unique_lock lk(mu_);
  load_locked();
}

Library::~Library() = default;

void Library::load_locked() const {
  auto l = std::make_unique<Loaded>();
  std::string dir = root_ + "/packs";
  DIR* d = opendir(dir.c_str());
  if (!d) throw_errno("unable to read '" + dir + "'");
  std::vector<std::string> idx_names;
  while (auto* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() == 5 + 64 + 5 && n.rfind("pack-", 0) == 0 && n.compare(n.size() - 5, 5, ".hidx") == 0) idx_names.push_back(n);
  }
  closedir(d);
  std::sort(idx_names.begin(), idx_names.end());
  // Reuse readers already open for the same pack (packs are immutable).
  std::map<Digest, std::shared_ptr<PackReader>> old;
  std::map<const PackReader*, std::shared_ptr<PackTrust>> old_trust;
  if (loaded_)
    for (size_t i = 0; i < loaded_->packs.size(); i++) {
      old[loaded_->names[i]] = loaded_->packs[i];
      old_trust[loaded_->packs[i].get()] = loaded_->trust[i];
    }
  for (auto& n : idx_names) {
    auto digest = digest_from_hex(n.substr(5, 64));
    if (!digest) continue;
    std::string pack_path = dir + "/" + n.substr(0, n.size() - 5) + ".hpak";
    auto reuse = old.find(*digest);
    // Only while the pack file is there: an index can outlive its pack (a
    // writer indexing an identical pack that gc was condemning), and an old
    // reader would then find objects that no longer exist in the library.
    if (reuse != old.end() && path_exists(pack_path)) {
      l->packs.push_back(reuse->second);
      l->names.push_back(*digest);
      l->trust.push_back(old_trust[reuse->second.get()]);
      continue;
    }
    try {
      l->packs.push_back(std::make_shared<PackReader>(pack_path, true, check_index_trailers_, Follow::NoLinks));
      l->names.push_back(*digest);
      l->trust.push_back(std::make_shared<PackTrust>(*l->packs.back(), shared_));
    } catch (const Error&) {
      // Gone (collected by gc since the listing) or unreadable: skip it here;
      // `hpak verify` reports unreadable packs.
    }
  }
  std::string midx_path = dir + "/multi.midx";
  if (path_exists(midx_path)) {
    try {
      l->midx_map = MappedFile(midx_path, Follow::NoLinks); // a FIFO or symlink there: ignored like a bad midx
      l->midx = MidxView(l->midx_map.bytes(), midx_path);
      l->midx_ok = true;
      for (auto& name : l->midx.packs()) {
        auto it = std::lower_bound(l->names.begin(), l->names.end(), name);
        if (it == l->names.end() || *it != name) {
          l->midx_ok = false; // names a pack that is gone: stale, ignore it
          break;
        }
        l->midx_to_pack.push_back(int(it - l->names.begin()));
      }
    } catch (const Error&) {
      l->midx_ok = false;
    }
  }
  std::vector<bool> covered(l->packs.size(), false);
  if (l->midx_ok)
    for (int i : l->midx_to_pack) covered[size_t(i)] = true;
  for (size_t i = 0; i < l->packs.size(); i++)
    if (!covered[i]) l->uncovered.push_back(i);
  if (loaded_) retired_.push_back(std::move(loaded_));
  loaded_ = std::move(l);
}

void Library::refresh() const {
  std::unique_lock lk(mu_);
  load_locked();
}

std::optional<ObjectRef> Library::locate_loaded(const Digest& d) const {
  std::shared_lock lk(mu_);
  const Loaded& l = *loaded_;
  // A pack this user may not take bytes from (core/pack_trust.hpp) is skipped;
  // when the midx points at one, any other copy is looked for in every pack.
  bool refused = false;
  if (l.midx_ok) {
    if (auto id = l.midx.find(d)) {
      size_t i = size_t(l.midx_to_pack[*id]);
      const PackReader* p = l.packs[i].get();
      if (auto r = p->find(d)) {
        if (l.trust[i]->usable()) return ObjectRef{p, *r};
        refused = true;
      }
    }
  }
  // Newest packs are not in the midx; search them (and, without a midx, all).
  for (auto it = l.uncovered.rbegin(); it != l.uncovered.rend(); ++it) {
    const PackReader* p = l.packs[*it].get();
    if (auto r = p->find(d); r && l.trust[*it]->usable()) return ObjectRef{p, *r};
  }
  for (size_t i = 0; refused && i < l.packs.size(); i++)
    if (auto r = l.packs[i]->find(d); r && l.trust[i]->usable()) return ObjectRef{l.packs[i].get(), *r};
  return std::nullopt;
}

std::optional<ObjectRef> Library::locate(const Digest& d) const {
  if (auto r = locate_loaded(d)) return r;
  // A pack may have been published (or repacked by gc) since we loaded. A
  // rescan that overlaps gc's publish-then-condemn can list the packs before
  // the new one appeared and open the old one after it was condemned, and see
  // neither: a second rescan sees the new one.
  for (int i = 0; i < 2; i++) {
    refresh();
    if (auto r = locate_loaded(d)) return r;
  }
  return std::nullopt;
}

bool Library::pack_usable(const PackReader* p) const {
  std::shared_ptr<PackTrust> t;
  {
    std::shared_lock lk(mu_);
    for (size_t i = 0; i < loaded_->packs.size() && !t; i++)
      if (loaded_->packs[i].get() == p) t = loaded_->trust[i];
  }
  return t && t->usable();
}

size_t Library::uncovered_packs() const {
  std::shared_lock lk(mu_);
  return loaded_->uncovered.size();
}

std::vector<const PackReader*> Library::packs() const {
  std::shared_lock lk(mu_);
  std::vector<const PackReader*> out;
  for (auto& p : loaded_->packs) out.push_back(p.get());
  return out;
}

std::string Library::check_catalog_name(const std::string& name) {
  if (name.empty()) return "catalog name is empty";
  if (name.size() > 128) return "catalog name is longer than 128 characters";
  if (name[0] == '.' || name[0] == '-') return "catalog name may not start with '.' or '-'";
  for (unsigned char c : name)
    if (!(isalnum(c) || c == '.' || c == '_' || c == '-' || c == '+' || c == '@'))
      return "catalog name '" + name + "' has a character outside [A-Za-z0-9._+@-]";
  return {};
}

std::vector<std::string> Library::catalog_names() const {
  std::vector<std::string> out;
  std::string dir = root_ + "/catalogs";
  DIR* d = opendir(dir.c_str());
  if (!d) throw_errno("unable to read '" + dir + "'");
  while (auto* e = readdir(d)) {
    std::string n = e->d_name;
    if (check_catalog_name(n).empty()) out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<Digest> Library::catalog_digest(const std::string& name) const {
  if (!check_catalog_name(name).empty()) return std::nullopt;
  std::string p = root_ + "/catalogs/" + name;
  // Opened once: a name removed between a check and the open (catalogs rm,
  // gc --unused) is simply absent, not an error. Anything but a small regular
  // file (a FIFO, a symlink, a device) is refused without blocking.
  Fd fd = open_regular_if_exists(p, Follow::NoLinks, kMaxNameFileSize);
  if (!fd) return std::nullopt;
  Bytes b = read_fd_bounded(fd.get(), p, kMaxNameFileSize);
  std::string text(b.begin(), b.end());
  const std::string head = "hpak-catalog 1\n";
  if (text.rfind(head, 0) != 0 || text.size() != head.size() + 65 || text.back() != '\n')
    throw Error("catalog name file '" + p + "' is malformed");
  auto d = digest_from_hex(std::string_view(text).substr(head.size(), 64));
  if (!d) throw Error("catalog name file '" + p + "' does not hold a digest");
  return d;
}

Catalog Library::load_catalog_by_digest(const Digest& d, StoredCatalog* stored_out, bool verify_digest) const {
  auto ref = locate(d);
  if (!ref) throw Error("catalog object " + to_hex(d) + " is missing from library '" + root_ + "'");
  // Prefer any intact copy: each pack holds the catalog twice.
  std::string first_error;
  for (const PackReader* p : packs()) {
    auto idx = p->index().find(d);
    if (!idx || !pack_usable(p)) continue;
    for (uint64_t i = *idx; i < p->index().count() && p->index().digest_at(i) == d; i++) {
      try {
        IndexRecord rec = p->index().record_at(i);
        Catalog c = p->load_catalog_record(rec, verify_digest);
        if (stored_out) {
          ByteSpan b = p->checked_stored(rec);
          stored_out->codec = rec.codec;
          stored_out->raw_len = rec.raw_len;
          stored_out->bytes.assign(b.begin(), b.end());
        }
        return c;
      } catch (const Error& e) {
        if (first_error.empty()) first_error = e.what();
      }
    }
  }
  throw Error("catalog " + to_hex(d) + " is unreadable: " + first_error);
}

Catalog Library::load_catalog(const std::string& name, Digest* digest_out, StoredCatalog* stored_out, bool verify_digest) const {
  auto d = catalog_digest(name);
  if (!d) {
    std::string why = check_catalog_name(name);
    if (!why.empty()) throw Error(why);
    std::vector<std::pair<size_t, std::string>> close;
    for (auto& n : catalog_names()) {
      size_t dist = edit_distance(name, n);
      if (dist <= std::max<size_t>(2, name.size() / 3) || n.find(name) != std::string::npos || name.find(n) != std::string::npos)
        close.emplace_back(dist, n);
    }
    std::sort(close.begin(), close.end());
    std::string msg = "no catalog named '" + name + "' in library '" + root_ + "'";
    if (!close.empty()) {
      msg += "; did you mean ";
      for (size_t i = 0; i < close.size() && i < 5; i++) msg += (i ? ", '" : "'") + close[i].second + "'";
      msg += "?";
    }
    throw Error(msg);
  }
  if (digest_out) *digest_out = *d;
  return load_catalog_by_digest(*d, stored_out, verify_digest);
}

void Library::set_catalog(const std::string& name, const Digest& d) {
  std::string why = check_catalog_name(name);
  if (!why.empty()) throw Error(why);
  AtomicFile f(root_ + "/catalogs/" + name, shared_ ? 0664 : 0644);
  std::string text = "hpak-catalog 1\n" + to_hex(d) + "\n";
  f.write(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  f.commit(/*durable=*/true); // the name's text, then catalogs/, before success is reported
  touch_used(name);
}

bool Library::remove_catalog(const std::string& name) {
  if (!check_catalog_name(name).empty()) return false;
  std::string p = root_ + "/catalogs/" + name;
  if (unlink(p.c_str()) != 0) {
    if (errno == ENOENT) return false;
    throw_errno("unable to remove catalog '" + name + "'");
  }
  unlink((root_ + "/used/" + name).c_str());
  return true;
}

// Best effort: last-use tracking must never fail a restore. Never through a
// symlink (a dangling one would create a file wherever it points) and never
// blocking on a FIFO: anything but a regular file at used/NAME is replaced.
void Library::touch_used(const std::string& name) const {
  if (!check_catalog_name(name).empty()) return;
  std::string p = root_ + "/used/" + name;
  mode_t mode = shared_ ? 0666 : 0644;
  bool replace = false;
  int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode);
  if (fd < 0) {
    replace = errno == ELOOP || errno == ENXIO; // a symlink; a FIFO nobody reads
  } else {
    Fd guard(fd);
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) futimens(fd, nullptr);
    else replace = true;
  }
  if (!replace) return;
  try {
    AtomicFile f(p, mode);
    f.commit(); // rename(2) replaces the name itself, never what a link points at
  } catch (const Error&) {
  }
}

int64_t Library::last_used(const std::string& name) const {
  struct stat st;
  if (lstat((root_ + "/used/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) return st.st_mtim.tv_sec;
  if (lstat((root_ + "/catalogs/" + name).c_str(), &st) == 0) return st.st_mtim.tv_sec;
  return 0;
}

// Size of a regular file, or -1 if there is none.
static int64_t file_size(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  return int64_t(st.st_size);
}

std::string Library::publish_pack(const std::string& tmp_path, const PackResult& r) {
  std::string name = pack_file_name(r.file_sum);
  std::string final_pack = packs_dir() + "/" + name;
  if (shared_) chmod(tmp_path.c_str(), 0444);
  // Durability (hpak-library(7)): the pack's data is on disk before a name
  // points at it, the index's before it is renamed in, and packs/ (both
  // entries) before this returns and anything relies on them.
  try {
    sync_path(tmp_path);
  } catch (const Error&) {
    unlink(tmp_path.c_str());
    throw;
  }
  // The name is the SHA-256 of the content: if it exists it is the same pack.
  // link() never replaces and works on NFS (renameat2's RENAME_NOREPLACE does not).
  // The temp file is consumed either way: a failed publish leaves nothing in tmp/.
  bool created = link(tmp_path.c_str(), final_pack.c_str()) == 0;
  if (!created && errno == EEXIST && file_size(final_pack) != int64_t(r.size)) {
    // Not this pack, whatever its name says: a leftover of a power loss
    // before its data was durable (written with HPAK_FSYNC=0, or by an hpak
    // that did not sync). Replace it with the real content.
    created = rename(tmp_path.c_str(), final_pack.c_str()) == 0;
    if (!created) errno = EEXIST;
  }
  if (!created && errno != EEXIST) {
    int err = errno;
    unlink(tmp_path.c_str());
    throw_errno("unable to publish pack '" + final_pack + "'", err);
  }
  unlink(tmp_path.c_str());
  std::string idx_path = index_path_for(final_pack);
  Bytes idx_bytes = encode_index(r.records, r.size, r.pack_sum, r.index_version());
  if (file_size(idx_path) != int64_t(idx_bytes.size())) { // absent, or a leftover as above
    try {
      AtomicFile idx(idx_path, 0444);
      idx.write(idx_bytes);
      idx.commit(/*durable=*/true); // syncs the index, then packs/
    } catch (const Error&) {
      // Without its index the pack is invisible garbage: take back the one we
      // just linked (an identical pack that was already there is not ours).
      if (created) unlink(final_pack.c_str());
      throw;
    }
  } else {
    sync_dir(packs_dir()); // published by another writer, maybe not synced yet
  }
  return name;
}

void Library::write_midx() {
  refresh();
  std::vector<Digest> names;
  std::vector<MidxEntry> entries;
  {
    std::shared_lock lk(mu_);
    names = loaded_->names;
    for (size_t p = 0; p < loaded_->packs.size(); p++) {
      const IndexView& v = loaded_->packs[p]->index();
      for (uint64_t i = 0; i < v.count(); i++) entries.push_back({v.digest_at(i), uint32_t(p)});
    }
  }
  AtomicFile f(packs_dir() + "/multi.midx", 0444);
  f.write(encode_midx(names, std::move(entries)));
  f.commit();
  refresh();
}

} // namespace hpak
