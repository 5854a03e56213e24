#include "core/remote/remote_publish.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/trust/signing.hpp"
#include "core/trust/sshsig.hpp"
#include "base/os/file.hpp"
#include "formats/remote_root_format.hpp"

namespace hpak {

using namespace formats;

namespace {

constexpr const char* kHistoryFile = "roots/history";
const std::string kHistoryHead = "hpak-remote-history 1\n";

ByteSpan span_of(const std::string& s) { return ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Where a publish writes: a directory or an S3 prefix. Paths are relative
// ("HPAKROOT", "packs/pack-<hex>.hpak").
class Dest {
public:
  virtual ~Dest() = default;
  virtual std::string where(const std::string& rel) const = 0;
  // nullopt when missing.
  virtual std::optional<Bytes> read(const std::string& rel, size_t max) = 0;
  // Is `rel` there with `size` bytes? (`known`: the published root says so.)
  virtual bool has(const std::string& rel, uint64_t size, bool known) = 0;
  // Writes atomically and durably; checks the SHA-256 of `data` against `want` first when given.
  virtual void write(const std::string& rel, ByteSpan data, const Digest* want) = 0;
  virtual void remove(const std::string& rel) = 0; // a missing file is fine
  virtual void sync() {}                            // the renames so far survive a power loss
};

void make_dir(const std::string& p) {
  std::error_code ec;
  std::filesystem::create_directories(p, ec);
  if (ec) throw Error("unable to create directory '" + p + "': " + ec.message());
}

[[noreturn]] void not_its_name(const std::string& what) {
  throw Error("pack '" + what + "' does not match its name (damaged?); run 'hpak verify' on the library; nothing published");
}

class DirDest : public Dest {
public:
  explicit DirDest(std::string dir) : dir_(std::move(dir)) {
    make_dir(dir_);
    make_dir(dir_ + "/packs");
    make_dir(dir_ + "/roots");
    std::string p = dir_ + "/.hpak-publish.lock"; // one publish into DEST at a time
    lock_ = Fd(open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!lock_) throw_errno("unable to open '" + p + "'");
    while (flock(lock_.get(), LOCK_EX) != 0)
      if (errno != EINTR) throw_errno("unable to lock '" + p + "'");
  }
  std::string where(const std::string& rel) const override { return dir_ + "/" + rel; }
  std::optional<Bytes> read(const std::string& rel, size_t max) override {
    Fd fd = open_regular_if_exists(where(rel), Follow::NoLinks, max);
    if (!fd) return std::nullopt;
    return read_fd_bounded(fd.get(), where(rel), max);
  }
  bool has(const std::string& rel, uint64_t size, bool) override {
    struct stat st;
    return stat(where(rel).c_str(), &st) == 0 && uint64_t(st.st_size) == size;
  }
  void write(const std::string& rel, ByteSpan data, const Digest* want) override {
    AtomicFile out(where(rel), 0644);
    Sha256 sha;
    Bytes copy; // `data` may map another member's pack: each chunk is read once, then hashed and written
    for (size_t off = 0; off < data.size(); off += 4 << 20) { // hashed as it is written: one pass
      ByteSpan chunk = data.subspan(off, std::min<size_t>(4 << 20, data.size() - off));
      copy.assign(chunk.begin(), chunk.end());
      if (want) sha.update(copy);
      out.write(copy);
    }
    if (want && sha.finish() != *want) not_its_name(rel);
    out.commit(/*fsync_first=*/true);
  }
  void remove(const std::string& rel) override {
    if (unlink(where(rel).c_str()) != 0 && errno != ENOENT) throw_errno("unable to remove '" + where(rel) + "'");
  }
  void sync() override {
    sync_dir(dir_ + "/packs");
    sync_dir(dir_ + "/roots");
    sync_dir(dir_);
  }

private:
  std::string dir_;
  Fd lock_;
};

// s3://BUCKET/PREFIX through an S3-compatible API (PUT and DELETE, SigV4).
// A PUT is atomic: no temp names. Without a listing, what is there is what
// the published root names.
class S3Dest : public Dest {
public:
  S3Dest(const std::string& url, const HttpOptions& http) : base_(s3_http_url(url, http.s3)), http_(http) {}
  std::string where(const std::string& rel) const override { return base_ + "/" + rel; }
  std::optional<Bytes> read(const std::string& rel, size_t max) override {
    HttpRequest r;
    r.url = where(rel);
    r.max_size = max;
    r.no_cache = true;
    try {
      return http_.get(r);
    } catch (const HttpNotFound&) {
      return std::nullopt;
    }
  }
  bool has(const std::string&, uint64_t, bool known) override { return known; }
  void write(const std::string& rel, ByteSpan data, const Digest* want) override {
    if (want && sha256(data) != *want) not_its_name(rel);
    HttpRequest r;
    r.url = where(rel);
    r.method = "PUT";
    r.upload = data;
    http_.run({r}, [](size_t, Bytes&) {});
  }
  void remove(const std::string& rel) override {
    HttpRequest r;
    r.url = where(rel);
    r.method = "DELETE";
    http_.run({r}, [](size_t, Bytes&) {});
  }

private:
  std::string base_;
  HttpClient http_;
};

std::unique_ptr<Dest> open_dest(const std::string& dest, const PublishOptions& opts) {
  if (is_s3_url(dest)) return std::make_unique<S3Dest>(dest, opts.http);
  if (dest.rfind("http://", 0) == 0 || dest.rfind("https://", 0) == 0)
    throw Error("'" + dest + "': publish writes to a directory or an s3:// URL, not over HTTP");
  return std::make_unique<DirDest>(dest);
}

// The published root (unsigned part decoded), if any.
std::optional<RemoteRoot> published_root(Dest& d, Bytes* raw) {
  auto b = d.read(kRemoteRootFile, kRemoteRootMaxSize + (1 << 16));
  if (!b) return std::nullopt;
  RemoteRoot r = decode_remote_root(split_remote_root(*b).text, d.where(kRemoteRootFile));
  if (raw) *raw = std::move(*b);
  return r;
}

// Each visible pack of `lib`, copied to DEST/packs unless already there.
std::vector<RemotePackEntry> publish_packs(const Library& lib, Dest& dest, const std::set<std::string>& known,
                                           const PublishOptions& opts, PublishResult& res) {
  std::vector<RemotePackEntry> out;
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
    std::string dst_pack = "packs/" + name, dst_idx = "packs/" + pack_index_name(name);
    bool was_published = known.count(name) > 0;
    if (!dest.has(dst_pack, e.size, was_published)) {
      Digest want = *digest_from_hex(std::string_view(name).substr(5, 64));
      dest.write(dst_pack, p->bytes(), &want); // the mapping stays valid if a gc of the library removes the file
      res.packs_copied++;
      res.bytes_copied += e.size;
    }
    if (!dest.has(dst_idx, e.index_size, was_published) ||
        (!was_published && sha256(dest.read(dst_idx, e.index_size).value_or(Bytes{})) != e.index_sum)) {
      dest.write(dst_idx, idx, nullptr);
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
    for (const Node& n : cat.nodes)
      if (n.type == NodeType::File && !lib.locate_loaded(n.digest))
        throw Error("catalog '" + name + "' needs object " + to_hex(n.digest) + ", which is missing from library '" +
                    lib.root() + "'; nothing published");
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

std::vector<HistoryEntry> read_history(Dest& d) {
  std::vector<HistoryEntry> out;
  auto b = d.read(kHistoryFile, 64u << 20);
  if (!b) return out;
  std::string text(b->begin(), b->end());
  if (text.rfind(kHistoryHead, 0) != 0) throw Error("'" + d.where(kHistoryFile) + "' is not an hpak root history");
  size_t at = kHistoryHead.size();
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) throw Error("'" + d.where(kHistoryFile) + "' is truncated");
    std::string line = text.substr(at, nl - at);
    at = nl + 1;
    char sum[65] = {};
    unsigned long long gen = 0;
    long long ms = 0;
    if (sscanf(line.c_str(), "root %64s %llu %lld", sum, &gen, &ms) != 3 || strlen(sum) != 64 || !digest_from_hex(sum))
      throw Error("'" + d.where(kHistoryFile) + "' has a malformed line '" + line.substr(0, 80) + "'");
    out.push_back({sum, gen, ms});
  }
  return out;
}

void write_history(Dest& d, const std::vector<HistoryEntry>& h) {
  std::string text = kHistoryHead;
  for (auto& e : h) text += "root " + e.sum + " " + std::to_string(e.generation) + " " + std::to_string(e.ms) + "\n";
  d.write(kHistoryFile, span_of(text), nullptr);
}

std::string root_copy(const std::string& sum) { return "roots/" + sum + ".root"; }

// Records `root_bytes` (about to become the root) in the history: its copy
// first, then the history line. A root published before the history existed
// is recorded too, as superseded now.
void record_root(Dest& d, const std::optional<Bytes>& old_root, const Bytes& root_bytes, uint64_t generation) {
  std::vector<HistoryEntry> h = read_history(d);
  int64_t ms = now_ms();
  auto add = [&](const Bytes& b, uint64_t gen) {
    std::string sum = to_hex(sha256(b));
    if (std::any_of(h.begin(), h.end(), [&](auto& e) { return e.sum == sum; })) return;
    Digest want = sha256(b);
    d.write(root_copy(sum), b, &want);
    h.push_back({sum, gen, ms});
  };
  if (old_root)
    add(*old_root, decode_remote_root(split_remote_root(*old_root).text, d.where(kRemoteRootFile)).generation);
  add(root_bytes, generation);
  d.sync();
  write_history(d, h);
}

// The packs named by the recorded root `sum`; nullopt if its copy is gone.
std::optional<std::vector<RemotePackEntry>> packs_of(Dest& d, const std::string& sum) {
  auto b = d.read(root_copy(sum), kRemoteRootMaxSize + (1 << 16));
  if (!b) return std::nullopt;
  if (to_hex(sha256(*b)) != sum) throw Error("'" + d.where(root_copy(sum)) + "' does not match its name; nothing pruned");
  return decode_remote_root(split_remote_root(*b).text, d.where(root_copy(sum))).packs;
}

// Removes the packs that only roots superseded more than `grace` ago name
// (see the header), then those roots' records.
void prune(Dest& d, int64_t grace_ms, PublishResult& res) {
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
    if (!packs) throw Error("'" + d.where(root_copy(e.sum)) + "' is missing: unable to tell which packs it needs; nothing pruned");
    for (auto& p : *packs) kept_packs.insert(p.name);
  }
  std::map<std::string, uint64_t> gone;
  for (auto& e : drop)
    if (auto packs = packs_of(d, e.sum))
      for (auto& p : *packs)
        if (!kept_packs.count(p.name)) gone[p.name] = p.size;
  for (auto& [name, size] : gone) {
    d.remove("packs/" + pack_index_name(name));
    d.remove("packs/" + name);
    res.packs_removed++;
    res.bytes_removed += size;
  }
  for (auto& e : drop) d.remove(root_copy(e.sum));
  d.sync();
  write_history(d, keep); // last: a prune cut short is done again by the next one
  res.roots_removed = drop.size();
  res.roots_kept = keep.size();
}

// LIB/remote/published: the highest generation this library published
// anywhere ("N\n"); 0 when absent or unreadable (a hostile file there can
// only make later generations higher).
std::string published_path(const Library& lib) { return lib.root() + "/remote/published"; }

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
    std::string dir = lib.root() + "/remote";
    if (mkdir(dir.c_str(), lib.shared() ? 02775 : 0755) == 0 && lib.shared()) chmod(dir.c_str(), 02775);
    AtomicFile f(published_path(lib), lib.shared() ? 0664 : 0644);
    std::string text = std::to_string(generation) + "\n";
    f.write(span_of(text));
    f.commit(/*durable=*/true);
  } catch (const Error&) {
  }
}

} // namespace

