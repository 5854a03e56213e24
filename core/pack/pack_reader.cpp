#include "core/pack/pack_reader.hpp"

#include <functional>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>

#define ZSTD_STATIC_LINKING_ONLY // the bufferless decoder (FrameSteps)
#include <zstd.h>
#include <zstd_errors.h>

#include "base/os/sys.hpp"
#include "base/parallel.hpp"
#include "base/thread_cache.hpp"

namespace hpak {

using namespace formats;

static bool footer_ok(ByteSpan b) {
  if (b.size() < kPackMinSize) return false;
  try {
    decode_footer(b.subspan(b.size() - kTrailerSize - kFooterSize, kFooterSize), "", 0);
    return true;
  } catch (const Corrupt&) {
    return false;
  }
}

// The pack's version: its header's when readable, else its footer's.
static uint16_t pack_version_of(ByteSpan b) {
  if (b.size() >= 6 && std::memcmp(b.data(), kPackMagic, 4) == 0) {
    uint16_t v = get_u16(b.data() + 4);
    if (v == kPackVersion || v == kPackVersion2) return v;
  }
  if (footer_ok(b)) return uint16_t(decode_footer(b.subspan(b.size() - kTrailerSize - kFooterSize, kFooterSize), "", 0).version);
  return kPackVersion;
}

static bool all_zero(ByteSpan b) {
  for (uint8_t c : b)
    if (c != 0) return false;
  return true;
}

namespace {

// One pass over the items of a pack (v1: entries; v2: entries, padding, blocks).
struct Scanner {
  ByteSpan b;
  const std::string& where;
  ScanResult& res;
  bool v2;
  uint64_t end;

  // A problem once: the resync after an unreadable aligned entry lands on
  // that entry's header again and meets the same problem there.
  void problem(ScanProblem p) {
    if (!res.problems.empty() && res.problems.back().offset == p.offset && res.problems.back().why == p.why) return;
    res.problems.push_back(std::move(p));
  }

  // Consumes the item at `pos` if it is one; returns its end, or 0.
  uint64_t item_at(uint64_t pos) {
    ByteSpan rest = b.subspan(pos, end - pos);
    if (looks_like_entry_header(rest)) return entry_at(pos, rest);
    if (v2 && looks_like_block_header(rest)) return block_at(pos, rest);
    if (v2 && rest.size() > 0 && rest[0] == 0) return padded_entry_at(pos);
    problem({pos, "no valid entry header here"});
    return 0;
  }

  uint64_t entry_at(uint64_t pos, ByteSpan rest) {
    EntryHeader h;
    try {
      h = decode_entry_header(rest, where, pos);
    } catch (const Corrupt& e) {
      // Self-consistent but invalid (e.g. a raw entry whose sizes differ):
      // damage like any other, never a reason to give up on the whole pack.
      problem({pos, e.why()});
      return 0;
    }
    if (h.stored_len > end - pos - kEntryHeaderSize) {
      problem({pos, "entry extends past the end of the pack (truncated?)"});
      return 0;
    }
    if (v2) check_alignment(pos, h);
    res.records.push_back({h.digest, pos, h.stored_len, h.raw_len, h.stored_xxh, h.kind, h.codec});
    return pos + kEntryHeaderSize + h.stored_len;
  }

  // The writer's rule (formats/pack_format.hpp): a large raw blob is aligned,
  // nothing else is. Broken, it costs no object: reported, the entry kept.
  void check_alignment(uint64_t pos, const EntryHeader& h) {
    bool should = h.kind == Kind::Blob && h.codec == Codec::Raw && h.raw_len >= kAlignMinRaw;
    bool is = (h.eflags & kEflagAligned) != 0;
    if (should != is) problem({pos, is ? "entry marked aligned that should not be" : "large raw entry is not marked aligned"});
    else if (is && (pos + kEntryHeaderSize) % kAlign != 0) problem({pos, "aligned entry's payload is not at a multiple of 4096"});
  }

  // Zero padding, then an aligned entry exactly where the padding rule puts it.
  uint64_t padded_entry_at(uint64_t pos) {
    uint64_t pad = align_padding(pos);
    if (pad > 0 && end - pos > pad && all_zero(b.subspan(pos, pad))) {
      ByteSpan rest = b.subspan(pos + pad, end - pos - pad);
      if (looks_like_entry_header(rest) && (get_u16(rest.data() + 6) & kEflagAligned)) return entry_at(pos + pad, rest);
    }
    problem({pos, "bad padding (zero bytes not followed by an aligned entry where the padding rule puts it)"});
    return 0;
  }

  uint64_t block_at(uint64_t pos, ByteSpan rest) {
    BlockHeader h = decode_block_header(rest, where, pos); // looks_like_block_header held
    if (block_item_size(h) > end - pos) {
      problem({pos, "block extends past the end of the pack (truncated?)"});
      return 0;
    }
    uint64_t tpos = pos + kBlockHeaderSize;
    try {
      auto members = decode_block_table(h, b.subspan(tpos, block_table_size(h)), where, tpos);
      if (!h.named()) {
        res.unnamed_blocks.push_back(pos); // named by hashing, once the dictionaries are known
        return pos + block_item_size(h);
      }
      for (uint32_t i = 0; i < h.count; i++) {
        IndexRecord r{members[i].digest, pos, 0, members[i].raw_len, 0, Kind::Blob, h.codec};
        r.member = i;
        res.records.push_back(r);
      }
    } catch (const Corrupt& e) {
      problem({e.offset(), e.why()}); // the block's objects are lost; its extent is known
    }
    return pos + block_item_size(h);
  }

  // The first "HP" in [from, to) (the start of every item header), or nullptr.
  static const uint8_t* find_magic_start(const uint8_t* from, const uint8_t* to) {
    while (to - from >= 2) {
      auto* h = static_cast<const uint8_t*>(std::memchr(from, 'H', size_t(to - from - 1)));
      if (!h) return nullptr;
      if (h[1] == 'P') return h;
      from = h + 1;
    }
    return nullptr;
  }

