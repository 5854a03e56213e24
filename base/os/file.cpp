// base/os/file.hpp on every platform, written only through the os seam
// (base/os/sys.hpp). What differs by platform is in base/os/linux/file.cpp and
// base/os/windows/file.cpp: process_gone, the descriptor limit (raise_fd_limit,
// reserve_fds) and real_path; the guard of mappings is base/os/map_guard.hpp.
#include "base/os/file.hpp"

#include "base/hash.hpp"
#include "base/os/map_guard.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace hpak {

void Fd::reset(int fd) {
  if (fd_ >= 0) os::close(fd_);
  fd_ = fd;
}

Fd open_read(const std::string& path) {
  int fd = os::open_path(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("unable to open '" + path + "'");
  return Fd(fd);
}

static const char* file_type_name(os::Mode m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  return "a file of an unknown type";
}

void throw_open_error(const std::string& path, int err, Follow follow) {
  os::FileStat lst;
  // O_NOFOLLOW on a symlink fails with ELOOP; say what is there.
  if (err == ELOOP && follow == Follow::NoLinks && os::lstat_path(path.c_str(), lst) == 0 && S_ISLNK(lst.st_mode))
    throw Error("refusing '" + path + "': it is a symbolic link, not a regular file");
  throw_errno("unable to open '" + path + "'", err);
}

void require_regular(int fd, const std::string& path, uint64_t max_size, os::FileStat* st_out) {
  os::FileStat st;
  if (os::fstat(fd, st) != 0) throw_errno("unable to stat '" + path + "'");
  if (!S_ISREG(st.st_mode)) throw Error("refusing '" + path + "': it is " + file_type_name(st.st_mode) + ", not a regular file");
  if (uint64_t(st.st_size) > max_size)
    throw Error("refusing '" + path + "': it has " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_size) +
                " such a file can have");
  if (st_out) *st_out = st;
}

static Fd open_regular_impl(const std::string& path, Follow follow, uint64_t max_size, os::FileStat* st_out, bool missing_ok) {
  int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (follow == Follow::NoLinks ? O_NOFOLLOW : 0);
  int fd = os::open_path(path.c_str(), flags);
  if (fd < 0) {
    if (errno == ENOENT && missing_ok) return Fd();
    throw_open_error(path, errno, follow);
  }
  Fd guard(fd);
  require_regular(fd, path, max_size, st_out);
  return guard;
}

Fd open_regular(const std::string& path, Follow follow, uint64_t max_size, os::FileStat* st_out) {
  return open_regular_impl(path, follow, max_size, st_out, false);
}

Fd open_regular_if_exists(const std::string& path, Follow follow, uint64_t max_size, os::FileStat* st_out) {
  return open_regular_impl(path, follow, max_size, st_out, true);
}

Bytes read_regular(const std::string& path, Follow follow, uint64_t max_size) {
  Fd fd = open_regular(path, follow, max_size);
  return read_fd_bounded(fd.get(), path, max_size);
}

// Reads `fd` to EOF through a buffer of N bytes, handing each chunk read to
// `take(data, n)`; a read interrupted by a signal is retried.
template <size_t N, class Take>
static void read_chunks(int fd, const std::string& what, Take&& take) {
  uint8_t buf[N];
  while (true) {
    long n = os::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("unable to read '" + what + "'");
    }
    if (n == 0) return;
    take(buf, size_t(n));
  }
}

// Reads straight into the buffer, sized from fstat for a regular file (one
// read of the whole file, one more to see its end), growing otherwise; at most
// max_size bytes are ever held, one more is read to see that there are more.
Bytes read_fd_bounded(int fd, const std::string& what, uint64_t max_size) {
  const uint64_t cap = max_size == UINT64_MAX ? max_size : max_size + 1;
  os::FileStat st;
  uint64_t first = 65536;
  if (os::fstat(fd, st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0) first = uint64_t(st.st_size) + 1;
  Bytes out;
  os::resize_faulted(out, size_t(std::min(first, cap)));
  size_t len = 0;
  while (true) {
    if (len == out.size()) {
      if (out.size() >= cap)
        throw Error("refusing '" + what + "': it has more than the " + std::to_string(max_size) + " bytes such a file can have");
      out.resize(size_t(std::min<uint64_t>(cap, uint64_t(out.size()) * 2)));
    }
    long n = os::read(fd, out.data() + len, out.size() - len);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("unable to read '" + what + "'");
    }
    if (n == 0) break;
    len += size_t(n);
  }
  out.resize(len);
  return out;
}

