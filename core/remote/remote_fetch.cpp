#include "core/remote/remote_fetch.hpp"
#include "base/os/sys.hpp"


#include <ctime>

#include <algorithm>
#include <deque>
#include <future>
#include <thread>
#include <cstdlib>
#include <map>
#include <memory>

#include "base/diag.hpp"
#include "base/os/file.hpp"
#include "base/zstd_codec.hpp"
#include "core/pack/pack_trust.hpp"
#include "core/remote/remote_layout.hpp"
#include "core/remote/remote_url.hpp"
#include "core/store/lock.hpp"
#include "core/trust/signing.hpp"
#include "formats/remote_root_format.hpp"

namespace hpak {

using namespace formats;
using remote::Backend;
using remote::GetRequest;
namespace layout = remote::layout;

namespace {

// A verification failure: the bytes a server sent are not the object named.
class Mismatch : public Error {
public:
  using Error::Error;
};

struct RemotePack {
  RemotePackEntry entry;
  std::string url;
  MappedFile index_map; // LIB/remote/indexes/<name>.hidx, checked against the root
  IndexView index;
  // v2: the distinct item offsets of the index, ascending. A v2 index does
  // not give an item's length: an item ends at most where the next begins.
  std::vector<uint64_t> items;

  // Where the item at `offset` ends at the latest (exactly, for v1): never
  // past what the object's size lets its item take (max_item_bytes), so an
  // index cannot make a range, held in memory, larger than its objects need.
  uint64_t item_end(const IndexRecord& rec) const {
    uint64_t cap = rec.offset + max_item_bytes(rec);
    if (index.version() == kIndexVersion) return std::min(cap, rec.offset + kEntryHeaderSize + rec.stored_len);
    auto next = std::upper_bound(items.begin(), items.end(), rec.offset);
    return std::min(cap, next == items.end() ? entry.size - kFooterSize - kTrailerSize : *next);
  }