  // The next offset after `pos` that holds a self-consistent item header.
  uint64_t resync(uint64_t pos) {
    for (uint64_t p = pos + 1; p + 8 <= end; p++) {
      const uint8_t* hit = find_magic_start(b.data() + p, b.data() + end);
      if (!hit) break;
      p = uint64_t(hit - b.data());
      ByteSpan rest = b.subspan(p, end - p);
      if (looks_like_entry_header(rest) || (v2 && looks_like_block_header(rest))) return p;
    }
    return end;
  }
};

} // namespace

namespace {

std::vector<IndexRecord> dict_records(const IndexView& v) {
  std::vector<IndexRecord> out;
  for (uint64_t i = 0; i < v.count(); i++)
    if (v.record_at(i).kind == Kind::Dict) out.push_back(v.record_at(i));
  return out;
}

// scan_pack; `passed`, when given, is called with the offset reached every
// 16 MiB or so (every byte before it is done with).
ScanResult scan_pack_passing(ByteSpan b, const std::string& where, const std::function<void(uint64_t)>& passed) {
  ScanResult res;
  uint64_t end = footer_ok(b) ? b.size() - kTrailerSize - kFooterSize : b.size();
  res.end = end;
  res.version = pack_version_of(b);
  Scanner sc{b, where, res, res.version == kPackVersion2, end};
  uint64_t pos = kPackHeaderSize, told = 0;
  while (pos < end) {
    uint64_t next = sc.item_at(pos);
    pos = next ? next : sc.resync(pos);
    if (passed && pos - told >= (16u << 20)) passed(told = pos);
  }
  return res;
}

} // namespace

ScanResult scan_pack(ByteSpan b, const std::string& where) { return scan_pack_passing(b, where, {}); }

PackReader::PackReader(const std::string& path, bool use_index_file, bool check_index_trailer, Follow follow) : map_(path, follow) {
  read_header(path);
  check_footer(path);
  if (use_index_file) open_index_file(path, follow, check_index_trailer);
  if (index_source_ == IndexSource::Scan) index_by_scan(path); // loads the dictionaries first
  else load_dicts(dict_records(view_));
}

// The header's level and version; damage if it is unreadable but the pack
// still looks like one (its footer is intact), an error if it is not a pack.
void PackReader::read_header(const std::string& path) {
  ByteSpan b = map_.bytes();
  try {
    PackHeader h = decode_pack_header(b, path);
    level_ = h.level;
    version_ = h.version;
    return;
  } catch (const Corrupt& e) {
    bool has_magic = b.size() >= 4 && std::memcmp(b.data(), kPackMagic, 4) == 0;
    bool is_version = has_magic && b.size() >= 6 && e.offset() == 4;
    if (is_version && !footer_ok(b)) throw; // a genuinely newer pack: refuse, never misread
    if (!has_magic && !footer_ok(b)) {
      if (b.size() < kPackMinSize) throw corrupt(path, 0, "too short to be an HPAK pack (" + std::to_string(b.size()) + " bytes)");
      throw corrupt(path, 0, "not an HPAK pack (bad magic)");
    }
    damage_.push_back({e.offset(), "pack header: " + e.why()});
  }
  version_ = pack_version_of(b);
}

void PackReader::check_footer(const std::string& path) {
  ByteSpan b = map_.bytes();
  if (b.size() < kPackMinSize) {
    damage_.push_back({b.size(), "pack is truncated (no footer or trailer)"});
    return;
  }
  try {
    decode_footer(b.subspan(b.size() - kTrailerSize - kFooterSize, kFooterSize), path, b.size() - kTrailerSize - kFooterSize);
  } catch (const Corrupt& e) {
    damage_.push_back({e.offset(), "footer: " + e.why()});
  }
}

// The sibling .hidx, if it is intact and belongs to this very pack; otherwise
// index_problem_ says why not (and the pack is scanned).
void PackReader::open_index_file(const std::string& path, Follow follow, bool check_index_trailer) {
  ByteSpan b = map_.bytes();
  const std::string ip = index_path_for(path);
  if (!path_exists(ip)) {
    index_problem_ = "no index file '" + ip + "'";
    return;
  }
  try {
    MappedFile im(ip, follow);
    IndexView v(im.bytes(), ip, check_index_trailer);
    if (v.version() != index_version()) {
      index_problem_ = "index '" + ip + "' has version " + std::to_string(v.version()) + ", pack version " + std::to_string(version_) + " needs " + std::to_string(index_version());
    } else if (v.pack_size() != b.size()) {
      index_problem_ = "index '" + ip + "' is for a pack of " + std::to_string(v.pack_size()) + " bytes, this one has " + std::to_string(b.size());
    } else if (b.size() < kTrailerSize || v.pack_sum() != stored_trailer()) {
      index_problem_ = "index '" + ip + "' belongs to another pack (trailer mismatch)";
    } else {
      idx_map_ = std::move(im); // the mapping stays where it is: v's bytes remain valid
      view_ = std::move(v);
      index_source_ = IndexSource::File;
    }
  } catch (const Error& e) {
    index_problem_ = e.what();
  }
}

// An index built from a walk over the entries, recording the damage met.
void PackReader::index_by_scan(const std::string& path) {
  ByteSpan b = map_.bytes();
  // The pages the walk read are unmapped behind it (64 KiB short of where it
  // is: the kernel maps up to that much around a faulting page), and all of
  // them at the end: a scan holds a bounded window of the pack, not all of it.
  uint64_t released = 0;
  ScanResult s = scan_pack_passing(b, path, [&](uint64_t at) {
    uint64_t to = at / (64u << 10) * (64u << 10);
    if (to > released + (64u << 10)) map_.release(released, to - (64u << 10) - released), released = to - (64u << 10);
  });
  map_.release(0, b.size());
  for (auto& p : s.problems) damage_.push_back(p);
  load_dicts(s.records);
  name_scanned_blocks(s.unnamed_blocks, s.records);
  Digest trailer = b.size() >= kTrailerSize ? stored_trailer() : Digest{};
  // A truncated pack has no footer and trailer, so its last entries may end
  // within the last 64 bytes: size the view as if they followed, or the
  // view would refuse those entries and with them the whole pack.
  uint64_t view_size = std::max<uint64_t>(b.size(), s.end + kFooterSize + kTrailerSize);
  idx_owned_ = encode_index(std::move(s.records), view_size, trailer, s.index_version());
  view_ = IndexView(idx_owned_, path + " (scanned)", false);
}

// The records of the lengths-only blocks at `offsets`, each member named by
// the SHA-256 of its bytes (the block decoded once), on every core, a batch
// of blocks at a time. A block that cannot be decoded names nothing: damage,
// its objects lost here. The pages behind each batch are released, as the
// scan does.
void PackReader::name_scanned_blocks(const std::vector<uint64_t>& offsets, std::vector<IndexRecord>& records) {
  struct Named {
    std::vector<IndexRecord> records;
    std::string error; // why it names nothing
  };
  constexpr size_t kBatch = 256;
  uint64_t released = 0;
  for (size_t from = 0; from < offsets.size(); from += kBatch) {
    const size_t n = std::min(kBatch, offsets.size() - from);
    std::vector<Named> out(n);
    parallel_for(n, default_threads(), 1, [&](size_t i, unsigned) {
      try {
        out[i].records = named_members(offsets[from + i]);
      } catch (const Error& e) {
        out[i].error = e.what();
      }
    });
    for (size_t i = 0; i < n; i++) {
      const uint64_t off = offsets[from + i];
      if (!out[i].error.empty()) {
        damage_.push_back({off, "block's members cannot be named (it does not decode): " + out[i].error});
        continue;
      }
      records.insert(records.end(), out[i].records.begin(), out[i].records.end());
      scan_named_.push_back(off); // offsets come in pack order: kept sorted
    }
    const uint64_t to = offsets[from + n - 1] / (64u << 10) * (64u << 10);
    if (to > released) map_.release(released, to - released), released = to;
  }
  map_.release(0, map_.bytes().size());
}

// The records of the lengths-only block at `off`: decoded, each member hashed.
std::vector<IndexRecord> PackReader::named_members(uint64_t off) const {
  Block bl = checked_block(off);
  Bytes raw = read_block(bl, off);
  std::vector<IndexRecord> named;
  uint64_t at = 0;
  for (uint32_t i = 0; i < bl.header.count; i++) {
    IndexRecord r{sha256(ByteSpan(raw).subspan(at, bl.members[i].raw_len)), off, 0, bl.members[i].raw_len, 0, Kind::Blob, bl.header.codec};
    r.member = i;
    named.push_back(r);
    bl.members[i].digest = r.digest;
    at += bl.members[i].raw_len;
  }
  if (!distinct_names(bl.members)) throw corrupt(path(), off, "block holds one object twice");
  return named;
}

void PackReader::load_dicts(const std::vector<IndexRecord>& records) {
  for (IndexRecord r : records) {
    if (r.kind != Kind::Dict) continue;
    r = complete_or_same(r);
    try {
      Bytes d = read(r);
      // Decompression only: a compression dictionary at the level the pack
      // header claims (any i32, clamped by zstd to 22) costs ~650 MB and a
      // second to build, for a 106-byte hostile pack, and a reader never needs it.
      auto zd = std::make_unique<ZstdDict>(d, level_, /*for_compression=*/false);
      uint32_t id = zd->id();
      dicts_.emplace(id, std::move(zd));
    } catch (const Error& e) {
      damage_.push_back({r.offset, std::string("dictionary unreadable: ") + e.what()});
    }
  }
}

PackReader::~PackReader() = default;

Digest PackReader::stored_trailer() const {
  Digest d{};
  ByteSpan b = map_.bytes();
  if (b.size() >= kTrailerSize) std::memcpy(d.data(), b.data() + b.size() - kTrailerSize, kTrailerSize);
  return d;
}

std::optional<IndexRecord> PackReader::find(const Digest& d) const {
  auto i = view_.find(d);
  if (!i) return std::nullopt;
  IndexRecord r = complete_or_same(view_.record_at(*i));
  if (r.digest != d) return std::nullopt; // the index changed under its mapping since the search
  return r;
}

// complete(), or the record as it is when its entry header is damaged (the
// read that follows reports the damage; a lookup never throws).
IndexRecord PackReader::complete_or_same(const IndexRecord& r) const {
  try {
    return complete(r);
  } catch (const Corrupt&) {
    return r;
  }
}

std::string PackReader::shrink_note() const {
  if (!map_.shrunk() && !idx_map_.shrunk()) return "";
  return " (the pack or its index shrank or could not be read while mapped: truncated by another process, or an I/O error)";
}

Corrupt PackReader::corrupt(const std::string& where, uint64_t offset, const std::string& why) const {
  return Corrupt(where, offset, why + shrink_note());
}

void PackReader::check_not_shrunk(const IndexRecord& r) const {
  if (map_.shrunk()) throw corrupt(path(), r.offset, "the bytes of " + to_hex(r.digest) + " were not all readable");
}

IndexRecord PackReader::complete(const IndexRecord& r) const {
  if (version_ != kPackVersion2 || r.member != kNoMember || r.stored_len != 0 || r.stored_xxh != 0) return r;
  ByteSpan b = map_.bytes();
  if (r.offset > b.size() || b.size() - r.offset < kEntryHeaderSize) throw corrupt(path(), r.offset, "entry lies outside the pack");
  EntryHeader h = noting_shrink([&] { return decode_entry_header(b.subspan(r.offset, kEntryHeaderSize), path(), r.offset); });
  IndexRecord c = r;
  c.stored_len = h.stored_len;
  c.stored_xxh = h.stored_xxh;
  return c;
}

PackReader::Block parse_block(ByteSpan item, const std::string& where, uint64_t offset) {
  if (item.size() < kBlockHeaderSize) throw Corrupt(where, offset, "block lies outside the pack");
  PackReader::Block bl;
  bl.header = decode_block_header(item.first(kBlockHeaderSize), where, offset);
  if (block_item_size(bl.header) > item.size()) throw Corrupt(where, offset, "block extends past the end of the pack");
  uint64_t tlen = block_table_size(bl.header);
  bl.table = item.subspan(kBlockHeaderSize, tlen);
  bl.members = decode_block_table(bl.header, bl.table, where, offset + kBlockHeaderSize);
  bl.payload = item.subspan(kBlockHeaderSize + tlen, bl.header.stored_len);
  if (xxh64(bl.payload) != bl.header.stored_xxh)
    throw Corrupt(where, offset + kBlockHeaderSize + tlen, "stored bytes of the block fail their checksum");
  return bl;
}

PackReader::Block PackReader::checked_block(uint64_t offset) const {
  ByteSpan b = map_.bytes();
  if (version_ != kPackVersion2) throw corrupt(path(), offset, "block in a pack of version " + std::to_string(version_));
  if (offset > b.size()) throw corrupt(path(), offset, "block lies outside the pack");
  return noting_shrink([&] { return parse_block(b.subspan(offset), path(), offset); });
}

// Decompresses a block's frame only as far as `out` reaches (the member's end).
static void decompress_prefix(ByteSpan frame, std::span<uint8_t> out, const ZSTD_DDict* dict, const std::string& what) {
  auto& dctx = per_thread([] { return std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)>(ZSTD_createDCtx(), ZSTD_freeDCtx); });
  ZSTD_DCtx_reset(dctx.get(), ZSTD_reset_session_and_parameters);
  if (dict) ZSTD_DCtx_refDDict(dctx.get(), dict);
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  ZSTD_outBuffer ob{out.data(), out.size(), 0};
  while (ob.pos < ob.size) {
    size_t before_in = in.pos, before_out = ob.pos;
    size_t rc = ZSTD_decompressStream(dctx.get(), &ob, &in);
    if (ZSTD_isError(rc)) throw Corrupt(what, 0, std::string("undecodable block: ") + ZSTD_getErrorName(rc));
    if (rc == 0 && ob.pos < ob.size) throw Corrupt(what, 0, "block decodes to fewer bytes than its members");
    if (in.pos == before_in && ob.pos == before_out) throw Corrupt(what, 0, "block ends before its members do");
  }
}