MappedFile::MappedFile(const std::string& path, Follow follow, uint64_t max_size) : path_(path) {
  os::FileStat st;
  Fd fd = open_regular(path, follow, max_size, &st);
  st_ = st;
  size_ = size_t(st.st_size);
  if (size_ == 0) return;
  void* p = os::map_read(fd.get(), size_);
  if (!p) throw_errno("unable to map '" + path + "'");
  data_ = static_cast<const uint8_t*>(p);
  guard_ = os::guard_mapping(data_, size_);
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::unmap() {
  if (!data_) return;
  os::unguard_mapping(guard_);
  os::unmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  guard_ = -1;
}

bool MappedFile::shrunk() const { return os::mapping_faulted(guard_); }

MappedFile::MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_), guard_(o.guard_), path_(std::move(o.path_)), st_(o.st_) {
  o.data_ = nullptr;
  o.size_ = 0;
  o.guard_ = -1;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    unmap();
    data_ = o.data_;
    size_ = o.size_;
    guard_ = o.guard_;
    path_ = std::move(o.path_);
    st_ = o.st_;
    o.data_ = nullptr;
    o.size_ = 0;
    o.guard_ = -1;
  }
  return *this;
}

void MappedFile::advise_sequential() const {
  if (data_) os::advise_memory(const_cast<uint8_t*>(data_), size_, MADV_SEQUENTIAL);
}
void MappedFile::advise_random() const {
  if (data_) os::advise_memory(const_cast<uint8_t*>(data_), size_, MADV_RANDOM);
}
void MappedFile::advise_willneed() const {
  if (data_) os::advise_memory(const_cast<uint8_t*>(data_), size_, MADV_WILLNEED);
}

void MappedFile::release(size_t offset, size_t len) const {
  if (!data_ || offset >= size_) return;
  len = std::min(len, size_ - offset);
  const uintptr_t page = os::page_size(), from = (uintptr_t(data_) + offset + page - 1) & ~(page - 1),
                  to = offset + len == size_ ? uintptr_t(data_) + size_ : (uintptr_t(data_) + offset + len) & ~(page - 1);
  if (to > from) os::advise_memory(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

Bytes read_file(const std::string& path) {
  Fd fd = open_read(path);
  return read_fd(fd.get(), path);
}

Bytes read_fd(int fd, const std::string& what) {
  Bytes out;
  os::FileStat st;
  if (os::fstat(fd, st) == 0 && S_ISREG(st.st_mode)) out.reserve(size_t(st.st_size));
  read_chunks<65536>(fd, what, [&](const uint8_t* buf, size_t n) { out.insert(out.end(), buf, buf + n); });
  return out;
}

bool write_full(int fd, ByteSpan data) {
  const uint8_t* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    long n = os::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= size_t(n);
  }
  return true;
}

long pread_full(int fd, std::span<uint8_t> out, uint64_t offset) {
  size_t got = 0;
  while (got < out.size()) {
    long n = os::pread(fd, out.data() + got, out.size() - got, os::Off(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    got += size_t(n);
  }
  return long(got);
}

void write_all(int fd, ByteSpan data, const std::string& what) {
  if (!write_full(fd, data)) throw_errno("unable to write '" + what + "'");
}

void pwrite_all(int fd, ByteSpan data, os::Off off, const std::string& what) {
  const uint8_t* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    long n = os::pwrite(fd, p, left, off);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("unable to write '" + what + "'");
    }
    p += n;
    off += n;
    left -= size_t(n);
  }
}

bool path_exists(const std::string& path) {
  os::FileStat st;
  return os::lstat_path(path.c_str(), st) == 0;
}

static std::string random_suffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}() ^ uint64_t(os::pid()) << 32};
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

// 8 hex digits of the SHA-256 of this host's name: in temp names, to tell
// this host's writers from others' (on a shared file system).
static const std::string& host_tag() {
  static const std::string tag = [] {
    char host[256] = {};
    os::host_name(host, sizeof host - 1);
    return to_hex(sha256(ByteSpan(reinterpret_cast<const uint8_t*>(host), strlen(host)))).substr(0, 8);
  }();
  return tag;
}

static std::string writer_suffix() { return "-w" + std::to_string(os::pid()) + "h" + host_tag(); }

