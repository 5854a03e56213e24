// File-descriptor, mmap and atomic-publish helpers.
//
// `Fd` owns a descriptor. `MappedFile` maps a whole file read-only (packs and
// indexes are read this way: random access costs no syscall). `AtomicFile`
// writes to a unique temp name in the destination directory and publishes with
// rename(2) on commit(); if it is destroyed uncommitted, the temp file is
// removed, so no reader ever sees a partial file under the final name.
#pragma once

#include <sys/stat.h>

#include <string>
#include <sys/types.h>

#include "core/util/bytes.hpp"

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

class MappedFile {
public:
  MappedFile() = default;
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  ByteSpan bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // The fstat of the file mapped (owner, inode, times: see core/pack_trust.hpp).
  const struct stat& stat() const { return st_; }
  // Advise the kernel of the access pattern (MADV_SEQUENTIAL / MADV_RANDOM / WILLNEED).
  void advise_sequential() const;
  void advise_random() const;
  void advise_willneed() const;

private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
  struct stat st_ {};
};

Bytes read_file(const std::string& path);
Bytes read_fd(int fd, const std::string& what); // to EOF
// Writes all of `data` (retrying short writes and EINTR); false with errno set on error.
bool write_full(int fd, ByteSpan data);
void write_all(int fd, ByteSpan data, const std::string& what);
void pwrite_all(int fd, ByteSpan data, off_t off, const std::string& what);
bool path_exists(const std::string& path);

class AtomicFile {
public:
  // Creates `<dir of final>/.tmp-<name>-<random>` with `mode` (subject to umask).
  explicit AtomicFile(std::string final_path, mode_t mode = 0644);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  int fd() const { return fd_.get(); }
  const std::string& temp_path() const { return temp_; }
  const std::string& final_path() const { return final_; }
  void write(ByteSpan data) { write_all(fd_.get(), data, temp_); }
  // fsync (optional), close and rename into place. If `no_replace`, fail with
  // EEXIST instead of replacing an existing file (link + unlink: NFS-safe).
  void commit(bool fsync_first = false, bool no_replace = false);
  // Rename to a different final name (e.g. a name known only after hashing).
  void commit_as(const std::string& final_path, bool fsync_first = false);

private:
  std::string final_;
  std::string temp_;
  Fd fd_;
  bool committed_ = false;
};

// Raises RLIMIT_NOFILE's soft limit to the hard limit; returns the new soft limit.
long raise_fd_limit();
// Grows the process's descriptor table to hold `n` more descriptors now. Call it
// before starting threads that open many fds: growing the table later, while
// several threads share it, waits for an RCU grace period each time (measured:
// 4-20 ms per doubling, 60 ms of a 100 ms no-op restore).
void reserve_fds(size_t n);

// Directory part / last component of a path ("a/b/c" -> "a/b", "c").
std::string dir_name(const std::string& path);
std::string base_name(const std::string& path);
// Absolute, symlink-free path of an existing file or directory.
std::string real_path(const std::string& path);

} // namespace hpak
