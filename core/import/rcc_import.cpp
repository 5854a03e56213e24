#include "core/import/rcc_import.hpp"

#include "core/pack/pack_trust.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "core/pack/relocation.hpp"
#include "base/parallel.hpp"
#include "base/zstd_codec.hpp"

namespace hpak {

using namespace formats;

namespace {

constexpr int64_t kMotherTimeNs = int64_t(1610000000) * 1000000000; // rcc's restore mtime
// A catalog's JSON, decoded, at most (the largest real ones are tens of MB):
// refused past it, its size counted before it is held in memory, so a catalog
// bomb costs the time to decode this much, not the memory.
constexpr uint64_t kCatalogCap = 256ull << 20;
const char* const kCatalogCapText = "256 MiB";

std::string quoted_list(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); i++) out += (i ? ", '" : "'") + v[i] + "'";
  return out;
}

// Objects are decoded on all cores a batch at a time: at most this many
// decoded bytes (as the catalogs claim them) in a batch, an object larger
// than that alone, so claimed sizes bound the memory of the whole batch.
constexpr uint64_t kBatchBytes = 256ull << 20;
constexpr size_t kBatchCount = 1024;

// Consecutive batches of [0, n): each ends before the item that would take it
// past kBatchCount items or kBatchBytes (`size_of(i)`) unless it is the first.
template <class SizeOf> std::vector<std::pair<size_t, size_t>> byte_batches(size_t n, SizeOf size_of) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t begin = 0;
  while (begin < n) {
    size_t end = begin + 1;
    uint64_t bytes = size_of(begin);
    while (end < n && end - begin < kBatchCount && size_of(end) <= kBatchBytes - std::min(bytes, kBatchBytes)) bytes += size_of(end++);
    out.emplace_back(begin, end);
    begin = end;
  }
  return out;
}

// Stored bytes may exceed the raw size a little (gzip/zstd framing of incompressible data).
uint64_t stored_cap(uint64_t size) { return size + size / 16 + 4096; }

// Decodes stored object bytes and checks size and digest; "" if fine, else why not.
std::string check_object(ByteSpan stored, const std::string& hex, uint64_t size, const std::string& what, Bytes& raw) {
  std::string why;
  try {
    raw = rcc_decode(stored, size, what);
    if (raw.size() != size) why = "it holds " + std::to_string(raw.size()) + " bytes, its catalog says " + std::to_string(size);
    else if (to_hex(sha256(raw)) != hex) why = "its SHA-256 is " + to_hex(sha256(raw));
  } catch (const RccRefused& e) {
    why = e.what();
  }
  // A raw object that happens to start with a gzip or zstd magic.
  if (!why.empty() && stored.size() == size && to_hex(sha256(stored)) == hex) {
    raw.assign(stored.begin(), stored.end());
    return {};
  }
  return why;
}

// ---- catalog conversion -----------------------------------------------------------

struct Converter {
  const RccCatalog& rc;
  const std::string& where;
  Catalog cat;
  RccImportedCatalog sum;
  std::map<std::string, const RccFile*, std::less<>> rewrite_of;        // path -> entry with rewrite offsets

  [[noreturn]] void refuse(const std::string& path, const std::string& why) const {
    throw RccRefused("rcc catalog '" + where + "': '" + path + "' " + why);
  }

  std::string child_path(const std::string& prefix, const std::string& key, const std::string& name) const {
    std::string path = prefix.empty() ? key : prefix + "/" + key;
    std::string why = check_name(key);
    if (!why.empty()) refuse(path, "has a bad name: " + why);
    if (name != key) refuse(path, "is recorded under the name '" + name + "'");
    why = check_path(path);
    if (!why.empty()) refuse(path, "has a bad path: " + why);
    return path;
  }

  Node symlink_node(const std::string& path, const std::string& target) {
    if (target.find('\0') != std::string::npos || target.size() > kMaxPath) refuse(path, "has a bad symlink target");
    Node n;
    n.type = NodeType::Symlink;
    n.mode = 0777;
    n.path = cat.keep(path);
    n.target = target;
    n.size = target.size();
    n.mtime_ns = kMotherTimeNs;
    if (!cat.roots.empty())
      n.relocs = find_relocations(ByteSpan(reinterpret_cast<const uint8_t*>(target.data()), target.size()), cat.roots);
    return n;
  }

