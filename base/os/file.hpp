// File-descriptor, mmap and atomic-publish helpers.
//
// `Fd` owns a descriptor. `MappedFile` maps a whole file read-only (packs and
// indexes are read this way: random access costs no syscall). `AtomicFile`
// writes to a unique temp name in the destination directory and publishes with
// rename(2) on commit(); if it is destroyed uncommitted, the temp file is
// removed, so no reader ever sees a partial file under the final name.
//
// Durability (man/hpak-library.7, "Durability"): `sync_fd`, `sync_path` and
// `sync_dir` fsync a file's data or a directory's entries, unless HPAK_FSYNC=0
// switched syncing off (`fsync_enabled`); a commit(durable=true) syncs the
// data before the rename and the directory after it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/os/sys.hpp"

namespace hpak {

class Fd {
public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1);

private:
  int fd_ = -1;
};

Fd open_read(const std::string& path);

// Files that may be hostile (every file inside a library; man/hpak-library.7,
// HOSTILE LIBRARY FILES) are opened with open_regular: the open never blocks
// (O_NONBLOCK: a FIFO or a device in the file's place does not hang it), does
// not follow a symlink in the last component unless `follow` (O_NOFOLLOW), and
// what it opened must be a regular file (fstat on the descriptor, so nothing
// can be swapped in between) of at most `max_size` bytes. Any of these fails
// with a one-line Error naming the path and what was found there.
constexpr uint64_t kAnySize = UINT64_MAX;
enum class Follow { Links, NoLinks };
Fd open_regular(const std::string& path, Follow follow, uint64_t max_size = kAnySize, os::FileStat* st_out = nullptr);
// The same, but an empty Fd when nothing is at `path` (ENOENT).
Fd open_regular_if_exists(const std::string& path, Follow follow, uint64_t max_size = kAnySize, os::FileStat* st_out = nullptr);
// The whole content of a file open_regular accepts (at most `max_size` bytes,
// even if it grows while being read).
Bytes read_regular(const std::string& path, Follow follow, uint64_t max_size);
// The pieces of open_regular, for callers that open with other flags (lock
// files): the one-line error for a failed open (naming a symlink refused by
// O_NOFOLLOW as such), and the check of what was opened.
[[noreturn]] void throw_open_error(const std::string& path, int err, Follow follow);
void require_regular(int fd, const std::string& path, uint64_t max_size = kAnySize, os::FileStat* st_out = nullptr);
// Reads `fd` to EOF, failing once more than `max_size` bytes came.
Bytes read_fd_bounded(int fd, const std::string& what, uint64_t max_size);

class MappedFile {
public:
  MappedFile() = default;
  // Maps a regular file (opened with open_regular: never blocks on a FIFO;
  // `follow` = Follow::NoLinks for files inside a library).
  // A file larger than `max_size` is refused (open_regular's one-line error).
  explicit MappedFile(const std::string& path, Follow follow = Follow::Links, uint64_t max_size = kAnySize);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  ByteSpan bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // The fstat of the file mapped (owner, inode, times: see core/pack/pack_trust.hpp).
  const os::FileStat& stat() const { return st_; }
  // Advise the kernel of the access pattern (MADV_SEQUENTIAL / MADV_RANDOM / WILLNEED).
  void advise_sequential() const;
  void advise_random() const;
  void advise_willneed() const;
  // Unmaps the pages wholly inside [offset, offset + len) from this process
  // (MADV_DONTNEED: the file's pages stay in the page cache, and a later
  // read of them maps them again): bounds the mapped pages (RssFile) of a
  // pass over a large file. Never changes what a read returns.
  void release(size_t offset, size_t len) const;
  // True once a read of the mapping found a page the file no longer has
  // (truncated by another process since it was mapped) or the disk could not
  // deliver: that page reads as zeros instead of ending the process with
  // SIGBUS (base/os/map_guard.hpp), so a checked read fails its
  // checksum and the reader can say why.
  bool shrunk() const;

private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int guard_ = -1; // map_guard slot
  void unmap();
  std::string path_;
  os::FileStat st_{};
};