// This thread's decoder of block frames, zstd block by zstd block (zstd's
// bufferless API) into the cached block's buffer, and where it stands: the
// frame it is in (the reader's id and the block's offset), how far into the
// frame and the buffer. Its own context, so no other decode disturbs it.
struct FrameSteps {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx{ZSTD_createDCtx(), ZSTD_freeDCtx};
  uint64_t reader_id = 0, offset = 0; // 0: in no frame
  size_t src = 0, dst = 0;

  bool in(uint64_t id, uint64_t off, size_t decoded) const { return reader_id == id && offset == off && dst == decoded && decoded > 0; }

  void begin(uint64_t id, uint64_t off, const ZSTD_DDict* dict, const std::string& what) {
    reader_id = 0;
    size_t rc = dict ? ZSTD_decompressBegin_usingDDict(dctx.get(), dict) : ZSTD_decompressBegin(dctx.get());
    if (ZSTD_isError(rc)) throw Error(what + ": zstd: " + ZSTD_getErrorName(rc));
    reader_id = id, offset = off, src = dst = 0;
  }

  // Decodes `frame` into `out` until at least `want` bytes are there (to the
  // end of the zstd block that reaches `want`). False if a zstd block does
  // not fit in `out`: the frame holds more than the block says (damage a
  // stream decoder can still read the members from; verify reports it).
  bool until(ByteSpan frame, std::span<uint8_t> out, size_t want, const std::string& what) {
    const uint64_t id = reader_id;
    reader_id = 0; // in no known frame should this stop early
    while (dst < want) {
      const size_t need = ZSTD_nextSrcSizeToDecompress(dctx.get());
      if (need == 0) throw Corrupt(what, 0, "block decodes to fewer bytes than its members");
      if (need > frame.size() - src) throw Corrupt(what, 0, "block ends before its members do");
      const size_t got = ZSTD_decompressContinue(dctx.get(), out.data() + dst, out.size() - dst, frame.data() + src, need);
      if (ZSTD_getErrorCode(got) == ZSTD_error_dstSize_tooSmall) return false;
      if (ZSTD_isError(got)) throw Corrupt(what, 0, std::string("undecodable block: ") + ZSTD_getErrorName(got));
      src += need, dst += got;
    }
    reader_id = id;
    return true;
  }
};

