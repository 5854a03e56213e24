#include "core/pack/large_copy.hpp"

#include <atomic>
#include <cstring>
#include <future>
#include <xxhash.h>

#include "base/thread_cache.hpp"

#include "base/os/sys.hpp"
#include "base/diag.hpp"
#include "base/os/file.hpp"
#include "base/hash.hpp"
#include "formats/pack_format.hpp"

namespace hpak {

using namespace formats;

CopyCounts& copy_counts() {
  static CopyCounts c;
  return c;
}

namespace {

// What copy_file_range answers when it cannot do this copy at all (another
// file system, a kernel or file system without it, a seccomp profile).
bool refused(int err) { return err == EXDEV || err == EINVAL || err == ENOSYS || err == EOPNOTSUPP || err == EPERM; }

void advise(ByteSpan span, int advice) {
  if (span.empty()) return;
  const uintptr_t page = uintptr_t(os::page_size());
  uintptr_t start = reinterpret_cast<uintptr_t>(span.data()) & ~(page - 1);
  uintptr_t end = reinterpret_cast<uintptr_t>(span.data()) + span.size();
  os::advise_memory(reinterpret_cast<void*>(start), end - start, advice);
}

void copy_with_buffer(int in_fd, uint64_t in_off, int out_fd, uint64_t len, const std::string& what_in,
                      const std::string& what_out) {
  Bytes& buf = per_thread([] { return Bytes{}; });
  buf.resize(kLargeChunk);
  os::advise_sequential(in_fd, os::Off(in_off), os::Off(len));
  while (len > 0) {
    long n = os::pread(in_fd, buf.data(), size_t(std::min<uint64_t>(buf.size(), len)), os::Off(in_off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("unable to read '" + what_in + "'");
    if (n == 0) throw Error("'" + what_in + "' ends inside an object it indexes");
    if (!write_full(out_fd, ByteSpan(buf.data(), size_t(n)))) throw_errno("unable to write '" + what_out + "'");
    in_off += uint64_t(n);
    len -= uint64_t(n);
    copy_counts().fallback.fetch_add(uint64_t(n), std::memory_order_relaxed);
  }
}

// A descriptor of the pack file that is the very inode `pack` mapped (the
// path may have been replaced since); empty if it cannot be had.
Fd reopen_pack(const PackReader& pack) {
  int fd = os::open_path(pack.path().c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return Fd();
  Fd guard(fd);
  os::FileStat st;
  const os::FileStat& mapped = pack.map().stat();
  if (os::fstat(fd, st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != mapped.st_dev || st.st_ino != mapped.st_ino) return Fd();
  return guard;
}

// Said once per process (-v): a restore of many large files would say it per file.
void report_refused(int err, const std::string& what_out) {
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  diag_debug([&] { return "copy_file_range refused for '" + what_out + "' (" + error_text(err) + "): large objects copied through a buffer"; });
}

} // namespace

void copy_fd_range(int in_fd, uint64_t in_off, int out_fd, uint64_t len, const std::string& what_in,
                   const std::string& what_out) {
  os::Off off = os::Off(in_off);
  while (len > 0) {
    long n = os::copy_range(in_fd, &off, out_fd, size_t(std::min<uint64_t>(len, 1ull << 30)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && refused(errno)) { // the rest through a buffer
      report_refused(errno, what_out);
      break;
    }
    if (n < 0) throw_errno("unable to write '" + what_out + "'");
    if (n == 0) throw Error("'" + what_in + "' ends inside an object it indexes");
    len -= uint64_t(n);
    copy_counts().kernel.fetch_add(uint64_t(n), std::memory_order_relaxed);
  }
  if (len > 0) copy_with_buffer(in_fd, uint64_t(off), out_fd, len, what_in, what_out);
}

void advise_stored(const PackReader& pack, const IndexRecord& r) {
  ByteSpan b = pack.bytes();
  if (r.offset > b.size() || b.size() - r.offset < kEntryHeaderSize || r.stored_len > b.size() - r.offset - kEntryHeaderSize)
    return; // the read reports it
  ByteSpan stored = b.subspan(r.offset + kEntryHeaderSize, r.stored_len);
  advise(stored, MADV_WILLNEED); // (not MADV_SEQUENTIAL: a flag on part of a mapping splits it)
}

void check_raw_header(const PackReader& pack, const IndexRecord& r) {
  ByteSpan b = pack.bytes();
  if (r.offset > b.size() || b.size() - r.offset < kEntryHeaderSize || r.stored_len > b.size() - r.offset - kEntryHeaderSize)
    throw Corrupt(pack.path(), r.offset, "entry lies outside the pack");
  EntryHeader h = decode_entry_header(b.subspan(r.offset, kEntryHeaderSize), pack.path(), r.offset);
  if (h.digest != r.digest || h.kind != r.kind || h.codec != r.codec || h.stored_len != r.stored_len ||
      h.raw_len != r.raw_len || h.stored_xxh != r.stored_xxh)
    throw Corrupt(pack.path(), r.offset, "entry header does not match the index");
  if (r.codec != Codec::Raw || r.raw_len != r.stored_len)
    throw Corrupt(pack.path(), r.offset, "raw object " + to_hex(r.digest) + " has " + std::to_string(r.stored_len) +
                                             " stored bytes for " + std::to_string(r.raw_len));
}

void check_raw_object(const PackReader& pack, const IndexRecord& r, bool verify) {
  check_raw_header(pack, r);
  ByteSpan b = pack.bytes();
  ByteSpan stored = b.subspan(r.offset + kEntryHeaderSize, r.stored_len);
  Xxh3Stream xxh;
  Sha256 sha;
  advise(stored.subspan(0, std::min(kLargeChunk, stored.size())), MADV_WILLNEED);
  for (size_t pos = 0; pos < stored.size(); pos += kLargeChunk) {
    ByteSpan piece = stored.subspan(pos, std::min(kLargeChunk, stored.size() - pos));
    if (pos + piece.size() < stored.size())
      advise(stored.subspan(pos + piece.size(), std::min(kLargeChunk, stored.size() - pos - piece.size())), MADV_WILLNEED);
    xxh.update(piece);
    if (verify) sha.update(piece);
    if (piece.size() == kLargeChunk) advise(piece, MADV_DONTNEED); // read-only file pages: dropped from this mapping only
  }
  if (xxh.digest() != r.stored_xxh)
    throw Corrupt(pack.path(), r.offset + kEntryHeaderSize, "stored bytes of " + to_hex(r.digest) + " fail their checksum");
  if (verify && sha.finish() != r.digest)
    throw Corrupt(pack.path(), r.offset, "content of " + to_hex(r.digest) + " does not match its name");
}

namespace {

// Reads exactly out.size() bytes at `off`, or throws naming the pack.
void pread_exactly(int fd, std::span<uint8_t> out, uint64_t off, const std::string& what) {
  const long n = pread_full(fd, out, off);
  if (n < 0) throw_errno("unable to read '" + what + "'");
  if (size_t(n) < out.size()) throw Error("'" + what + "' ends inside an object it indexes");
}

// A pack another user can write (PackReader::checks_every_read): each chunk is
// read once into a private buffer, hashed there (XXH3 and SHA-256) and written
// from there, so the bytes checked are the bytes written, whatever the owner
// does to the file meanwhile; no copy_file_range, no --trust-large-objects.
void write_raw_checked_privately(const PackReader& pack, const IndexRecord& rec, int out_fd, const std::string& shown) {
  check_raw_header(pack, rec);
  const uint64_t payload = rec.offset + kEntryHeaderSize;
  Fd in = reopen_pack(pack);
  const ByteSpan mapped = pack.bytes().subspan(payload, rec.stored_len);
  Bytes& buf = per_thread([] { return Bytes{}; });
  buf.resize(kLargeChunk);
  Xxh3Stream xxh;
  Sha256 sha;
  for (uint64_t pos = 0; pos < rec.stored_len;) {
    const size_t n = size_t(std::min<uint64_t>(kLargeChunk, rec.stored_len - pos));
    std::span<uint8_t> piece(buf.data(), n);
    if (in) pread_exactly(in.get(), piece, payload + pos, pack.path());
    else std::memcpy(piece.data(), mapped.data() + pos, n);
    xxh.update(piece);
    sha.update(piece);
    if (!write_full(out_fd, piece)) throw_errno("unable to write '" + shown + "'");
    copy_counts().fallback.fetch_add(n, std::memory_order_relaxed);
    pos += n;
  }
  if (xxh.digest() != rec.stored_xxh)
    throw Corrupt(pack.path(), payload, "stored bytes of " + to_hex(rec.digest) + " fail their checksum");
  if (sha.finish() != rec.digest) throw Corrupt(pack.path(), rec.offset, "content of " + to_hex(rec.digest) + " does not match its name");
}

} // namespace

void write_raw_object(const PackReader& pack, const IndexRecord& rec, int out_fd, const ReadChecks& checks, const std::string& shown) {
  if (pack.checks_every_read()) return write_raw_checked_privately(pack, rec, out_fd, shown);
  const bool verify = checks.verify;
  ByteSpan b = pack.bytes();
  if (rec.offset > b.size() || b.size() - rec.offset < kEntryHeaderSize || rec.stored_len > b.size() - rec.offset - kEntryHeaderSize)
    throw Corrupt(pack.path(), rec.offset, "entry lies outside the pack");
  const uint64_t payload = rec.offset + kEntryHeaderSize;
  auto copy = [&] {
    Fd in = reopen_pack(pack);
    if (in) return copy_fd_range(in.get(), payload, out_fd, rec.stored_len, pack.path(), shown);
    ByteSpan stored = b.subspan(payload, rec.stored_len); // no descriptor of the same file: from the mapping
    for (size_t pos = 0; pos < stored.size(); pos += kLargeChunk) {
      ByteSpan piece = stored.subspan(pos, std::min(kLargeChunk, stored.size() - pos));
      if (!write_full(out_fd, piece)) throw_errno("unable to write '" + shown + "'");
      copy_counts().fallback.fetch_add(piece.size(), std::memory_order_relaxed);
    }
  };
  if (checks.trust_large_raw && !verify) { // the explicit fast path: the header only
    check_raw_header(pack, rec);
    copy();
    return;
  }
  if (rec.stored_len < kOverlapThreshold) {
    check_raw_object(pack, rec, verify);
    copy();
    return;
  }
  auto check = std::async(std::launch::async, [&] { check_raw_object(pack, rec, verify); });
  try {
    copy();
  } catch (...) {
    check.get(); // a damaged object is the news, not what its write then did
    throw;
  }
  check.get();
}

} // namespace hpak