  // The most bytes the item holding `rec` can take: an entry's header and
  // stored bytes (at most zstd's bound for its raw size: raw_len + raw_len/128
  // + 4 KiB is above it); a block's header, table and payload (a block holds
  // at most kBlockMaxRaw raw bytes, and at most one member per raw byte and
  // an empty one).
  static uint64_t max_item_bytes(const IndexRecord& rec) {
    auto stored_bound = [](uint64_t raw) { return raw + raw / 128 + 4096; };
    if (rec.member != kNoMember)
      return kBlockHeaderSize + (uint64_t(kBlockMaxRaw) + 1) * kBlockMemberSize + stored_bound(kBlockMaxRaw);
    return kEntryHeaderSize + stored_bound(std::min<uint64_t>(rec.raw_len, uint64_t(1) << 62));
  }
};

struct Remote {
  Backend& store;
  std::string base;  // the backend's address, for messages (an s3:// URL: its endpoint's URL)
  std::string shown; // the URL as given, trailing slashes removed
  RemoteRoot root;
  std::vector<RemotePack> packs;
};

// One located object.
struct Want {
  size_t pack = 0;
  IndexRecord rec;
};

// One planned range of one pack, with the entries it carries (the index
// records of the objects wanted; for a v2 block, every wanted member).
struct Range {
  size_t pack = 0;
  uint64_t start = 0, end = 0;
  std::vector<IndexRecord> recs;
  std::vector<uint64_t> ends; // per record, where its item ends at the latest
};

// One checked item of a fetched range: an entry (its record completed from
// the entry header) or a v2 block, decoded, every member's name checked.
struct CheckedItem {
  IndexRecord rec;
  ByteSpan stored;
  std::optional<PackReader::Block> block;
  Bytes block_raw;
};

// `p` and its missing parents; in a shared library setgid and group-writable
// like the rest of it (other members write there too).
void make_dirs(const std::string& p, bool shared) {
  const os::Mode mode = shared ? 02775 : 0755;
  for (size_t i = 1; i <= p.size(); i++)
    if (i == p.size() || p[i] == '/') {
      std::string part = p.substr(0, i);
      if (os::mkdir_path(part.c_str(), mode) == 0) {
        if (shared) os::chmod_path(part.c_str(), mode);
      } else if (errno != EEXIST) {
        throw_errno("unable to create directory '" + part + "'");
      }
    }
}

// The generation state of a root under the user's private state: per library
// identity for a version 2 root (the same library from any URL), per URL for
// a version 1 root (which has no identity).
std::string generation_state(const RemoteRoot& root, const std::string& url_shown) {
  std::string why;
  std::string dir = user_private_dir("XDG_STATE_HOME", ".local/state", "generations", &why);
  if (dir.empty()) throw Error("refusing root of '" + url_shown + "': no private directory for the generations seen (" + (why.empty() ? "" : why + "; ") + "set XDG_STATE_HOME)");
  if (root.version >= 2) return dir + "/remote-library-" + root.library;
  return dir + "/remote-" + to_hex(sha256(ByteSpan(reinterpret_cast<const uint8_t*>(url_shown.data()), url_shown.size())));
}

std::string show_time(uint64_t t) {
  time_t tt = time_t(t);
  struct tm tm {};
  gmtime_r(&tt, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// The signature policy for a root (see FetchOptions::allowed_signers): the
// signature over the root text is checked before the text is parsed, then the
// generation against the highest seen for the library, which it then becomes.
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
  std::string state = generation_state(root, url_shown);
  uint64_t seen = 0;
  os::FileStat st;
  if (Fd fd = open_regular_if_exists(state, Follow::NoLinks, 64, &st)) {
    if (st.st_uid != os::euid()) throw Error("'" + state + "' is not this user's file");
    Bytes b = read_fd_bounded(fd.get(), state, 64);
    seen = std::strtoull(std::string(b.begin(), b.end()).c_str(), nullptr, 10);
  }
  std::string of = root.version >= 2 ? " for library " + root.library : " from this URL";
  if (root.generation < seen)
    throw Error("refusing root '" + where + "': generation " + std::to_string(root.generation) + " is older than generation " +
                std::to_string(seen) + " seen before" + of + " (rolled back or replayed?)");
  if (root.generation > seen) {
    AtomicFile f(state, 0600);
    std::string text = std::to_string(root.generation) + "\n";
    f.write(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    f.commit(/*durable=*/true);
  }
}

// A root past its expiry is never used; --min-generation and --max-age are
// the client's own floor (for a client that has seen nothing yet).
void check_root_freshness(const RemoteRoot& root, const std::string& where, const FetchOptions& o) {
  const uint64_t now = uint64_t(::time(nullptr));
  const std::string refuse = "refusing root '" + where + "': ";
  const std::string which = "generation " + std::to_string(root.generation);
  if (root.version >= 2 && now > root.expires)
    throw Error(refuse + which + " expired at " + show_time(root.expires) + " (published " + show_time(root.time) + "); it must be published again");
  if (root.generation < o.min_generation)
    throw Error(refuse + which + " is below the generation " + std::to_string(o.min_generation) + " --min-generation asks for");
  if (o.max_age_seconds < 0) return;
  if (root.version < 2) throw Error(refuse + "it does not say when it was published (a version 1 root), which --max-age needs");
  if (now > root.time && now - root.time > uint64_t(o.max_age_seconds))
    throw Error(refuse + which + " was published " + show_time(root.time) + ", longer ago than --max-age " + std::to_string(o.max_age_seconds) + " s");
}

RemoteRoot fetch_root(const Remote& r, const FetchOptions& o, FetchResult& res) {
  const std::string where = r.store.where(layout::kRoot);
  Bytes b;
  try {
    b = r.store.get(layout::kRoot, kRemoteRootMaxSize + (1 << 16), /*fresh=*/true); // the root and its signature
  } catch (const remote::RemoteNotFound& e) {
    throw Error("no published library at '" + r.shown + "': '" + where + "' not found (" + e.reason() + ")");
  }
  RemoteRootParts parts = split_remote_root(b);
  if (o.allowed_signers) check_root_signature(parts, where, *o.allowed_signers, res);
  RemoteRoot root = decode_remote_root(parts.text, where);
  check_root_freshness(root, where, o);
  if (o.allowed_signers) check_root_generation(root, where, r.shown);
  return root;
}

// The distinct item offsets of a v2 index, ascending.
void list_items(RemotePack& p) {
  p.items.reserve(p.index.count());
  for (uint64_t i = 0; i < p.index.count(); i++) p.items.push_back(p.index.record_at(i).offset);
  std::sort(p.items.begin(), p.items.end());
  p.items.erase(std::unique(p.items.begin(), p.items.end()), p.items.end());
}

// The cached index of `e` in LIB/remote/indexes, mapped, when it is the one
// the root describes (size and SHA-256). A library file: hostile input (a
// FIFO, a symlink, a device or a wrong file there is ignored, then replaced).
std::optional<MappedFile> cached_index(const std::string& path, const RemotePackEntry& e) {
  try {
    MappedFile m(path, Follow::NoLinks);
    if (m.size() == e.index_size && sha256(m.bytes()) == e.index_sum) return m;
  } catch (const Error& e2) {
    diag_debug([&] { return "cached index '" + path + "' ignored: " + e2.what(); });
  }
  return std::nullopt;
}

// An index body written to LIB/remote/indexes as it arrives: never more than
// the size the root gives it, its header checked as soon as it is in (a
// stream that is not that index fails at once), hashed on the way, held in no
// buffer. finish() checks the SHA-256 and renames it into place.
class IndexSink : public remote::BodySink {
public:
  IndexSink(std::string path, const RemotePackEntry& e, std::string url, os::Mode mode)
      : path_(std::move(path)), e_(e), url_(std::move(url)), mode_(mode) {}
  void start() override {
    file_.reset();
    file_.emplace(path_, mode_);
    sha_ = std::make_unique<Sha256>();
    got_ = 0;
    head_.clear();
  }
  void data(ByteSpan piece) override {
    if (piece.size() > e_.index_size - got_)
      throw Error("index '" + url_ + "' is longer than the " + std::to_string(e_.index_size) + " bytes the root gives it");
    if (head_.size() < kIndexHeaderSize) {
      size_t n = std::min(piece.size(), kIndexHeaderSize - head_.size());
      head_.insert(head_.end(), piece.begin(), piece.begin() + n);
      if (head_.size() == kIndexHeaderSize) check_header();
    }
    sha_->update(piece);
    file_->write(piece);
    got_ += piece.size();
  }
  void finish() {
    if (!file_ || got_ != e_.index_size || sha_->finish() != e_.index_sum)
      throw Error("index '" + url_ + "' does not match the SHA-256 the root gives it");
    file_->commit();
    file_.reset();
  }

private:
  void check_header() {
    IndexHeader h;
    try {
      h = decode_index_header(head_, url_);
    } catch (const Corrupt& c) {
      throw Error("index '" + url_ + "' is not the index the root describes: " + c.why());
    }
    if (h.size != e_.index_size || h.pack_size != e_.size)
      throw Error("index '" + url_ + "' is not the index the root describes: its header gives " + std::to_string(h.size) +
                  " bytes for a pack of " + std::to_string(h.pack_size) + ", the root " + std::to_string(e_.index_size) + " for " +
                  std::to_string(e_.size));
  }
  std::string path_;
  const RemotePackEntry& e_;
  std::string url_;
  os::Mode mode_;
  std::optional<AtomicFile> file_;
  std::unique_ptr<Sha256> sha_;
  uint64_t got_ = 0;
  Bytes head_;
};

// The index of every pack the root names: from LIB/remote/indexes when
// cached there, else fetched (in parallel) into it, checked as it arrives.
std::vector<RemotePack> load_indexes(Library& lib, const Remote& remote, FetchResult& res) {
  const RemoteRoot& root = remote.root;
  const std::string& base = remote.base;
  std::string dir = lib.layout().remote_indexes_dir();
  make_dirs(dir, lib.shared());
  std::vector<RemotePack> packs(root.packs.size());
  std::vector<GetRequest> reqs;
  std::vector<size_t> which;
  std::vector<std::unique_ptr<IndexSink>> sinks;
  for (size_t i = 0; i < root.packs.size(); i++) {
    RemotePack& p = packs[i];
    p.entry = root.packs[i];
    p.url = remote.store.where(layout::pack(p.entry.name));
    if (p.entry.index_size > max_index_size(p.entry.size))
      throw Error("refusing root of '" + base + "': it gives pack " + p.entry.name + " (" + std::to_string(p.entry.size) + " bytes) an index of " +
                  std::to_string(p.entry.index_size) + " bytes, more than such a pack can need");
    std::string cached = dir + "/" + pack_index_name(p.entry.name);
    if (auto m = cached_index(cached, p.entry)) {
      p.index_map = std::move(*m);
      continue;
    }
    GetRequest r;
    r.name = layout::index(p.entry.name);
    r.max_size = p.entry.index_size;
    sinks.push_back(std::make_unique<IndexSink>(cached, p.entry, remote.store.where(r.name), lib.shared() ? 0664 : 0644));
    r.sink = sinks.back().get();
    reqs.push_back(r);
    which.push_back(i);
  }
  remote.store.get_many(reqs, [&](size_t k, Bytes&) {
    RemotePack& p = packs[which[k]];
    sinks[k]->finish();
    std::string cached = dir + "/" + pack_index_name(p.entry.name);
    auto m = cached_index(cached, p.entry);
    if (!m) throw Error("index '" + cached + "' changed after it was fetched");
    p.index_map = std::move(*m);
    res.indexes_fetched++;
  });
  for (RemotePack& p : packs) {
    p.index = IndexView(p.index_map.bytes(), index_path_for(p.url));
    if (p.index.pack_size() != p.entry.size) throw Error("index of '" + p.url + "' gives another pack size than the root");
    if (p.index.version() != kIndexVersion) list_items(p);
  }
  return packs;
}

std::optional<Want> locate_remote(const Remote& r, const Digest& d) {
  for (size_t i = 0; i < r.packs.size(); i++)
    if (auto k = r.packs[i].index.find(d)) return Want{i, r.packs[i].index.record_at(*k)};
  return std::nullopt;
}

// Checks one entry of a fetched range (see the header, step 5); returns it
// with its record completed from its header (a v2 index leaves stored_len and
// stored_xxh to the pack). `end` bounds the item.
// A catalog stored against a base (`against_base`: only get_catalog asks)
// is checked against its name by the caller, once its base is at hand.
CheckedItem check_entry(ByteSpan body, uint64_t body_start, const IndexRecord& rec, uint64_t end, const std::string& url,
                        bool against_base = false) {
  std::string what = "object " + to_hex(rec.digest) + " from '" + url + "' (offset " + std::to_string(rec.offset) + ")";
  ByteSpan item = body.subspan(rec.offset - body_start, end - rec.offset);
  if (item.size() < kEntryHeaderSize) throw Mismatch(what + " has no room for its entry header: refused, not stored");
  EntryHeader h;
  try {
    h = decode_entry_header(item.first(kEntryHeaderSize), url, rec.offset);
  } catch (const Corrupt& e) {
    throw Mismatch(what + " has a bad entry header: refused, not stored");
  }
  bool v1 = rec.stored_len || rec.stored_xxh;
  if (h.digest != rec.digest || h.kind != rec.kind || h.codec != rec.codec || h.raw_len != rec.raw_len ||
      (v1 && (h.stored_len != rec.stored_len || h.stored_xxh != rec.stored_xxh)) ||
      h.stored_len > item.size() - kEntryHeaderSize)
    throw Mismatch(what + " does not match the remote index: refused, not stored");
  CheckedItem out;
  out.rec = rec;
  out.rec.stored_len = h.stored_len;
  out.rec.stored_xxh = h.stored_xxh;
  ByteSpan stored = item.subspan(kEntryHeaderSize, h.stored_len);
  if (xxh64(stored) != h.stored_xxh) throw Mismatch(what + " does not match its checksum: refused, not stored");
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
  } else if (rec.codec == Codec::ZstdBase && against_base) {
    out.stored = stored;
    return out;
  } else {
    throw Error(what + " is stored with codec " + codec_name(rec.codec) + "; fetching such objects is not supported");
  }
  if (got != rec.digest) throw Mismatch(what + " does not match its name (SHA-256): refused, not stored");
  out.stored = stored;
  return out;
}

// Checks one v2 block of a fetched range: header, table and checksum, every
// member's SHA-256 (all of them are stored), and that it holds each wanted
// record at the position the index gives.
CheckedItem check_block(ByteSpan body, uint64_t body_start, const std::vector<IndexRecord>& wanted, uint64_t end,
                        const std::string& url) {
  const uint64_t off = wanted.front().offset;
  std::string what = "block at offset " + std::to_string(off) + " of '" + url + "'";
  CheckedItem out;
  try {
    out.block = parse_block(body.subspan(off - body_start, end - off), url, off);
  } catch (const Corrupt& e) {
    throw Mismatch(what + " is damaged (" + e.what() + "): refused, not stored");
  }
  PackReader::Block& bl = *out.block;
  if (bl.header.codec == Codec::ZstdDict) throw Error(what + " is dictionary-compressed; fetching such objects is not supported");
  try {
    out.block_raw = decode_block(bl, nullptr, url, off);
  } catch (const Corrupt& e) {
    throw Mismatch(what + " does not decompress: refused, not stored");
  }
  // Every member's SHA-256: a named table's names checked, a lengths-only
  // block's members named by it (the remote index is no authority).
  uint64_t at = 0;
  for (BlockMember& m : bl.members) {
    Digest got = sha256(ByteSpan(out.block_raw).subspan(at, m.raw_len));
    if (!bl.header.named()) m.digest = got;
    else if (got != m.digest)
      throw Mismatch("object " + to_hex(m.digest) + " in the " + what + " does not match its name (SHA-256): refused, not stored");
    at += m.raw_len;
  }
  if (!bl.header.named() && !distinct_names(bl.members)) throw Mismatch(what + " holds one object twice: refused, not stored");
  for (const IndexRecord& r : wanted)
    if (r.member >= bl.members.size() || bl.members[r.member].digest != r.digest || bl.members[r.member].raw_len != r.raw_len ||
        r.codec != bl.header.codec || r.kind != Kind::Blob)
      throw Mismatch(what + " does not hold object " + to_hex(r.digest) + " where the remote index says: refused, not stored");
  out.rec = wanted.front();
  return out;
}

// Checks the items of a fetched range, one per distinct offset, in order.
std::vector<CheckedItem> check_range(const Range& rg, const Bytes& body, const std::string& url) {
  std::vector<CheckedItem> out;
  for (size_t k = 0; k < rg.recs.size();) {
    size_t e = k + 1;
    while (e < rg.recs.size() && rg.recs[e].offset == rg.recs[k].offset) e++;
    const IndexRecord& rec = rg.recs[k];
    if (rec.member == kNoMember) out.push_back(check_entry(body, rg.start, rec, rg.ends[k], url));
    else out.push_back(check_block(body, rg.start, {rg.recs.begin() + k, rg.recs.begin() + e}, rg.ends[k], url));
    k = e;
  }
  return out;
}

// Fetched entries become new packs of the library, one every `limit` bytes.
class PackSink {
public:
  PackSink(Library& lib, uint64_t limit) : lib_(lib), limit_(limit) {}
  ~PackSink() { discard(); }

  void append(const IndexRecord& rec, ByteSpan stored, bool mirror = false) {
    open();
    if (writer_->contains(rec.digest) && !mirror) return;
    writer_->append_copy(rec, stored, mirror);
    if (writer_->bytes_written() >= limit_) publish();
  }
  // A checked item: an entry as is, a block verbatim when the pack being
  // written holds none of its members, else its other members one by one.
  // Returns the objects added.
  uint64_t append(const CheckedItem& it) {
    if (!it.block) {
      bool fresh = !writer_ || !writer_->contains(it.rec.digest);
      append(it.rec, it.stored);
      return fresh;
    }
    open();
    const PackReader::Block& bl = *it.block;
    bool clash = false;
    for (const BlockMember& m : bl.members) clash = clash || writer_->contains(m.digest);
    uint64_t added = 0;
    if (!clash) {
      writer_->append_block_copy(bl.header, bl.members, bl.table, bl.payload);
      added = bl.members.size();
    } else {
      uint64_t at = 0;
      for (const BlockMember& m : bl.members) {
        if (!writer_->contains(m.digest)) {
          ByteSpan raw = ByteSpan(it.block_raw).subspan(at, m.raw_len);
          if (writer_->is_small(m.raw_len)) writer_->append_small(m.digest, raw);
          else writer_->append(Kind::Blob, Codec::Raw, m.digest, m.raw_len, raw);
          added++;
        }
        at += m.raw_len;
      }
    }
    if (writer_->bytes_written() >= limit_) publish();
    return added;
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
  void open() {
    if (writer_) return;
    tmp_ = std::make_unique<AtomicFile>(lib_.layout().temp_pack("pack"), 0644);
    writer_ = std::make_unique<PackWriter>(tmp_->fd(), tmp_->temp_path(), std::max(lib_.default_level(), 0));
  }

  Library& lib_;
  uint64_t limit_;
  std::unique_ptr<AtomicFile> tmp_;
  std::unique_ptr<PackWriter> writer_;
  uint64_t packs_ = 0;
};

// The ranges that carry `wants` (step 4 of the header). The wanted members
// of one v2 block share its range.
std::vector<Range> plan_ranges(std::vector<Want> wants, const Remote& r, const FetchOptions& o) {
  std::sort(wants.begin(), wants.end(), [](const Want& a, const Want& b) {
    return a.pack != b.pack ? a.pack < b.pack : a.rec.offset != b.rec.offset ? a.rec.offset < b.rec.offset : a.rec.member < b.rec.member;
  });
  std::map<size_t, uint64_t> needed;
  for (size_t k = 0; k < wants.size(); k++)
    if (k == 0 || wants[k].pack != wants[k - 1].pack || wants[k].rec.offset != wants[k - 1].rec.offset)
      needed[wants[k].pack] += r.packs[wants[k].pack].item_end(wants[k].rec) - wants[k].rec.offset;
  std::vector<Range> out;
  for (const Want& w : wants) {
    const RemotePack& p = r.packs[w.pack];
    uint64_t gap = double(needed[w.pack]) >= o.whole_pack * double(p.entry.size) ? UINT64_MAX : o.gap;
    uint64_t s = w.rec.offset, e = p.item_end(w.rec);
    if (e > p.entry.size || s < kPackHeaderSize || e < s)
      throw Error("index of '" + p.url + "' places object " + to_hex(w.rec.digest) + " outside the pack");
    if (!out.empty()) {
      Range& last = out.back();
      bool same_item = last.pack == w.pack && last.recs.back().offset == s;
      if (same_item || (last.pack == w.pack && s >= last.end && s - last.end <= gap && e - last.start <= o.max_range)) {
        last.end = std::max(last.end, e);
        last.recs.push_back(w.rec);
        last.ends.push_back(e);
        continue;
      }
    }
    out.push_back(Range{w.pack, s, e, {w.rec}, {e}});
  }
  return out;
}

// Checks fetched ranges on helper threads (decoding and hashing are the
// costly part of a fetch) while the transfers go on; the checked entries go
// to `store` on the calling thread, range by range in arrival order. At most
// one range per core is being checked; its body is held until then.
class RangeChecker {
public:
  using Store = std::function<void(const CheckedItem&)>;
  RangeChecker(const Progress& progress, uint64_t total, Store store)
      : progress_(progress), total_(total), store_(std::move(store)),
        max_(std::max(2u, std::thread::hardware_concurrency())) {}

  void add(const Range& rg, Bytes body, const std::string& url) {
    auto job = std::make_unique<Job>();
    job->rg = &rg;
    job->body = std::move(body);
    Job* j = job.get();
    job->done = std::async(std::launch::async, [j, url] { j->items = check_range(*j->rg, j->body, url); });
    jobs_.push_back(std::move(job));
    drain(max_);
  }
  // Stores finished ranges, waiting while more than `keep` are in flight.
  void drain(size_t keep) {
    while (!jobs_.empty() && (jobs_.size() > keep || jobs_.front()->done.wait_for(std::chrono::seconds(0)) ==
                                                         std::future_status::ready)) {
      Job& j = *jobs_.front();
      j.done.get(); // rethrows a Mismatch
      for (const CheckedItem& it : j.items) store_(it);
      done_bytes_ += j.rg->end - j.rg->start;
      report(progress_, "fetch", done_bytes_, total_);
      jobs_.pop_front();
    }
  }

private:
  struct Job {
    const Range* rg = nullptr;
    Bytes body;
    std::vector<CheckedItem> items;
    std::future<void> done; // last: its destructor waits for the thread
  };
  const Progress& progress_;
  uint64_t total_, done_bytes_ = 0;
  Store store_;
  size_t max_;
  std::deque<std::unique_ptr<Job>> jobs_;
};

// The read of one planned range.
GetRequest range_request(const Remote& r, const Range& rg) {
  GetRequest q;
  q.name = layout::pack(r.packs[rg.pack].entry.name);
  q.ranged = true;
  q.object_size = r.packs[rg.pack].entry.size;
  q.offset = rg.start;
  q.length = rg.end - rg.start;
  return q;
}

// Fetches the entries of `wants` into `sink` (steps 4-6).
void fetch_objects(const Remote& r, const std::vector<Want>& wants, PackSink& sink, const FetchOptions& o, FetchResult& res) {
  std::vector<Range> ranges = plan_ranges(wants, r, o);
  std::vector<GetRequest> reqs;
  uint64_t total = 0;
  for (const Range& rg : ranges) {
    reqs.push_back(range_request(r, rg));
    total += rg.end - rg.start;
  }
  res.ranges += ranges.size();
  res.range_bytes += total;
  try {
    RangeChecker checker(o.progress, total, [&](const CheckedItem& it) {
      res.objects_fetched += sink.append(it);
      res.needed_bytes += it.block ? block_item_size(it.block->header) : kEntryHeaderSize + it.rec.stored_len;
    });
    r.store.get_many(reqs, [&](size_t i, Bytes& body) { checker.add(ranges[i], std::move(body), r.packs[ranges[i].pack].url); });
    checker.drain(0);
  } catch (const Mismatch&) {
    sink.discard();
    throw;
  } catch (const Error&) {
    sink.publish(); // keep what was checked: the next fetch resumes after it
    throw;
  }
}

// A catalog entry fetched and checked (its SHA-256 too, but for one stored
// against a base: get_catalog checks that one once decoded).
struct FetchedEntry {
  IndexRecord rec;
  Bytes stored;
};

// The catalog entry (verified) and the decoded catalog; for a catalog stored
// against a base, the base's digest, and its entry when the library lacked it.
struct FetchedCatalog {
  IndexRecord rec;
  Bytes stored;
  Catalog cat;
  bool local = false;
  std::optional<Digest> base;
  std::optional<FetchedEntry> base_entry;
  uint64_t fetched_bytes = 0; // the entries fetched (the catalog's, its base's): FetchResult::needed_bytes
};

uint64_t entry_bytes(const FetchedEntry& e) { return kEntryHeaderSize + e.stored.size(); }

FetchedEntry fetch_catalog_entry(const Remote& r, const Digest& d, const std::string& name) {
  auto w = locate_remote(r, d);
  if (!w) throw Error("catalog '" + name + "' (" + to_hex(d) + ") is in none of the packs named by '" + r.base + "'");
  if (w->rec.raw_len > (uint64_t(1) << 32))
    throw Error("the index of '" + r.packs[w->pack].url + "' gives catalog '" + name + "' " + std::to_string(w->rec.raw_len) +
                " bytes; catalogs are at most 4 GiB");
  const std::string& url = r.packs[w->pack].url;
  if (w->rec.member != kNoMember || w->rec.kind != Kind::Catalog)
    throw Error("catalog '" + name + "' (" + to_hex(d) + ") is not a catalog entry in the index of '" + url + "'");
  std::vector<Range> rg = plan_ranges({*w}, r, FetchOptions{});
  GetRequest q = range_request(r, rg[0]);
  Bytes body = r.store.get_range(q.name, q.offset, q.length, q.object_size);
  if (body.size() != q.length) throw Error("'" + url + "' sent " + std::to_string(body.size()) + " bytes for a range of " + std::to_string(q.length));
  CheckedItem it = check_entry(body, rg[0].start, w->rec, rg[0].end, url, /*against_base=*/true);
  return {it.rec, Bytes(it.stored.begin(), it.stored.end())};
}

// The raw bytes of a catalog entry stored whole (zstd or raw).
Bytes whole_raw(const IndexRecord& rec, ByteSpan stored, const std::string& where) {
  if (rec.codec != Codec::Zstd) return Bytes(stored.begin(), stored.end());
  Bytes raw(rec.raw_len);
  zstd_decompress(stored, raw, nullptr, where);
  return raw;
}

// The raw bytes of the base `b` of catalog `name`: the library's copy, or
// one fetched (a catalog stored whole, checked against its name) and kept
// in `fc` to be stored with the catalog.
Bytes base_raw(const Library& lib, const Remote& r, const Digest& b, const std::string& name, FetchedCatalog& fc) {
  if (lib.locate(b)) try {
      return lib.read_base_catalog(b);
    } catch (const Error&) {
      // unreadable here: fetched below, and stored again
    }
  FetchedEntry e = fetch_catalog_entry(r, b, "base of " + name);
  fc.fetched_bytes += entry_bytes(e);
  if (e.rec.codec == Codec::ZstdBase)
    throw Mismatch("the base of catalog '" + name + "' at '" + r.base + "' is itself stored against another catalog: refused, not stored");
  if (e.rec.raw_len >= kBaseCodedMax) throw Mismatch("the base of catalog '" + name + "' at '" + r.base + "' is too large to be one");
  Bytes raw = whole_raw(e.rec, e.stored, r.base);
  fc.base_entry = std::move(e);
  return raw;
}

FetchedCatalog get_catalog(Library& lib, const Remote& r, const Digest& d, const std::string& name) {
  FetchedCatalog fc;
  if (lib.locate(d)) try {
      Library::StoredCatalog stored;
      fc.cat = lib.load_catalog_by_digest(d, &stored);
      if (stored.codec == Codec::ZstdBase) fc.base = PackReader::base_of(stored.bytes);
      fc.local = true;
      return fc;
    } catch (const Error&) {
      // unreadable here (its base gone, or every copy damaged): fetched again below
    }
  FetchedEntry e = fetch_catalog_entry(r, d, name);
  fc.fetched_bytes += entry_bytes(e);
  fc.rec = e.rec;
  fc.stored = std::move(e.stored);
  const std::string what = "catalog '" + name + "' from '" + r.base + "'";
  Bytes raw;
  if (fc.rec.codec == Codec::ZstdBase) {
    raw.resize(fc.rec.raw_len);
    if (fc.stored.size() <= kBaseDigestSize) throw Mismatch(what + " is too short to name its base: refused, not stored");
    fc.base = PackReader::base_of(fc.stored);
    if (*fc.base == d) throw Mismatch(what + " is stored against itself: refused, not stored");
    Bytes b = base_raw(lib, r, *fc.base, name, fc);
    if (b.size() + raw.size() > kBaseCodedMax) throw Mismatch(what + " and its base are larger than 128 MiB together: refused, not stored");
    try {
      zstd_decompress_against(ByteSpan(fc.stored).subspan(kBaseDigestSize), b, raw, what);
    } catch (const Error&) {
      throw Mismatch(what + " does not decompress against its base: refused, not stored");
    }
    if (sha256(raw) != d) throw Mismatch(what + " does not match its name (SHA-256): refused, not stored");
  } else {
    raw = whole_raw(fc.rec, fc.stored, r.base);
  }
  fc.cat = decode_catalog(raw, r.base);
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

// The root's entry for catalog `name`, or an Error naming the ones it has.
const RemoteCatalogEntry& find_catalog(const Remote& r, const std::string& name) {
  auto c = std::find_if(r.root.catalogs.begin(), r.root.catalogs.end(), [&](auto& e) { return e.name == name; });
  if (c != r.root.catalogs.end()) return *c;
  std::string have;
  for (size_t i = 0; i < r.root.catalogs.size() && i < 10; i++) have += (i ? ", '" : "'") + r.root.catalogs[i].name + "'";
  throw Error("no catalog named '" + name + "' at '" + r.base + "'" + (have.empty() ? " (it has none)" : "; it has " + have));
}

// Where each of `missing` is in the remote packs. The catalog (checked
// against its name) says how large each object is: an index may not make
// its range larger.
std::vector<Want> locate_wants(const Remote& r, const std::vector<Digest>& missing, const DigestMap<uint64_t>& sizes,
                               const std::string& name) {
  std::vector<Want> wants;
  for (const Digest& d : missing) {
    auto w = locate_remote(r, d);
    if (!w) throw Error("object " + to_hex(d) + " of catalog '" + name + "' is in none of the packs named by '" + r.base + "'");
    if (w->rec.raw_len != sizes.at(d))
      throw Error("the index of '" + r.packs[w->pack].url + "' gives object " + to_hex(d) + " " + std::to_string(w->rec.raw_len) +
                  " bytes, catalog '" + name + "' " + std::to_string(sizes.at(d)));
    wants.push_back(*w);
  }
  return wants;
}

// The sizes the catalog gives its objects.
DigestMap<uint64_t> object_sizes(const Catalog& cat) {
  DigestMap<uint64_t> sizes;
  for_each_file(cat, [&](const Node& n) { sizes.emplace(n.digest, n.size); });
  return sizes;
}

// Fetches what the library lacks of the catalog, until the name can be set
// with everything it needs visible (core/gc/gc.hpp); a few rounds when a gc
// of the library keeps taking objects away.
void fetch_and_name(Library& lib, const Remote& r, const RemoteCatalogEntry& c, FetchedCatalog& fc, const std::string& name,
                    const FetchOptions& o, FetchResult& res) {
  const DigestMap<uint64_t> sizes = object_sizes(fc.cat);
  const std::string local = o.local_name.empty() ? name : o.local_name;
  for (int round = 0;; round++) {
    std::vector<Digest> missing = missing_objects(lib, fc.cat, &res);
    bool need_catalog = !lib.locate_loaded(c.digest) || (fc.base && !lib.locate_loaded(*fc.base));
    if (!missing.empty() || need_catalog) {
      if (round == 5)
        throw Error("catalog '" + local + "' not set: " + std::to_string(missing.size()) +
                    " of its objects keep disappearing from library '" + lib.root() + "'; fetch it again");
      PackSink sink(lib, o.subpack_bytes);
      fetch_objects(r, locate_wants(r, missing, sizes, name), sink, o, res);
      if (need_catalog) {
        if (fc.local || (fc.base && !fc.base_entry && !lib.locate_loaded(*fc.base))) {
          fc = get_catalog(lib, r, c.digest, name); // a gc took it (or its base) meanwhile
          res.needed_bytes += fc.fetched_bytes;
        }
        if (fc.base_entry) {
          sink.append(fc.base_entry->rec, fc.base_entry->stored);
          sink.append(fc.base_entry->rec, fc.base_entry->stored, /*mirror=*/true);
        }
        sink.append(fc.rec, fc.stored);
        sink.append(fc.rec, fc.stored, /*mirror=*/true);
      }
      sink.publish();
      res.packs_written += sink.packs();
    }
    // Set the name only once everything it needs is visible (core/gc/gc.hpp).
    store::PublishLock publishing(lib.layout(), lib.shared(), /*exclusive=*/false);
    if (missing_objects(lib, fc.cat, nullptr).empty() && lib.locate_loaded(c.digest) && (!fc.base || lib.locate_loaded(*fc.base))) {
      lib.set_catalog(local, c.digest);
      return;
    }
  }
}

FetchResult fetch_once(Library& lib, Backend& store, const std::string& shown, const std::string& name, const FetchOptions& o,
                       FetchResult res) {
  Remote r{store, remote::strip_trailing_slashes(store.where("")), shown, {}, {}};
  r.root = fetch_root(r, o, res);
  res.generation = r.root.generation;
  const RemoteCatalogEntry& c = find_catalog(r, name);
  res.catalog_digest = c.digest;
  r.packs = load_indexes(lib, r, res);
  FetchedCatalog fc = get_catalog(lib, r, c.digest, name);
  res.needed_bytes += fc.fetched_bytes;
  fetch_and_name(lib, r, c, fc, name, o, res);
  std::vector<std::string> midx_warnings; // the name is durable: a midx not rewritten is a warning
  lib.add_midx_layer_or_warn(midx_warnings);
  for (auto& w : midx_warnings) warn(w);
  return res;
}

} // namespace

bool is_remote_url(const std::string& s) { return remote::looks_like_url(s); }

std::string default_remote_cache() {
  const char* xdg = getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/hpak";
  const char* home = getenv("HOME");
  if (!home || home[0] != '/') throw Error("no cache library: set XDG_CACHE_HOME or HOME, or give --cache");
  return std::string(home) + "/.cache/hpak";
}

std::string remote_cache_name(const std::string& url, const std::string& name) {
  std::string b = remote::parse_remote_url(url).text;
  return name + "@" + to_hex(sha256(ByteSpan(reinterpret_cast<const uint8_t*>(b.data()), b.size()))).substr(0, 16);
}

FetchResult fetch(Library& lib, const std::string& url, const std::string& name, const FetchOptions& opts) {
  const remote::RemoteUrl parsed = remote::parse_remote_url(url);
  std::string why = Library::check_new_catalog_name(opts.local_name.empty() ? name : opts.local_name);
  if (!why.empty()) throw Error(why);
  remote::BackendOptions how = opts.remote;
  how.http.spool_dir = lib.layout().tmp_dir(); // whole packs of a server that ignores Range
  std::unique_ptr<Backend> store = remote::open_backend(parsed, how, remote::Access::Read);
  FetchResult res;
  auto finish = [&](FetchResult r) {
    remote::BackendStats s = store->stats();
    r.requests = s.requests;
    r.retries = s.retries;
    r.transferred_bytes = s.bytes;
    return r;
  };
  try {
    return finish(fetch_once(lib, *store, parsed.text, name, opts, res));
  } catch (const remote::RemoteNotFound& e) {
    // A remote gc removed a pack an old root named: read the root again, once.
    res.replans = 1;
    try {
      return finish(fetch_once(lib, *store, parsed.text, name, opts, res));
    } catch (const remote::RemoteNotFound& again) {
      throw Error(std::string(again.what()) + "; the root was read again and still names it");
    }
  }
}

} // namespace hpak