// Each thread keeps the blocks it read members from last, checked and decoded
// as far as asked (an LRU of up to kCachedBlocks blocks and kCachedBytes
// decoded bytes). A block is checked once per thread while cached. Its frame
// is decoded zstd block by zstd block straight into the cached buffer
// (FrameSteps), only as far as the member read needs: zstd decodes a zstd
// block whole, and hpak's writer ends one every 16 KiB of members
// (block_cuts), so a member read alone costs the decode up to the first cut
// past its end, not the whole 64 KiB block. A later member past what is
// decoded goes on from there if this thread decoded no other frame since, as
// a restore reads a block's members in table order on one thread
// (core/materialize's work units): each block decoded once. Else the whole
// block, once; and whole at once while the thread's reads mostly come back
// to blocks they read before. Random reads of a pack of small objects hit
// blocks decoded before (without the LRU every read decoded and re-checked
// its block: 23-87x slower than format 1). Keyed by the reader's id (never reused) and the
// block's offset; filled only from a checked block.
struct PackReader::DecodedBlock {
  uint64_t reader_id = 0, offset = 0, last_use = 0;
  Codec codec = Codec::Raw;
  bool named = true; // the table names its members (else only the index does)
  std::vector<BlockMember> members;
  std::vector<uint64_t> starts; // of each member in the raw bytes
  ByteSpan payload;             // in the reader's mapping (alive while reader_id is)
  const ZSTD_DDict* dict = nullptr;
  // The decoded bytes: allocated without zero-filling (zstd writes them) and
  // kept when the slot is reused for another block, so a load neither
  // allocates nor touches fresh pages once the cache is warm.
  struct RawBuffer {
    std::unique_ptr<uint8_t[]> bytes;
    size_t len = 0, cap = 0;
    uint8_t* data() { return bytes.get(); }
    size_t size() const { return len; }
    size_t capacity() const { return cap; }
    void resize_uninitialized(size_t n) {
      if (n > cap) bytes.reset(new uint8_t[n]), cap = n; // default-initialized: no fill
      len = n;
    }
    void release() { bytes.reset(), len = cap = 0; }
  } raw;
  uint64_t decoded = 0; // raw bytes decoded so far (a prefix, or all)
};