  void add_file(const std::string& path, const RccFile& f) {
    if (!f.symlink.empty()) {
      cat.nodes.push_back(symlink_node(path, f.symlink));
      sum.symlinks++;
      return;
    }
    if (f.mode & kGoModeSymlink) refuse(path, "is a symlink without a target");
    if (f.mode & kGoModeDir) refuse(path, "is a file with a directory's mode");
    if (go_mode_is_special(f.mode)) refuse(path, "is a device, pipe or socket");
    if (f.digest.size() == 32 && is_hex(f.digest))
      refuse(path, "is named by a 32-hex SipHash digest (an rcc 'compress.no' library): not supported, hpak checks SHA-256 names");
    auto d = f.digest.size() == 64 ? digest_from_hex(f.digest) : std::nullopt;
    if (!d || to_hex(*d) != f.digest) refuse(path, "has a bad digest '" + f.digest.substr(0, 80) + "'");
    Node n;
    n.type = NodeType::File;
    n.mode = go_mode_to_posix(f.mode);
    n.path = cat.keep(path);
    n.digest = *d;
    n.size = uint64_t(f.size);
    n.mtime_ns = kMotherTimeNs;
    cat.nodes.push_back(std::move(n));
    if (!f.rewrite.empty()) {
      rewrite_of.emplace(path, &f);
      sum.relocated_files++;
    }
    sum.files++;
    sum.file_bytes += uint64_t(f.size);
  }

  // Entries under a symlinked or shadow directory: counted, not kept.
  static uint64_t count_entries(const RccDir& d) {
    uint64_t n = d.files.size();
    for (auto& [k, sub] : d.subdirs) n += 1 + count_entries(sub);
    return n;
  }

  void add_dir(const std::string& prefix, const RccDir& d) {
    for (auto& [key, f] : d.files) add_file(child_path(prefix, key, f.name), f);
    for (auto& [key, sub] : d.subdirs) {
      std::string path = child_path(prefix, key, sub.name);
      if (sub.shadow) {
        sum.left_out += 1 + count_entries(sub);
        continue;
      }
      if (!sub.symlink.empty()) {
        cat.nodes.push_back(symlink_node(path, sub.symlink));
        sum.symlinks++;
        sum.left_out += count_entries(sub);
        continue;
      }
      if (go_mode_is_special(sub.mode) || (sub.mode & kGoModeSymlink)) refuse(path, "is a directory with a non-directory mode");
      Node n;
      n.type = NodeType::Dir;
      n.mode = go_mode_to_posix(sub.mode);
      n.path = cat.keep(path);
      n.mtime_ns = kMotherTimeNs;
      cat.nodes.push_back(std::move(n));
      sum.dirs++;
      add_dir(path, sub);
    }
  }

};

} // namespace

RccRewrites map_rcc_rewrites(ByteSpan data, const std::vector<int64_t>& rewrite, const std::string& path,
                             const std::string& identity, const std::string& what) {
  if (identity.empty() || path.size() < identity.size() || path.compare(path.size() - identity.size(), identity.size(), identity) != 0)
    throw RccRefused(what + ": the catalog's space path '" + path + "' does not end in its identity '" + identity + "'");
  std::vector<int64_t> offs(rewrite);
  std::sort(offs.begin(), offs.end());
  offs.erase(std::unique(offs.begin(), offs.end()), offs.end());
  const size_t lead = path.size() - identity.size();
  auto at = [&](uint64_t off, const std::string& s) {
    return off <= data.size() && data.size() - off >= s.size() && std::equal(s.begin(), s.end(), data.begin() + ptrdiff_t(off));
  };
  RccRewrites out;
  uint64_t next_min = 0;
  for (int64_t o64 : offs) {
    uint64_t o = uint64_t(o64);
    if (!at(o, identity))
      throw RccRefused(what + ": rewrite offset " + std::to_string(o) + " does not hold the space name '" + identity + "'");
    if (o < lead || !at(o - lead, path)) {
      // Not inside the space path. A bare name (a prompt, a label) is left as
      // it is, as hpak's own packs leave it; a name ending another path would
      // still point at the old space after a restore: refused.
      if (o > 0 && data[o - 1] == '/')
        throw RccRefused(what + ": the space name at offset " + std::to_string(o) + " ends a path other than the space path '" +
                         path + "' (a restore could not relocate it and it would still point at the old space)");
      out.names_kept++;
      continue;
    }
    if (o - lead < next_min) throw RccRefused(what + ": rewrite offsets " + std::to_string(o) + " and before overlap");
    out.relocs.push_back(make_reloc(o - lead, 0));
    next_min = o - lead + path.size();
  }
  return out;
}

