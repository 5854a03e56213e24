// The library ("hololib"): a directory of immutable packs and named catalogs,
// shared by many processes and users at once. Its layout, locks and the
// publishing of files are the storage layer's (core/store/, man/hpak-library.7);
// this class is the library as an object store: lookup, catalogs, adds.
//
// Writers never modify a published file: adding an environment writes one new
// pack with only the objects the library lacks, publishes it (pack, then
// index), then, holding publish.lock shared, checks that every object it
// relies on is still visible (a concurrent gc may have condemned it), re-adds
// any that are not, and only then renames the catalog name into place — see
// core/gc/gc.hpp for the protocol.
// Readers load the visible packs, look up through each layer of the
// multi-pack index (formats/midx_format.hpp; smallest, i.e. newest, first) and
// each uncovered pack's index (O(log n) each), and on a miss search every pack's
// own index (a layer that misses what a pack it covers holds is wrong: it is
// not used again) and rescan the directory, so a pack published a moment ago is found. Lookups are thread-safe; PackReaders handed
// out stay valid for the Library's lifetime even across rescans.
#pragma once

#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "base/os/sys.hpp"
#include "core/pack/object_source.hpp"
#include "core/pack/packer.hpp"
#include "core/store/layout.hpp"
#include "formats/midx_format.hpp"

namespace hpak {

class Library : public ObjectSource {
public:
  // Creates a library. `level` >= 0 records the default zstd level of packs
  // added to it (0: objects stored uncompressed). On an existing library,
  // `shared` and `level` update its marker; nothing else changes.
  static void init(const std::string& root, bool shared = false, int level = -1);
  static bool is_library(const std::string& root);
  // Opens an existing library; throws a clear Error if `root` is not one or
  // has another format version.
  // `check_index_trailers` = false: see PackReader (restore without --verify).
  explicit Library(const std::string& root, bool check_index_trailers = true);
  ~Library() override;

  const std::string& root() const { return layout_.root(); }
  const store::Layout& layout() const { return layout_; }
  std::string packs_dir() const { return layout_.packs_dir(); }
  std::string tmp_dir() const { return layout_.tmp_dir(); }
  bool shared() const { return shared_; }
  // The level recorded by `hpak init --level`, or -1 (pack's default, 3).
  int default_level() const { return level_; }

  // Re-reads the packs directory and the multi-pack index's layers.
  void refresh() const;
  std::optional<ObjectRef> locate(const Digest& d) const override;
  // Like locate, but without the rescan on a miss.
  std::optional<ObjectRef> locate_loaded(const Digest& d) const;
  bool contains(const Digest& d) const { return locate_loaded(d).has_value(); }

  // Visible packs no usable midx layer covers (each costs a lookup of its own).
  size_t uncovered_packs() const;
  // Usable layers of the multi-pack index (each costs a lookup of its own).
  size_t midx_layers() const;
  // Visible packs (stable pointers: kept alive across rescans, see unmap_gone).
  std::vector<const PackReader*> packs() const;
  // Rescans, then drops this Library's readers of the packs in `gone` that
  // are no longer visible (gc, once it deleted them): a deleted file's space
  // is freed only when nobody maps it any more, which on a full disk is the
  // point of deleting it. Pointers to those readers are invalid afterwards.
  void unmap_gone(const std::vector<const PackReader*>& gone);
  // May this user take bytes from `p` (a visible pack)? Always in a private
  // library; in a shared one, see core/pack/pack_trust.hpp. locate() skips the
  // packs it may not.
  bool pack_usable(const PackReader* p) const;