namespace {
std::atomic<uint64_t> g_next_reader_id{1};
constexpr size_t kCachedBlocks = 64;
constexpr uint64_t kCachedBytes = 8 << 20;

struct BlockCache {
  std::vector<std::unique_ptr<PackReader::DecodedBlock>> blocks;
  uint64_t tick = 0;
  // Hits on a block other than the one used last: reads that come back to
  // blocks. Until the first, the cache stays at two slots (a restore reads
  // each block's members together and never comes back: more slots would
  // only be fresh memory to fault in).
  uint64_t revisits = 0;
  // Of the last few hundred block touches, how many loaded a block and how
  // many came back to one: halved together every 256.
  uint32_t recent_loads = 0, recent_revisits = 0;
  void touched(bool load) {
    (load ? recent_loads : recent_revisits)++;
    if (recent_loads + recent_revisits >= 256) recent_loads /= 2, recent_revisits /= 2;
  }
  // Lately reads come back to blocks more often than they load new ones
  // (random reads over a pack the cache holds): a block is read whole at once.
  bool mostly_revisits() const { return recent_revisits > recent_loads; }
  uint64_t bytes() const {
    uint64_t n = 0;
    for (const auto& b : blocks) n += b->raw.capacity();
    return n;
  }
};
BlockCache& t_cache() { return per_thread([] { return BlockCache{}; }); }

PackReader::DecodedBlock* cached_block(uint64_t reader_id, uint64_t offset) {
  for (auto& b : t_cache().blocks)
    if (b->reader_id == reader_id && b->offset == offset) {
      if (b->last_use != t_cache().tick) t_cache().revisits++, t_cache().touched(false);
      b->last_use = ++t_cache().tick;
      return b.get();
    }
  return nullptr;
}

// A slot to fill: a new one while the cache has room, else the least recently
// used (dropping more while the decoded bytes exceed the budget).
PackReader::DecodedBlock& free_slot() {
  auto& v = t_cache().blocks;
  auto lru = [&] { return std::min_element(v.begin(), v.end(), [](auto& a, auto& b) { return a->last_use < b->last_use; }); };
  while (v.size() > 1 && t_cache().bytes() > kCachedBytes) v.erase(lru());
  const bool grow = v.size() < 2 || t_cache().revisits > 0;
  if (grow && v.size() < kCachedBlocks && t_cache().bytes() < kCachedBytes) return *v.emplace_back(std::make_unique<PackReader::DecodedBlock>());
  return **lru(); // its buffer is reused
}
} // namespace

uint64_t PackReader::new_id() { return g_next_reader_id.fetch_add(1); }

PackReader::DecodedBlock& PackReader::load_block(uint64_t offset) const {
  DecodedBlock& c = free_slot();
  c.reader_id = 0; // invalid until filled
  Block bl = checked_block(offset);
  c.dict = nullptr;
  if (bl.header.codec == Codec::ZstdDict) {
    auto it = dicts_.find(bl.header.dict_id);
    if (it == dicts_.end()) throw corrupt(path(), offset, "dictionary " + std::to_string(bl.header.dict_id) + " needed by a block is missing");
    c.dict = it->second->ddict();
  }
  c.codec = bl.header.codec;
  c.named = bl.header.named();
  c.members = std::move(bl.members);
  c.starts.resize(c.members.size());
  uint64_t at = 0;
  for (size_t i = 0; i < c.members.size(); i++) c.starts[i] = at, at += c.members[i].raw_len;
  c.payload = bl.payload;
  if (c.codec == Codec::Raw) c.raw.release();
  else c.raw.resize_uninitialized(bl.header.raw_len);
  c.decoded = 0;
  c.offset = offset;
  c.last_use = ++t_cache().tick;
  t_cache().touched(true);
  c.reader_id = id_;
  return c;
}

PackReader::MemberAt PackReader::cached_member(const IndexRecord& r) const {
  DecodedBlock* c = cached_block(id_, r.offset);
  if (!c) c = &load_block(r.offset);
  if (r.member >= c->members.size() || (c->named && c->members[r.member].digest != r.digest) ||
      c->members[r.member].raw_len != r.raw_len || c->codec != r.codec || r.kind != Kind::Blob)
    throw corrupt(path(), r.offset, "block member does not match the index");
  return {c, c->starts[r.member]};
}

// Decodes block `c` at least to `end`: on from where this thread's decoder
// stands in its frame, else from the start: the whole block if part of it was
// decoded before (once), or while this thread's reads come back to blocks
// more often than they load new ones (random reads over a pack the cache
// holds would decode each block's prefix, then all of it). A frame whose zstd
// block overflows the block's raw size is decoded by the stream decoder,
// which stops once the buffer is full.
void PackReader::decode_further(DecodedBlock& c, uint64_t end) const {
  FrameSteps& fs = per_thread([] { return FrameSteps{}; });
  const std::string what = path() + ": block at offset " + std::to_string(c.offset);
  try {
    if (!fs.in(id_, c.offset, c.decoded)) {
      if (c.decoded > 0 || t_cache().mostly_revisits()) end = c.raw.size();
      fs.begin(id_, c.offset, c.dict, what);
    }
    if (!fs.until(c.payload, std::span<uint8_t>(c.raw.data(), c.raw.size()), end, what)) {
      decompress_prefix(c.payload, std::span<uint8_t>(c.raw.data(), c.raw.size()), c.dict, what);
      c.decoded = c.raw.size();
      return;
    }
  } catch (const Corrupt& e) {
    c.reader_id = 0;
    throw corrupt(e.where(), e.offset(), e.why());
  } catch (...) {
    c.reader_id = 0;
    throw;
  }
  c.decoded = fs.dst;
}

