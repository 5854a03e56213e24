#include "core/pack/pack_trust.hpp"

#include <cctype>
#include <cstring>
#include <cstdlib>

#include "base/os/sys.hpp"
#include "base/os/file.hpp"
#include "base/hash.hpp"
#include "base/parallel.hpp"

namespace hpak {

using namespace formats;

namespace {

std::mutex g_sink_mu;
std::function<void(const std::string&)>& sink_ref() {
  static std::function<void(const std::string&)> sink;
  return sink;
}

// Owned by this user or root, and writable by no one else.
bool owned_safely(const os::FileStat& st) {
  os::Uid me = os::euid();
  return (st.st_uid == me || st.st_uid == 0) && (st.st_mode & 022) == 0;
}

std::string owner_of(const os::FileStat& st) {
  std::string who = "uid " + std::to_string(st.st_uid);
  if (std::string name; os::user_of(st.st_uid, &name, nullptr)) who = "'" + name + "' (" + who + ")";
  return who;
}

std::string identity(const os::FileStat& st) {
  return std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " + std::to_string(st.st_uid) + " " +
         std::to_string(st.st_mode) + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec);
}

// A directory of this user's, closed to everyone else (os::not_private_why:
// on Windows, by its owner and DACL), created if missing; never through a link.
// Otherwise false, with why (naming it) in `why` when given.
bool private_dir(const std::string& p, std::string* why) {
  auto no = [&](const std::string& w) {
    if (why) *why = "'" + p + "' " + w;
    return false;
  };
  if (os::mkdir_path(p.c_str(), 0700) != 0 && errno != EEXIST) return no(std::string("cannot be made: ") + std::strerror(errno));
  Fd fd(os::open_path(p.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  os::FileStat st;
  if (!fd || os::fstat(fd.get(), st) != 0 || !S_ISDIR(st.st_mode)) return no("is not a directory hpak can open");
  if (st.st_uid != os::euid()) return no("is not this user's");
  std::string other = os::not_private_why(fd.get(), 077);
  return other.empty() || no("is not private: " + other);
}

// An absolute path: "/..." on Linux; "C:\...", "C:/..." or "\\server\..." on Windows.
bool absolute(const char* p) {
  if (!p || !p[0]) return false;
  if (!os::kWindowsNames) return p[0] == '/';
  auto sep = [](char c) { return c == '/' || c == '\\'; };
  return (sep(p[0]) && sep(p[1])) || (std::isalpha(static_cast<unsigned char>(p[0])) && p[1] == ':' && sep(p[2]));
}

// The remembered verdict: "ok", "bad <why>", or "" (none, or not this user's file).
std::string read_verdict(const std::string& path) {
  int fd = os::open_path(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return {};
  Fd guard(fd);
  os::FileStat st;
  if (os::fstat(fd, st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != os::euid() || st.st_size > 4096) return {};
  try {
    Bytes b = read_fd(fd, path);
    std::string s(b.begin(), b.end());
    if (s.empty() || s.back() != '\n') return {};
    s.pop_back();
    if (s == "ok" || s.rfind("bad ", 0) == 0) return s;
  } catch (const Error&) {
  }
  return {};
}

void write_verdict(const std::string& path, const std::string& verdict) {
  try {
    AtomicFile f(path, 0600);
    std::string text = verdict + "\n";
    f.write(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    f.commit();
  } catch (const Error&) {
    // Best effort: without a remembered verdict the pack is verified again next time.
  }
}

} // namespace

void set_warning_sink(std::function<void(const std::string&)> sink) {
  std::lock_guard lk(g_sink_mu);
  sink_ref() = std::move(sink);
}

void warn(const std::string& message) {
  std::lock_guard lk(g_sink_mu);
  if (sink_ref()) sink_ref()(message);
}

std::string user_private_dir(const char* xdg_var, const char* home_fallback, const std::string& leaf, std::string* why) {
  std::string base;
  const char* xdg = getenv(xdg_var);
  const char* home = getenv("HOME");
  std::string home_dir;
  if (absolute(home)) home_dir = home;
  else if (std::string pw_home; os::user_of(os::euid(), nullptr, &pw_home) && absolute(pw_home.c_str())) home_dir = pw_home;
  if (absolute(xdg)) {
    base = xdg;
  } else if (!home_dir.empty()) {
    base = home_dir;
    // Intermediate directories (~/.local) are created as private as the rest.
    std::string rest = home_fallback;
    for (size_t at = 0; at < rest.size();) {
      size_t slash = rest.find('/', at);
      base += "/" + rest.substr(at, slash == std::string::npos ? std::string::npos : slash - at);
      if (os::mkdir_path(base.c_str(), 0700) != 0 && errno != EEXIST) return {};
      at = slash == std::string::npos ? rest.size() : slash + 1;
    }
  } else {
    return {};
  }
  if (os::mkdir_path(base.c_str(), 0700) != 0 && errno != EEXIST) return {};
  std::string dir = base + "/hpak";
  if (!private_dir(dir, why) || !private_dir(dir + "/" + leaf, why)) return {};
  return dir + "/" + leaf;
}

std::string trust_cache_dir() { return user_private_dir("XDG_CACHE_HOME", ".cache", "trust"); }

std::string verify_pack_records(const PackReader& pack) {
  const IndexView& v = pack.index();
  std::mutex mu;
  std::string why;
  std::atomic<bool> bad{false};
  parallel_for(size_t(v.count()), default_threads(), 16, [&](size_t i, unsigned) {
    if (bad.load(std::memory_order_relaxed)) return;
    try {
      IndexRecord r = v.record_at(i);
      if (r.raw_len > (64u << 20)) pack.read_stream(r, [](ByteSpan) {}, true);
      else (void)pack.read(r, true);
    } catch (const Error& e) {
      std::lock_guard lk(mu);
      if (!bad.exchange(true)) why = e.what();
    }
  });
  return why;
}

bool pack_owned_safely(const PackReader& pack) {
  bool index_ok = pack.index_source() == PackReader::IndexSource::Scan || owned_safely(pack.index_map().stat());
  return owned_safely(pack.map().stat()) && index_ok;
}

PackTrust::PackTrust(PackReader& pack, bool shared) : pack_(pack) {
  if (!shared || pack_owned_safely(pack)) state_.store(kTrusted);
  else pack.check_every_read();
}

const char* PackTrust::state_name() const {
  switch (state_.load(std::memory_order_acquire)) {
  case kTrusted: return "trusted";
  case kVerified: return "verified";
  case kRefused: return "refused";
  default: return "unchecked";
  }
}

bool PackTrust::settle() const {
  std::call_once(once_, [this] {
    int s = kRefused;
    try {
      s = decide();
    } catch (...) {
    }
    state_.store(s, std::memory_order_release);
  });
  int s = state_.load(std::memory_order_acquire);
  return s == kTrusted || s == kVerified;
}

// The identity of the file mapped as `m`, stat'ed now (its mtime and ctime as
// they are at the time of use, not as they were when it was mapped); "" when
// its path no longer names that inode.
static std::string fresh_identity(const MappedFile& m) {
  os::FileStat st;
  if (os::lstat_path(m.path().c_str(), st) != 0 || st.st_dev != m.stat().st_dev || st.st_ino != m.stat().st_ino) return {};
  return identity(st);
}

std::string PackTrust::verdict_key() const {
  std::string p = pack_.path();
  std::string pack_id = fresh_identity(pack_.map());
  std::string index_id = pack_.index_source() == PackReader::IndexSource::File ? fresh_identity(pack_.index_map()) : std::string("scan");
  if (pack_id.empty() || index_id.empty()) return {};
  return "hpak-trust 1\n" + p.substr(p.find_last_of('/') + 1) + "\n" + pack_id + "\n" + index_id + "\n";
}

int PackTrust::decide() const {
  const os::FileStat& st = pack_.map().stat();
  std::string who = "pack '" + pack_.path() + "' (owned by " + owner_of(st) + ")";
  std::string dir = trust_cache_dir();
  std::string file;
  std::string key = dir.empty() ? std::string() : verdict_key();
  if (!key.empty()) {
    file = dir + "/" + to_hex(sha256(ByteSpan(reinterpret_cast<const uint8_t*>(key.data()), key.size())));
    std::string v = read_verdict(file);
    if (v == "ok") return kVerified;
    if (!v.empty()) {
      warn("not using " + who + ": it failed verification: " + v.substr(4));
      return kRefused;
    }
  }
  std::string why = verify_pack_records(pack_);
  if (!file.empty()) write_verdict(file, why.empty() ? "ok" : "bad " + why);
  if (why.empty()) return kVerified;
  warn("not using " + who + ": it failed verification: " + why);
  return kRefused;
}

} // namespace hpak
