// bench/rcc_baseline.cpp — hpak-rccbase: a baseline modelled on how rcc's
// holotree stores and restores environments today, for comparison with hpak.
//
//   hpak-rccbase lift SRC LIBDIR [-v]
//       Every regular file of SRC is hashed (SHA-256) and stored gzip level 1
//       at LIBDIR/library/<d[0:2]>/<d[2:4]>/<d[4:6]>/<digest> (via .part +
//       rename, skipping digests already present).  The tree is described in
//       LIBDIR/catalog.txt, one entry per line:
//         <type f|d|l> <octal mode> <size> <len>:<digest|target|-> <len>:<relpath>
//       (length-prefixed fields, so any byte may appear in names).
//   hpak-rccbase restore LIBDIR DEST [-j N] [-v]
//       Creates the directories, then N worker threads (default: number of
//       cores) each "drop" files like rcc's DropFile: open the object, gunzip
//       while hashing (error on digest mismatch), write DEST/<path>.part#<n>,
//       close, rename to the final name, chmod, set a fixed mtime.  Symlinks
//       are recreated.  -v prints the restore time (seconds) on stderr.
// Exit status is non-zero on any error.
#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

constexpr time_t kMotherTime = 1704067200;  // fixed mtime, like rcc's motherTime
constexpr size_t kChunk = 64 * 1024;

struct Entry {
  char type = 'f';
  uint32_t mode = 0;
  uint64_t size = 0;
  std::string field;  // hex digest, symlink target or "-"
  std::string path;   // relative to the tree root
};

[[noreturn]] void fail(const std::string &what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() { if (fd >= 0) close(fd); }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
};

void write_all(int fd, const void *p, size_t n, const std::string &path) {
  const char *c = static_cast<const char *>(p);
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write " + path);
    }
    c += w;
    n -= static_cast<size_t>(w);
  }
}

std::string read_file(const std::string &path) {
  Fd in(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.fd < 0) fail("open " + path);
  std::string data;
  char buf[kChunk];
  for (;;) {
    ssize_t r = read(in.fd, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      fail("read " + path);
    }
    if (r == 0) break;
    data.append(buf, static_cast<size_t>(r));
  }
  return data;
}

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1)
      throw std::runtime_error("EVP sha256 init failed");
  }
  void update(const void *p, size_t n) { EVP_DigestUpdate(ctx_.get(), p, n); }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_DigestFinal_ex(ctx_.get(), md, &len);
    static const char d[] = "0123456789abcdef";
    std::string s;
    for (unsigned i = 0; i < len; ++i) (s += d[md[i] >> 4]) += d[md[i] & 15];
    return s;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX *)> ctx_;
};

std::string object_path(const std::string &libdir, const std::string &digest) {
  return libdir + "/library/" + digest.substr(0, 2) + "/" + digest.substr(2, 2) + "/" +
         digest.substr(4, 2) + "/" + digest;
}