void PackReader::read_member_into(const IndexRecord& r, std::span<uint8_t> out) const {
  const auto [block, start] = cached_member(r);
  const uint64_t end = start + r.raw_len;
  DecodedBlock& c = *block;
  if (out.size() != r.raw_len) throw Error("internal error: buffer size mismatch for " + what(r));
  if (c.codec == Codec::Raw) {
    if (!out.empty()) std::memcpy(out.data(), c.payload.data() + start, out.size());
    check_not_shrunk(r);
    return;
  }
  if (end > c.decoded) decode_further(c, end);
  if (!out.empty()) std::memcpy(out.data(), c.raw.data() + start, out.size());
  check_not_shrunk(r);
}

Bytes decode_block(const PackReader::Block& bl, const ZSTD_DDict* dict, const std::string& where, uint64_t offset) {
  if (bl.header.codec == Codec::Raw) return Bytes(bl.payload.begin(), bl.payload.end());
  Bytes out(bl.header.raw_len);
  std::string what = where + ": block at offset " + std::to_string(offset);
  decompress_prefix(bl.payload, std::span<uint8_t>(out.data(), out.size()), dict, what);
  // The frame must end exactly there: no bytes beyond the members.
  if (ZSTD_getFrameContentSize(bl.payload.data(), bl.payload.size()) != bl.header.raw_len)
    throw Corrupt(where, offset, "block frame's content size differs from the block's raw size");
  return out;
}

Bytes PackReader::read_block(const Block& bl, uint64_t offset) const {
  const ZSTD_DDict* dd = nullptr;
  if (bl.header.codec == Codec::ZstdDict) {
    auto it = dicts_.find(bl.header.dict_id);
    if (it == dicts_.end()) throw corrupt(path(), offset, "dictionary " + std::to_string(bl.header.dict_id) + " needed by a block is missing");
    dd = it->second->ddict();
  }
  return noting_shrink([&] { return decode_block(bl, dd, path(), offset); });
}

std::optional<std::pair<uint64_t, uint64_t>> PackReader::raw_extent(const IndexRecord& r) const {
  if (r.codec != Codec::Raw) return std::nullopt;
  if (r.member != kNoMember) {
    const auto [block, start] = cached_member(r);
    return std::make_pair(uint64_t(block->payload.data() - map_.bytes().data()) + start, r.raw_len);
  }
  IndexRecord c = complete(r);
  ByteSpan b = map_.bytes();
  if (c.offset > b.size() || b.size() - c.offset < kEntryHeaderSize || c.stored_len > b.size() - c.offset - kEntryHeaderSize)
    throw corrupt(path(), c.offset, "entry lies outside the pack");
  EntryHeader h = noting_shrink([&] { return decode_entry_header(b.subspan(c.offset, kEntryHeaderSize), path(), c.offset); });
  if (h.digest != c.digest || h.codec != Codec::Raw || h.raw_len != c.raw_len) throw corrupt(path(), c.offset, "entry header does not match the index");
  return std::make_pair(c.offset + kEntryHeaderSize, c.raw_len);
}

std::string PackReader::what(const IndexRecord& r) const {
  return "object " + to_hex(r.digest) + " in '" + path() + "' at offset " + std::to_string(r.offset);
}

ByteSpan PackReader::checked_stored(const IndexRecord& rr, bool check_sum) const {
  if (rr.member != kNoMember) {
    const auto [block, start] = cached_member(rr);
    if (block->codec != Codec::Raw) throw Error("internal error: stored bytes of a member of a compressed block: " + what(rr));
    return block->payload.subspan(start, rr.raw_len);
  }
  IndexRecord r = complete(rr);
  ByteSpan b = map_.bytes();
  if (r.offset > b.size() || b.size() - r.offset < kEntryHeaderSize || r.stored_len > b.size() - r.offset - kEntryHeaderSize)
    throw corrupt(path(), r.offset, "entry lies outside the pack");
  EntryHeader h = noting_shrink([&] { return decode_entry_header(b.subspan(r.offset, kEntryHeaderSize), path(), r.offset); });
  if (h.digest != r.digest || h.kind != r.kind || h.codec != r.codec || h.stored_len != r.stored_len ||
      h.raw_len != r.raw_len || h.stored_xxh != r.stored_xxh)
    throw corrupt(path(), r.offset, "entry header does not match the index");
  ByteSpan stored = b.subspan(r.offset + kEntryHeaderSize, r.stored_len);
  if (!check_sum) return stored;
  if (xxh64(stored) != r.stored_xxh) throw corrupt(path(), r.offset + kEntryHeaderSize, "stored bytes of " + to_hex(r.digest) + " fail their checksum");
  return stored;
}

Digest PackReader::base_named(const IndexRecord& r) const {
  ByteSpan stored = checked_stored(r, /*check_sum=*/false);
  if (r.codec != Codec::ZstdBase || stored.size() <= kBaseDigestSize) throw corrupt(path(), r.offset, "not a catalog stored against a base");
  return base_of(stored);
}

const ZstdDict* PackReader::dict_for(ByteSpan frame, const IndexRecord& r) const {
  if (r.codec != Codec::ZstdDict) return nullptr;
  uint32_t id = zstd_frame_dict_id(frame);
  auto it = dicts_.find(id);
  if (it == dicts_.end()) throw corrupt(path(), r.offset, "dictionary " + std::to_string(id) + " needed by " + to_hex(r.digest) + " is missing");
  return it->second.get();
}

