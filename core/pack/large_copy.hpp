// Large objects at the speed of the page cache (issue 18).
//
// A raw (stored) object is written into its target by the kernel:
// copy_file_range from the pack file (a fresh descriptor, checked to be the
// very inode mapped) to the target — no user-space copy, no page faults, and
// a shared extent (reflink) where the file system can share blocks and both
// ranges are block-aligned. Where the kernel refuses (EXDEV across file
// systems, EINVAL, ENOSYS, EOPNOTSUPP, EPERM under a seccomp profile), the rest
// goes through pread/write in 8 MiB reused buffers.
//
// The checks stay what they are for every object: the entry header against
// the index record, the XXH3 of the stored bytes, and (verify) the SHA-256 of
// the content. They run over the pack's mapping in 8 MiB windows (the next
// one read ahead with MADV_WILLNEED, each released behind), so peak memory does not grow with the object;
// above kOverlapThreshold on a second thread while the kernel copies, and the
// caller removes the file when they fail (like any streamed object: the check
// completes before the file is closed).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "core/pack/pack_reader.hpp"

namespace hpak {

// Raw objects of at least this many bytes go through write_raw_object.
constexpr uint64_t kKernelCopyThreshold = 1ull << 20;
// Raw objects of at least this many bytes are checked while they are copied.
constexpr uint64_t kOverlapThreshold = 16ull << 20;
// The buffer (and window) size of the large-object paths.
constexpr size_t kLargeChunk = 8u << 20;

// Bytes moved by copy_file_range and by the pread/write fallback since the
// process started (tests and bench read them).
struct CopyCounts {
  std::atomic<uint64_t> kernel{0}, fallback{0};
};
CopyCounts& copy_counts();

// Copies `len` bytes of `in_fd` from `in_off` to `out_fd` at its file offset
// (advanced by len). Throws naming `what_in` when the source ends early,
// `what_out` when the write fails.
void copy_fd_range(int in_fd, uint64_t in_off, int out_fd, uint64_t len, const std::string& what_in,
                   const std::string& what_out);

// Advises the kernel that the stored bytes of `rec` will be read soon
// (MADV_WILLNEED on that range of the mapping: read ahead, not a fault per page).
void advise_stored(const PackReader& pack, const formats::IndexRecord& rec);

// What a read of an object checks. The default is every read's: the entry
// header against the index, the XXH3-64 of the stored bytes; `verify` adds
// the SHA-256 of the content against its name. `trust_large_raw` (restore
// --trust-large-objects, an explicit fast path) skips the XXH3 of raw objects
// copied by the kernel (kKernelCopyThreshold bytes or more): their header is
// still checked, their bytes are not read at all. No effect with `verify`.
struct ReadChecks {
  bool verify = false;
  bool trust_large_raw = false;
};

// Checks raw object `rec` of `pack` as every read does (entry header, XXH3,
// and the SHA-256 when `verify`) reading the mapping in windows.
void check_raw_object(const PackReader& pack, const formats::IndexRecord& rec, bool verify);
// The entry header alone (bounds, fields against the index record, raw sizes).
void check_raw_header(const PackReader& pack, const formats::IndexRecord& rec);

// Writes raw object `rec` (codec Raw) of `pack` to `out_fd` at its offset
// (see above); `shown` names the target in messages. Throws if the object
// fails its checks (the bytes may then be written already: remove the file).
// A pack marked PackReader::check_every_read() (another member's) is never
// copied by the kernel: each 8 MiB is read into a private buffer, its XXH3
// and SHA-256 taken there and written from there, whatever `checks` says.
void write_raw_object(const PackReader& pack, const formats::IndexRecord& rec, int out_fd, const ReadChecks& checks,
                      const std::string& shown);

} // namespace hpak
