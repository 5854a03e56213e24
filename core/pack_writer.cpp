#include "core/pack_writer.hpp"

#include <unistd.h>
#include <xxhash.h>

#include "core/util/file.hpp"

namespace hpak {

using namespace formats;

PackWriter::PackWriter(int fd, std::string where, int level) : fd_(fd), where_(std::move(where)) {
  buf_.reserve(1 << 20);
  uint8_t hdr[kPackHeaderSize];
  PackHeader h;
  h.level = level;
  encode_pack_header(h, hdr);
  emit(ByteSpan(hdr, sizeof hdr));
}

PackWriter::~PackWriter() = default;

void PackWriter::hash_in_background() {
  if (async_) return;
  // Everything written so far is still in the buffer (the header): the
  // helper hashes it from the start; sha_ is not used any more.
  if (offset_ != buf_.size() || !hash_valid_) throw Error("internal error: hash_in_background after the first flush of '" + where_ + "'");
  async_ = std::make_unique<AsyncSha256>();
  spare_.reserve(1 << 20);
}

void PackWriter::flush() {
  if (buf_.empty()) return;
  write_all(fd_, buf_, where_);
  if (async_ && hash_valid_) {
    uint64_t t = async_->submit(buf_);
    async_->wait(spare_ticket_); // the spare buffer is free again
    std::swap(buf_, spare_);
    spare_ticket_ = t;
  }
  buf_.clear();
}

void PackWriter::emit(ByteSpan data) {
  if (hash_valid_ && !async_) sha_.update(data);
  offset_ += data.size();
  if (data.size() >= (1 << 19)) {
    flush();
    if (async_ && hash_valid_) async_->submit(data); // stays valid until finish() (the caller's promise)
    write_all(fd_, data, where_);
    return;
  }
  if (buf_.size() + data.size() > (1 << 20)) flush();
  buf_.insert(buf_.end(), data.begin(), data.end());
}

const IndexRecord& PackWriter::append(Kind kind, Codec codec, const Digest& digest, uint64_t raw_len, ByteSpan stored,
                                      uint16_t eflags, bool allow_duplicate) {
  if (!written_.insert(digest).second && !allow_duplicate)
    throw Error("internal error: object " + to_hex(digest) + " appended twice to '" + where_ + "'");
  EntryHeader h;
  h.kind = kind;
  h.codec = codec;
  h.eflags = eflags;
  h.stored_len = stored.size();
  h.raw_len = raw_len;
  h.digest = digest;
  h.stored_xxh = xxh64(stored);
  IndexRecord r{digest, offset_, h.stored_len, raw_len, h.stored_xxh, kind, codec};
  uint8_t hdr[kEntryHeaderSize];
  encode_entry_header(h, hdr);
  emit(ByteSpan(hdr, sizeof hdr));
  emit(stored);
  if (kind == Kind::Blob) result_.raw_total += raw_len;
  result_.records.push_back(r);
  return result_.records.back();
}

const IndexRecord& PackWriter::append_copy(const IndexRecord& rec, ByteSpan stored, bool allow_duplicate) {
  if (!written_.insert(rec.digest).second && !allow_duplicate)
    throw Error("internal error: object " + to_hex(rec.digest) + " copied twice to '" + where_ + "'");
  EntryHeader h;
  h.kind = rec.kind;
  h.codec = rec.codec;
  h.stored_len = stored.size();
  h.raw_len = rec.raw_len;
  h.digest = rec.digest;
  h.stored_xxh = rec.stored_xxh;
  h.eflags = allow_duplicate ? 1 : 0;
  IndexRecord r = rec;
  r.offset = offset_;
  uint8_t hdr[kEntryHeaderSize];
  encode_entry_header(h, hdr);
  emit(ByteSpan(hdr, sizeof hdr));
  emit(stored);
  if (rec.kind == Kind::Blob) result_.raw_total += rec.raw_len;
  result_.records.push_back(r);
  return result_.records.back();
}

const IndexRecord& PackWriter::append_stream(Kind kind, Codec codec, const Digest& digest, uint64_t raw_len,
                                             const std::function<void(const std::function<void(ByteSpan)>&)>& produce) {
  if (!written_.insert(digest).second)
    throw Error("internal error: object " + to_hex(digest) + " appended twice to '" + where_ + "'");
  flush();
  hash_valid_ = false;
  uint64_t start = offset_;
  uint8_t hdr[kEntryHeaderSize] = {};
  write_all(fd_, ByteSpan(hdr, sizeof hdr), where_);
  offset_ += sizeof hdr;
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  uint64_t stored = 0;
  try {
    produce([&](ByteSpan chunk) {
      XXH3_64bits_update(st, chunk.data(), chunk.size());
      write_all(fd_, chunk, where_);
      stored += chunk.size();
      offset_ += chunk.size();
    });
  } catch (...) {
    XXH3_freeState(st);
    throw;
  }
  EntryHeader h;
  h.kind = kind;
  h.codec = codec;
  h.stored_len = stored;
  h.raw_len = raw_len;
  h.digest = digest;
  h.stored_xxh = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  encode_entry_header(h, hdr);
  pwrite_all(fd_, ByteSpan(hdr, sizeof hdr), off_t(start), where_);
  IndexRecord r{digest, start, stored, raw_len, h.stored_xxh, kind, codec};
  if (kind == Kind::Blob) result_.raw_total += raw_len;
  result_.records.push_back(r);
  return result_.records.back();
}

PackResult PackWriter::finish() {
  Footer f;
  f.entry_count = result_.records.size();
  f.raw_total = result_.raw_total;
  uint8_t foot[kFooterSize];
  encode_footer(f, foot);
  emit(ByteSpan(foot, sizeof foot));
  flush();
  if (async_) async_->drain();
  Sha256& sha = async_ && hash_valid_ ? async_->state() : sha_;
  if (!hash_valid_) {
    // A streamed entry's header was patched after the fact: hash the file again.
    sha.reset();
    Bytes chunk(1 << 20);
    uint64_t pos = 0;
    while (pos < offset_) {
      ssize_t n = pread(fd_, chunk.data(), std::min<uint64_t>(chunk.size(), offset_ - pos), off_t(pos));
      if (n <= 0) throw_errno("unable to read back '" + where_ + "'");
      sha.update(ByteSpan(chunk.data(), size_t(n)));
      pos += uint64_t(n);
    }
  }
  result_.pack_sum = sha.peek();
  sha.update(result_.pack_sum);
  result_.file_sum = sha.finish();
  write_all(fd_, result_.pack_sum, where_);
  offset_ += kTrailerSize;
  result_.size = offset_;
  return std::move(result_);
}

} // namespace hpak