void PackReader::decode_stored(ByteSpan stored, const IndexRecord& r, std::span<uint8_t> out) const {
  if (r.codec == Codec::Raw) {
    if (!stored.empty()) std::memcpy(out.data(), stored.data(), stored.size()); // empty: data() may be null
    return;
  }
  if (r.codec != Codec::ZstdBase) return zstd_decompress(stored, out, dict_for(stored, r), what(r));
  if (stored.size() <= kBaseDigestSize || r.raw_len >= kBaseCodedMax)
    throw corrupt(path(), r.offset, "catalog " + to_hex(r.digest) + " stored against a base has impossible sizes");
  const Digest base = base_of(stored);
  if (base == r.digest) throw corrupt(path(), r.offset, "catalog " + to_hex(r.digest) + " is stored against itself");
  Bytes b = base_for(base, r);
  if (b.size() + r.raw_len > kBaseCodedMax)
    throw corrupt(path(), r.offset, "catalog " + to_hex(r.digest) + " and its base are larger than 128 MiB together");
  zstd_decompress_against(stored.subspan(kBaseDigestSize), b, out, what(r) + " (against catalog " + to_hex(base).substr(0, 12) + ")");
}

Digest PackReader::base_of(ByteSpan stored) {
  Digest d{};
  if (stored.size() >= kBaseDigestSize) std::memcpy(d.data(), stored.data(), kBaseDigestSize);
  return d;
}

Bytes PackReader::base_for(const Digest& base, const IndexRecord& r) const {
  if (base_source_) return base_source_(base);
  if (auto b = read_base_catalog(base)) return std::move(*b);
  throw corrupt(path(), r.offset, "catalog " + to_hex(r.digest) + " is stored against catalog " + to_hex(base) +
                ", which this pack does not hold: read it through the library that holds both");
}

std::optional<Bytes> PackReader::read_base_catalog(const Digest& d) const {
  std::string first_error;
  bool chained = false;
  if (auto at = view_.find(d))
    for (uint64_t i = *at; i < view_.count() && view_.digest_at(i) == d; i++) {
      IndexRecord rec = view_.record_at(i);
      if (rec.digest != d || rec.kind != Kind::Catalog || rec.member != kNoMember) continue;
      if (rec.codec == Codec::ZstdBase) {
        chained = true;
        continue;
      }
      try {
        if (rec.raw_len >= kBaseCodedMax) throw corrupt(path(), rec.offset, "catalog " + to_hex(d) + " is too large to be a base");
        return read(rec, /*verify_digest=*/true);
      } catch (const Error& e) {
        if (first_error.empty()) first_error = e.what();
      }
    }
  if (!first_error.empty()) throw Error(first_error);
  if (chained) throw Error("base catalog " + to_hex(d) + " in '" + path() + "' is itself stored against another catalog (one level only)");
  return std::nullopt;
}

void PackReader::read_into(const IndexRecord& r, std::span<uint8_t> out, bool verify) const {
  verify = verify || check_every_read_; // out is private: the bytes hashed are the bytes handed out
  if (r.member != kNoMember) {
    read_member_into(r, out);
    if (verify && sha256(ByteSpan(out.data(), out.size())) != r.digest)
      throw corrupt(path(), r.offset, "content of " + to_hex(r.digest) + " does not match its name");
    return;
  }
  ByteSpan stored = checked_stored(r);
  if (out.size() != r.raw_len) throw Error("internal error: buffer size mismatch for " + what(r));
  decode_stored(stored, r, out);
  check_not_shrunk(r);
  if (verify && sha256(ByteSpan(out.data(), out.size())) != r.digest)
    throw corrupt(path(), r.offset, "content of " + to_hex(r.digest) + " does not match its name");
}

Bytes PackReader::read(const IndexRecord& rr, bool verify) const {
  if (rr.member != kNoMember) {
    if (rr.raw_len > kBlockMaxRaw) throw corrupt(path(), rr.offset, "block member larger than a block can be");
    Bytes out(rr.raw_len);
    read_into(rr, out, verify);
    return out;
  }
  IndexRecord r = complete(rr);
  ByteSpan stored = checked_stored(r);
  // Refuse sizes the stored bytes cannot possibly produce (decompression bombs
  // lie about raw_len): zstd's maximum ratio is far below 1:2^17 per block.
  if (r.codec != Codec::Raw && r.raw_len / 131072 > r.stored_len + 1)
    throw corrupt(path(), r.offset, "declared size " + std::to_string(r.raw_len) + " is impossible for " + std::to_string(r.stored_len) + " stored bytes");
  Bytes out;
  if (r.kind == Kind::Catalog) os::resize_faulted(out, size_t(r.raw_len)); // a restore's first large buffer: its pages in one call
  else out.resize(size_t(r.raw_len)); // (an object's: often memory the heap reuses)
  read_into(r, out, verify);
  return out;
}

void PackReader::read_stream(const IndexRecord& rr, const std::function<void(ByteSpan)>& sink, bool verify) const {
  if (rr.member != kNoMember) {
    Bytes all = read(rr, verify);
    sink(all);
    return;
  }
  IndexRecord r = complete(rr);
  ByteSpan stored = checked_stored(r);
  verify = verify || check_every_read_;
  Sha256 sha;
  auto hashing_sink = [&](ByteSpan chunk) {
    if (verify) sha.update(chunk);
    sink(chunk);
  };
  if (r.codec == Codec::Raw) {
    Bytes copy; // checking every read: each chunk leaves the mapping once, then is hashed and handed out
    for (size_t pos = 0; pos < stored.size(); pos += (8u << 20)) {
      ByteSpan piece = stored.subspan(pos, std::min<size_t>(8u << 20, stored.size() - pos));
      if (check_every_read_) copy.assign(piece.begin(), piece.end()), piece = copy;
      hashing_sink(piece);
    }
  } else if (r.codec == Codec::ZstdBase) { // a catalog, below 128 MiB
    Bytes whole(r.raw_len);
    decode_stored(stored, r, whole);
    hashing_sink(whole);
  } else {
    zstd_decompress_stream(stored, r.raw_len, dict_for(stored, r), what(r), hashing_sink);
  }
  check_not_shrunk(r);
  if (verify && sha.finish() != r.digest) throw corrupt(path(), r.offset, "content of " + to_hex(r.digest) + " does not match its name");
}