  // Named catalogs.
  static std::string check_catalog_name(const std::string& name); // "" if valid
  // A name to create: valid, and on Windows (os::kWindowsNames) not a name Win32
  // cannot open (a device name, a trailing dot). A library from elsewhere that
  // holds such a name is still read where it can be.
  static std::string check_new_catalog_name(const std::string& name);
  std::vector<std::string> catalog_names() const;
  // The same for the library at `root`, without loading it (no pack or index
  // is opened: what `catalogs --names` prints, for shell completion).
  static std::vector<std::string> catalog_names_at(const std::string& root);
  std::optional<Digest> catalog_digest(const std::string& name) const;
  // The same, nullopt for junk under catalogs/ instead of an Error.
  std::optional<Digest> catalog_digest_or_none(const std::string& name) const;
  // A catalog entry's bytes as stored in its pack (to keep a copy without
  // re-encoding it).
  struct StoredCatalog {
    formats::Codec codec = formats::Codec::Raw;
    uint64_t raw_len = 0;
    Bytes bytes;
  };
  // `verify_digest` = false trusts the catalog's name (its stored bytes'
  // checksum is still checked), as a restore does by default.
  formats::Catalog load_catalog_by_digest(const Digest& d, StoredCatalog* stored_out = nullptr, bool verify_digest = true) const;
  // The raw bytes of catalog `d` as the base of a catalog stored against it
  // (formats::Codec::ZstdBase): a copy stored whole in any usable pack,
  // checked against its name. What every pack reader of the library asks.
  Bytes read_base_catalog(const Digest& d) const;
  // The copies of catalog `d` in usable packs stored against a base (a
  // mirror copy, formats::Codec::ZstdBase): each one's pack (file name) and
  // base. gc keeps a base alive while a mirror against it stays where it is.
  // A copy whose header is damaged needs none; its stored bytes are not
  // checked (PackReader::base_named).
  struct CatalogMirror {
    std::string pack;
    Digest base;
  };
  std::vector<CatalogMirror> catalog_mirrors_of(const Digest& d) const;
  // Throws a clear Error naming the close matches if `name` does not exist.
  formats::Catalog load_catalog(const std::string& name, Digest* digest_out = nullptr, StoredCatalog* stored_out = nullptr,
                                bool verify_digest = true) const;
  // Sets the name durably (store::write_name_file); if it throws, the name
  // is as it was before.
  void set_catalog(const std::string& name, const Digest& d);
  // Removes a name file; `durable`: catalogs/ is synced before it returns
  // (gc --unused syncs once for all the names it drops).
  bool remove_catalog(const std::string& name, bool durable = true);
  // What catalogs/NAME holds: nothing, a name file, or junk (a directory, a
  // symlink, a FIFO, a malformed or oversized file: `why` says what).
  enum class CatalogEntry { Absent, Name, Junk };
  CatalogEntry catalog_entry(const std::string& name, std::string* why = nullptr) const;
  // Moves a junk entry of catalogs/ into LIB/quarantine/ (core/store/quarantine.hpp);
  // returns where it went.
  std::string quarantine_catalog(const std::string& name);
  void touch_used(const std::string& name) const;
  // Seconds since the epoch of the last restore (or of the name's creation).
  int64_t last_used(const std::string& name) const;

  struct AddResult {
    PackStats stats;
    Digest catalog_digest{};
    std::string pack_name; // empty when nothing new had to be written
    uint64_t pack_size = 0;
    int repairs = 0;       // extra packs written because gc raced the add
    std::vector<std::string> warnings; // after the name was set (the midx could not be rewritten)
  };
  // The catalogs a new catalog `c`, to be named `name`, may have its mirror
  // stored against (PackOptions::catalog_bases; formats::Codec::ZstdBase).
  std::vector<CatalogBase> catalog_bases_for(const formats::Catalog& c, const std::string& name) const;
  // The pack holding most of a sample of `c`'s objects (catalog_bases_for).
  const PackReader* pack_holding_most(const formats::Catalog& c) const;
  // `hpak pack DIR --into LIB --name NAME`.
  AddResult add_tree(const std::string& src, const std::string& name, PackOptions opts);

