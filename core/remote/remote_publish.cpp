#include "core/remote/remote_publish.hpp"
#include "base/os/sys.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <map>
#include <set>

#include "base/os/file.hpp"
#include "core/remote/remote_layout.hpp"
#include "core/remote/remote_url.hpp"
#include "core/remote/schemes.hpp"
#include "core/trust/signing.hpp"
#include "core/trust/sshsig.hpp"
#include "formats/remote_root_format.hpp"

namespace hpak {

using namespace formats;
using remote::Backend;
namespace layout = remote::layout;

namespace {

constexpr uint64_t kRootReadMax = kRemoteRootMaxSize + (1 << 16); // the root and its signature
const std::string kHistoryHead = "hpak-remote-history 1\n";

ByteSpan span_of(const std::string& s) { return ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

[[noreturn]] void not_its_name(const std::string& what) {
  throw Error("pack '" + what + "' does not match its name (damaged?); run 'hpak verify' on the library; nothing published");
}

// The object `name` of DEST, or nullopt when it is not there. The publisher
// reads only what it wrote, some of it mutable: never from a cache.
std::optional<Bytes> read_if_there(Backend& d, const std::string& name, uint64_t max) {
  try {
    return d.get(name, max, /*fresh=*/true);
  } catch (const remote::RemoteNotFound&) {
    return std::nullopt;
  }
}

// Writes `data` as `name`, checked against `want` first when given.
void put_checked(Backend& d, const std::string& name, ByteSpan data, const Digest* want) {
  try {
    d.put(name, data, want);
  } catch (const remote::DigestMismatch&) {
    not_its_name(name);
  }
}

// What DEST holds under packs/ (name -> size) when it can list; nullopt when
// it cannot (S3: no listing), and publish then trusts its published root.
using Listing = std::optional<std::map<std::string, uint64_t>>;

Listing list_packs(Backend& d) {
  try {
    std::map<std::string, uint64_t> out;
    for (const remote::RemoteEntry& e : d.list(layout::kPacks)) out[e.name] = e.size;
    return out;
  } catch (const remote::RemoteUnsupported&) {
    return std::nullopt;
  }
}

// Is `name` in DEST with `size` bytes? (`known`: the published root says so.)
bool holds(const Listing& listed, const std::string& name, uint64_t size, bool known) {
  if (!listed) return known;
  auto it = listed->find(name);
  return it != listed->end() && it->second == size;
}

// Each visible pack of `lib`, copied to DEST/packs unless already there.
std::vector<RemotePackEntry> publish_packs(const Library& lib, Backend& dest, const std::set<std::string>& known,
                                           const PublishOptions& opts, PublishResult& res) {
  std::vector<RemotePackEntry> out;
  const Listing listed = list_packs(dest);
  auto packs = lib.packs();
  for (const PackReader* p : packs) {
    std::string name = base_name(p->path());
    if (!is_pack_name(name)) continue; // not a library pack name: never published
    RemotePackEntry e;
    e.name = name;
    e.size = p->bytes().size();
    std::string src_idx = lib.packs_dir() + "/" + pack_index_name(name);
    Bytes idx = read_regular(src_idx, Follow::NoLinks, max_index_size(e.size)); // a library file: hostile input
    formats::IndexView check(idx, src_idx); // a damaged index is not published
    if (check.pack_size() != e.size) throw Error("index '" + src_idx + "' does not match its pack; run 'hpak repair'");
    e.index_sum = sha256(idx);
    e.index_size = idx.size();
    std::string dst_pack = layout::pack(name), dst_idx = layout::index(name);
    bool was_published = known.count(name) > 0;
    if (!holds(listed, dst_pack, e.size, was_published)) {
      Digest want = *digest_from_hex(std::string_view(name).substr(5, 64));
      put_checked(dest, dst_pack, p->bytes(), &want); // the mapping stays valid if a gc of the library removes the file
      res.packs_copied++;
      res.bytes_copied += e.size;
    }
    if (!holds(listed, dst_idx, e.index_size, was_published) ||
        (!was_published && sha256(read_if_there(dest, dst_idx, e.index_size).value_or(Bytes{})) != e.index_sum)) {
      put_checked(dest, dst_idx, idx, nullptr);
      res.bytes_copied += idx.size();
    }
    out.push_back(std::move(e));
    report(opts.progress, "publish", out.size(), packs.size());
  }
  return out;
}

// Every catalog name of `lib` with its digest, after checking that each
// catalog and all its objects are in the packs being published.
std::vector<RemoteCatalogEntry> published_catalogs(const Library& lib) {
  std::vector<RemoteCatalogEntry> out;
  for (const std::string& name : lib.catalog_names()) {
    Digest d;
    Catalog cat = lib.load_catalog(name, &d);
    for_each_file(cat, [&](const Node& n) {
      if (!lib.locate_loaded(n.digest))
        throw Error("catalog '" + name + "' needs object " + to_hex(n.digest) + ", which is missing from library '" +
                    lib.root() + "'; nothing published");
    });
    out.push_back({name, d});
  }
  return out;
}

// --- the history of published roots (roots/history) --------------------------

struct HistoryEntry {
  std::string sum; // hex SHA-256 of the root file
  uint64_t generation = 0;
  int64_t ms = 0;  // when it was published (unix milliseconds)
};

std::vector<HistoryEntry> read_history(Backend& d) {
  std::vector<HistoryEntry> out;
  auto b = read_if_there(d, layout::kHistory, 64u << 20);
  if (!b) return out;
  std::string text(b->begin(), b->end());
  const std::string where = d.where(layout::kHistory);
  if (text.rfind(kHistoryHead, 0) != 0) throw Error("'" + where + "' is not an hpak root history");
  size_t at = kHistoryHead.size();
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) throw Error("'" + where + "' is truncated");
    std::string line = text.substr(at, nl - at);
    at = nl + 1;
    char sum[65] = {};
    unsigned long long gen = 0;
    long long ms = 0;
    if (sscanf(line.c_str(), "root %64s %llu %lld", sum, &gen, &ms) != 3 || strlen(sum) != 64 || !digest_from_hex(sum))
      throw Error("'" + where + "' has a malformed line '" + line.substr(0, 80) + "'");
    out.push_back({sum, gen, ms});
  }
  return out;
}

void write_history(Backend& d, const std::vector<HistoryEntry>& h) {
  std::string text = kHistoryHead;
  for (auto& e : h) text += "root " + e.sum + " " + std::to_string(e.generation) + " " + std::to_string(e.ms) + "\n";
  put_checked(d, layout::kHistory, span_of(text), nullptr);
}

// Records `root_bytes` (about to become the root) in the history: its copy
// first, then the history line. A root published before the history existed
// is recorded too, as superseded now.
void record_root(Backend& d, const std::optional<Bytes>& old_root, const Bytes& root_bytes, uint64_t generation) {
  std::vector<HistoryEntry> h = read_history(d);
  int64_t ms = now_ms();
  auto add = [&](const Bytes& b, uint64_t gen) {
    std::string sum = to_hex(sha256(b));
    if (std::any_of(h.begin(), h.end(), [&](auto& e) { return e.sum == sum; })) return;
    Digest want = sha256(b);
    put_checked(d, layout::root_copy(sum), b, &want);
    h.push_back({sum, gen, ms});
  };
  if (old_root)
    add(*old_root, decode_remote_root(split_remote_root(*old_root).text, d.where(layout::kRoot)).generation);
  add(root_bytes, generation);
  d.sync();
  write_history(d, h);
}

// The packs named by the recorded root `sum`; nullopt if its copy is gone.
std::optional<std::vector<RemotePackEntry>> packs_of(Backend& d, const std::string& sum) {
  const std::string name = layout::root_copy(sum);
  auto b = read_if_there(d, name, kRootReadMax);
  if (!b) return std::nullopt;
  if (to_hex(sha256(*b)) != sum) throw Error("'" + d.where(name) + "' does not match its name; nothing pruned");
  return decode_remote_root(split_remote_root(*b).text, d.where(name)).packs;
}

// Removes the packs that only roots superseded more than `grace` ago name
// (see the header), then those roots' records.
void prune(Backend& d, int64_t grace_ms, PublishResult& res) {
  std::vector<HistoryEntry> h = read_history(d);
  int64_t now = now_ms();
  std::vector<HistoryEntry> keep, drop;
  for (size_t i = 0; i < h.size(); i++) {
    bool current_lately = i + 1 == h.size() || h[i + 1].ms >= now - grace_ms;
    (current_lately ? keep : drop).push_back(h[i]);
  }
  std::set<std::string> kept_packs;
  for (auto& e : keep) {
    auto packs = packs_of(d, e.sum);
    if (!packs) throw Error("'" + d.where(layout::root_copy(e.sum)) + "' is missing: unable to tell which packs it needs; nothing pruned");
    for (auto& p : *packs) kept_packs.insert(p.name);
  }
  std::map<std::string, uint64_t> gone;
  for (auto& e : drop)
    if (auto packs = packs_of(d, e.sum))
      for (auto& p : *packs)
        if (!kept_packs.count(p.name)) gone[p.name] = p.size;
  for (auto& [name, size] : gone) {
    d.remove(layout::index(name));
    d.remove(layout::pack(name));
    res.packs_removed++;
    res.bytes_removed += size;
  }
  for (auto& e : drop) d.remove(layout::root_copy(e.sum));
  d.sync();
  write_history(d, keep); // last: a prune cut short is done again by the next one
  res.roots_removed = drop.size();
  res.roots_kept = keep.size();
}

// LIB/remote/published: the highest generation this library published
// anywhere ("N\n"); 0 when absent or unreadable (a hostile file there can
// only make later generations higher).
std::string published_path(const Library& lib) { return lib.layout().remote_published(); }

uint64_t published_generation(const Library& lib) {
  try {
    Bytes b = read_regular(published_path(lib), Follow::NoLinks, 64);
    return std::strtoull(std::string(b.begin(), b.end()).c_str(), nullptr, 10);
  } catch (const Error&) {
    return 0;
  }
}

// Best effort: without it the next publish elsewhere counts from that
// destination's own root.
void record_published_generation(const Library& lib, uint64_t generation) {
  try {
    std::string dir = lib.layout().remote_dir();
    if (os::mkdir_path(dir.c_str(), lib.shared() ? 02775 : 0755) == 0 && lib.shared()) os::chmod_path(dir.c_str(), 02775);
    AtomicFile f(published_path(lib), lib.shared() ? 0664 : 0644);
    std::string text = std::to_string(generation) + "\n";
    f.write(span_of(text));
    f.commit(/*durable=*/true);
  } catch (const Error&) {
  }
}

// The published root of DEST (unsigned part decoded) and its bytes, if any.
std::optional<std::pair<RemoteRoot, Bytes>> published_root(Backend& d) {
  auto b = read_if_there(d, layout::kRoot, kRootReadMax);
  if (!b) return std::nullopt;
  RemoteRoot r = decode_remote_root(split_remote_root(*b).text, d.where(layout::kRoot));
  return std::make_pair(std::move(r), std::move(*b));
}

// The new root's identity, times and generation: one above both the
// published root's and the highest this library published anywhere (a
// client keeps the highest generation it saw per library id, not per URL).
RemoteRoot new_root(const Library& lib, uint64_t previous, uint64_t floor, const std::string& dest_url, const PublishOptions& opts) {
  RemoteRoot root;
  root.library = library_id(lib, /*create=*/true);
  root.time = uint64_t(::time(nullptr));
  root.expires = root.time + uint64_t(std::max<int64_t>(opts.expires_seconds, 0));
  root.generation = opts.generation ? opts.generation : std::max(previous, floor) + 1;
  if (root.generation <= previous)
    throw Error("generation " + std::to_string(root.generation) + " is not above generation " + std::to_string(previous) +
                " published in '" + dest_url + "'; nothing published");
  return root;
}

// The root's text, signed when a key is given.
Bytes root_bytes(const RemoteRoot& root, const PublishOptions& opts, PublishResult& res) {
  std::string text = encode_remote_root(root);
  if (!opts.sign_key.empty()) {
    text += sshsig::sign_with_key_file(opts.sign_key, kSignatureNamespace, span_of(text));
    res.signed_root = true;
  }
  return Bytes(text.begin(), text.end());
}

} // namespace