PublishResult publish(const Library& lib, const std::string& dest_url, const PublishOptions& opts) {
  PublishResult res;
  std::unique_ptr<Dest> dest = open_dest(dest_url, opts);
  std::optional<Bytes> old_bytes;
  Bytes raw;
  if (auto old = published_root(*dest, &raw)) {
    res.previous_generation = old->generation;
    old_bytes = std::move(raw);
  }
  std::set<std::string> known; // the packs the published root names
  if (old_bytes)
    for (auto& p : decode_remote_root(split_remote_root(*old_bytes).text, dest_url).packs) known.insert(p.name);
  RemoteRoot root;
  root.library = library_id(lib, /*create=*/true);
  root.time = uint64_t(::time(nullptr));
  root.expires = root.time + uint64_t(std::max<int64_t>(opts.expires_seconds, 0));
  // One sequence per library, wherever it is published: a client keeps the
  // highest generation it saw per library id, not per URL.
  const uint64_t floor = published_generation(lib);
  root.generation = opts.generation ? opts.generation : std::max(res.previous_generation, floor) + 1;
  if (root.generation <= res.previous_generation)
    throw Error("generation " + std::to_string(root.generation) + " is not above generation " +
                std::to_string(res.previous_generation) + " published in '" + dest_url + "'; nothing published");
  lib.refresh();
  // Names first (so a gc racing this publish can only have left more packs
  // than the names need, never fewer), then the packs that hold them.
  root.catalogs = published_catalogs(lib);
  root.packs = publish_packs(lib, *dest, known, opts, res);
  dest->sync();
  std::string text = encode_remote_root(root);
  if (!opts.sign_key.empty()) {
    text += sshsig::sign_with_key_file(opts.sign_key, kSignatureNamespace, span_of(text));
    res.signed_root = true;
  }
  Bytes root_bytes(text.begin(), text.end());
  record_root(*dest, old_bytes, root_bytes, root.generation);
  dest->write(kRemoteRootFile, root_bytes, nullptr);
  dest->sync();
  if (root.generation > floor) record_published_generation(lib, root.generation);
  res.generation = root.generation;
  res.packs = root.packs.size();
  res.catalogs = root.catalogs.size();
  if (opts.prune) prune(*dest, opts.grace_seconds * 1000, res);
  return res;
}

} // namespace hpak