Bytes read_file(const std::string& path);
Bytes read_fd(int fd, const std::string& what); // to EOF
// Writes all of `data` (retrying short writes and EINTR); false with errno set on error.
bool write_full(int fd, ByteSpan data);
// Reads out.size() bytes at `offset` (retrying short reads and EINTR): the
// count read, less than out.size() only where the file ends; -1 with errno set
// on an error.
long pread_full(int fd, std::span<uint8_t> out, uint64_t offset);
void write_all(int fd, ByteSpan data, const std::string& what);
void pwrite_all(int fd, ByteSpan data, os::Off off, const std::string& what);
bool path_exists(const std::string& path);

// The prefix of AtomicFile's temp names.
constexpr std::string_view kTempPrefix = ".tmp-";

// Who made a temp name: AtomicFile writes its process id and a tag of its
// host (8 hex digits of the SHA-256 of the host name) into it, so that a
// sweep can tell a writer that is gone (man/hpak-gc.1, step 8).
struct TempWriter {
  long pid = 0;
  bool this_host = false;
};
// The writer recorded in a temp name (AtomicFile's, possibly with a suffix
// after it such as ".done"); nullopt for a name without one (an older hpak's).
std::optional<TempWriter> temp_writer_of(std::string_view name);
// True when `path` is a regular file on which nobody holds a flock(2) (an
// AtomicFile holds one from its creation until it is destroyed); false when
// someone does, or it cannot be told (not openable, not a regular file, a
// file system without locks).
bool unlocked_regular_file(const std::string& path);
// True when no process `pid` exists on this host (kill(pid, 0) fails with ESRCH).
bool process_gone(long pid);

class AtomicFile {
public:
  // Creates `<dir of final>/.tmp-<name>-<random>-w<pid>h<host tag>` with
  // `mode` (subject to umask), and takes a flock(2) on it (best effort) that
  // it keeps, across commit, until it is destroyed: while the AtomicFile
  // lives, its file (also under the name it was committed or linked to) is
  // known to have a writer.
  explicit AtomicFile(std::string final_path, os::Mode mode = 0644);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  int fd() const { return fd_.get(); }
  const std::string& temp_path() const { return temp_; }
  const std::string& final_path() const { return final_; }
  void write(ByteSpan data) { write_all(fd_.get(), data, temp_); }
  // Close and rename into place. If `durable`, the data is synced before the
  // rename and the directory after it: once commit returns, the file survives
  // a power loss under its final name. If `no_replace`, fail with EEXIST
  // instead of replacing an existing file (link + unlink: NFS-safe).
  void commit(bool durable = false, bool no_replace = false);
  // Rename to a different final name (e.g. a name known only after hashing).
  // `sync_data`: the data is synced before the rename (not the directory: for
  // a hand-off in tmp/ to a publish that links the file elsewhere).
  void commit_as(const std::string& final_path, bool sync_data = false);

private:
  std::string final_;
  std::string temp_;
  Fd fd_;
  Fd lock_; // the flock's descriptor once fd_ is closed by a commit
  bool committed_ = false;
};

// False when the environment says HPAK_FSYNC=0 (unsafe: for throwaway
// libraries, e.g. CI caches on tmpfs). Read once per process.
bool fsync_enabled();
// fsync(2) of a descriptor / a file by path / a directory (its entries), when
// fsync_enabled(); throws on failure. A file system that cannot sync a
// directory (EINVAL) is not an error.
void sync_fd(int fd, const std::string& what);
void sync_path(const std::string& path);
void sync_dir(const std::string& dir);

// Raises RLIMIT_NOFILE's soft limit to the hard limit; returns the new soft limit.
long raise_fd_limit();
// Grows the process's descriptor table to hold `n` more descriptors now. Call it
// before starting threads that open many fds: growing the table later, while
// several threads share it, waits for an RCU grace period each time (measured:
// 4-20 ms per doubling, 60 ms of a 100 ms no-op restore).
void reserve_fds(size_t n);
// Closes every descriptor in `fds` (-1 entries skipped), each one the caller's
// own: sorted, then one close_range(2) per run of consecutive numbers (Linux
// 5.9; close(2) of each where that fails), so a scan that opened thousands of
// directories closes them in a few calls. Only numbers in `fds` are closed,
// never a descriptor between two of them that `fds` does not hold. Windows:
// each closed. Every entry of `fds` is -1 after.
void close_fds(std::vector<int>& fds);

// Directory part / last component of a path ("a/b/c" -> "a/b", "c").
std::string dir_name(const std::string& path);
std::string base_name(const std::string& path);
// Absolute, symlink-free path of an existing file or directory.
std::string real_path(const std::string& path);

} // namespace hpak