PublishResult publish(const Library& lib, const std::string& dest_url, const PublishOptions& opts) {
  PublishResult res;
  std::unique_ptr<Backend> dest = remote::open_backend(remote::parse_remote_url(dest_url), opts.remote, remote::Access::Write);
  dest->lock_writers(layout::kPublishLock);
  std::optional<Bytes> old_bytes;
  std::set<std::string> known; // the packs the published root names
  if (auto old = published_root(*dest)) {
    res.previous_generation = old->first.generation;
    for (auto& p : old->first.packs) known.insert(p.name);
    old_bytes = std::move(old->second);
  }
  const uint64_t floor = published_generation(lib);
  RemoteRoot root = new_root(lib, res.previous_generation, floor, dest_url, opts);
  lib.refresh();
  // Names first (so a gc racing this publish can only have left more packs
  // than the names need, never fewer), then the packs that hold them.
  root.catalogs = published_catalogs(lib);
  root.packs = publish_packs(lib, *dest, known, opts, res);
  dest->sync();
  Bytes bytes = root_bytes(root, opts, res);
  record_root(*dest, old_bytes, bytes, root.generation);
  put_checked(*dest, layout::kRoot, bytes, nullptr);
  dest->sync();
  if (root.generation > floor) record_published_generation(lib, root.generation);
  res.generation = root.generation;
  res.packs = root.packs.size();
  res.catalogs = root.catalogs.size();
  if (opts.prune) prune(*dest, opts.grace_seconds * 1000, res);
  return res;
}

} // namespace hpak
