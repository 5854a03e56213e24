#include "core/library/library.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "base/os/sys.hpp"
#include "core/pack/pack_trust.hpp"
#include "core/store/dir_stream.hpp"
#include "core/store/quarantine.hpp"
#include "core/store/packs_listing.hpp"
#include "core/store/publish.hpp"
#include "base/diag.hpp"
#include "base/edit_distance.hpp"
#include "base/os/file.hpp"
#include "formats/catalog_name.hpp"
#include "formats/pack_name.hpp"

namespace hpak {

using namespace formats;

// One file of the multi-pack index (a layer, or the legacy multi.midx),
// mapped and parsed, with its packs resolved to the open ones.
struct MidxMapped {
  MappedFile map;
  MidxView view;
};

struct MidxLayer {
  std::string path;
  Library::FileId id;
  std::shared_ptr<const MidxMapped> mapped; // shared with later loads while the file is unchanged
  std::vector<int> to_pack;                 // layer pack id -> index in Loaded::packs
  const MidxView& view() const { return mapped->view; }
};

struct Library::Loaded {
  std::vector<std::shared_ptr<PackReader>> packs; // sorted by name
  std::vector<Digest> names;
  std::vector<std::shared_ptr<PackTrust>> trust; // per pack: may lookups use it (core/pack/pack_trust.hpp)
  std::vector<std::string> midx_files;            // every file of the multi-pack index listed
  std::vector<std::unique_ptr<MidxLayer>> layers; // the usable ones, smallest (newest) first
  std::vector<size_t> uncovered;                  // packs no usable layer covers
};

void Library::init(const std::string& root, bool shared, int level) {
  store::Layout layout(root);
  store::create_dirs(layout, shared);
  if (!store::has_marker(layout)) return store::create_marker(layout, {shared, level});
  // An existing library: its settings change only when asked (atomically).
  store::Marker m = store::read_marker(layout);
  store::Marker want{m.shared || shared, level >= 0 ? level : m.level};
  if (want.shared != m.shared || want.level != m.level) store::write_marker(layout, want);
}

bool Library::is_library(const std::string& root) { return store::has_marker(store::Layout(root)); }

Library::Library(const std::string& root, bool check_index_trailers) : layout_(root), check_index_trailers_(check_index_trailers) {
  store::Marker m = store::read_marker(layout_);
  shared_ = m.shared || !store::folders_private(layout_); // the marker alone is anyone's to rewrite (core/pack/pack_trust.hpp)
  level_ = m.level;
  std::unique_lock lk(mu_);
  load_locked();
}

Library::~Library() = default;

namespace {

// The visible packs of `listing`, reusing the readers `old` already holds
// (packs are immutable).
void open_packs(const Library& lib, const store::PacksListing& listing, const Library::Loaded* old, bool shared,
                bool check_index_trailers, Library::Loaded& l) {
  const store::Layout& layout = lib.layout();
  std::map<Digest, size_t> old_at;
  if (old)
    for (size_t i = 0; i < old->packs.size(); i++) old_at[old->names[i]] = i;
  for (const Digest& name : listing.visible()) {
    const std::string pack_path = layout.pack_path(name);
    auto reuse = old_at.find(name);
    // Only while the pack file is there: an index can outlive its pack (a
    // writer indexing an identical pack that gc was condemning), and an old
    // reader would then find objects that no longer exist in the library.
    if (reuse != old_at.end() && path_exists(pack_path)) {
      l.packs.push_back(old->packs[reuse->second]);
      l.names.push_back(name);
      l.trust.push_back(old->trust[reuse->second]);
      continue;
    }
    try {
      l.packs.push_back(std::make_shared<PackReader>(pack_path, true, check_index_trailers, Follow::NoLinks));
      l.packs.back()->set_base_source([&lib](const Digest& base) { return lib.read_base_catalog(base); });
      l.names.push_back(name);
      l.trust.push_back(std::make_shared<PackTrust>(*l.packs.back(), shared));
    } catch (const Error& e) {
      // Gone (collected by gc since the listing) or unreadable: skip it here;
      // `hpak verify` reports unreadable packs.
      diag_debug([&] { return "pack '" + pack_path + "' skipped: " + e.what(); });
    }
  }
}

// The largest midx file the open packs can justify: every pack named, every
// digest of their indexes listed once (formats/midx_format.hpp).
uint64_t midx_size_bound(const Library::Loaded& l) {
  uint64_t digests = 0;
  for (auto& p : l.packs) digests += p->index().count();
  return 24 + 32 * uint64_t(l.packs.size()) + 1024 + 36 * digests + 32;
}

Library::FileId file_id(const os::FileStat& st) {
  return {st.st_dev, st.st_ino, int64_t(st.st_size), int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

// A layer must be named by its trailer (the legacy multi.midx has no name to check).
void check_layer_name(const MidxLayer& m) {
  auto named = parse_midx_layer_name(base_name(m.path));
  if (named && *named != m.view().trailer())
    throw Error("multi-pack index layer '" + m.path + "' is not named by its trailer (" + to_hex(m.view().trailer()) + ")");
}

// The mapping `old` holds of the file at `path`, if the file is unchanged
// (same identity, size and mtime): a layer is parsed once, not at every rescan.
std::shared_ptr<const MidxMapped> mapped_before(const std::string& path, const Library::Loaded* old, Library::FileId& id) {
  os::FileStat st;
  if (!old || os::lstat_path(path.c_str(), st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
  for (auto& m : old->layers)
    if (m->path == path && m->id == file_id(st)) {
      id = m->id;
      return m->mapped;
    }
  return nullptr;
}

// A file of the multi-pack index, mapped and parsed (or reused from `old`):
// never through a symlink, never blocking on a FIFO, a regular file no larger
// than the packs justify. Readers open it for lookups (MidxCheck::lookup: its
// pages are read as lookups reach them); midx_problem checks it whole.
std::unique_ptr<MidxLayer> map_layer(const std::string& path, const Library::Loaded& l, MidxCheck check, const Library::Loaded* old = nullptr) {
  auto m = std::make_unique<MidxLayer>();
  m->path = path;
  if ((m->mapped = mapped_before(path, old, m->id))) return m;
  auto mapped = std::make_shared<MidxMapped>();
  mapped->map = MappedFile(path, Follow::NoLinks, midx_size_bound(l));
  m->id = file_id(mapped->map.stat());
  mapped->view = MidxView(mapped->map.bytes(), path, check);
  m->mapped = std::move(mapped);
  check_layer_name(*m);
  return m;
}

// The open pack of each pack a layer names; false (and `gone`) when one is
// not visible: the layer is stale.
bool resolve_layer_packs(MidxLayer& m, const Library::Loaded& l, Digest& gone) {
  for (auto& name : m.view().packs()) {
    auto it = std::lower_bound(l.names.begin(), l.names.end(), name);
    if (it == l.names.end() || *it != name) {
      gone = name;
      return false;
    }
    m.to_pack.push_back(int(it - l.names.begin()));
  }
  return true;
}

bool is_distrusted(const std::vector<Library::FileId>& distrusted, const Library::FileId& id) {
  return std::find(distrusted.begin(), distrusted.end(), id) != distrusted.end();
}

// The layers that name only packs that are open (and were not found wrong
// before: `distrusted`), smallest first; any other is ignored, and the packs
// it covers are looked up through their own indexes.
void attach_layers(const std::vector<Library::FileId>& distrusted, const Library::Loaded* old, Library::Loaded& l) {
  for (auto& path : l.midx_files) {
    try {
      auto m = map_layer(path, l, MidxCheck::lookup, old); // a FIFO or symlink there: ignored like a bad midx
      Digest gone{};
      if (is_distrusted(distrusted, m->id))
        diag_debug([&] { return "midx '" + path + "' ignored: it missed objects its packs hold"; });
      else if (!resolve_layer_packs(*m, l, gone))
        diag_debug([&] { return "midx '" + path + "' ignored: it names pack " + to_hex(gone) + ", which is not visible"; });
      else
        l.layers.push_back(std::move(m));
    } catch (const Error& e) {
      diag_debug([&] { return "midx '" + path + "' ignored: " + e.what(); });
    }
  }
  std::stable_sort(l.layers.begin(), l.layers.end(), [](auto& a, auto& b) { return a->view().count() < b->view().count(); });
}

void find_uncovered(Library::Loaded& l) {
  std::vector<bool> covered(l.packs.size(), false);
  for (auto& m : l.layers)
    for (int i : m->to_pack) covered[size_t(i)] = true;
  l.uncovered.clear();
  for (size_t i = 0; i < l.packs.size(); i++)
    if (!covered[i]) l.uncovered.push_back(i);
}

// Stops trusting the layers that missed `d`, which pack `at` holds: those
// covering that pack, and any that sent `d` elsewhere.
void distrust_layers(const Digest& d, size_t at, std::vector<Library::FileId>& distrusted, Library::Loaded& l) {
  auto wrong = [&](const MidxLayer& m) {
    return m.view().find(d).has_value() || std::find(m.to_pack.begin(), m.to_pack.end(), int(at)) != m.to_pack.end();
  };
  for (auto it = l.layers.begin(); it != l.layers.end();) {
    if (!wrong(**it)) {
      ++it;
      continue;
    }
    diag_debug([&] { return "midx '" + (*it)->path + "' ignored from now on: it misses object " + to_hex(d) + ", which a pack it covers holds"; });
    distrusted.push_back((*it)->id);
    it = l.layers.erase(it);
  }
  find_uncovered(l);
}

} // namespace

void Library::load_locked() const {
  auto l = std::make_unique<Loaded>();
  const store::PacksListing listing = store::list_packs(layout_);
  open_packs(*this, listing, loaded_.get(), shared_, check_index_trailers_, *l);
  l->midx_files = listing.midx_files(layout_);
  attach_layers(distrusted_midx_, loaded_.get(), *l);
  find_uncovered(*l);
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
  // A pack this user may not take bytes from (core/pack/pack_trust.hpp) is skipped;
  // when a layer points at one, any other copy is looked for in every pack.
  bool refused = false;
  for (auto& m : l.layers) {
    auto id = m->view().find(d);
    if (!id) continue;
    size_t i = size_t(m->to_pack[*id]);
    const PackReader* p = l.packs[i].get();
    if (auto r = p->find(d)) {
      if (l.trust[i]->usable()) return ObjectRef{p, *r};
      refused = true;
    }
  }
  // Newest packs are in no layer yet; search them (and, without layers, all).
  for (auto it = l.uncovered.rbegin(); it != l.uncovered.rend(); ++it) {
    const PackReader* p = l.packs[*it].get();
    if (auto r = p->find(d); r && l.trust[*it]->usable()) return ObjectRef{p, *r};
  }
  for (size_t i = 0; refused && i < l.packs.size(); i++)
    if (auto r = l.packs[i]->find(d); r && l.trust[i]->usable()) return ObjectRef{l.packs[i].get(), *r};
  return std::nullopt;
}

// A miss through the midx and the uncovered packs: every pack's own index. A
// hit there means the midx is wrong (valid, but missing digests): it is not
// used again by this Library, and `hpak verify` reports it.
std::optional<ObjectRef> Library::locate_past_midx(const Digest& d) const {
  std::optional<ObjectRef> found;
  size_t at = 0;
  const Loaded* seen = nullptr;
  {
    std::shared_lock lk(mu_);
    const Loaded& l = *loaded_;
    if (l.layers.empty()) return std::nullopt; // every pack was searched already
    for (size_t i = 0; i < l.packs.size() && !found; i++)
      if (auto r = l.packs[i]->find(d); r && l.trust[i]->usable()) found = ObjectRef{l.packs[i].get(), *r}, at = i;
    seen = &l;
  }
  if (!found) return std::nullopt;
  std::unique_lock lk(mu_);
  if (loaded_.get() == seen) distrust_layers(d, at, distrusted_midx_, *loaded_);
  return found;
}

std::optional<ObjectRef> Library::locate(const Digest& d) const {
  if (auto r = locate_loaded(d)) return r;
  if (auto r = locate_past_midx(d)) return r;
  // A pack may have been published (or repacked by gc) since we loaded. A
  // rescan that overlaps gc's publish-then-condemn can list the packs before
  // the new one appeared and open the old one after it was condemned, and see
  // neither: a second rescan sees the new one.
  for (int i = 0; i < 2; i++) {
    diag_trace([&] { return "object " + to_hex(d) + " not in the packs loaded: rescanning '" + layout_.packs_dir() + "'"; });
    refresh();
    if (auto r = locate_loaded(d)) return r;
    if (auto r = locate_past_midx(d)) return r;
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

void Library::unmap_gone(const std::vector<const PackReader*>& gone) {
  std::unique_lock lk(mu_);
  load_locked();
  std::set<const PackReader*> drop(gone.begin(), gone.end());
  for (auto& p : loaded_->packs) drop.erase(p.get()); // visible again (an identical pack re-added): kept
  for (auto& l : retired_)
    for (size_t i = 0; i < l->packs.size(); i++)
      if (l->packs[i] && drop.count(l->packs[i].get())) {
        l->trust[i].reset(); // refers to the reader: goes first
        l->packs[i].reset();
      }
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

std::string Library::check_catalog_name(const std::string& name) { return catalog_name_problem(name); }

std::string Library::check_new_catalog_name(const std::string& name) {
  std::string why = check_catalog_name(name);
  if (why.empty() && os::kWindowsNames) why = catalog_name_windows_problem(name);
  return why;
}

namespace {
std::vector<std::string> names_in(const store::Layout& layout) {
  std::vector<std::string> out;
  for (auto& n : store::list_dir(layout.catalogs_dir()))
    if (Library::check_catalog_name(n).empty()) out.push_back(n);
  return out;
}
} // namespace

std::vector<std::string> Library::catalog_names() const { return names_in(layout_); }

std::vector<std::string> Library::catalog_names_at(const std::string& root) {
  store::Layout layout(root);
  store::read_marker(layout); // not a library: the error Library's constructor gives
  return names_in(layout);
}

std::optional<Digest> Library::catalog_digest(const std::string& name) const {
  if (!check_catalog_name(name).empty()) return std::nullopt;
  return store::read_name_file(layout_, name);
}

Catalog Library::load_catalog_by_digest(const Digest& d, StoredCatalog* stored_out, bool verify_digest) const {
  auto ref = locate(d);
  if (!ref) throw Error("catalog object " + to_hex(d) + " is missing from library '" + layout_.root() + "'");
  // Prefer any intact copy: each pack holds the catalog twice.
  std::string errors; // every copy's, one line
  for (const PackReader* p : packs()) {
    auto idx = p->index().find(d);
    if (!idx || !pack_usable(p)) continue;
    for (uint64_t i = *idx; i < p->index().count() && p->index().digest_at(i) == d; i++) {
      try {
        IndexRecord rec = p->index().record_at(i);
        if (rec.digest != d) continue; // an index rewritten under its mapping
        if (stored_out && p->checks_every_read()) { // another member's pack: catalog and bytes kept from one checked copy
          Catalog c = p->load_catalog_copy(rec, stored_out->bytes);
          stored_out->codec = rec.codec;
          stored_out->raw_len = rec.raw_len;
          return c;
        }
        Catalog c = p->load_catalog_record(rec, verify_digest);
        if (stored_out) {
          ByteSpan b = p->checked_stored(rec);
          stored_out->codec = rec.codec;
          stored_out->raw_len = rec.raw_len;
          stored_out->bytes.assign(b.begin(), b.end());
        }
        return c;
      } catch (const Error& e) {
        errors += (errors.empty() ? "" : "; ") + std::string(e.what());
      }
    }
  }
  throw Error("catalog " + to_hex(d) + " is unreadable: " + errors);
}

Bytes Library::read_base_catalog(const Digest& d) const {
  locate(d); // rescans when a pack published since the load holds it
  std::string first_error;
  for (const PackReader* p : packs()) {
    if (!p->index().find(d) || !pack_usable(p)) continue;
    try {
      if (auto b = p->read_base_catalog(d)) return std::move(*b);
    } catch (const Error& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  if (!first_error.empty()) throw Error("base catalog " + to_hex(d) + " is unreadable: " + first_error);
  throw Error("base catalog " + to_hex(d) + " is missing from library '" + layout_.root() + "'");
}

std::vector<Library::CatalogMirror> Library::catalog_mirrors_of(const Digest& d) const {
  std::vector<CatalogMirror> out;
  for (const PackReader* p : packs()) {
    auto at = p->index().find(d);
    if (!at || !pack_usable(p)) continue;
    for (uint64_t i = *at; i < p->index().count() && p->index().digest_at(i) == d; i++) {
      IndexRecord rec = p->index().record_at(i);
      if (rec.digest != d || rec.kind != Kind::Catalog || rec.codec != Codec::ZstdBase) continue;
      try {
        out.push_back({base_name(p->path()), p->base_named(p->complete_or_same(rec))});
      } catch (const Error&) {
        // a damaged copy is read from nowhere: it needs no base
      }
    }
  }
  return out;
}

Catalog Library::load_catalog(const std::string& name, Digest* digest_out, StoredCatalog* stored_out, bool verify_digest) const {
  auto d = catalog_digest(name);
  if (!d) {
    std::string why = check_catalog_name(name);
    if (!why.empty()) throw Error(why);
    if (why = check_new_catalog_name(name); !why.empty())
      throw Error(why + ": a library made elsewhere can hold it, but it cannot be read here");
    std::vector<std::pair<size_t, std::string>> close;
    for (auto& n : catalog_names()) {
      size_t dist = edit_distance(name, n);
      if (dist <= std::max<size_t>(2, name.size() / 3) || n.find(name) != std::string::npos || name.find(n) != std::string::npos)
        close.emplace_back(dist, n);
    }
    std::sort(close.begin(), close.end());
    std::string msg = "no catalog named '" + name + "' in library '" + layout_.root() + "'";
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
  std::string why = check_new_catalog_name(name);
  if (!why.empty()) throw Error(why);
  store::write_name_file(layout_, shared_, name, d);
  touch_used(name);
}

bool Library::remove_catalog(const std::string& name, bool durable) {
  if (!check_catalog_name(name).empty()) return false;
  if (os::unlink_path(layout_.catalog_path(name).c_str()) != 0) {
    if (errno == ENOENT) return false;
    throw_errno("unable to remove catalog '" + name + "'");
  }
  os::unlink_path(layout_.used_path(name).c_str());
  // Before the removal is reported, or a gc collects the name's objects: a
  // power loss must not bring the name back without them.
  if (durable) sync_dir(layout_.catalogs_dir());
  return true;
}

Library::CatalogEntry Library::catalog_entry(const std::string& name, std::string* why) const {
  if (!check_catalog_name(name).empty()) return CatalogEntry::Absent;
  try {
    if (store::read_name_file(layout_, name)) return CatalogEntry::Name;
  } catch (const Error& e) {
    if (why) *why = e.what();
    return CatalogEntry::Junk;
  }
  // read_name_file found nothing to open; a dangling symlink is still there.
  if (!path_exists(layout_.catalog_path(name))) return CatalogEntry::Absent;
  if (why) *why = "'" + layout_.catalog_path(name) + "' is " + store::describe_entry(layout_.catalog_path(name));
  return CatalogEntry::Junk;
}

std::string Library::quarantine_catalog(const std::string& name) {
  std::string why = check_catalog_name(name);
  if (!why.empty()) throw Error(why);
  return store::quarantine_catalog_entry(layout_, shared_, name);
}

// Best effort: last-use tracking must never fail a restore. Never through a
// symlink (a dangling one would create a file wherever it points) and never
// blocking on a FIFO: anything but a regular file at used/NAME is replaced.
void Library::touch_used(const std::string& name) const {
  if (!check_catalog_name(name).empty()) return;
  const std::string p = layout_.used_path(name);
  os::Mode mode = shared_ ? 0666 : 0644;
  bool replace = false;
  int fd = os::open_path(p.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode);
  if (fd < 0) {
    replace = errno == ELOOP || errno == ENXIO; // a symlink; a FIFO nobody reads
  } else {
    Fd guard(fd);
    os::FileStat st;
    if (os::fstat(fd, st) == 0 && S_ISREG(st.st_mode)) os::set_times(fd, nullptr);
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
  os::FileStat st;
  if (os::lstat_path(layout_.used_path(name).c_str(), st) == 0 && S_ISREG(st.st_mode)) return st.st_mtim.tv_sec;
  if (os::lstat_path(layout_.catalog_path(name).c_str(), st) == 0) return st.st_mtim.tv_sec;
  return 0;
}

std::string Library::publish_pack(const std::string& tmp_path, const PackResult& r) {
  return store::publish_pack(layout_, shared_, tmp_path, r.file_sum, r.size, encode_index(r.records, r.size, r.pack_sum, r.index_version()));
}

namespace {

// A layer over the packs `which` (indexes into l.packs, ascending: sorted by
// name), listing every digest of their own indexes.
Bytes encode_layer(const Library::Loaded& l, const std::vector<size_t>& which) {
  std::vector<Digest> names;
  std::vector<MidxEntry> entries;
  for (size_t k = 0; k < which.size(); k++) {
    names.push_back(l.names[which[k]]);
    const IndexView& v = l.packs[which[k]]->index();
    for (uint64_t i = 0; i < v.count(); i++) entries.push_back({v.digest_at(i), uint32_t(k)});
  }
  return encode_midx(names, std::move(entries));
}

// Publishes a layer under its name: written whole under a temp name, then
// renamed (derived data: not synced). Returns its path.
std::string publish_layer(const store::Layout& layout, const Bytes& bytes) {
  Digest trailer;
  std::memcpy(trailer.data(), bytes.data() + bytes.size() - 32, 32);
  AtomicFile f(layout.midx_layer_path(trailer), 0444);
  f.write(bytes);
  f.commit();
  return f.final_path();
}

// Deletes the index files `paths` but `keep` (one already gone is fine: a
// concurrent writer merged it too).
void remove_midx_files(const std::vector<std::string>& paths, const std::string& keep) {
  for (auto& p : paths)
    if (p != keep && os::unlink_path(p.c_str()) != 0 && errno != ENOENT)
      diag_debug([&] { return "midx '" + p + "' not removed: " + std::string(std::strerror(errno)); });
}

// What a new layer covers: the packs no layer covers, and the packs of the
// smallest layers the merge policy folds in (formats/midx_format.hpp).
struct LayerPlan {
  std::vector<size_t> packs;        // indexes into Loaded::packs, ascending
  std::vector<std::string> merged;  // the layers it replaces
};

LayerPlan plan_layer(const Library::Loaded& l) {
  LayerPlan plan;
  if (l.uncovered.size() < kMidxMinUncovered) return plan; // their own indexes serve
  uint64_t fresh = 0;
  for (size_t i : l.uncovered) fresh += l.packs[i]->index().count();
  std::vector<uint64_t> counts;
  for (auto& m : l.layers) counts.push_back(m->view().count());
  std::set<size_t> packs(l.uncovered.begin(), l.uncovered.end());
  for (size_t k = 0, n = midx_layers_to_merge(counts, fresh); k < n; k++) {
    for (int i : l.layers[k]->to_pack) packs.insert(size_t(i));
    plan.merged.push_back(l.layers[k]->path);
  }
  plan.packs.assign(packs.begin(), packs.end());
  return plan;
}

} // namespace

void Library::write_midx() {
  refresh();
  Bytes bytes;
  std::vector<std::string> old;
  {
    std::shared_lock lk(mu_);
    std::vector<size_t> all(loaded_->packs.size());
    for (size_t i = 0; i < all.size(); i++) all[i] = i;
    if (all.size() >= kMidxMinUncovered) bytes = encode_layer(*loaded_, all);
    old = loaded_->midx_files;
  }
  remove_midx_files(old, bytes.empty() ? std::string() : publish_layer(layout_, bytes));
  refresh();
}

size_t Library::remove_unusable_midx_files() {
  refresh();
  std::vector<std::string> unusable;
  {
    std::shared_lock lk(mu_);
    for (auto& path : loaded_->midx_files)
      if (std::none_of(loaded_->layers.begin(), loaded_->layers.end(), [&](auto& m) { return m->path == path; })) unusable.push_back(path);
  }
  remove_midx_files(unusable, {});
  if (!unusable.empty()) refresh();
  return unusable.size();
}

bool Library::add_midx_layer() {
  refresh();
  Bytes bytes;
  LayerPlan plan;
  {
    std::shared_lock lk(mu_);
    plan = plan_layer(*loaded_);
    if (plan.packs.empty()) return false;
    bytes = encode_layer(*loaded_, plan.packs);
  }
  remove_midx_files(plan.merged, publish_layer(layout_, bytes));
  refresh();
  return true;
}

void Library::update_midx_or_warn(std::vector<std::string>& warnings) {
  try {
    add_midx_layer();
  } catch (const Error& e) {
    warnings.push_back(std::string(e.what()) + "; no multi-pack index layer was written over the packs gc left (lookups use their own indexes until a later add or gc writes one)");
  }
  remove_unusable_midx_files();
}

void Library::add_midx_layer_or_warn(std::vector<std::string>& warnings) {
  try {
    add_midx_layer();
  } catch (const Error& e) {
    warnings.push_back(std::string(e.what()) + "; no multi-pack index layer was written (lookups use the packs' own indexes until a later add or gc writes one)");
  }
}

namespace {

// Why one file of the multi-pack index is not fit for lookups (see
// Library::midx_problem), against the packs `cur` has open.
std::string layer_problem(const std::string& path, const Library::Loaded& cur, std::string* stale_out) {
  std::unique_ptr<MidxLayer> m;
  try {
    m = map_layer(path, cur, MidxCheck::full);
  } catch (const Error& e) {
    os::FileStat st;
    if (os::lstat_path(path.c_str(), st) != 0 && errno == ENOENT) return {}; // merged away by a concurrent add
    std::string why = std::string(e.what()) + " (readers ignore it; 'hpak repair' or the next gc rewrites it)";
    // Larger than the visible packs can need: what a gc or repair killed
    // after deleting packs, before writing the new midx, leaves. Stale, not
    // damage (readers ignore it either way).
    if (!stale_out || os::lstat_path(path.c_str(), st) != 0 || !S_ISREG(st.st_mode) || uint64_t(st.st_size) <= midx_size_bound(cur)) return why;
    if (stale_out->empty()) *stale_out = "multi-pack index '" + path + "' is larger than the visible packs can need (written before packs were deleted): readers ignore it until it is rewritten";
    return {};
  }
  std::vector<int> to_pack; // layer pack id -> index in cur.packs, -1 if not visible
  for (auto& name : m->view().packs()) {
    auto it = std::lower_bound(cur.names.begin(), cur.names.end(), name);
    bool visible = it != cur.names.end() && *it == name;
    to_pack.push_back(visible ? int(it - cur.names.begin()) : -1);
    if (!visible && stale_out && stale_out->empty())
      *stale_out = "multi-pack index '" + path + "' names pack " + to_hex(name) + ", which is not visible: readers ignore it until it is rewritten";
  }
  for (size_t id = 0; id < to_pack.size(); id++) {
    if (to_pack[id] < 0) continue;
    const IndexView& v = cur.packs[size_t(to_pack[id])]->index();
    for (uint64_t i = 0; i < v.count(); i++) {
      const Digest d = v.digest_at(i);
      auto hit = m->view().find(d);
      if (!hit)
        return "multi-pack index '" + path + "' does not list object " + to_hex(d) + ", which pack " + to_hex(cur.names[size_t(to_pack[id])]) +
               " it covers holds ('hpak repair' rewrites it)";
      int at = *hit < to_pack.size() ? to_pack[*hit] : -1;
      // Asked of the pack's index alone: PackReader::find would read each
      // entry's header through the mapping (every page of the pack that
      // holds one: 67 MiB of a 1 GiB pack at K = 1,000, bench/RESULTS.md).
      if (at >= 0 && !cur.packs[size_t(at)]->index().find(d))
        return "multi-pack index '" + path + "' sends object " + to_hex(d) + " to pack " + to_hex(cur.names[size_t(at)]) +
               ", which does not hold it ('hpak repair' rewrites it)";
    }
  }
  return {};
}

} // namespace

std::string Library::midx_problem(std::string* stale_out) const {
  std::shared_lock lk(mu_);
  // A fresh mapping of each file: not the loaded one, which a lookup may have given up on.
  for (auto& path : loaded_->midx_files)
    if (std::string why = layer_problem(path, *loaded_, stale_out); !why.empty()) return why;
  return {};
}

size_t Library::midx_layers() const {
  std::shared_lock lk(mu_);
  return loaded_->layers.size();
}

std::function<Bytes(const Digest&)> enclosing_library_bases(const std::string& pack_path) {
  std::string dir;
  try {
    dir = dir_name(real_path(pack_path));
  } catch (const Error&) {
    return {};
  }
  if (base_name(dir) != "packs") return {};
  const std::string root = dir_name(dir);
  try {
    if (!store::has_marker(store::Layout(root))) return {};
  } catch (const Error&) {
    return {};
  }
  struct Opened {
    std::mutex mu;
    std::unique_ptr<Library> lib;
  };
  auto opened = std::make_shared<Opened>();
  return [opened, root](const Digest& d) {
    std::lock_guard lk(opened->mu);
    if (!opened->lib) opened->lib = std::make_unique<Library>(root);
    return opened->lib->read_base_catalog(d);
  };
}

} // namespace hpak