// The SHA-256 of the content `stored` (an entry's stored bytes) decodes to.
Digest PackReader::content_digest(ByteSpan stored, const IndexRecord& r) const {
  if (r.codec == Codec::Raw) {
    if (stored.size() != r.raw_len) throw corrupt(path(), r.offset, "raw object " + to_hex(r.digest) + " has " + std::to_string(stored.size()) + " stored bytes for " + std::to_string(r.raw_len));
    return sha256(stored);
  }
  if (r.raw_len / 131072 > stored.size() + 1)
    throw corrupt(path(), r.offset, "declared size " + std::to_string(r.raw_len) + " is impossible for " + std::to_string(stored.size()) + " stored bytes");
  if (r.codec == Codec::ZstdBase) {
    Bytes whole(r.raw_len);
    decode_stored(stored, r, whole);
    return sha256(whole);
  }
  Sha256 sha;
  zstd_decompress_stream(stored, r.raw_len, dict_for(stored, r), what(r), [&](ByteSpan b) { sha.update(b); });
  return sha.finish();
}

Bytes PackReader::stored_copy_checked(const IndexRecord& rr) const {
  if (rr.member != kNoMember) throw Error("internal error: stored bytes of a block member: " + what(rr));
  IndexRecord r = complete(rr);
  ByteSpan mapped = checked_stored(r); // the header, and bounds
  if (mapped.size() > kMaxCopyChecked)
    throw Error(what(r) + " has " + std::to_string(mapped.size()) + " stored bytes, more than the " + std::to_string(kMaxCopyChecked >> 20) +
                " MiB checked in memory before a copy out of a pack another user can write; left where it is");
  Bytes copy(mapped.begin(), mapped.end());
  if (xxh64(copy) != r.stored_xxh) throw corrupt(path(), r.offset + kEntryHeaderSize, "stored bytes of " + to_hex(r.digest) + " fail their checksum");
  if (content_digest(copy, r) != r.digest) throw corrupt(path(), r.offset, "content of " + to_hex(r.digest) + " does not match its name");
  return copy;
}

PackReader::Block PackReader::block_copy_checked(uint64_t offset, Bytes& buf) const {
  Block mapped = checked_block(offset); // bounds
  const uint64_t len = block_item_size(mapped.header);
  const uint8_t* at = map_.bytes().data() + offset;
  buf.assign(at, at + len);
  Block bl = noting_shrink([&] { return parse_block(buf, path(), offset); });
  Bytes raw = read_block(bl, offset);
  uint64_t pos = 0;
  for (BlockMember& m : bl.members) {
    Digest got = sha256(ByteSpan(raw).subspan(pos, m.raw_len));
    if (!bl.header.named()) m.digest = got; // named by its bytes, the only name it has here
    else if (got != m.digest)
      throw corrupt(path(), offset, "content of " + to_hex(m.digest) + " (in the block at offset " + std::to_string(offset) + ") does not match its name");
    pos += m.raw_len;
  }
  if (!distinct_names(bl.members)) throw corrupt(path(), offset, "block holds one object twice");
  return bl;
}

Catalog PackReader::load_catalog_copy(const IndexRecord& r, Bytes& stored_out) const {
  if (r.raw_len > (1ull << 32)) throw corrupt(path(), r.offset, "catalog larger than 4 GiB");
  IndexRecord c = complete(r);
  stored_out = stored_copy_checked(c);
  Bytes raw(c.raw_len);
  decode_stored(stored_out, c, raw);
  return noting_shrink([&] { return decode_catalog(raw, path() + ": catalog " + to_hex(c.digest).substr(0, 12)); });
}

std::vector<IndexRecord> PackReader::catalog_records() const {
  std::vector<IndexRecord> out;
  for (uint64_t i = 0; i < view_.count(); i++) {
    IndexRecord r = view_.record_at(i);
    if (r.kind == Kind::Catalog) out.push_back(complete_or_same(r));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
  return out;
}

Catalog PackReader::load_catalog_record(const IndexRecord& r, bool verify_digest) const {
  if (r.raw_len > (1ull << 32)) throw corrupt(path(), r.offset, "catalog larger than 4 GiB");
  Bytes raw = read(r, verify_digest);
  return noting_shrink([&] { return decode_catalog(raw, path() + ": catalog " + to_hex(r.digest).substr(0, 12)); });
}

std::vector<std::string> PackReader::catalog_names() const {
  std::vector<std::string> names;
  DigestSet done;
  for (auto& r : catalog_records()) {
    if (done.count(r.digest)) continue;
    try {
      names.push_back(load_catalog_record(r).name);
      done.insert(r.digest);
    } catch (const Error&) {
    }
  }
  return names;
}

Catalog PackReader::load_catalog(const std::string& name) const {
  std::string first_error;
  std::vector<Catalog> found;
  DigestSet done;
  for (auto& r : catalog_records()) {
    if (done.count(r.digest)) continue;
    try {
      Catalog c = load_catalog_record(r);
      done.insert(r.digest);
      if (name.empty() || c.name == name) found.push_back(std::move(c));
    } catch (const Error& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  if (found.size() == 1) return std::move(found[0]);
  if (found.empty()) {
    if (!first_error.empty()) throw Error("no readable catalog" + (name.empty() ? "" : " named '" + name + "'") + " in '" + path() + "': " + first_error);
    throw Error("no catalog" + (name.empty() ? std::string() : " named '" + name + "'") + " in '" + path() + "'");
  }
  std::string names;
  for (auto& c : found) names += (names.empty() ? "" : ", ") + c.name;
  throw Error("'" + path() + "' holds several catalogs (" + names + "); choose one with --catalog");
}

} // namespace hpak