RccConverted convert_rcc_tree(const RccCatalog& rc, const std::string& name, const std::string& where) {
  Converter c{rc, where, {}, {}, {}};
  c.cat.name = name;
  if (!rc.path.empty()) {
    if (rc.path.find('\0') != std::string::npos || rc.path.size() > kMaxPath) throw RccRefused("rcc catalog '" + where + "' has a bad space path");
    c.cat.roots.push_back(rc.path);
  }
  if (!rc.tree.symlink.empty()) throw RccRefused("rcc catalog '" + where + "': its top directory is a symlink");
  c.add_dir("", rc.tree);
  std::sort(c.cat.nodes.begin(), c.cat.nodes.end(), [](const Node& a, const Node& b) { return path_less(a.path, b.path); });
  // Keys are unique per directory, but "a" as a file and a directory would clash.
  for (size_t i = 1; i < c.cat.nodes.size(); i++)
    if (c.cat.nodes[i].path == c.cat.nodes[i - 1].path) c.refuse(c.cat.nodes[i].path.str(), "is both a file and a directory");
  RccConverted out;
  for (size_t i = 0; i < c.cat.nodes.size(); i++) {
    auto it = c.rewrite_of.find(c.cat.nodes[i].path.view());
    if (it != c.rewrite_of.end() && c.cat.nodes[i].type == NodeType::File) out.rewrites.emplace_back(i, it->second->rewrite);
  }
  if (!out.rewrites.empty() && c.cat.roots.empty())
    c.refuse(c.cat.nodes[out.rewrites[0].first].path.str(), "has rewrite offsets but the catalog has no space path");
  c.sum.name = name;
  c.sum.source = where;
  c.sum.platform = rc.platform;
  out.catalog = std::move(c.cat);
  out.summary = std::move(c.sum);
  out.space_path = rc.path;
  out.identity = rc.identity;
  out.where = where;
  return out;
}

void map_rcc_relocations(RccConverted& c, const RccObjectLoader& object, unsigned threads) {
  std::vector<RccRewrites> relocs(c.rewrites.size());
  auto node = [&](size_t i) -> const Node& { return c.catalog.nodes[c.rewrites[i].first]; };
  for (auto batch : byte_batches(c.rewrites.size(), [&](size_t i) { return node(i).size; }))
    parallel_for(batch.second - batch.first, threads ? threads : default_threads(), 1, [&](size_t k, unsigned) {
      const size_t i = batch.first + k;
      const Node& n = node(i);
      Bytes raw = object(to_hex(n.digest), n.size);
      relocs[i] = map_rcc_rewrites(raw, c.rewrites[i].second, c.space_path, c.identity, "rcc catalog '" + c.where + "': '" + n.path + "'");
      if (!relocs[i].relocs.empty()) relocs[i].kind = classify_relocated(raw, relocs[i].relocs, c.catalog.roots);
    });
  for (size_t i = 0; i < c.rewrites.size(); i++) {
    Node& n = c.catalog.nodes[c.rewrites[i].first];
    n.relocs = std::move(relocs[i].relocs);
    n.reloc_kind = relocs[i].kind;
    c.summary.space_names_kept += relocs[i].names_kept;
    if (n.relocs.empty()) c.summary.relocated_files--; // only bare names in it
    c.summary.relocated.add(n, c.catalog.roots);
  }
}

RccConverted convert_rcc_catalog(const RccCatalog& rc, const std::string& name, const std::string& where, const RccObjectLoader& object) {
  RccConverted c = convert_rcc_tree(rc, name, where);
  map_rcc_relocations(c, object);
  return c;
}

// ---- the import --------------------------------------------------------------------

namespace {

struct Usage {
  uint64_t size = 0;
  std::vector<std::string> paths; // "catalog:path"
  size_t source = 0;              // index of the source holding it
};

struct Importer {
  Library& lib;
  const RccImportOptions& opts;
  std::vector<std::unique_ptr<RccSource>> sources;
  DigestMap<Usage> uses;

