#include "core/remote/dir/dir_backend.hpp"
#include "base/os/sys.hpp"


#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/error.hpp"
#include "base/hash.hpp"
#include "core/remote/remote_layout.hpp"
#include "core/store/dir_stream.hpp"

namespace hpak::remote {

namespace {

constexpr size_t kChunk = 4 << 20;

bool denied(int err) { return err == EACCES || err == EPERM; }

// A failed read of `path`: the RemoteError of its kind, with the message of `e`.
[[noreturn]] void read_failed(const std::string& path, const Error& e) {
  auto* se = dynamic_cast<const SystemError*>(&e);
  int err = se ? se->code() : 0;
  RemoteErrc kind = denied(err) ? RemoteErrc::Denied : err == ENOENT ? RemoteErrc::NotFound : RemoteErrc::Protocol;
  throw_remote(kind, path, err ? strerror(err) : e.what(), e.what());
}

// A failed write: EACCES and EPERM are RemoteDenied; anything else (a full
// disk) stays the system error it is.
[[noreturn]] void write_failed(const std::string& path, const SystemError& e) {
  if (denied(e.code())) throw RemoteDenied(path, strerror(e.code()), e.what());
  throw SystemError(e);
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// Percent-decodes a file:// path; false on a '%' without two hex digits or a NUL.
bool percent_decode(const std::string& in, std::string& out) {
  auto hex = [](char c) { return std::isxdigit((unsigned char)c) != 0; };
  for (size_t i = 0; i < in.size(); i++) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size() || !hex(in[i + 1]) || !hex(in[i + 2])) return false;
    char c = char(std::stoi(in.substr(i + 1, 2), nullptr, 16));
    if (c == 0) return false;
    out += c;
    i += 2;
  }
  return true;
}

} // namespace

std::string parse_dir_url(const std::string& rest, bool as_url, RemoteUrl& url) {
  if (!as_url) {
    url.path = rest;
    return "";
  }
  std::string path = starts_with(rest, "localhost/") ? rest.substr(9) : rest;
  if (path.empty()) return "no directory";
  if (path[0] != '/') return "a host ('" + path.substr(0, path.find('/')) + "'): file:// URLs name local directories";
  if (!percent_decode(path, url.path)) return "a '%' not followed by two hex digits, or an encoded NUL";
  url.path = strip_trailing_slashes(url.path);
  return "";
}

std::unique_ptr<Backend> open_dir(const RemoteUrl& url, const BackendOptions&, Access access) {
  return std::make_unique<DirBackend>(url.path, access);
}

DirBackend::DirBackend(std::string dir, Access access) : dir_(std::move(dir)) {
  if (access != Access::Write) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw Error("unable to create directory '" + dir_ + "': " + ec.message());
  for (const char* folder : layout::kFolders) make_parents(std::string(folder) + "/");
}

std::string DirBackend::where(const std::string& name) const { return (dir_ == "/" ? "" : dir_) + "/" + name; }

void DirBackend::get_many(const std::vector<GetRequest>& reqs, const std::function<void(size_t, Bytes&)>& done) {
  for (size_t i = 0; i < reqs.size(); i++) {
    Bytes body = read(reqs[i]);
    done(i, body);
  }
}

Bytes DirBackend::read(const GetRequest& r) {
  const std::string path = where(r.name);
  Fd fd;
  try {
    fd = open_regular_if_exists(path, Follow::NoLinks, r.ranged ? kAnySize : r.max_size);
  } catch (const Error& e) {
    read_failed(path, e);
  }
  if (!fd) throw RemoteNotFound(path, "no such file", "unable to read '" + path + "': no such file");
  stats_.requests++;
  Bytes body = r.ranged ? read_range(r, fd.get()) : read_whole(r, fd.get());
  stats_.bytes += body.size();
  return body;
}

// The whole file, into memory or the request's sink, at most max_size bytes
// (what the sink throws passes as it is).
Bytes DirBackend::read_whole(const GetRequest& r, int fd) {
  const std::string path = where(r.name);
  if (!r.sink) {
    try {
      return read_fd_bounded(fd, path, r.max_size);
    } catch (const Error& e) {
      read_failed(path, e);
    }
  }
  r.sink->start();
  Bytes chunk(kChunk);
  for (uint64_t got = 0;;) {
    long n = os::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) read_failed(path, SystemError("unable to read '" + path + "': " + strerror(errno), errno));
    if (n == 0) return {};
    if (uint64_t(n) > r.max_size - got)
      read_failed(path, Error("refusing '" + path + "': it has more than the " + std::to_string(r.max_size) + " bytes such a file can have"));
    got += uint64_t(n);
    r.sink->data(ByteSpan(chunk.data(), size_t(n)));
  }
}

