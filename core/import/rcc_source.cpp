#include "core/import/rcc_source.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <zlib.h>
#include <zstd.h>

#include "base/os/sys.hpp"
#include "core/import/zip_api.hpp"
#include "core/store/dir_stream.hpp"
#include "base/os/file.hpp"

namespace hpak {

std::string RccSource::object_name(const std::string& hex) {
  return "library/" + hex.substr(0, 2) + "/" + hex.substr(2, 2) + "/" + hex.substr(4, 2) + "/" + hex;
}

namespace {

bool is_catalog_file_name(const std::string& n) {
  if (n.empty() || n[0] == '.' || n == "compress.no") return false;
  return !(n.size() > 5 && n.compare(n.size() - 5, 5, ".info") == 0);
}

[[noreturn]] void too_large(const std::string& what, uint64_t cap) {
  throw RccTooLarge(what + " is larger than its catalog allows (" + std::to_string(cap) + " bytes at most)", cap);
}

// ---- gzip / zstd / raw --------------------------------------------------------

// Where a decoder writes: a buffer grown by doubling up to cap + 1 bytes
// (first `first` bytes), or, when only counting, a small scratch buffer
// reused. Past `cap` bytes in all it throws RccTooLarge.
class Sink {
public:
  Sink(bool keep, uint64_t cap, size_t first, const std::string& what) : keep_(keep), cap_(cap), what_(what) {
    buf_.resize(size_t(std::min<uint64_t>(cap + 1, keep ? std::max<size_t>(first, 4096) : size_t(256) << 10)));
  }
  // Room to decode into (never empty).
  uint8_t* room() {
    if (pos_ == buf_.size()) {
      if (keep_) buf_.resize(size_t(std::min<uint64_t>(cap_ + 1, uint64_t(buf_.size()) * 2)));
      else pos_ = 0;
    }
    return buf_.data() + pos_;
  }
  size_t room_size() const { return buf_.size() - pos_; }
  void wrote(size_t n) {
    pos_ += n;
    total_ += n;
    if (total_ > cap_) too_large(what_, cap_);
  }
  uint64_t total() const { return total_; }
  Bytes take() {
    buf_.resize(keep_ ? pos_ : 0);
    return std::move(buf_);
  }

private:
  bool keep_;
  uint64_t cap_, total_ = 0;
  size_t pos_ = 0;
  const std::string& what_;
  Bytes buf_;
};

void gunzip(ByteSpan in, Sink& out, const std::string& what) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) throw Error("unable to start gzip decoding for " + what);
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, inflateEnd);
  zs.next_in = const_cast<Bytef*>(in.data());
  size_t in_left = in.size();
  auto fail = [&](const std::string& why) { throw RccRefused(what + " is not valid gzip data: " + why); };
  while (true) {
    uInt in_chunk = uInt(std::min<size_t>(in_left, 1u << 30));
    zs.avail_in = in_chunk;
    zs.next_out = out.room();
    zs.avail_out = uInt(std::min<size_t>(out.room_size(), 1u << 30));
    uInt before_out = zs.avail_out;
    int rc = inflate(&zs, Z_NO_FLUSH);
    in_left -= in_chunk - zs.avail_in;
    out.wrote(before_out - zs.avail_out);
    if (rc == Z_STREAM_END) {
      // Members may follow one another (Go reads them as one stream).
      if (in_left == 0) break;
      if (in_left < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b) fail("trailing bytes after the gzip stream");
      inflateReset(&zs);
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_out != 0) fail("truncated");
    if (rc != Z_OK && rc != Z_BUF_ERROR) fail(zs.msg ? zs.msg : "corrupt");
  }
}

void unzstd(ByteSpan in, Sink& out, const std::string& what) {
  ZSTD_DCtx* dc = ZSTD_createDCtx();
  if (!dc) throw Error("unable to start zstd decoding for " + what);
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> guard(dc, ZSTD_freeDCtx);
  // zstd's default window limit (128 MiB) bounds what a hostile frame header can make it allocate.
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  size_t last = 1;
  while (ib.pos < ib.size || last != 0) {
    ZSTD_outBuffer ob{out.room(), out.room_size(), 0};
    size_t before = ib.pos;
    last = ZSTD_decompressStream(dc, &ob, &ib);
    if (ZSTD_isError(last)) throw RccRefused(what + " is not valid zstd data: " + ZSTD_getErrorName(last));
    out.wrote(ob.pos);
    if (ib.pos == ib.size && last != 0 && ob.pos == 0 && ib.pos == before) throw RccRefused(what + " is not valid zstd data: truncated");
  }
}

