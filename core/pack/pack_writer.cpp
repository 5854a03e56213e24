#include "core/pack/pack_writer.hpp"

#include <xxhash.h>

#include "base/os/sys.hpp"
#include "base/os/file.hpp"
#include "base/compress_rule.hpp"
#include "base/zstd_codec.hpp"

namespace hpak {

using namespace formats;

PackWriter::PackWriter(int fd, std::string where, int level, uint16_t version)
    : fd_(fd), where_(std::move(where)), level_(level), version_(version) {
  if (version_ != kPackVersion && version_ != kPackVersion2) throw Error("internal error: pack version " + std::to_string(version_));
  buf_.reserve(1 << 20);
  uint8_t hdr[kPackHeaderSize];
  PackHeader h;
  h.version = version_;
  h.level = level;
  if (version_ == kPackVersion2) h.block_target = block_target_;
  encode_pack_header(h, hdr);
  emit(ByteSpan(hdr, sizeof hdr));
}

// Before any buffer (or the caller's spans) goes: the helper thread stops
// reading (spans still queued are dropped, the one being hashed finishes).
PackWriter::~PackWriter() {
  if (async_) async_->cancel();
}

void PackWriter::hash_in_background(bool spans_outlive_writer) {
  if (async_) return;
  // Everything written so far is still in the buffer (the header): the
  // helper hashes it from the start; sha_ is not used any more.
  if (offset_ != buf_.size()) throw Error("internal error: hash_in_background after the first flush of '" + where_ + "'");
  spans_outlive_writer_ = spans_outlive_writer;
  async_ = std::make_unique<AsyncSha256>();
  spare_.reserve(1 << 20);
}

void PackWriter::flush() {
  if (buf_.empty()) return;
  write_all(fd_, buf_, where_);
  if (async_) {
    uint64_t t = async_->submit(buf_);
    async_->wait(spare_ticket_); // the spare buffer is free again
    std::swap(buf_, spare_);
    spare_ticket_ = t;
  }
  buf_.clear();
}

Sha256& PackWriter::settled_sha() {
  if (!async_) return sha_;
  async_->drain();
  return async_->state();
}

void PackWriter::emit(ByteSpan data) {
  if (!async_) sha_.update(data);
  offset_ += data.size();
  if (data.size() >= (1 << 19)) {
    flush();
    uint64_t ticket = async_ ? async_->submit(data) : 0; // hashed while it is written
    try {
      write_all(fd_, data, where_);
    } catch (...) {
      // The caller frees `data` as the exception unwinds: the helper must be
      // done with it first. The pack is unusable anyway.
      if (async_) async_->cancel();
      throw;
    }
    if (async_ && !spans_outlive_writer_) async_->wait(ticket);
    return;
  }
  if (buf_.size() + data.size() > (1 << 20)) flush();
  buf_.insert(buf_.end(), data.begin(), data.end());
}

void PackWriter::append(Kind kind, Codec codec, const Digest& digest, uint64_t raw_len, ByteSpan stored, uint16_t eflags,
                        bool allow_duplicate) {
  if (!written_.insert(digest).second && !allow_duplicate)
    throw Error("internal error: object " + to_hex(digest) + " appended twice to '" + where_ + "'");
  PendingEntry e;
  e.h.kind = kind;
  e.h.codec = codec;
  e.h.eflags = eflags;
  e.h.stored_len = stored.size();
  e.h.raw_len = raw_len;
  e.h.digest = digest;
  e.h.stored_xxh = xxh64(stored);
  e.r = IndexRecord{digest, 0, e.h.stored_len, raw_len, e.h.stored_xxh, kind, codec};
  e.stored = stored;
  if (kind == Kind::Blob) result_.raw_total += raw_len;
  write_or_queue(std::move(e));
}

void PackWriter::append_copy(const IndexRecord& rec, ByteSpan stored, bool allow_duplicate) {
  if (!written_.insert(rec.digest).second && !allow_duplicate)
    throw Error("internal error: object " + to_hex(rec.digest) + " copied twice to '" + where_ + "'");
  PendingEntry e;
  e.h.kind = rec.kind;
  e.h.codec = rec.codec;
  e.h.stored_len = stored.size();
  e.h.raw_len = rec.raw_len;
  e.h.digest = rec.digest;
  e.h.stored_xxh = rec.stored_xxh;
  e.h.eflags = allow_duplicate ? kEflagMirror : 0;
  e.r = rec;
  e.r.member = kNoMember;
  e.stored = stored;
  if (rec.kind == Kind::Blob) result_.raw_total += rec.raw_len;
  write_or_queue(std::move(e));
}

// At the entry's place in the pack: its padding, header and payload (or a
// block copied whole: header, table, payload).
void PackWriter::write_entry(PendingEntry& e) {
  if (!e.members.empty()) {
    uint64_t at = offset_;
    uint8_t hdr[kBlockHeaderSize];
    encode_block_header(e.bh, hdr);
    emit(ByteSpan(hdr, sizeof hdr));
    emit(e.table);
    emit(e.stored);
    push_block_records(e.bh, e.members, at);
    return;
  }
  pad_for_aligned_entry(e.h.kind, e.h.codec, e.h.raw_len, e.h.eflags);
  e.r.offset = offset_;
  uint8_t hdr[kEntryHeaderSize];
  encode_entry_header(e.h, hdr);
  emit(ByteSpan(hdr, sizeof hdr));
  emit(e.stored);
  result_.records.push_back(e.r);
}

// Written now when nothing waits before it; else queued behind the blocks
// being compressed, its payload copied unless the caller's spans outlive
// the writer (and written at once, after them, if that copy would be large).
void PackWriter::write_or_queue(PendingEntry e) {
  if (pending_.empty()) {
    write_entry(e);
    return;
  }
  if (!spans_outlive_writer_) {
    if (owned_bytes_ + e.table.size() + e.stored.size() > kMaxOwnedBytes) {
      write_pending(true);
      write_entry(e);
      return;
    }
    e.owned.reserve(e.table.size() + e.stored.size());
    e.owned.insert(e.owned.end(), e.table.begin(), e.table.end());
    e.owned.insert(e.owned.end(), e.stored.begin(), e.stored.end());
    e.table = ByteSpan(e.owned).first(e.table.size());
    e.stored = ByteSpan(e.owned).subspan(e.table.size());
    owned_bytes_ += e.owned.size();
  }
  pending_.push_back(Pending{std::move(e), false});
  write_pending(false);
}

const IndexRecord& PackWriter::append_stream(Kind kind, Codec codec, const Digest& digest, uint64_t raw_len,
                                             const Producer& produce) {
  write_pending(true); // entries in call order
  if (!written_.insert(digest).second)
    throw Error("internal error: object " + to_hex(digest) + " appended twice to '" + where_ + "'");
  uint16_t eflags = 0;
  pad_for_aligned_entry(kind, codec, raw_len, eflags);
  flush();
  uint64_t start = offset_;
  uint8_t hdr[kEntryHeaderSize] = {};
  write_all(fd_, ByteSpan(hdr, sizeof hdr), where_);
  offset_ += sizeof hdr;
  Xxh3Stream xxh;
  uint64_t stored = 0;
  produce([&](ByteSpan chunk) {
    xxh.update(chunk);
    write_all(fd_, chunk, where_);
    stored += chunk.size();
    offset_ += chunk.size();
  });
  EntryHeader h;
  h.kind = kind;
  h.codec = codec;
  h.eflags = eflags;
  h.stored_len = stored;
  h.raw_len = raw_len;
  h.digest = digest;
  h.stored_xxh = xxh.digest();
  encode_entry_header(h, hdr);
  pwrite_all(fd_, ByteSpan(hdr, sizeof hdr), os::Off(start), where_);
  hash_back(start, offset_); // the patched header and the payload, read back once
  IndexRecord r{digest, start, stored, raw_len, h.stored_xxh, kind, codec};
  if (kind == Kind::Blob) result_.raw_total += raw_len;
  result_.records.push_back(r);
  return result_.records.back();
}

// Adds [from, to) of the file, as written, to the pack hash: the hash covers
// everything before `from` already.
void PackWriter::hash_back(uint64_t from, uint64_t to) {
  Sha256& sha = settled_sha();
  Bytes chunk(size_t(std::min<uint64_t>(4u << 20, to - from)));
  for (uint64_t pos = from; pos < to;) {
    long n = os::pread(fd_, chunk.data(), size_t(std::min<uint64_t>(chunk.size(), to - pos)), os::Off(pos));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_errno("unable to read back '" + where_ + "'");
    sha.update(ByteSpan(chunk.data(), size_t(n)));
    pos += uint64_t(n);
  }
}

const IndexRecord& PackWriter::append_raw_stream(Kind kind, const Digest& digest, uint64_t raw_len, uint64_t raw_xxh,
                                                 const std::string& shown, const Producer& produce) {
  write_pending(true); // entries in call order
  if (!written_.insert(digest).second)
    throw Error("internal error: object " + to_hex(digest) + " appended twice to '" + where_ + "'");
  EntryHeader h;
  h.kind = kind;
  h.codec = Codec::Raw;
  pad_for_aligned_entry(kind, Codec::Raw, raw_len, h.eflags);
  h.stored_len = raw_len;
  h.raw_len = raw_len;
  h.digest = digest;
  h.stored_xxh = raw_xxh;
  const uint64_t start = offset_;
  uint8_t hdr[kEntryHeaderSize];
  encode_entry_header(h, hdr);
  emit(ByteSpan(hdr, sizeof hdr));
  Xxh3Stream xxh;
  uint64_t produced = 0;
  produce([&](ByteSpan chunk) {
    xxh.update(chunk);
    produced += chunk.size();
    if (produced <= raw_len) emit(chunk);
  });
  if (produced != raw_len || xxh.digest() != raw_xxh)
    throw Error("'" + shown + "' changed while being packed (its bytes differ from those hashed a moment before)");
  IndexRecord r{digest, start, raw_len, raw_len, raw_xxh, kind, Codec::Raw};
  if (kind == Kind::Blob) result_.raw_total += raw_len;
  result_.records.push_back(r);
  return result_.records.back();
}

// v2: a large raw blob gets zero padding so its payload starts at a multiple
// of kAlign, and eflags bit 1 (the reader checks both).
void PackWriter::pad_for_aligned_entry(Kind kind, Codec codec, uint64_t raw_len, uint16_t& eflags) {
  eflags &= uint16_t(~kEflagAligned);
  if (version_ < kPackVersion2 || kind != Kind::Blob || codec != Codec::Raw || raw_len < kAlignMinRaw) return;
  static const uint8_t zeros[kAlign] = {};
  uint64_t pad = align_padding(offset_);
  if (pad) emit(ByteSpan(zeros, pad));
  eflags |= kEflagAligned;
}

bool PackWriter::append_small(const Digest& digest, ByteSpan raw) {
  if (!is_small(raw.size())) throw Error("internal error: object of " + std::to_string(raw.size()) + " bytes is not small in '" + where_ + "'");
  if (!written_.insert(digest).second) return false;
  if (!block_members_.empty() && (block_raw_.size() + raw.size() > block_target_ || block_members_.size() == kBlockMaxCount))
    close_block();
  block_raw_.insert(block_raw_.end(), raw.begin(), raw.end());
  block_members_.push_back({digest, uint32_t(raw.size())});
  result_.raw_total += raw.size();
  return true;
}

void PackWriter::compress_in_background(unsigned helpers) {
  if (version_ >= kPackVersion2 && !compressor_) compressor_ = std::make_unique<BlockCompressor>(helpers);
}

void PackWriter::close_block() {
  if (block_members_.empty()) return;
  ClosedBlock b{std::move(block_raw_), std::move(block_members_)};
  block_raw_ = Bytes();
  block_members_.clear();
  if (!compressor_) {
    compress_block(b, level_, dict_.get());
    write_block(std::move(b));
    return;
  }
  compressor_->submit(std::move(b), level_, dict_.get());
  pending_.push_back(Pending{PendingEntry{}, true});
  write_pending(false);
}

void PackWriter::write_pending(bool all) {
  while (!pending_.empty()) {
    Pending& p = pending_.front();
    if (p.block) {
      const bool full = compressor_->pending() > compressor_->window() || pending_.size() > kMaxPending;
      if (!all && !full && !compressor_->oldest_done()) return;
      ClosedBlock b = compressor_->take();
      pending_.pop_front();
      write_block(std::move(b));
      continue;
    }
    PendingEntry e = std::move(p.entry);
    pending_.pop_front();
    owned_bytes_ -= e.owned.size();
    write_entry(e);
  }
}

void PackWriter::write_block(ClosedBlock b) {
  BlockHeader h;
  h.flags = kBflagLengths; // each member named once, by the index
  h.count = uint32_t(b.members.size());
  h.raw_len = 0;
  for (auto& m : b.members) h.raw_len += m.raw_len;
  h.codec = b.codec;
  h.dict_id = b.codec == Codec::ZstdDict ? dict_->id() : 0;
  h.stored_len = uint32_t(b.stored.size());
  h.stored_xxh = xxh64(b.stored);
  Bytes table = encode_block_table(h, b.members);
  h.table_xxh = xxh64(table);
  uint64_t at = offset_;
  uint8_t hdr[kBlockHeaderSize];
  encode_block_header(h, hdr);
  emit(ByteSpan(hdr, sizeof hdr));
  // In pieces below emit()'s direct-write size: `table` and `stored` are
  // local, and a background hasher may only keep pointers to the caller's spans.
  for (ByteSpan part : {ByteSpan(table), ByteSpan(b.stored)})
    for (size_t pos = 0; pos < part.size(); pos += (1 << 18)) emit(part.subspan(pos, std::min<size_t>(1 << 18, part.size() - pos)));
  push_block_records(h, b.members, at);
  block_bytes_ += offset_ - at;
}

void PackWriter::use_dictionary(ByteSpan dict) {
  write_pending(true); // entries in call order
  if (version_ < kPackVersion2 || dict_ || block_bytes_ > 0 || !block_members_.empty() || level_ <= 0)
    throw Error("internal error: a dictionary set after the first block (or for a v1 or uncompressed pack) of '" + where_ + "'");
  auto zd = std::make_unique<ZstdDict>(dict, level_);
  if (zd->id() == 0) throw Error("internal error: a dictionary without an id for '" + where_ + "'");
  Digest d = sha256(dict);
  Bytes stored;
  Codec codec = compress_if_smaller(dict, level_, stored) ? Codec::Zstd : Codec::Raw;
  ByteSpan bytes = codec == Codec::Zstd ? ByteSpan(stored) : dict;
  append(Kind::Dict, codec, d, dict.size(), bytes);
  append(Kind::Dict, codec, d, dict.size(), bytes, kEflagMirror, /*allow_duplicate=*/true);
  dict_ = std::move(zd);
}

void PackWriter::append_block_copy(const BlockHeader& h, const std::vector<BlockMember>& members, ByteSpan table, ByteSpan payload) {
  if (version_ < kPackVersion2) throw Error("internal error: block copied into a v1 pack '" + where_ + "'");
  if (members.empty()) throw Error("internal error: a block without members copied to '" + where_ + "'");
  for (auto& m : members)
    if (written_.count(m.digest) || m.digest == Digest{})
      throw Error("internal error: object " + to_hex(m.digest) + " copied twice (or unnamed) to '" + where_ + "'");
  for (auto& m : members) {
    written_.insert(m.digest);
    result_.raw_total += m.raw_len;
  }
  PendingEntry e;
  e.bh = h;
  e.members = members;
  e.table = table;
  e.stored = payload;
  write_or_queue(std::move(e));
}

void PackWriter::push_block_records(const BlockHeader& h, const std::vector<BlockMember>& members, uint64_t at) {
  for (uint32_t i = 0; i < members.size(); i++) {
    IndexRecord r{members[i].digest, at, 0, members[i].raw_len, 0, Kind::Blob, h.codec};
    r.member = i;
    result_.records.push_back(r);
  }
}

PackResult PackWriter::finish() {
  close_block();
  write_pending(true);
  Footer f;
  f.version = version_ == kPackVersion2 ? 2 : 1;
  f.entry_count = result_.records.size();
  f.raw_total = result_.raw_total;
  result_.version = version_;
  uint8_t foot[kFooterSize];
  encode_footer(f, foot);
  emit(ByteSpan(foot, sizeof foot));
  flush();
  Sha256& sha = settled_sha();
  result_.pack_sum = sha.peek();
  sha.update(result_.pack_sum);
  result_.file_sum = sha.finish();
  write_all(fd_, result_.pack_sum, where_);
  offset_ += kTrailerSize;
  result_.size = offset_;
  return std::move(result_);
}

} // namespace hpak