// Bytes [offset, offset + length) of the file: all of them, or RemoteProtocol.
Bytes DirBackend::read_range(const GetRequest& r, int fd) {
  const std::string path = where(r.name);
  Bytes out(r.length);
  const long n = pread_full(fd, out, r.offset);
  if (n < 0) read_failed(path, SystemError("unable to read '" + path + "': " + strerror(errno), errno));
  if (size_t(n) < out.size()) {
    std::string why = "the file ends at byte " + std::to_string(r.offset + uint64_t(n)) + ", inside the range asked for";
    throw RemoteProtocol(path, why,
                         "unable to read '" + path + "' (bytes " + std::to_string(r.offset) + "-" +
                             std::to_string(r.offset + r.length - 1) + "): " + why);
  }
  return out;
}

// The folders of `name` below DIR, created when missing (each new one made
// durable in its parent).
void DirBackend::make_parents(const std::string& name) {
  for (size_t slash = name.find('/'); slash != std::string::npos; slash = name.find('/', slash + 1)) {
    std::string path = where(name.substr(0, slash));
    if (os::mkdir_path(path.c_str(), 0755) == 0) {
      sync_dir(dir_name(path));
      continue;
    }
    if (errno == EEXIST) continue;
    SystemError e("unable to create directory '" + path + "': " + strerror(errno), errno);
    write_failed(path, e);
  }
}

void DirBackend::put(const std::string& name, ByteSpan bytes, const Digest* want) {
  const std::string path = where(name);
  try {
    make_parents(name);
    AtomicFile out(path, 0644);
    Sha256 sha;
    Bytes copy; // `bytes` may map another writer's file: each chunk is read once, then hashed and written
    for (size_t off = 0; off < bytes.size(); off += kChunk) {
      ByteSpan piece = bytes.subspan(off, std::min(kChunk, bytes.size() - off));
      copy.assign(piece.begin(), piece.end());
      if (want) sha.update(copy);
      out.write(copy);
    }
    if (want && sha.finish() != *want) throw DigestMismatch("'" + path + "' does not match the SHA-256 given for it: not written");
    out.commit(/*durable=*/true);
  } catch (const SystemError& e) {
    write_failed(path, e);
  }
  stats_.requests++;
}

std::vector<RemoteEntry> DirBackend::list(const std::string& prefix) {
  std::vector<RemoteEntry> out;
  // Each folder at or below the prefix's: `rel` is "" or "a/b/".
  std::function<void(const std::string&)> walk = [&](const std::string& rel) {
    std::string folder = rel.empty() ? dir_ : where(rel.substr(0, rel.size() - 1));
    os::FileStat st;
    if (os::stat_path(folder.c_str(), st) != 0 && errno == ENOENT) return;
    std::vector<std::string> names;
    try {
      names = store::list_dir(folder);
    } catch (const Error& e) {
      read_failed(folder, e);
    }
    for (const std::string& n : names) {
      std::string name = rel + n;
      if (starts_with(n, std::string(kTempPrefix)) || os::stat_path(where(name).c_str(), st) != 0) continue;
      if (S_ISDIR(st.st_mode) && (starts_with(name + "/", prefix) || starts_with(prefix, name + "/"))) walk(name + "/");
      if (S_ISREG(st.st_mode) && starts_with(name, prefix)) out.push_back({name, uint64_t(st.st_size)});
    }
  };
  size_t slash = prefix.rfind('/');
  walk(slash == std::string::npos ? "" : prefix.substr(0, slash + 1));
  std::sort(out.begin(), out.end(), [](const RemoteEntry& a, const RemoteEntry& b) { return a.name < b.name; });
  return out;
}

void DirBackend::remove(const std::string& name) {
  const std::string path = where(name);
  if (os::unlink_path(path.c_str()) == 0) {
    unsynced_.insert(dir_name(path));
    return;
  }
  if (errno == ENOENT) return;
  SystemError e("unable to remove '" + path + "': " + strerror(errno), errno);
  write_failed(path, e);
}

void DirBackend::sync() {
  for (const std::string& d : unsynced_) sync_dir(d);
  unsynced_.clear();
}

void DirBackend::lock_writers(const std::string& name) {
  const std::string p = where(name);
  lock_ = Fd(os::open_path(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!lock_) throw_errno("unable to open '" + p + "'");
  while (os::flock(lock_.get(), LOCK_EX) != 0)
    if (errno != EINTR) throw_errno("unable to lock '" + p + "'");
}

} // namespace hpak::remote