  std::string damaged(const std::string& hex, const std::string& why) const {
    auto it = uses.find(*digest_from_hex(hex));
    std::string where = it == uses.end() ? std::string("the source") : sources[it->second.source]->where();
    std::string msg = "rcc object '" + RccSource::object_name(hex) + "' in '" + where + "' " + why;
    if (it != uses.end()) msg += "; used by " + quoted_list(it->second.paths);
    return msg;
  }

  // The checked bytes of an object.
  Bytes load(const std::string& hex, uint64_t size, size_t src) const {
    std::optional<Bytes> stored;
    try {
      stored = sources[src]->read_object(hex, stored_cap(size));
    } catch (const RccTooLarge& e) {
      throw RccRefused(damaged(hex, "is damaged: it is stored in more bytes than its catalog's size of " + std::to_string(size) +
                                        " allows (" + std::to_string(e.cap()) + " at most)"));
    }
    if (!stored) throw RccRefused(damaged(hex, "is missing"));
    Bytes raw;
    std::string why = check_object(*stored, hex, size, "it", raw);
    if (!why.empty()) throw RccRefused(damaged(hex, "is damaged: " + why));
    return raw;
  }

  void open_sources(const std::vector<std::string>& paths) {
    for (auto& p : paths) {
      auto s = RccSource::open(p);
      if (s->compress_no())
        throw RccRefused("'" + p + "' is an rcc library without compression (catalog/compress.no): its objects are named by SipHash, "
                         "which hpak does not support; export it from an rcc library with compression on");
      sources.push_back(std::move(s));
    }
  }

  // (source index, catalog file name, library name)
  std::vector<std::tuple<size_t, std::string, std::string>> list_catalogs() const {
    std::vector<std::tuple<size_t, std::string, std::string>> out;
    std::map<std::string, std::string> seen;
    for (size_t i = 0; i < sources.size(); i++) {
      auto names = sources[i]->catalog_names();
      if (names.empty()) throw RccRefused("no rcc catalogs in '" + sources[i]->where() + "'");
      for (auto& n : names) {
        auto [it, fresh] = seen.emplace(n, sources[i]->where());
        if (!fresh) throw Error("catalog '" + n + "' is in both '" + it->second + "' and '" + sources[i]->where() + "'");
        out.emplace_back(i, n, n);
      }
    }
    if (!opts.rename.empty()) {
      if (out.size() != 1)
        throw Error("--name renames a single catalog; the sources hold " + std::to_string(out.size()));
      std::get<2>(out[0]) = opts.rename;
    }
    for (auto& t : out) {
      std::string why = Library::check_new_catalog_name(std::get<2>(t));
      if (!why.empty()) throw Error(why + " (rename it with --name)");
    }
    return out;
  }

  // The decoded JSON of catalog/<file>, refused past kCatalogCap (stored or decoded).
  Bytes catalog_json(size_t src, const std::string& file, const std::string& where) const {
    bool stored_read = false;
    try {
      Bytes stored = sources[src]->read_catalog(file, kCatalogCap);
      stored_read = true;
      // Counted first: a catalog bomb is refused having cost CPU only, not memory.
      uint64_t size = rcc_decoded_size(stored, kCatalogCap, "'" + where + "'");
      return rcc_decode(stored, size, "'" + where + "'");
    } catch (const RccTooLarge&) {
      throw RccRefused("rcc catalog '" + where + "': " + (stored_read ? "decodes to" : "is stored in") + " more than " +
                       kCatalogCapText + ": refused");
    } catch (const RccRefused& e) {
      throw RccRefused(std::string("rcc catalog unreadable: ") + e.what());
    }
  }

  RccConverted convert(size_t src, const std::string& file, const std::string& name) {
    std::string where = sources[src]->where() + "/catalog/" + file;
    Bytes json = catalog_json(src, file, where);
    RccCatalog rc;
    try {
      rc = parse_rcc_catalog(json, where);
    } catch (const Corrupt& e) {
      throw RccRefused("rcc catalog '" + where + "' is malformed: " + e.why());
    }
    RccConverted conv = convert_rcc_tree(rc, name, where);
    for (const Node& n : conv.catalog.nodes) {
      if (n.type != NodeType::File) continue;
      auto [it, fresh] = uses.try_emplace(n.digest);
      if (fresh) {
        it->second.size = n.size;
        it->second.source = src;
      } else if (it->second.size != n.size) {
        throw RccRefused("rcc catalog '" + where + "': '" + n.path + "' gives object " + to_hex(n.digest) + " size " +
                         std::to_string(n.size) + ", another entry " + std::to_string(it->second.size));
      }
      it->second.paths.push_back(name + ":" + n.path);
    }
    return conv;
  }