// ---- lift -----------------------------------------------------------------
void store_object(const std::string &libdir, const std::string &digest, const std::string &data) {
  std::string obj = object_path(libdir, digest);
  struct stat st;
  if (stat(obj.c_str(), &st) == 0) return;
  std::filesystem::create_directories(std::filesystem::path(obj).parent_path());
  z_stream zs{};
  if (deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::string gz(deflateBound(&zs, data.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef *>(gz.data());
  zs.avail_out = static_cast<uInt>(gz.size());
  int rc = deflate(&zs, Z_FINISH);
  gz.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed for " + digest);
  std::string part = obj + ".part";
  {
    Fd out(open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (out.fd < 0) fail("create " + part);
    write_all(out.fd, gz.data(), gz.size(), part);
  }
  if (rename(part.c_str(), obj.c_str()) != 0) fail("rename " + part);
}

void walk(const std::string &src, const std::string &rel, const std::string &libdir,
          std::vector<Entry> &out) {
  std::string abs = rel.empty() ? src : src + "/" + rel;
  std::unique_ptr<DIR, int (*)(DIR *)> dir(opendir(abs.c_str()), closedir);
  if (!dir) fail("opendir " + abs);
  std::vector<std::string> names;
  while (dirent *de = readdir(dir.get()))
    if (std::strcmp(de->d_name, ".") && std::strcmp(de->d_name, "..")) names.emplace_back(de->d_name);
  std::sort(names.begin(), names.end());
  for (const auto &name : names) {
    Entry e;
    e.path = rel.empty() ? name : rel + "/" + name;
    std::string p = src + "/" + e.path;
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) fail("lstat " + p);
    e.mode = st.st_mode & 07777;
    if (S_ISDIR(st.st_mode)) {
      e.type = 'd';
      e.field = "-";
      out.push_back(e);
      walk(src, e.path, libdir, out);
    } else if (S_ISLNK(st.st_mode)) {
      std::vector<char> buf(static_cast<size_t>(st.st_size) + 1);
      ssize_t n = readlink(p.c_str(), buf.data(), buf.size());
      if (n < 0) fail("readlink " + p);
      e.type = 'l';
      e.field.assign(buf.data(), static_cast<size_t>(n));
      out.push_back(e);
    } else if (S_ISREG(st.st_mode)) {
      std::string data = read_file(p);
      Sha256 h;
      h.update(data.data(), data.size());
      e.field = h.hex();
      e.size = data.size();
      store_object(libdir, e.field, data);
      out.push_back(e);
    } else {
      std::fprintf(stderr, "hpak-rccbase: skipping special file %s\n", p.c_str());
    }
  }
}

void lift(const std::string &src, const std::string &libdir) {
  std::filesystem::create_directories(libdir + "/library");
  std::vector<Entry> entries;
  walk(src, "", libdir, entries);
  std::string cat = "hpak-rccbase-catalog 1\n";
  char head[64];
  for (const auto &e : entries) {
    std::snprintf(head, sizeof head, "%c %04o %llu ", e.type, e.mode, static_cast<unsigned long long>(e.size));
    cat += head;
    cat += std::to_string(e.field.size()) + ":" + e.field + " ";
    cat += std::to_string(e.path.size()) + ":" + e.path + "\n";
  }
  std::string part = libdir + "/catalog.txt.part";
  {
    Fd out(open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (out.fd < 0) fail("create " + part);
    write_all(out.fd, cat.data(), cat.size(), part);
  }
  if (rename(part.c_str(), (libdir + "/catalog.txt").c_str()) != 0) fail("rename " + part);
}

// ---- restore --------------------------------------------------------------
// No absolute paths, no empty, "." or ".." components.
bool safe_relative(const std::string &p) {
  if (p.empty() || p[0] == '/') return false;
  for (size_t b = 0; b <= p.size();) {
    size_t e = p.find('/', b);
    if (e == std::string::npos) e = p.size();
    std::string_view c(p.data() + b, e - b);
    if (c.empty() || c == "." || c == "..") return false;
    b = e + 1;
  }
  return true;
}

std::vector<Entry> parse_catalog(const std::string &text) {
  std::vector<Entry> out;
  size_t pos = text.find('\n');
  if (text.compare(0, pos, "hpak-rccbase-catalog 1") != 0) throw std::runtime_error("bad catalog header");
  ++pos;
  auto bad = [] { return std::runtime_error("malformed catalog"); };
  auto token = [&](char sep) {
    size_t end = text.find(sep, pos);
    if (end == std::string::npos) throw bad();
    std::string t = text.substr(pos, end - pos);
    pos = end + 1;
    return t;
  };
  auto counted = [&](char sep) {
    size_t len = std::stoull(token(':'));
    if (pos + len >= text.size() || text[pos + len] != sep) throw bad();
    std::string s = text.substr(pos, len);
    pos += len + 1;
    return s;
  };
  while (pos < text.size()) {
    Entry e;
    std::string t = token(' ');
    if (t.size() != 1 || !std::strchr("fdl", t[0])) throw bad();
    e.type = t[0];
    e.mode = static_cast<uint32_t>(std::stoul(token(' '), nullptr, 8));
    e.size = std::stoull(token(' '));
    e.field = counted(' ');
    e.path = counted('\n');
    if (!safe_relative(e.path)) throw std::runtime_error("unsafe path in catalog: " + e.path);
    out.push_back(std::move(e));
  }
  return out;
}

std::atomic<uint64_t> g_part_counter{0};

void drop_file(const std::string &libdir, const std::string &dest, const Entry &e) {
  std::string obj = object_path(libdir, e.field);
  Fd in(open(obj.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.fd < 0) fail("open " + obj);
  std::string sink = dest + "/" + e.path;
  std::string part = sink + ".part#" + std::to_string(g_part_counter.fetch_add(1));
  Fd out(open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (out.fd < 0) fail("create " + part);

  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) throw std::runtime_error("inflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream *)> guard(&zs, inflateEnd);
  Sha256 h;
  std::vector<unsigned char> ibuf(kChunk), obuf(kChunk);
  int rc = Z_OK;
  uint64_t total = 0;
  while (rc != Z_STREAM_END) {
    ssize_t r = read(in.fd, ibuf.data(), ibuf.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      fail("read " + obj);
    }
    if (r == 0) throw std::runtime_error("truncated object " + obj);
    zs.next_in = ibuf.data();
    zs.avail_in = static_cast<uInt>(r);
    while (zs.avail_in > 0 && rc != Z_STREAM_END) {
      zs.next_out = obuf.data();
      zs.avail_out = static_cast<uInt>(obuf.size());
      rc = inflate(&zs, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END) throw std::runtime_error("corrupt object " + obj);
      size_t n = obuf.size() - zs.avail_out;
      h.update(obuf.data(), n);
      write_all(out.fd, obuf.data(), n, part);
      total += n;
    }
  }
  if (h.hex() != e.field || total != e.size)
    throw std::runtime_error("digest mismatch for " + e.path + " (object " + obj + ")");
  if (close(out.fd) != 0) { out.fd = -1; fail("close " + part); }
  out.fd = -1;
  if (rename(part.c_str(), sink.c_str()) != 0) fail("rename " + part);
  if (chmod(sink.c_str(), e.mode) != 0) fail("chmod " + sink);
  const struct timespec ts[2] = {{kMotherTime, 0}, {kMotherTime, 0}};
  if (utimensat(AT_FDCWD, sink.c_str(), ts, 0) != 0) fail("utimensat " + sink);
}

void restore(const std::string &libdir, const std::string &dest, unsigned jobs) {
  std::vector<Entry> entries = parse_catalog(read_file(libdir + "/catalog.txt"));
  std::filesystem::create_directories(dest);
  std::vector<const Entry *> files;
  for (const auto &e : entries) {
    if (e.type == 'd') {
      std::string p = dest + "/" + e.path;
      if (mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) fail("mkdir " + p);
    } else if (e.type == 'f') {
      files.push_back(&e);
    }
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string first_error;
  auto worker = [&] {
    for (size_t i; !failed && (i = next.fetch_add(1)) < files.size();) {
      try {
        drop_file(libdir, dest, *files[i]);
      } catch (const std::exception &ex) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true)) first_error = ex.what();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < jobs; ++t) pool.emplace_back(worker);
  for (auto &t : pool) t.join();
  if (failed) throw std::runtime_error(first_error);
  for (const auto &e : entries) {
    if (e.type != 'l') continue;
    std::string p = dest + "/" + e.path;
    if (symlink(e.field.c_str(), p.c_str()) != 0) fail("symlink " + p);
  }
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (it->type != 'd') continue;
    std::string p = dest + "/" + it->path;
    if (chmod(p.c_str(), it->mode) != 0) fail("chmod " + p);
  }
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: hpak-rccbase lift SRC LIBDIR [-v]\n"
               "       hpak-rccbase restore LIBDIR DEST [-j N] [-v]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char **argv) {
  std::vector<std::string> pos;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-v") verbose = true;
    else if (a == "-j" && i + 1 < argc) jobs = static_cast<unsigned>(std::max(1, std::atoi(argv[++i])));
    else if (a.rfind("-j", 0) == 0 && a.size() > 2) jobs = static_cast<unsigned>(std::max(1, std::atoi(a.c_str() + 2)));
    else if (!a.empty() && a[0] == '-') usage();
    else pos.push_back(a);
  }
  if (pos.size() != 3 || (pos[0] != "lift" && pos[0] != "restore")) usage();
  try {
    auto t0 = std::chrono::steady_clock::now();
    if (pos[0] == "lift") lift(pos[1], pos[2]);
    else restore(pos[1], pos[2], jobs);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (verbose) std::fprintf(stderr, "%s: %.6f s\n", pos[0].c_str(), secs);
  } catch (const std::exception &ex) {
    std::fprintf(stderr, "hpak-rccbase: %s\n", ex.what());
    return 1;
  }
  return 0;
}