// Decodes `stored` by its magic into `out`.
void decode_into(ByteSpan stored, Sink& out, const std::string& what) {
  static const uint8_t kZstd[4] = {0x28, 0xb5, 0x2f, 0xfd};
  if (stored.size() >= 2 && stored[0] == 0x1f && stored[1] == 0x8b) return gunzip(stored, out, what);
  if (stored.size() >= 4 && std::equal(kZstd, kZstd + 4, stored.begin())) return unzstd(stored, out, what);
  std::copy(stored.begin(), stored.begin() + ptrdiff_t(std::min(stored.size(), out.room_size())), out.room());
  out.wrote(stored.size());
}

// ---- directory ------------------------------------------------------------------

class DirSource : public RccSource {
public:
  explicit DirSource(const std::string& path) {
    where_ = path;
    int fd = os::open_path(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw_errno("unable to open '" + path + "'");
    root_ = Fd(fd);
    os::FileStat st;
    if (os::stat_at(root_.get(), "catalog", st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
      throw Error("'" + path + "' is not an rcc hololib (no catalog/ directory)");
  }

  bool compress_no() const override {
    os::FileStat st;
    return os::stat_at(root_.get(), "catalog/compress.no", st, AT_SYMLINK_NOFOLLOW) == 0;
  }

  std::vector<std::string> catalog_names() const override {
    int fd = os::open_at(root_.get(), "catalog", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) throw_errno("unable to open '" + where_ + "/catalog'");
    store::DirStream d(Fd(fd), where_ + "/catalog");
    std::vector<std::string> out;
    while (auto n = d.next()) {
      std::string name(*n);
      if (!is_catalog_file_name(name)) continue;
      os::FileStat st;
      if (os::stat_at(d.fd(), name.c_str(), st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) continue;
      out.push_back(name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  Bytes read_catalog(const std::string& name, uint64_t cap) const override {
    auto b = read_member("catalog/" + name, cap);
    if (!b) throw RccRefused("'" + where_ + "/catalog/" + name + "' vanished while being read");
    return std::move(*b);
  }

  bool has_object(const std::string& hex) const override {
    os::FileStat st;
    return os::stat_at(root_.get(), object_name(hex).c_str(), st, AT_SYMLINK_NOFOLLOW) == 0;
  }

  std::optional<Bytes> read_object(const std::string& hex, uint64_t cap) const override {
    return read_member(object_name(hex), cap);
  }

private:
  Fd root_;

  std::optional<Bytes> read_member(const std::string& rel, uint64_t cap) const {
    std::string shown = "'" + where_ + "/" + rel + "'";
    int fd = os::open_at(root_.get(), rel.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      if (errno == ENOENT) return std::nullopt;
      if (errno == ELOOP) throw RccRefused(shown + " is a symlink");
      throw_errno("unable to open " + shown);
    }
    Fd guard(fd);
    os::FileStat st;
    if (os::fstat(fd, st) != 0) throw_errno("unable to stat " + shown);
    if (!S_ISREG(st.st_mode)) throw RccRefused(shown + " is not a regular file");
    if (uint64_t(st.st_size) > cap) too_large(shown, cap);
    Bytes b = read_fd(fd, shown);
    if (b.size() > cap) too_large(shown, cap);
    return b;
  }
};

// ---- zip --------------------------------------------------------------------------

class ZipSource : public RccSource {
public:
  explicit ZipSource(const std::string& path) {
    where_ = path;
    int err = 0;
    za_ = zip::api().open(path.c_str(), ZIP_RDONLY, &err);
    if (!za_) {
      zip_error_t ze;
      zip::api().error_init_with_code(&ze, err);
      std::string why = zip::api().error_strerror(&ze);
      zip::api().error_fini(&ze);
      throw Error("'" + path + "' is neither an rcc hololib directory nor a zip file: " + why);
    }
    try {
      index_entries();
    } catch (...) {
      zip::api().discard(za_);
      throw;
    }
  }
  ~ZipSource() override { zip::api().discard(za_); }

  bool compress_no() const override { return entries_.count("catalog/compress.no") != 0; }

  std::vector<std::string> catalog_names() const override {
    std::vector<std::string> out;
    for (auto& [name, idx] : entries_) {
      if (name.rfind("catalog/", 0) != 0) continue;
      std::string leaf = name.substr(8);
      if (leaf.find('/') != std::string::npos || !is_catalog_file_name(leaf)) continue;
      out.push_back(leaf);
    }
    return out; // std::map: sorted
  }

  Bytes read_catalog(const std::string& name, uint64_t cap) const override {
    auto b = read_entry("catalog/" + name, cap);
    if (!b) throw RccRefused("no 'catalog/" + name + "' in '" + where_ + "'");
    return std::move(*b);
  }

  bool has_object(const std::string& hex) const override { return entries_.count(object_name(hex)) != 0; }

  std::optional<Bytes> read_object(const std::string& hex, uint64_t cap) const override {
    return read_entry(object_name(hex), cap);
  }

private:
  zip_t* za_ = nullptr;
  std::map<std::string, zip_uint64_t> entries_;
  mutable std::mutex mu_; // libzip: one thread at a time per archive

  void index_entries() {
    zip_int64_t n = zip::api().get_num_entries(za_, 0);
    for (zip_int64_t i = 0; i < n; i++) {
      const char* raw = zip::api().get_name(za_, zip_uint64_t(i), ZIP_FL_ENC_RAW);
      if (!raw) throw RccRefused("zip '" + where_ + "' has an unreadable entry name (entry " + std::to_string(i) + ")");
      std::string name = raw;
      std::replace(name.begin(), name.end(), '\\', '/');
      std::string why = hostile_name(name);
      if (why.empty() && is_symlink(zip_uint64_t(i))) why = "is a symlink";
      if (!why.empty()) throw RccRefused("zip entry '" + shown(raw) + "' in '" + where_ + "' " + why + ": refused");
      if (!name.empty() && name.back() == '/') continue; // a directory entry
      if (!entries_.emplace(name, zip_uint64_t(i)).second)
        throw RccRefused("zip entry '" + shown(raw) + "' appears twice in '" + where_ + "': refused");
    }
  }

  static std::string shown(const std::string& s) {
    std::string out;
    for (unsigned char c : s.substr(0, 200)) out += (c < 0x20 || c == 0x7f) ? '?' : char(c);
    return out;
  }

  static std::string hostile_name(const std::string& name) {
    if (name.empty()) return "has an empty name";
    if (name[0] == '/') return "has an absolute name";
    if (name.size() >= 2 && name[1] == ':') return "has an absolute name (drive letter)";
    if (name.find('\0') != std::string::npos) return "has a NUL byte in its name";
    size_t start = 0;
    while (start <= name.size()) {
      size_t slash = name.find('/', start);
      std::string comp = name.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      if (comp == "..") return "names a parent directory ('..')";
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    return {};
  }

  bool is_symlink(zip_uint64_t i) const {
    zip_uint8_t opsys = 0;
    zip_uint32_t attr = 0;
    if (zip::api().file_get_external_attributes(za_, i, 0, &opsys, &attr) != 0) return false;
    return opsys == ZIP_OPSYS_UNIX && ((attr >> 16) & S_IFMT) == S_IFLNK;
  }

  std::optional<Bytes> read_entry(const std::string& name, uint64_t cap) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) return std::nullopt;
    std::string shown_name = "'" + name + "' in '" + where_ + "'";
    std::lock_guard lk(mu_);
    zip_stat_t st;
    zip::api().stat_init(&st);
    if (zip::api().stat_index(za_, it->second, 0, &st) != 0) throw RccRefused("unable to read " + shown_name + ": " + zip::api().strerror(za_));
    if ((st.valid & ZIP_STAT_SIZE) && st.size > cap) too_large(shown_name, cap);
    zip_file_t* zf = zip::api().fopen_index(za_, it->second, 0);
    if (!zf) throw RccRefused("unable to read " + shown_name + ": " + zip::api().strerror(za_));
    Bytes out(size_t(std::min<uint64_t>(cap + 1, (st.valid & ZIP_STAT_SIZE) ? st.size + 1 : 1 << 16)));
    size_t got = 0;
    while (true) {
      if (got == out.size()) {
        if (out.size() > cap) {
          zip::api().fclose(zf);
          too_large(shown_name, cap);
        }
        out.resize(size_t(std::min<uint64_t>(cap + 1, uint64_t(out.size()) * 2)));
      }
      zip_int64_t n = zip::api().fread(zf, out.data() + got, out.size() - got);
      if (n < 0) {
        std::string why = zip::api().error_strerror(zip::api().file_get_error(zf));
        zip::api().fclose(zf);
        throw RccRefused("unable to read " + shown_name + ": " + why);
      }
      if (n == 0) break;
      got += size_t(n);
    }
    zip::api().fclose(zf);
    if (got > cap) too_large(shown_name, cap);
    out.resize(got);
    return out;
  }
};

} // namespace

Bytes rcc_decode(ByteSpan stored, uint64_t cap, const std::string& what) {
  Sink out(true, cap, stored.size() * 4, what);
  decode_into(stored, out, what);
  return out.take();
}

uint64_t rcc_decoded_size(ByteSpan stored, uint64_t cap, const std::string& what) {
  Sink out(false, cap, 0, what);
  decode_into(stored, out, what);
  return out.total();
}

std::unique_ptr<RccSource> RccSource::open(const std::string& path) {
  os::FileStat st;
  if (os::stat_path(path.c_str(), st) != 0) throw_errno("unable to open '" + path + "'");
  if (S_ISDIR(st.st_mode)) return std::make_unique<DirSource>(path);
  if (!S_ISREG(st.st_mode)) throw Error("'" + path + "' is neither an rcc hololib directory nor a zip file");
  return std::make_unique<ZipSource>(path);
}

} // namespace hpak
