// PackReader's reads with pread(2) from a descriptor of the pack's file,
// which map no page of the pack (pack_reader.hpp: read_pread, check_pread,
// block_pread). Every length comes from the pack and is checked against the
// file's size before a byte is read or a buffer sized; an entry larger than
// kPreadWhole is read in pieces of kPreadPiece bytes, so what a read holds is
// bounded whatever the pack says.
#include <algorithm>
#include <cerrno>
#include <utility>

#include "base/os/sys.hpp"
#include "core/pack/pack_reader.hpp"

namespace hpak {

using namespace formats;

namespace {

// pread(2) of exactly out.size() bytes at `offset` (retrying short reads and
// EINTR); false when the file ends first.
bool pread_exact(int fd, std::span<uint8_t> out, uint64_t offset, const std::string& what) {
  const long n = pread_full(fd, out, offset);
  if (n < 0) throw_errno("unable to read '" + what + "'");
  return size_t(n) == out.size();
}

constexpr uint64_t kPreadPiece = 1u << 20;

} // namespace

// [offset, offset + len) of the file, kPreadPiece bytes at a time into `buf`,
// each piece handed to `f`.
void PackReader::pread_range(int fd, uint64_t offset, uint64_t len, Bytes& buf, const std::function<void(ByteSpan)>& f) const {
  buf.resize(std::min(len, kPreadPiece));
  for (uint64_t done = 0; done < len;) {
    std::span<uint8_t> piece(buf.data(), std::min(len - done, kPreadPiece));
    if (!pread_exact(fd, piece, offset + done, path())) throw corrupt(path(), offset, "the file is shorter than the pack mapped");
    f(piece);
    done += piece.size();
  }
}

// The entry header, read first (a v2 record leaves the stored length to it)
// and checked as checked_stored checks it: the record completed.
IndexRecord PackReader::pread_header(int fd, const IndexRecord& rr) const {
  if (rr.member != kNoMember) throw Error("internal error: pread of a block member: " + what(rr));
  const uint64_t size = map_.size();
  if (rr.offset > size || size - rr.offset < kEntryHeaderSize) throw corrupt(path(), rr.offset, "entry lies outside the pack");
  uint8_t hb[kEntryHeaderSize];
  if (!pread_exact(fd, hb, rr.offset, path())) throw corrupt(path(), rr.offset, "entry lies outside the pack (the file is shorter)");
  const EntryHeader h = decode_entry_header(ByteSpan(hb, sizeof hb), path(), rr.offset);
  IndexRecord r = rr;
  if (version_ == kPackVersion2 && r.stored_len == 0 && r.stored_xxh == 0) r.stored_len = h.stored_len, r.stored_xxh = h.stored_xxh;
  if (r.stored_len > size - r.offset - kEntryHeaderSize) throw corrupt(path(), r.offset, "entry lies outside the pack");
  if (h.digest != r.digest || h.kind != r.kind || h.codec != r.codec || h.stored_len != r.stored_len || h.raw_len != r.raw_len ||
      h.stored_xxh != r.stored_xxh)
    throw corrupt(path(), r.offset, "entry header does not match the index");
  return r;
}

// read()'s checks after the stored checksum: a declared size the stored bytes
// cannot produce (decompression bombs), a raw entry of other sizes.
void PackReader::check_sizes(const IndexRecord& r) const {
  if (r.codec != Codec::Raw && r.raw_len / 131072 > r.stored_len + 1)
    throw corrupt(path(), r.offset, "declared size " + std::to_string(r.raw_len) + " is impossible for " + std::to_string(r.stored_len) + " stored bytes");
  if (r.codec == Codec::Raw && r.stored_len != r.raw_len)
    throw corrupt(path(), r.offset, "raw object " + to_hex(r.digest) + " has " + std::to_string(r.stored_len) + " stored bytes for " + std::to_string(r.raw_len));
}

ByteSpan PackReader::read_pread(int fd, const IndexRecord& rr, Bytes& stored, Bytes& raw) const {
  return read_pread_body(fd, pread_header(fd, rr), stored, raw);
}

// The stored bytes of `r` (its header checked), whole: read()'s checks.
ByteSpan PackReader::read_pread_body(int fd, const IndexRecord& r, Bytes& stored, Bytes& raw) const {
  stored.resize(r.stored_len);
  if (!pread_exact(fd, stored, r.offset + kEntryHeaderSize, path()))
    throw corrupt(path(), r.offset, "entry lies outside the pack (the file is shorter)");
  if (xxh64(stored) != r.stored_xxh) throw corrupt(path(), r.offset + kEntryHeaderSize, "stored bytes of " + to_hex(r.digest) + " fail their checksum");
  check_sizes(r);
  raw.resize(r.raw_len);
  decode_stored(stored, r, raw);
  if (sha256(raw) != r.digest) throw corrupt(path(), r.offset, "content of " + to_hex(r.digest) + " does not match its name");
  return raw;
}

// A large entry in pieces: the stored checksum over one pass, then the
// content's SHA-256 over a second (decoding as it goes), so the checks come
// in the order read() makes them.
void PackReader::check_pread_pieces(int fd, const IndexRecord& r, Bytes& buf) const {
  const uint64_t at = r.offset + kEntryHeaderSize;
  Xxh3Stream xxh;
  pread_range(fd, at, r.stored_len, buf, [&](ByteSpan p) { xxh.update(p); });
  if (xxh.digest() != r.stored_xxh) throw corrupt(path(), at, "stored bytes of " + to_hex(r.digest) + " fail their checksum");
  check_sizes(r);
  Sha256 sha;
  if (r.codec == Codec::Raw) {
    pread_range(fd, at, r.stored_len, buf, [&](ByteSpan p) { sha.update(p); });
  } else {
    uint64_t given = 0;
    auto next = [&]() -> ByteSpan {
      const uint64_t n = std::min(r.stored_len - given, kPreadPiece);
      buf.resize(n);
      if (n && !pread_exact(fd, buf, at + given, path())) throw corrupt(path(), at, "the file is shorter than the pack mapped");
      given += n;
      return ByteSpan(buf.data(), n);
    };
    ByteSpan first = next();
    const ZstdDict* dict = dict_for(first, r);
    zstd_check_frame_size(first, r.raw_len, what(r));
    bool firsts = true;
    zstd_decompress_chunks([&] { return std::exchange(firsts, false) ? first : next(); }, r.raw_len, dict, what(r),
                           [&](ByteSpan p) { sha.update(p); });
  }
  if (sha.finish() != r.digest) throw corrupt(path(), r.offset, "content of " + to_hex(r.digest) + " does not match its name");
}

IndexRecord PackReader::check_pread(int fd, const IndexRecord& rr, Bytes& stored, Bytes& raw) const {
  const IndexRecord r = pread_header(fd, rr);
  // A catalog stored against a base (below 128 MiB) is decoded whole with it.
  if ((r.stored_len <= kPreadWhole && r.raw_len <= kPreadWhole) || r.codec == Codec::ZstdBase) read_pread_body(fd, r, stored, raw);
  else check_pread_pieces(fd, r, stored);
  return r;
}

// Only the bytes a block's header says it has are read, once they are known
// to lie inside the file; a block larger than any block can be is refused
// before a byte of it is read.
PackReader::Block PackReader::block_pread(int fd, uint64_t offset, Bytes& buf) const {
  const uint64_t size = map_.size();
  if (version_ != kPackVersion2) throw corrupt(path(), offset, "block in a pack of version " + std::to_string(version_));
  if (offset > size) throw corrupt(path(), offset, "block lies outside the pack");
  buf.resize(std::min<uint64_t>(size - offset, kBlockHeaderSize));
  if (!pread_exact(fd, buf, offset, path())) throw corrupt(path(), offset, "block lies outside the pack (the file is shorter)");
  if (buf.size() < kBlockHeaderSize) return parse_block(buf, path(), offset); // throws, as checked_block would
  const uint64_t len = block_item_size(decode_block_header(buf, path(), offset));
  if (len > size - offset) throw corrupt(path(), offset, "block extends past the end of the pack");
  if (len > kPreadWhole)
    throw corrupt(path(), offset, "block of " + std::to_string(len) + " bytes, more than a block of at most 1 MiB can need");
  buf.resize(len);
  if (!pread_exact(fd, buf, offset, path())) throw corrupt(path(), offset, "block lies outside the pack (the file is shorter)");
  return parse_block(buf, path(), offset);
}

Fd PackReader::open_same_file(Follow follow) const {
  os::FileStat st{};
  try {
    Fd fd = open_regular_if_exists(path(), follow, kAnySize, &st);
    if (fd && st.st_dev == map_.stat().st_dev && st.st_ino == map_.stat().st_ino) return fd;
  } catch (const Error&) { // gone or replaced since it was mapped
  }
  return Fd();
}

} // namespace hpak
