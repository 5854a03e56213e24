// Library::add_set: an add whose objects come from a callback rather than a
// directory tree (hpak import). Same publish protocol as add_tree
// (core/gc/gc.hpp, step 6): pack then index, then under publish.lock shared
// every object checked visible (written again if a gc hid it), then the names.
#include <algorithm>

#include "core/store/lock.hpp"
#include "core/library/library.hpp"
#include "base/os/file.hpp"

namespace hpak {

using namespace formats;

namespace {

// The blob digests the catalogs name, sorted (a stable pack order).
std::vector<Digest> blobs_of(const std::vector<Library::NamedCatalog>& catalogs) {
  DigestSet seen;
  std::vector<Digest> out;
  for (auto& nc : catalogs)
    for_each_file(nc.catalog, [&](const Node& n) {
      if (seen.insert(n.digest).second) out.push_back(n.digest);
    });
  std::sort(out.begin(), out.end());
  return out;
}

// Writes `want` (blobs) and the catalogs whose digest is in `want_catalogs`
// into a new pack in tmp/ and publishes it; returns the pack's name and size.
std::pair<std::string, uint64_t> write_and_publish(Library& lib, const std::vector<Library::NamedCatalog>& catalogs,
                                                   const std::vector<Digest>& digests, const std::vector<Digest>& want,
                                                   const DigestSet& want_catalogs, const Library::ObjectWriter& write_objects,
                                                   int level) {
  AtomicFile tmp(lib.layout().temp_pack("pack"), 0644);
  PackWriter w(tmp.fd(), tmp.temp_path(), level);
  w.reserve(want.size() + 2 * catalogs.size());
  if (!want.empty()) write_objects(w, want);
  for (const Digest& d : want)
    if (!w.contains(d)) throw Error("object " + to_hex(d) + " was not written to the new pack");
  for (size_t i = 0; i < catalogs.size(); i++)
    if (want_catalogs.count(digests[i])) append_catalog(w, catalogs[i].catalog, level);
  PackResult r = w.finish();
  tmp.commit_as(tmp.temp_path() + ".done"); // keep the file; publish_pack consumes it
  return {lib.publish_pack(tmp.final_path(), r), r.size};
}

} // namespace

Library::AddSetResult Library::add_set(const std::vector<NamedCatalog>& catalogs, const ObjectWriter& write_objects, int level) {
  for (auto& nc : catalogs) {
    std::string why = check_new_catalog_name(nc.name);
    if (!why.empty()) throw Error(why);
  }
  AddSetResult res;
  for (auto& nc : catalogs) res.catalog_digests.push_back(sha256(encode_catalog(nc.catalog)));
  const std::vector<Digest> blobs = blobs_of(catalogs);
  auto missing_now = [&](std::vector<Digest>& want, DigestSet& want_catalogs) {
    want.clear();
    want_catalogs.clear();
    for (const Digest& d : blobs)
      if (!locate_loaded(d)) want.push_back(d);
    for (const Digest& d : res.catalog_digests)
      if (!locate_loaded(d)) want_catalogs.insert(d);
  };
  std::vector<Digest> want;
  DigestSet want_catalogs;
  refresh();
  missing_now(want, want_catalogs);
  res.objects_written = want.size();
  res.objects_present = blobs.size() - want.size();
  if (!want.empty() || !want_catalogs.empty()) {
    auto [name, size] = write_and_publish(*this, catalogs, res.catalog_digests, want, want_catalogs, write_objects, level);
    res.pack_name = name;
    res.pack_size = size;
  }
  // As in add_tree: names are set only once every object they need is
  // visible, holding publish.lock shared (see core/gc/gc.hpp).
  {
    store::PublishLock publishing(layout(), shared(), /*exclusive=*/false);
    for (int round = 0;; round++) {
      refresh();
      missing_now(want, want_catalogs);
      if (want.empty() && want_catalogs.empty()) break;
      if (round == 5)
        throw Error(std::to_string(want.size() + want_catalogs.size()) +
                    " objects keep disappearing from the library; catalogs not set; import again");
      write_and_publish(*this, catalogs, res.catalog_digests, want, want_catalogs, write_objects, level);
      res.repairs++;
    }
    for (size_t i = 0; i < catalogs.size(); i++) set_catalog(catalogs[i].name, res.catalog_digests[i]);
  }
  add_midx_layer_or_warn(res.warnings); // the names are durable: a warning at worst
  return res;
}

} // namespace hpak