  // An add from a source other than a directory tree (hpak import): one pack
  // with the objects the library lacks and the catalogs, published like
  // add_tree's (pack, index; then, under publish.lock shared, every object
  // checked visible and rewritten if a gc hid it; then the names set).
  // `write_objects(w, want)` must append every blob digest of `want` to `w`
  // (in the order given) or throw; nothing is named if it throws.
  struct NamedCatalog {
    std::string name;
    formats::Catalog catalog;
  };
  using ObjectWriter = std::function<void(PackWriter& w, const std::vector<Digest>& want)>;
  struct AddSetResult {
    std::vector<Digest> catalog_digests; // as `catalogs`
    std::string pack_name;               // empty when nothing new had to be written
    uint64_t pack_size = 0;
    uint64_t objects_written = 0;        // blobs in the new pack
    uint64_t objects_present = 0;        // distinct blobs the library already had
    int repairs = 0;
    std::vector<std::string> warnings;   // after the names were set
  };
  AddSetResult add_set(const std::vector<NamedCatalog>& catalogs, const ObjectWriter& write_objects, int level);

  // Publishes a finished pack written to `tmp_path` (in tmp/); returns its name.
  std::string publish_pack(const std::string& tmp_path, const PackResult& r);
  // Writes one midx layer covering every visible pack (none when they are
  // fewer than formats::kMidxMinUncovered) and deletes every other file of
  // the multi-pack index it listed (repair: under gc.lock).
  void write_midx();
  // An add's step: when formats::kMidxMinUncovered visible packs or more are
  // in no usable layer, writes a layer covering those packs and the smallest layers the merge policy folds
  // in (formats/midx_format.hpp), then deletes the layers it merged. Returns
  // whether it wrote a layer.
  bool add_midx_layer();
  // The same; a failure (a full disk) is a warning appended to `warnings`.
  void add_midx_layer_or_warn(std::vector<std::string>& warnings);
  // Deletes the files of the multi-pack index readers ignore (stale: naming a
  // pack that is not visible; unreadable; found wrong). For gc, under gc.lock.
  // Returns how many.
  size_t remove_unusable_midx_files();
  // gc's step after it rewrote or deleted packs: the index work tracks the
  // change. A layer naming a pack that is gone is stale (readers ignore it);
  // the packs it covered that remain are then in no usable layer, like gc's
  // new pack. Writes one layer over those packs, folding in the smallest
  // layers as an add does (add_midx_layer), then deletes the stale and
  // unusable files. Layers naming only packs that remain are kept as they
  // are. A crash between the two steps leaves a layer set readers use (the
  // stale ones ignored). A failure (a full disk) is a warning appended to
  // `warnings`; the stale layers are then deleted all the same.
  void update_midx_or_warn(std::vector<std::string>& warnings);
  // Why a file of the multi-pack index (a layer, or the legacy multi.midx) is
  // not fit for lookups ("" when there is none or each agrees with the packs'
  // own indexes): unreadable (not a regular file, too large, malformed, a
  // layer not named by its trailer), or a digest a covered pack holds that it
  // does not find or sends to a pack without it. The first one found. One that
  // names a pack that is gone is only stale (readers ignore it): `stale_out`
  // says so. Reads every covered index.
  std::string midx_problem(std::string* stale_out = nullptr) const;

  // The packs and midx loaded (core/library/library.cpp).
  struct Loaded;
  // A file's identity (the midx found wrong is not trusted again).
  struct FileId {
    os::Dev dev = 0;
    os::Ino ino = 0;
    int64_t size = -1, mtime_ns = 0;
    bool operator==(const FileId&) const = default;
  };

private:
  store::Layout layout_;
  bool shared_ = false;
  int level_ = -1;
  bool check_index_trailers_ = true;
  mutable std::shared_mutex mu_;
  mutable std::unique_ptr<Loaded> loaded_;
  mutable std::vector<std::unique_ptr<Loaded>> retired_; // keeps old readers alive
  // Midx layers found wrong (they missed what a covered pack holds): their
  // identities, so that a rescan does not trust the same files again.
  mutable std::vector<FileId> distrusted_midx_;
  void load_locked() const;
  std::optional<ObjectRef> locate_past_midx(const Digest& d) const;
};

// For a pack file read on its own (hpak cat, ls, unpack, verify, mount of a
// PACK): when it sits in a library's packs/ directory, a base source that
// opens that library (once, on the first base asked for) and reads the base
// through it; otherwise empty (the pack's own catalogs only).
std::function<Bytes(const Digest&)> enclosing_library_bases(const std::string& pack_path);

} // namespace hpak