  // Every object must be in the source, even those the library has.
  void check_present() {
    std::vector<std::string> missing;
    for (auto& [d, u] : uses) {
      std::string hex = to_hex(d);
      bool found = sources[u.source]->has_object(hex);
      for (size_t i = 0; i < sources.size() && !found; i++)
        if (sources[i]->has_object(hex)) {
          u.source = i;
          found = true;
        }
      if (!found) missing.push_back(hex);
    }
    if (missing.empty()) return;
    std::sort(missing.begin(), missing.end());
    std::string msg = damaged(missing[0], "is missing");
    if (missing.size() > 1) msg += " (and " + std::to_string(missing.size() - 1) + " more objects)";
    throw RccRefused(msg);
  }

  struct Slot {
    Codec codec = Codec::Raw;
    uint64_t raw_len = 0;
    Bytes bytes; // stored form
  };

  void write_objects(PackWriter& w, const std::vector<Digest>& want, RccImportResult& res) const {
    const unsigned threads = opts.threads ? opts.threads : default_threads();
    for (auto batch : byte_batches(want.size(), [&](size_t i) { return uses.at(want[i]).size; })) {
      const size_t done = batch.first, end = batch.second;
      std::vector<Slot> slots(end - done);
      parallel_for(slots.size(), threads, 1, [&](size_t i, unsigned) {
        const Digest& d = want[done + i];
        const Usage& u = uses.at(d);
        Slot& s = slots[i];
        Bytes raw = load(to_hex(d), u.size, u.source);
        s.raw_len = raw.size();
        if (opts.level > 0) zstd_compress(raw, opts.level, nullptr, s.bytes);
        if (opts.level > 0 && s.bytes.size() < raw.size()) {
          s.codec = Codec::Zstd;
        } else {
          s.codec = Codec::Raw;
          s.bytes = std::move(raw);
        }
      });
      for (size_t i = 0; i < slots.size(); i++) {
        w.append(Kind::Blob, slots[i].codec, want[done + i], slots[i].raw_len, slots[i].bytes);
        res.raw_written += slots[i].raw_len;
        res.stored_written += slots[i].bytes.size();
      }
      report(opts.progress, "import", end, want.size());
    }
  }
};

} // namespace

RccImportResult import_rcc(Library& lib, const std::vector<std::string>& sources, const RccImportOptions& opts) {
  Importer im{lib, opts, {}, {}};
  im.open_sources(sources);
  RccImportResult res;
  std::vector<RccConverted> converted;
  for (auto& [src, file, name] : im.list_catalogs()) converted.push_back(im.convert(src, file, name));
  im.check_present();
  std::vector<Library::NamedCatalog> catalogs;
  for (RccConverted& conv : converted) {
    map_rcc_relocations(
        conv, [&](const std::string& hex, uint64_t size) { return im.load(hex, size, im.uses.at(*digest_from_hex(hex)).source); },
        opts.threads);
    res.catalogs.push_back(conv.summary);
    catalogs.push_back(Library::NamedCatalog{conv.summary.name, std::move(conv.catalog)});
  }
  converted.clear();
  res.unique_objects = im.uses.size();
  Library::AddSetResult added = lib.add_set(
      catalogs, [&](PackWriter& w, const std::vector<Digest>& want) { im.write_objects(w, want, res); }, opts.level);
  for (size_t i = 0; i < res.catalogs.size(); i++) res.catalogs[i].digest = added.catalog_digests[i];
  res.objects_written = added.objects_written;
  res.objects_present = added.objects_present;
  res.pack_name = added.pack_name;
  res.pack_size = added.pack_size;
  res.repairs = added.repairs;
  for (auto& w : added.warnings) warn(w); // after the names were set (core/pack/pack_trust.hpp's sink)
  return res;
}

} // namespace hpak
