// Library::add_tree: `hpak pack DIR --into LIB --name NAME`.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "base/os/sys.hpp"
#include "core/store/lock.hpp"
#include "core/library/library.hpp"
#include "base/compress_rule.hpp"
#include "base/os/file.hpp"

namespace hpak {

using namespace formats;

namespace {

// Writes the objects of `missing` (found under `src` by catalog path) to a new
// pack in `tmp`, which the caller keeps until the pack is published: while it
// lives, the file is locked, so no gc takes it for a dead writer's leftover.
PackResult write_missing(Library& lib, const PackedTree& packed, const DigestSet& missing, int level,
                         std::optional<AtomicFile>& tmp_out) {
  AtomicFile& tmp = tmp_out.emplace(lib.layout().temp_pack("pack"), 0644);
  PackWriter w(tmp.fd(), tmp.temp_path(), level);
  const Catalog& cat = packed.catalog;
  const std::string& src = packed.source_root;
  const int rootfd = packed.source.get();
  for (const Node& n : cat.nodes) {
    if (n.type != NodeType::File || !missing.count(n.digest) || w.contains(n.digest)) continue;
    int fd = os::open_at(rootfd, n.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) throw_errno("unable to reopen '" + src + "/" + n.path + "'");
    Fd fguard(fd);
    Bytes raw = read_fd(fd, src + "/" + n.path);
    if (sha256(raw) != n.digest) throw Error("'" + src + "/" + n.path + "' changed while being added; add it again");
    Bytes stored;
    if (compress_if_smaller(raw, level, stored)) w.append(Kind::Blob, Codec::Zstd, n.digest, raw.size(), stored);
    else w.append(Kind::Blob, Codec::Raw, n.digest, raw.size(), raw);
  }
  if (missing.count(sha256(encode_catalog(cat, cat.version)))) append_catalog(w, cat, level);
  PackResult r = w.finish();
  tmp.commit_as(tmp.temp_path() + ".done"); // keep the file; the caller publishes it
  return r;
}

} // namespace

// At most three catalogs to store `c`'s mirror against (PackOptions::
// catalog_bases): the catalog `name` names now (the environment's previous
// version), then the named catalogs of the pack that holds most of the
// objects of `c` the library has (a sample of its files), latest first: the
// catalogs of the environment `c` was most likely made from.
std::vector<CatalogBase> Library::catalog_bases_for(const Catalog& c, const std::string& name) const {
  std::vector<CatalogBase> out;
  DigestSet tried;
  auto take = [&](const Digest& d, const std::function<std::optional<Bytes>()>& read) {
    if (out.size() == 3 || !tried.insert(d).second) return;
    try {
      if (auto raw = read()) out.push_back({d, std::move(*raw)});
    } catch (const Error&) {
      // a damaged or missing copy is no base; the mirror is stored whole
    }
  };
  if (auto same = catalog_digest_or_none(name)) take(*same, [&] { return std::optional<Bytes>(read_base_catalog(*same)); });
  if (const PackReader* top = pack_holding_most(c)) {
    DigestSet named;
    for (const std::string& n : catalog_names())
      if (auto d = catalog_digest_or_none(n)) named.insert(*d);
    std::vector<IndexRecord> recs = top->catalog_records();
    for (auto r = recs.rbegin(); r != recs.rend(); ++r)
      if (r->codec != Codec::ZstdBase && named.count(r->digest)) take(r->digest, [&] { return top->read_base_catalog(r->digest); });
  }
  return out;
}

// The pack holding most of a sample (one file in eight) of `c`'s objects.
const PackReader* Library::pack_holding_most(const Catalog& c) const {
  std::map<const PackReader*, size_t> votes;
  size_t i = 0;
  for_each_file(c, [&](const Node& n) {
    if (i++ % 8 == 0)
      if (auto r = locate_loaded(n.digest)) votes[r->pack]++;
  });
  if (votes.empty()) return nullptr;
  return std::max_element(votes.begin(), votes.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
}

// catalog_digest, with junk under catalogs/ (a FIFO, a malformed file) read as
// no name: it names no base (verify reports it).
std::optional<Digest> Library::catalog_digest_or_none(const std::string& name) const {
  try {
    return catalog_digest(name);
  } catch (const Error&) {
    return std::nullopt;
  }
}

Library::AddResult Library::add_tree(const std::string& src, const std::string& name, PackOptions opts) {
  std::string why = check_new_catalog_name(name);
  if (!why.empty()) throw Error(why);
  store::check_locks_work(layout(), shared()); // before writing anything: the name is set under publish.lock
  AddResult res;
  opts.name = name;
  opts.have = [this](const Digest& d) { return contains(d); };
  opts.catalog_bases = [this, name](const Catalog& c) { return catalog_bases_for(c, name); };
  PackedTree packed; // its source directory stays open: objects found missing below are read again through it
  {
    AtomicFile tmp(layout().temp_pack("pack"), 0644);
    PackWriter w(tmp.fd(), tmp.temp_path(), opts.level, opts.pack_version);
    packed = pack_tree(src, w, opts, res.stats);
    res.catalog_digest = packed.catalog_digest;
    if (res.stats.objects_written == 0 && contains(res.catalog_digest)) {
      // Everything is already stored: only the name changes. The temp file goes.
    } else {
      PackResult r = w.finish();
      tmp.commit_as(tmp.temp_path() + ".done");
      res.pack_name = publish_pack(tmp.final_path(), r);
      res.pack_size = r.size;
    }
  }
  // Set the name only once every object it needs is visible, holding the
  // publish lock shared: gc condemns packs only under the exclusive lock,
  // after reading the names again, so it never hides an object of a name set
  // before, and an object it hid before is found missing here and written
  // again from the source tree. See core/gc/gc.hpp.
  {
    store::PublishLock publishing(layout(), shared(), /*exclusive=*/false);
    for (int round = 0;; round++) {
      refresh();
      DigestSet missing;
      // A catalog stored against a base a gc hid is written again whole.
      if (!locate_loaded(res.catalog_digest) || (packed.catalog_base && !locate_loaded(*packed.catalog_base)))
        missing.insert(res.catalog_digest);
      for_each_file(packed.catalog, [&](const Node& n) {
        if (!locate_loaded(n.digest)) missing.insert(n.digest);
      });
      if (missing.empty()) break;
      if (round == 5)
        throw Error("catalog '" + name + "' not set: " + std::to_string(missing.size()) +
                    " of its objects keep disappearing from the library; add it again");
      std::optional<AtomicFile> tmp;
      PackResult r = write_missing(*this, packed, missing, opts.level, tmp);
      publish_pack(tmp->final_path(), r);
      if (missing.count(res.catalog_digest)) packed.catalog_base.reset(); // no gc runs while this add holds publish.lock
      res.repairs++;
    }
    // Every object is in a pack published (and synced: publish_pack) by this
    // add or another; packs/ is synced again in case it was another's, not yet
    // synced. Then the name, durable before success is reported.
    if (res.pack_name.empty() && res.repairs == 0) sync_dir(packs_dir());
    set_catalog(name, res.catalog_digest);
  }
  // Keep lookups O(log n): a midx layer over the packs no layer covers,
  // merged geometrically (formats/midx_format.hpp). The name is durable now: a
  // layer that cannot be written (a full disk) is a warning, not a failed add.
  add_midx_layer_or_warn(res.warnings);
  return res;
}

} // namespace hpak