std::optional<TempWriter> temp_writer_of(std::string_view name) {
  if (name.substr(0, kTempPrefix.size()) != kTempPrefix) return std::nullopt;
  for (size_t at = name.rfind("-w"); at != std::string_view::npos; at = at == 0 ? std::string_view::npos : name.rfind("-w", at - 1)) {
    size_t digits = at + 2, d = digits;
    while (d < name.size() && isdigit(static_cast<unsigned char>(name[d]))) d++;
    if (d == digits || d - digits > 10 || d >= name.size() || name[d] != 'h') continue;
    std::string_view tag = name.substr(d + 1, 8);
    if (tag.size() != 8 || tag.find_first_not_of("0123456789abcdef") != std::string_view::npos) continue;
    size_t end = d + 9;
    if (end != name.size() && name[end] != '.') continue;
    return TempWriter{std::stol(std::string(name.substr(digits, d - digits))), tag == host_tag()};
  }
  return std::nullopt;
}

bool unlocked_regular_file(const std::string& path) {
  int fd = os::open_path(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return false;
  Fd guard(fd);
  os::FileStat st;
  if (os::fstat(fd, st) != 0 || !S_ISREG(st.st_mode)) return false;
  return os::flock(fd, LOCK_EX | LOCK_NB) == 0; // released with the descriptor
}

AtomicFile::AtomicFile(std::string final_path, os::Mode mode) : final_(std::move(final_path)) {
  for (int attempt = 0; attempt < 16; attempt++) {
    temp_ = dir_name(final_) + "/" + std::string(kTempPrefix) + base_name(final_) + "-" + random_suffix() + writer_suffix();
    int fd = os::open_path(temp_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0) {
      fd_.reset(fd);
      os::flock(fd, LOCK_EX | LOCK_NB); // best effort: where locks do not work, sweeps go by age alone
      return;
    }
    if (errno != EEXIST) throw_errno("unable to create '" + temp_ + "'");
  }
  throw Error("unable to create a temporary file beside '" + final_ + "'");
}

AtomicFile::~AtomicFile() {
  if (!committed_) os::unlink_path(temp_.c_str()); // while still locked: no sweep sees it unowned
}

bool fsync_enabled() {
  static const bool enabled = [] {
    const char* v = getenv("HPAK_FSYNC");
    return !(v && std::string(v) == "0");
  }();
  return enabled;
}

void sync_fd(int fd, const std::string& what) {
  if (!fsync_enabled()) return;
  while (os::fsync(fd) != 0)
    if (errno != EINTR) throw_errno("unable to sync '" + what + "'");
}

void sync_path(const std::string& path) {
  if (!fsync_enabled()) return;
  sync_fd(open_read(path).get(), path);
}

void sync_dir(const std::string& dir) {
  if (!fsync_enabled()) return;
  int fd = os::open_path(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_errno("unable to open directory '" + dir + "'");
  Fd guard(fd);
  while (os::fsync(fd) != 0) {
    if (errno == EINTR) continue;
    if (errno == EINVAL) return; // the file system cannot sync a directory
    throw_errno("unable to sync directory '" + dir + "'");
  }
}

void AtomicFile::commit(bool durable, bool no_replace) {
  if (durable) sync_fd(fd_.get(), temp_);
  lock_.reset(os::dup(fd_.get())); // the flock stays with the file description until we are destroyed
  if (os::close(fd_.release()) != 0) throw_errno("unable to close '" + temp_ + "'");
  if (no_replace) {
    // link(2) fails with EEXIST instead of replacing, and (unlike renameat2's
    // RENAME_NOREPLACE) works on NFS.
    if (os::link_path(temp_.c_str(), final_.c_str()) != 0) throw_errno("unable to publish '" + final_ + "'");
    os::unlink_path(temp_.c_str());
  } else if (os::rename_path(temp_.c_str(), final_.c_str()) != 0) {
    throw_errno("unable to publish '" + final_ + "'");
  }
  committed_ = true;
  if (durable) sync_dir(dir_name(final_));
}

void AtomicFile::commit_as(const std::string& final_path, bool sync_data) {
  final_ = final_path;
  if (sync_data) sync_fd(fd_.get(), temp_);
  commit();
}

std::string dir_name(const std::string& path) {
  auto pos = path.find_last_of(os::kPathSeparators);
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

std::string base_name(const std::string& path) {
  auto pos = path.find_last_of(os::kPathSeparators);
  return pos == std::string::npos ? path : path.substr(pos + 1);
}

} // namespace hpak
