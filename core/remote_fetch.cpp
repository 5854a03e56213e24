#include "core/remote_fetch.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include <algorithm>
#include <deque>
#include <future>
#include <thread>
#include <cstdlib>
#include <map>
#include <memory>

#include "core/gc.hpp"
#include "core/pack_trust.hpp"
#include "core/signing.hpp"
#include "core/util/file.hpp"
#include "core/util/zstd_codec.hpp"
#include "formats/remote_root_format.hpp"

namespace hpak {

using namespace formats;

namespace {

// A verification failure: the bytes a server sent are not the object named.
class Mismatch : public Error {
public:
  using Error::Error;
};

struct RemotePack {
  RemotePackEntry entry;
  std::string url;
  Bytes index_bytes;
  IndexView index;
};

struct Remote {
  std::string base;
  RemoteRoot root;
  std::vector<RemotePack> packs;
};

// One located object.
struct Want {
  size_t pack = 0;
  IndexRecord rec;
};

// One planned range of one pack, with the entries it carries.
struct Range {
  size_t pack = 0;
  uint64_t start = 0, end = 0;
  std::vector<IndexRecord> recs;
};

void make_dirs(const std::string& p) {
  for (size_t i = 1; i <= p.size(); i++)
    if (i == p.size() || p[i] == '/') {
      std::string part = p.substr(0, i);
      if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) throw_errno("unable to create directory '" + part + "'");
    }
}

// The generation file of a remote URL under the user's private state.
std::string generation_state(const std::string& url_shown) {
  std::string dir = user_private_dir("XDG_STATE_HOME", ".local/state", "generations");
  if (dir.empty()) throw Error("refusing root of '" + url_shown + "': no private directory for the generations seen (set XDG_STATE_HOME)");
  return dir + "/remote-" + to_hex(sha256(ByteSpan(reinterpret_cast<const uint8_t*>(url_shown.data()), url_shown.size())));
}

// The signature policy for a root (see FetchOptions::allowed_signers): the
// signature over the root text is checked before the text is parsed, then the
// generation against the highest seen for the URL, which it then becomes.
void check_root_signature(const RemoteRootParts& parts, const std::string& where, const std::vector<sshsig::AllowedSigner>& allowed, FetchResult& res) {
  std::string refuse = "refusing root '" + where + "': ";
  if (parts.signature.empty()) throw Error(refuse + "it is not signed (a signature is required)");
  sshsig::Verdict v;
  try {
    sshsig::Signature sig = sshsig::parse_signature(sshsig::dearmor(parts.signature, where), where);
    v = sshsig::check(allowed, sig, kSignatureNamespace,
                      [&](const std::string& alg) { return sshsig::hash_message(alg, parts.text); }, int64_t(::time(nullptr)));
  } catch (const Error& e) {
    throw Error(refuse + e.what());
  }
  if (!v.ok) throw Error(refuse + v.why);
  res.signer = v.signer;
}

void check_root_generation(const RemoteRoot& root, const std::string& where, const std::string& url_shown) {
  std::string state = generation_state(url_shown);
  uint64_t seen = 0;
  if (path_exists(state)) {
    struct stat st;
    if (lstat(state.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
      throw Error("'" + state + "' is not this user's file");
    Bytes b = read_file(state);
    seen = std::strtoull(std::string(b.begin(), b.end()).c_str(), nullptr, 10);
  }
  if (root.generation < seen)
    throw Error("refusing root '" + where + "': generation " + std::to_string(root.generation) + " is older than generation " +
                std::to_string(seen) + " seen before (rolled back or replayed?)");
  if (root.generation > seen) {
    AtomicFile f(state, 0600);
    std::string text = std::to_string(root.generation) + "\n";
    f.write(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    f.commit(/*durable=*/true);
  }
}

RemoteRoot fetch_root(HttpClient& http, const std::string& base, const std::string& url_shown, const FetchOptions& o,
                      FetchResult& res) {
  HttpRequest r;
  r.url = base + "/" + kRemoteRootFile;
  r.max_size = kRemoteRootMaxSize + (1 << 16); // the root and its signature
  r.no_cache = true;
  Bytes b;
  try {
    b = http.get(r);
  } catch (const HttpNotFound&) {
    throw Error("no published library at '" + url_shown + "': '" + r.url + "' not found (HTTP 404)");
  }
  RemoteRootParts parts = split_remote_root(b);
  if (o.allowed_signers) check_root_signature(parts, r.url, *o.allowed_signers, res);
  RemoteRoot root = decode_remote_root(parts.text, r.url);
  if (o.allowed_signers) check_root_generation(root, r.url, url_shown);
  return root;
}

// Checks index bytes against the root's record of them.
bool index_matches(const RemotePackEntry& e, const Bytes& b) { return b.size() == e.index_size && sha256(b) == e.index_sum; }

// The index of every pack the root names: from LIB/remote/indexes when
// cached there, else fetched (in parallel), checked and cached.
std::vector<RemotePack> load_indexes(Library& lib, HttpClient& http, const std::string& base, const RemoteRoot& root,
                                     FetchResult& res) {
  std::string dir = lib.root() + "/remote/indexes";
  make_dirs(dir);
  std::vector<RemotePack> packs(root.packs.size());
  std::vector<HttpRequest> reqs;
  std::vector<size_t> which;
  for (size_t i = 0; i < root.packs.size(); i++) {
    RemotePack& p = packs[i];
    p.entry = root.packs[i];
    p.url = base + "/packs/" + p.entry.name;
    std::string cached = dir + "/" + pack_index_name(p.entry.name);
    if (path_exists(cached)) {
      Bytes b = read_file(cached);
      if (index_matches(p.entry, b)) {
        p.index_bytes = std::move(b);
        continue;
      }
    }
    HttpRequest r;
    r.url = base + "/packs/" + pack_index_name(p.entry.name);
    r.max_size = p.entry.index_size;
    reqs.push_back(r);
    which.push_back(i);
  }
  http.run(reqs, [&](size_t k, Bytes& b) {
    RemotePack& p = packs[which[k]];
    if (!index_matches(p.entry, b)) throw Error("index " + describe(reqs[k]) + " does not match the SHA-256 the root gives it");
    AtomicFile f(dir + "/" + pack_index_name(p.entry.name), 0644);
    f.write(b);
    f.commit();
    p.index_bytes = std::move(b);
    res.indexes_fetched++;
  });
  for (RemotePack& p : packs) {
    p.index = IndexView(p.index_bytes, p.url.substr(0, p.url.size() - 5) + ".hidx");
    if (p.index.pack_size() != p.entry.size) throw Error("index of '" + p.url + "' gives another pack size than the root");
  }
  return packs;
}

std::optional<Want> locate_remote(const Remote& r, const Digest& d) {
  for (size_t i = 0; i < r.packs.size(); i++)
    if (auto k = r.packs[i].index.find(d)) return Want{i, r.packs[i].index.record_at(*k)};
  return std::nullopt;
}

uint64_t entry_end(const IndexRecord& rec) { return rec.offset + kEntryHeaderSize + rec.stored_len; }

// Checks one entry of a fetched range (see the header, step 5); returns its
// stored payload.
ByteSpan check_entry(const Range& rg, const Bytes& body, const IndexRecord& rec, const std::string& url) {
  std::string what = "object " + to_hex(rec.digest) + " from '" + url + "' (offset " + std::to_string(rec.offset) + ")";
  ByteSpan entry(body.data() + (rec.offset - rg.start), kEntryHeaderSize + rec.stored_len);
  EntryHeader h;
  try {
    h = decode_entry_header(entry.first(kEntryHeaderSize), url, rec.offset);
  } catch (const Corrupt& e) {
    throw Mismatch(what + " has a bad entry header: refused, not stored");
  }
  if (h.digest != rec.digest || h.kind != rec.kind || h.codec != rec.codec || h.stored_len != rec.stored_len ||
      h.raw_len != rec.raw_len || h.stored_xxh != rec.stored_xxh)
    throw Mismatch(what + " does not match the remote index: refused, not stored");
  ByteSpan stored = entry.subspan(kEntryHeaderSize);
  if (xxh64(stored) != rec.stored_xxh) throw Mismatch(what + " does not match its checksum: refused, not stored");
  Digest got;
  if (rec.codec == Codec::Raw) {
    if (stored.size() != rec.raw_len) throw Mismatch(what + " has the wrong size: refused, not stored");
    got = sha256(stored);
  } else if (rec.codec == Codec::Zstd) {
    Sha256 sha;
    try {
      zstd_decompress_stream(stored, rec.raw_len, nullptr, what, [&](ByteSpan b) { sha.update(b); });
    } catch (const Error& e) {
      throw Mismatch(what + " does not decompress: refused, not stored");
    }
    got = sha.finish();
  } else {
    throw Error(what + " is dictionary-compressed; fetching such objects is not supported");
  }
  if (got != rec.digest) throw Mismatch(what + " does not match its name (SHA-256): refused, not stored");
  return stored;
}

// Fetched entries become new packs of the library, one every `limit` bytes.
class PackSink {
public:
  PackSink(Library& lib, uint64_t limit) : lib_(lib), limit_(limit) {}
  ~PackSink() { discard(); }

  void append(const IndexRecord& rec, ByteSpan stored, bool mirror = false) {
    if (!writer_) {
      tmp_ = std::make_unique<AtomicFile>(lib_.tmp_dir() + "/pack", 0644);
      writer_ = std::make_unique<PackWriter>(tmp_->fd(), tmp_->temp_path(), std::max(lib_.default_level(), 0));
    }
    if (writer_->contains(rec.digest) && !mirror) return;
    writer_->append_copy(rec, stored, mirror);
    if (writer_->bytes_written() >= limit_) publish();
  }
  // Publishes the pack being written (if any) into the library.
  void publish() {
    if (!writer_) return;
    PackResult r = writer_->finish();
    writer_.reset();
    tmp_->commit_as(tmp_->temp_path() + ".done");
    std::string path = tmp_->final_path();
    tmp_.reset();
    lib_.publish_pack(path, r);
    packs_++;
  }
  // Drops the pack being written: nothing of it is stored.
  void discard() {
    writer_.reset();
    tmp_.reset();
  }
  uint64_t packs() const { return packs_; }

private:
  Library& lib_;
  uint64_t limit_;
  std::unique_ptr<AtomicFile> tmp_;
  std::unique_ptr<PackWriter> writer_;
  uint64_t packs_ = 0;
};

// The ranges that carry `wants` (step 4 of the header).
std::vector<Range> plan_ranges(std::vector<Want> wants, const Remote& r, const FetchOptions& o) {
  std::sort(wants.begin(), wants.end(), [](const Want& a, const Want& b) {
    return a.pack != b.pack ? a.pack < b.pack : a.rec.offset < b.rec.offset;
  });
  std::map<size_t, uint64_t> needed;
  for (const Want& w : wants) needed[w.pack] += kEntryHeaderSize + w.rec.stored_len;
  std::vector<Range> out;
  for (const Want& w : wants) {
    uint64_t gap = double(needed[w.pack]) >= o.whole_pack * double(r.packs[w.pack].entry.size) ? UINT64_MAX : o.gap;
    uint64_t s = w.rec.offset, e = entry_end(w.rec);
    if (e > r.packs[w.pack].entry.size || s < kPackHeaderSize)
      throw Error("index of '" + r.packs[w.pack].url + "' places object " + to_hex(w.rec.digest) + " outside the pack");
    if (!out.empty()) {
      Range& last = out.back();
      if (last.pack == w.pack && s >= last.end && s - last.end <= gap && e - last.start <= o.max_range) {
        last.end = e;
        last.recs.push_back(w.rec);
        continue;
      }
    }
    out.push_back(Range{w.pack, s, e, {w.rec}});
  }
  return out;
}

// Checks fetched ranges on helper threads (decoding and hashing are the
// costly part of a fetch) while the transfers go on; the checked entries go
// to `store` on the calling thread, range by range in arrival order. At most
// one range per core is being checked; its body is held until then.
class RangeChecker {
public:
  using Store = std::function<void(const IndexRecord&, ByteSpan)>;
  RangeChecker(const Progress& progress, uint64_t total, Store store)
      : progress_(progress), total_(total), store_(std::move(store)),
        max_(std::max(2u, std::thread::hardware_concurrency())) {}

  void add(const Range& rg, Bytes body, const std::string& url) {
    auto job = std::make_unique<Job>();
    job->rg = &rg;
    job->body = std::move(body);
    Job* j = job.get();
    job->done = std::async(std::launch::async, [j, url] {
      for (const IndexRecord& rec : j->rg->recs) j->stored.push_back(check_entry(*j->rg, j->body, rec, url));
    });
    jobs_.push_back(std::move(job));
    drain(max_);
  }
  // Stores finished ranges, waiting while more than `keep` are in flight.
  void drain(size_t keep) {
    while (!jobs_.empty() && (jobs_.size() > keep || jobs_.front()->done.wait_for(std::chrono::seconds(0)) ==
                                                         std::future_status::ready)) {
      Job& j = *jobs_.front();
      j.done.get(); // rethrows a Mismatch
      for (size_t k = 0; k < j.stored.size(); k++) store_(j.rg->recs[k], j.stored[k]);
      done_bytes_ += j.rg->end - j.rg->start;
      report(progress_, "fetch", done_bytes_, total_);
      jobs_.pop_front();
    }
  }

private:
  struct Job {
    const Range* rg = nullptr;
    Bytes body;
    std::vector<ByteSpan> stored;
    std::future<void> done; // last: its destructor waits for the thread
  };
  const Progress& progress_;
  uint64_t total_, done_bytes_ = 0;
  Store store_;
  size_t max_;
  std::deque<std::unique_ptr<Job>> jobs_;
};

// Fetches the entries of `wants` into `sink` (steps 4-6).
void fetch_objects(const Remote& r, HttpClient& http, const std::vector<Want>& wants, PackSink& sink,
                   const FetchOptions& o, FetchResult& res) {
  std::vector<Range> ranges = plan_ranges(wants, r, o);
  std::vector<HttpRequest> reqs;
  uint64_t total = 0;
  for (const Range& rg : ranges) {
    HttpRequest q;
    q.url = r.packs[rg.pack].url;
    q.ranged = true;
    q.start = rg.start;
    q.end = rg.end;
    reqs.push_back(q);
    total += rg.end - rg.start;
  }
  res.ranges += ranges.size();
  res.range_bytes += total;
  try {
    RangeChecker checker(o.progress, total, [&](const IndexRecord& rec, ByteSpan stored) {
      sink.append(rec, stored);
      res.objects_fetched++;
      res.needed_bytes += kEntryHeaderSize + rec.stored_len;
    });
    http.run(reqs, [&](size_t i, Bytes& body) { checker.add(ranges[i], std::move(body), reqs[i].url); });
    checker.drain(0);
  } catch (const Mismatch&) {
    sink.discard();
    throw;
  } catch (const Error&) {
    sink.publish(); // keep what was checked: the next fetch resumes after it
    throw;
  }
}

// The catalog entry (verified) and the decoded catalog.
struct FetchedCatalog {
  IndexRecord rec;
  Bytes stored;
  Catalog cat;
  bool local = false;
};

FetchedCatalog get_catalog(Library& lib, const Remote& r, HttpClient& http, const Digest& d, const std::string& name) {
  FetchedCatalog fc;
  if (lib.locate(d)) {
    fc.cat = lib.load_catalog_by_digest(d);
    fc.local = true;
    return fc;
  }
  auto w = locate_remote(r, d);
  if (!w) throw Error("catalog '" + name + "' (" + to_hex(d) + ") is in none of the packs named by '" + r.base + "'");
  std::vector<Range> rg = plan_ranges({*w}, r, FetchOptions{});
  HttpRequest q;
  q.url = r.packs[w->pack].url;
  q.ranged = true;
  q.start = rg[0].start;
  q.end = rg[0].end;
  Bytes body = http.get(q);
  ByteSpan stored = check_entry(rg[0], body, w->rec, q.url);
  fc.rec = w->rec;
  fc.stored.assign(stored.begin(), stored.end());
  Bytes raw(w->rec.raw_len);
  if (w->rec.codec == Codec::Zstd) zstd_decompress(fc.stored, raw, nullptr, q.url);
  else raw = fc.stored;
  fc.cat = decode_catalog(raw, q.url);
  return fc;
}

// Objects of `cat` the library does not show (after a refresh).
std::vector<Digest> missing_objects(const Library& lib, const Catalog& cat, FetchResult* res) {
  lib.refresh();
  DigestSet seen;
  std::vector<Digest> out;
  for (const Node& n : cat.nodes) {
    if (n.type != NodeType::File || !seen.insert(n.digest).second) continue;
    if (!lib.locate_loaded(n.digest)) out.push_back(n.digest);
  }
  if (res) res->objects = seen.size();
  return out;
}

FetchResult fetch_once(Library& lib, HttpClient& http, const std::string& base, const std::string& url_shown,
                       const std::string& name, const FetchOptions& o, FetchResult res) {
  Remote r;
  r.base = base;
  r.root = fetch_root(http, base, url_shown, o, res);
  res.generation = r.root.generation;
  auto c = std::find_if(r.root.catalogs.begin(), r.root.catalogs.end(), [&](auto& e) { return e.name == name; });
  if (c == r.root.catalogs.end()) {
    std::string have;
    for (size_t i = 0; i < r.root.catalogs.size() && i < 10; i++) have += (i ? ", '" : "'") + r.root.catalogs[i].name + "'";
    throw Error("no catalog named '" + name + "' at '" + base + "'" + (have.empty() ? " (it has none)" : "; it has " + have));
  }
  res.catalog_digest = c->digest;
  r.packs = load_indexes(lib, http, base, r.root, res);
  FetchedCatalog fc = get_catalog(lib, r, http, c->digest, name);
  std::string local = o.local_name.empty() ? name : o.local_name;
  for (int round = 0;; round++) {
    std::vector<Digest> missing = missing_objects(lib, fc.cat, &res);
    bool need_catalog = !lib.locate_loaded(c->digest);
    if (!missing.empty() || need_catalog) {
      if (round == 5)
        throw Error("catalog '" + local + "' not set: " + std::to_string(missing.size()) +
                    " of its objects keep disappearing from library '" + lib.root() + "'; fetch it again");
      std::vector<Want> wants;
      for (const Digest& d : missing) {
        auto w = locate_remote(r, d);
        if (!w) throw Error("object " + to_hex(d) + " of catalog '" + name + "' is in none of the packs named by '" + base + "'");
        wants.push_back(*w);
      }
      PackSink sink(lib, o.subpack_bytes);
      fetch_objects(r, http, wants, sink, o, res);
      if (need_catalog) {
        if (fc.local) fc = get_catalog(lib, r, http, c->digest, name); // a gc took it meanwhile
        sink.append(fc.rec, fc.stored);
        sink.append(fc.rec, fc.stored, /*mirror=*/true);
      }
      sink.publish();
      res.packs_written += sink.packs();
    }
    // Set the name only once everything it needs is visible (core/gc.hpp).
    PublishLock publishing(lib, /*exclusive=*/false);
    if (missing_objects(lib, fc.cat, nullptr).empty() && lib.locate_loaded(c->digest)) {
      lib.set_catalog(local, c->digest);
      break;
    }
  }
  if (lib.uncovered_packs() > 8) lib.write_midx();
  return res;
}

} // namespace

bool is_remote_url(const std::string& s) {
  return s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0 || is_s3_url(s);
}

std::string remote_base_url(const std::string& url) {
  if (!is_remote_url(url)) throw Error("'" + url + "' is not an http://, https:// or s3:// URL");
  std::string b = url;
  while (!b.empty() && b.back() == '/') b.pop_back();
  return b;
}

std::string default_remote_cache() {
  const char* xdg = getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/hpak";
  const char* home = getenv("HOME");
  if (!home || home[0] != '/') throw Error("no cache library: set XDG_CACHE_HOME or HOME, or give --cache");
  return std::string(home) + "/.cache/hpak";
}

std::string remote_cache_name(const std::string& url, const std::string& name) {
  std::string b = remote_base_url(url);
  return name + "@" + to_hex(sha256(ByteSpan(reinterpret_cast<const uint8_t*>(b.data()), b.size()))).substr(0, 16);
}

FetchResult fetch(Library& lib, const std::string& url, const std::string& name, const FetchOptions& opts) {
  std::string shown = remote_base_url(url);
  std::string base = is_s3_url(shown) ? s3_http_url(shown, opts.http.s3) : shown;
  std::string why = Library::check_catalog_name(opts.local_name.empty() ? name : opts.local_name);
  if (!why.empty()) throw Error(why);
  HttpClient http(opts.http);
  FetchResult res;
  auto finish = [&](FetchResult r) {
    r.requests = http.stats().requests;
    r.retries = http.stats().retries;
    r.transferred_bytes = http.stats().bytes;
    return r;
  };
  try {
    return finish(fetch_once(lib, http, base, shown, name, opts, res));
  } catch (const HttpNotFound& e) {
    // A remote gc removed a pack an old root named: read the root again, once.
    res.replans = 1;
    try {
      return finish(fetch_once(lib, http, base, shown, name, opts, res));
    } catch (const HttpNotFound& again) {
      throw Error(std::string(again.what()) + "; the root was read again and still names it");
    }
  }
}

} // namespace hpak
