#include "core/pack_reader.hpp"

#include <algorithm>
#include <cstring>

namespace hpak {

using namespace formats;

std::string index_path_for(const std::string& p) {
  if (p.size() > 5 && p.compare(p.size() - 5, 5, ".hpak") == 0) return p.substr(0, p.size() - 5) + ".hidx";
  return p + ".hidx";
}

static bool footer_ok(ByteSpan b) {
  if (b.size() < kPackMinSize) return false;
  try {
    decode_footer(b.subspan(b.size() - kTrailerSize - kFooterSize, kFooterSize), "", 0);
    return true;
  } catch (const Corrupt&) {
    return false;
  }
}

ScanResult scan_pack(ByteSpan b, const std::string& where) {
  ScanResult res;
  uint64_t end = footer_ok(b) ? b.size() - kTrailerSize - kFooterSize : b.size();
  res.end = end;
  uint64_t pos = kPackHeaderSize;
  while (pos < end) {
    ByteSpan rest = b.subspan(pos, end - pos);
    if (looks_like_entry_header(rest)) {
      EntryHeader h;
      bool decoded = true;
      try {
        h = decode_entry_header(rest, where, pos);
      } catch (const Corrupt& e) {
        // Self-consistent but invalid (e.g. a raw entry whose sizes differ):
        // damage like any other, never a reason to give up on the whole pack.
        res.problems.push_back({pos, e.why()});
        decoded = false;
      }
      if (decoded && h.stored_len <= end - pos - kEntryHeaderSize) {
        res.records.push_back({h.digest, pos, h.stored_len, h.raw_len, h.stored_xxh, h.kind, h.codec});
        pos += kEntryHeaderSize + h.stored_len;
        continue;
      }
      if (decoded) res.problems.push_back({pos, "entry extends past the end of the pack (truncated?)"});
    } else {
      res.problems.push_back({pos, "no valid entry header here"});
    }
    // Resync: the next offset that holds a self-consistent entry header.
    uint64_t next = end;
    for (uint64_t p = pos + 1; p + kEntryHeaderSize <= end; p++) {
      const uint8_t* hit = static_cast<const uint8_t*>(memmem(b.data() + p, end - p, kEntryMagic, 4));
      if (!hit) break;
      p = uint64_t(hit - b.data());
      if (looks_like_entry_header(b.subspan(p, end - p))) {
        next = p;
        break;
      }
    }
    pos = next;
  }
  return res;
}

PackReader::PackReader(const std::string& path, bool use_index_file, bool check_index_trailer, Follow follow) : map_(path, follow) {
  ByteSpan b = map_.bytes();
  bool header_good = false;
  try {
    PackHeader h = decode_pack_header(b, path);
    level_ = h.level;
    header_good = true;
  } catch (const Corrupt& e) {
    bool has_magic = b.size() >= 4 && std::memcmp(b.data(), kPackMagic, 4) == 0;
    bool is_version = has_magic && b.size() >= 6 && e.offset() == 4;
    if (is_version && !footer_ok(b)) throw; // a genuinely newer pack: refuse, never misread
    if (!has_magic && !footer_ok(b)) {
      if (b.size() < kPackMinSize) throw Corrupt(path, 0, "too short to be an HPAK pack (" + std::to_string(b.size()) + " bytes)");
      throw Corrupt(path, 0, "not an HPAK pack (bad magic)");
    }
    damage_.push_back({e.offset(), "pack header: " + e.why()});
  }
  (void)header_good;
  if (b.size() < kPackMinSize) {
    damage_.push_back({b.size(), "pack is truncated (no footer or trailer)"});
  } else {
    try {
      decode_footer(b.subspan(b.size() - kTrailerSize - kFooterSize, kFooterSize), path, b.size() - kTrailerSize - kFooterSize);
    } catch (const Corrupt& e) {
      damage_.push_back({e.offset(), "footer: " + e.why()});
    }
  }
  if (use_index_file) {
    std::string ip = index_path_for(path);
    if (path_exists(ip)) {
      try {
        MappedFile im(ip, follow);
        IndexView v(im.bytes(), ip, check_index_trailer);
        if (v.pack_size() != b.size()) {
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
    } else {
      index_problem_ = "no index file '" + ip + "'";
    }
  }
  if (index_source_ == IndexSource::Scan) {
    ScanResult s = scan_pack(b, path);
    for (auto& p : s.problems) damage_.push_back(p);
    Digest trailer = b.size() >= kTrailerSize ? stored_trailer() : Digest{};
    // A truncated pack has no footer and trailer, so its last entries may end
    // within the last 64 bytes: size the view as if they followed, or the
    // view would refuse those entries and with them the whole pack.
    uint64_t view_size = std::max<uint64_t>(b.size(), s.end + kFooterSize + kTrailerSize);
    idx_owned_ = encode_index(std::move(s.records), view_size, trailer);
    view_ = IndexView(idx_owned_, path + " (scanned)", false);
  }
  for (uint64_t i = 0; i < view_.count(); i++) {
    IndexRecord r = view_.record_at(i);
    if (r.kind != Kind::Dict) continue;
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
  return view_.record_at(*i);
}

std::string PackReader::what(const IndexRecord& r) const {
  return "object " + to_hex(r.digest) + " in '" + path() + "' at offset " + std::to_string(r.offset);
}

ByteSpan PackReader::checked_stored(const IndexRecord& r) const {
  ByteSpan b = map_.bytes();
  if (r.offset > b.size() || b.size() - r.offset < kEntryHeaderSize || r.stored_len > b.size() - r.offset - kEntryHeaderSize)
    throw Corrupt(path(), r.offset, "entry lies outside the pack");
  EntryHeader h = decode_entry_header(b.subspan(r.offset, kEntryHeaderSize), path(), r.offset);
  if (h.digest != r.digest || h.kind != r.kind || h.codec != r.codec || h.stored_len != r.stored_len ||
      h.raw_len != r.raw_len || h.stored_xxh != r.stored_xxh)
    throw Corrupt(path(), r.offset, "entry header does not match the index");
  ByteSpan stored = b.subspan(r.offset + kEntryHeaderSize, r.stored_len);
  if (xxh64(stored) != r.stored_xxh) throw Corrupt(path(), r.offset + kEntryHeaderSize, "stored bytes of " + to_hex(r.digest) + " fail their checksum");
  return stored;
}

const ZstdDict* PackReader::dict_for(ByteSpan frame, const IndexRecord& r) const {
  if (r.codec != Codec::ZstdDict) return nullptr;
  uint32_t id = zstd_frame_dict_id(frame);
  auto it = dicts_.find(id);
  if (it == dicts_.end()) throw Corrupt(path(), r.offset, "dictionary " + std::to_string(id) + " needed by " + to_hex(r.digest) + " is missing");
  return it->second.get();
}

void PackReader::read_into(const IndexRecord& r, std::span<uint8_t> out, bool verify) const {
  ByteSpan stored = checked_stored(r);
  if (out.size() != r.raw_len) throw Error("internal error: buffer size mismatch for " + what(r));
  if (r.codec == Codec::Raw) {
    if (!stored.empty()) std::memcpy(out.data(), stored.data(), stored.size()); // empty: data() may be null
  } else {
    zstd_decompress(stored, out, dict_for(stored, r), what(r));
  }
  if (verify && sha256(ByteSpan(out.data(), out.size())) != r.digest)
    throw Corrupt(path(), r.offset, "content of " + to_hex(r.digest) + " does not match its name");
}

Bytes PackReader::read(const IndexRecord& r, bool verify) const {
  ByteSpan stored = checked_stored(r);
  // Refuse sizes the stored bytes cannot possibly produce (decompression bombs
  // lie about raw_len): zstd's maximum ratio is far below 1:2^17 per block.
  if (r.codec != Codec::Raw && r.raw_len / 131072 > r.stored_len + 1)
    throw Corrupt(path(), r.offset, "declared size " + std::to_string(r.raw_len) + " is impossible for " + std::to_string(r.stored_len) + " stored bytes");
  Bytes out(r.raw_len);
  read_into(r, out, verify);
  return out;
}

void PackReader::read_stream(const IndexRecord& r, const std::function<void(ByteSpan)>& sink, bool verify) const {
  ByteSpan stored = checked_stored(r);
  Sha256 sha;
  auto hashing_sink = [&](ByteSpan chunk) {
    if (verify) sha.update(chunk);
    sink(chunk);
  };
  if (r.codec == Codec::Raw) {
    for (size_t pos = 0; pos < stored.size(); pos += (8u << 20))
      hashing_sink(stored.subspan(pos, std::min<size_t>(8u << 20, stored.size() - pos)));
  } else {
    zstd_decompress_stream(stored, r.raw_len, dict_for(stored, r), what(r), hashing_sink);
  }
  if (verify && sha.finish() != r.digest) throw Corrupt(path(), r.offset, "content of " + to_hex(r.digest) + " does not match its name");
}

std::vector<IndexRecord> PackReader::catalog_records() const {
  std::vector<IndexRecord> out;
  for (uint64_t i = 0; i < view_.count(); i++) {
    IndexRecord r = view_.record_at(i);
    if (r.kind == Kind::Catalog) out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
  return out;
}

Catalog PackReader::load_catalog_record(const IndexRecord& r, bool verify_digest) const {
  if (r.raw_len > (1ull << 32)) throw Corrupt(path(), r.offset, "catalog larger than 4 GiB");
  Bytes raw = read(r, verify_digest);
  return decode_catalog(raw, path() + ": catalog " + to_hex(r.digest).substr(0, 12));
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
