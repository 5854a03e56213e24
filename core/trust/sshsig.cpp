#include "core/trust/sshsig.hpp"

#include <cstring>
#include <ctime>
#include <memory>
#include <openssl/evp.h>
#include <stdlib.h>

#include "base/os/sys.hpp"
#include "base/error.hpp"
#include "base/os/file.hpp"


namespace hpak::sshsig {

namespace {

const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const std::string kKeyType = "ssh-ed25519";
const std::string kMagic = "SSHSIG";
const std::string kSigBegin = "-----BEGIN SSH SIGNATURE-----";
const std::string kSigEnd = "-----END SSH SIGNATURE-----";
const std::string kKeyBegin = "-----BEGIN OPENSSH PRIVATE KEY-----";
const std::string kKeyEnd = "-----END OPENSSH PRIVATE KEY-----";

void put_u32be(Bytes& b, uint32_t v) {
  for (int i = 3; i >= 0; i--) b.push_back(uint8_t(v >> (8 * i)));
}
void put_string(Bytes& b, ByteSpan s) {
  put_u32be(b, uint32_t(s.size()));
  b.insert(b.end(), s.begin(), s.end());
}
void put_string(Bytes& b, const std::string& s) { put_string(b, ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size())); }

// Reads RFC 4251 fields; any overrun is a clear error naming `where`.
class Reader {
public:
  Reader(ByteSpan b, std::string where) : b_(b), where_(std::move(where)) {}
  uint32_t u32() {
    need(4);
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v = (v << 8) | b_[pos_ + size_t(i)];
    pos_ += 4;
    return v;
  }
  ByteSpan bytes(size_t n) {
    need(n);
    ByteSpan s = b_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  ByteSpan string() { return bytes(u32()); }
  std::string text() {
    ByteSpan s = string();
    return std::string(s.begin(), s.end());
  }
  bool done() const { return pos_ == b_.size(); }
  size_t left() const { return b_.size() - pos_; }

private:
  void need(size_t n) {
    if (b_.size() - pos_ < n) throw Error("'" + where_ + "' is truncated or malformed");
  }
  ByteSpan b_;
  size_t pos_ = 0;
  std::string where_;
};

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

Bytes signed_data(const std::string& ns, const std::string& alg, ByteSpan hash) {
  Bytes d(kMagic.begin(), kMagic.end());
  put_string(d, ns);
  put_string(d, std::string());
  put_string(d, alg);
  put_string(d, hash);
  return d;
}

const EVP_MD* md_for(const std::string& alg) {
  if (alg == "sha512") return EVP_sha512();
  if (alg == "sha256") return EVP_sha256();
  throw Error("unsupported signature hash algorithm '" + alg + "' (sha256 or sha512 expected)");
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// The base64 between a BEGIN and END line.
Bytes pem_body(const std::string& text, const std::string& begin, const std::string& end, const std::string& where,
               const std::string& what) {
  size_t a = text.find(begin);
  size_t e = a == std::string::npos ? a : text.find(end, a);
  if (a == std::string::npos || e == std::string::npos) throw Error("'" + where + "' is not " + what + " (no '" + begin + "' block)");
  auto b = base64_decode(std::string_view(text).substr(a + begin.size(), e - a - begin.size()));
  if (!b) throw Error("'" + where + "' holds " + what + " with bad base64");
  return *b;
}

// "a,b,c" -> {a, b, c}.
std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t c = s.find(',', start);
    out.push_back(s.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) return out;
    start = c + 1;
  }
}

// timegm(3), which Windows lacks: the seconds since the epoch of a UTC
// calendar time (months out of 0..11 carried into the year, the other fields
// counted linearly, as timegm does).
time_t utc_seconds(const struct tm& tm) {
  int64_t y = int64_t(tm.tm_year) + 1900 + tm.tm_mon / 12, m = tm.tm_mon % 12;
  if (m < 0) {
    m += 12;
    y--;
  }
  m += 1; // 1..12
  // Days from 1970-01-01 to y-m-01 (H. Hinnant's days_from_civil).
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = era * 146097 + doe - 719468 + (tm.tm_mday - 1);
  return time_t(days * 86400 + int64_t(tm.tm_hour) * 3600 + int64_t(tm.tm_min) * 60 + tm.tm_sec);
}

// OpenSSH match_pattern: '*' any run of characters, '?' any one, every other
// character itself (no brackets, no escapes).
bool match_pattern(std::string_view s, std::string_view p) {
  size_t si = 0, pi = 0, star = std::string_view::npos, resume = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == s[si])) {
      si++;
      pi++;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      resume = si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++resume;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') pi++;
  return pi == p.size();
}

// OpenSSH match_pattern_list: a match by a negated pattern wins.
bool match_list(const std::string& s, const std::vector<std::string>& patterns) {
  bool matched = false;
  for (auto& p : patterns) {
    bool neg = !p.empty() && p[0] == '!';
    std::string pat = neg ? p.substr(1) : p;
    if (match_pattern(s, pat)) {
      if (neg) return false;
      matched = true;
    }
  }
  return matched;
}

// Whitespace-separated fields; double quotes keep spaces inside one field.
std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, any = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    if (!quoted && (c == ' ' || c == '\t')) {
      if (any) out.push_back(cur);
      cur.clear();
      any = false;
      continue;
    }
    cur += c;
    any = true;
  }
  if (any) out.push_back(cur);
  return out;
}

// Options split at commas outside quotes.
std::vector<std::string> options_of(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : s) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::optional<int64_t> parse_time(std::string v) {
  bool utc = !v.empty() && (v.back() == 'Z' || v.back() == 'z');
  if (utc) v.pop_back();
  if (v.size() != 8 && v.size() != 12 && v.size() != 14) return std::nullopt;
  for (char c : v)
    if (c < '0' || c > '9') return std::nullopt;
  struct tm tm {};
  tm.tm_year = std::stoi(v.substr(0, 4)) - 1900;
  tm.tm_mon = std::stoi(v.substr(4, 2)) - 1;
  tm.tm_mday = std::stoi(v.substr(6, 2));
  if (v.size() >= 12) {
    tm.tm_hour = std::stoi(v.substr(8, 2));
    tm.tm_min = std::stoi(v.substr(10, 2));
  }
  if (v.size() == 14) tm.tm_sec = std::stoi(v.substr(12, 2));
  tm.tm_isdst = -1;
  time_t t = utc ? utc_seconds(tm) : mktime(&tm);
  if (t == time_t(-1)) return std::nullopt;
  return int64_t(t);
}

std::string show_time(int64_t t) {
  time_t tt = time_t(t);
  struct tm tm {};
  gmtime_r(&tt, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

} // namespace

std::string base64_encode(ByteSpan d) {
  std::string out;
  out.reserve((d.size() + 2) / 3 * 4);
  for (size_t i = 0; i < d.size(); i += 3) {
    uint32_t v = uint32_t(d[i]) << 16;
    if (i + 1 < d.size()) v |= uint32_t(d[i + 1]) << 8;
    if (i + 2 < d.size()) v |= d[i + 2];
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < d.size() ? kB64[(v >> 6) & 63] : '=';
    out += i + 2 < d.size() ? kB64[v & 63] : '=';
  }
  return out;
}

std::optional<Bytes> base64_decode(std::string_view text) {
  Bytes out;
  uint32_t acc = 0;
  int bits = 0, pad = 0;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      pad++;
      continue;
    }
    if (pad) return std::nullopt; // data after padding
    const char* p = strchr(kB64, c);
    if (!p || c == 0) return std::nullopt;
    acc = (acc << 6) | uint32_t(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(uint8_t(acc >> bits));
      acc &= (1u << bits) - 1;
    }
  }
  if (pad > 2 || bits >= 6) return std::nullopt;
  return out;
}

std::string PublicKey::fingerprint() const {
  unsigned char md[32];
  unsigned int n = 0;
  EVP_Digest(blob.data(), blob.size(), md, &n, EVP_sha256(), nullptr);
  std::string b = base64_encode(ByteSpan(md, n));
  while (!b.empty() && b.back() == '=') b.pop_back();
  return "SHA256:" + b;
}

std::string PublicKey::line() const { return kKeyType + " " + base64_encode(blob); }

PublicKey parse_public_key_blob(ByteSpan blob, const std::string& where) {
  Reader r(blob, where);
  std::string type = r.text();
  if (type != kKeyType) throw Error("'" + where + "' holds a key of type '" + type + "'; hpak handles only ssh-ed25519");
  ByteSpan k = r.string();
  if (k.size() != 32 || !r.done()) throw Error("'" + where + "' holds a malformed ssh-ed25519 key");
  PublicKey pk;
  pk.blob.assign(blob.begin(), blob.end());
  std::memcpy(pk.key.data(), k.data(), 32);
  return pk;
}

PublicKey parse_public_key_line(const std::string& line, const std::string& where) {
  auto f = fields_of(trim(line));
  if (f.size() < 2) throw Error("'" + where + "' is not an OpenSSH public key line");
  auto blob = base64_decode(f[1]);
  if (!blob) throw Error("'" + where + "' holds a key with bad base64");
  PublicKey pk = parse_public_key_blob(*blob, where);
  if (f[0] != kKeyType) throw Error("'" + where + "' names key type '" + f[0] + "'; hpak handles only ssh-ed25519");
  return pk;
}

std::optional<PrivateKey> parse_private_key(const std::string& text, const std::string& where) {
  Bytes b = pem_body(text, kKeyBegin, kKeyEnd, where, "an OpenSSH private key");
  static const char magic[] = "openssh-key-v1"; // followed by a NUL
  if (b.size() < sizeof magic || std::memcmp(b.data(), magic, sizeof magic) != 0)
    throw Error("'" + where + "' is not an openssh-key-v1 private key");
  Reader r(ByteSpan(b).subspan(sizeof magic), where);
  std::string cipher = r.text(), kdf = r.text();
  r.string(); // kdf options
  if (r.u32() != 1) throw Error("'" + where + "' holds more than one key");
  PublicKey pub = parse_public_key_blob(r.string(), where);
  if (cipher != "none" || kdf != "none") return std::nullopt;
  ByteSpan priv = r.string();
  Reader p(priv, where);
  if (p.u32() != p.u32()) throw Error("'" + where + "' has a corrupt private section (check bytes differ)");
  if (p.text() != kKeyType) throw Error("'" + where + "' is not an ssh-ed25519 key");
  ByteSpan pk = p.string(), sk = p.string();
  if (pk.size() != 32 || sk.size() != 64 || std::memcmp(pk.data(), pub.key.data(), 32) != 0 || std::memcmp(sk.data() + 32, pk.data(), 32) != 0)
    throw Error("'" + where + "' holds a malformed ssh-ed25519 private key");
  PrivateKey k;
  k.pub = pub;
  std::memcpy(k.seed.data(), sk.data(), 32);
  k.comment = p.text();
  // The seed must give the public key it claims.
  Pkey key(EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, k.seed.data(), 32));
  uint8_t derived[32];
  size_t n = 32;
  if (!key || EVP_PKEY_get_raw_public_key(key.get(), derived, &n) != 1 || n != 32 || std::memcmp(derived, pub.key.data(), 32) != 0)
    throw Error("'" + where + "' holds a private key that does not match its public key");
  return k;
}

Bytes hash_message(const std::string& alg, ByteSpan message) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(message.data(), message.size(), md, &n, md_for(alg), nullptr) != 1) throw Error("hashing failed");
  return Bytes(md, md + n);
}

Bytes hash_file(const std::string& alg, const std::string& path) {
  MappedFile m(path);
  return hash_message(alg, m.bytes());
}

namespace {

// The SSHSIG blob of an Ed25519 signature `sig` (64 bytes) by `pub` over
// signed_data(ns, "sha512", hash).
Bytes sshsig_blob(const PublicKey& pub, const std::string& ns, ByteSpan sig) {
  Bytes sigblob;
  put_string(sigblob, kKeyType);
  put_string(sigblob, sig);
  Bytes out(kMagic.begin(), kMagic.end());
  put_u32be(out, 1);
  put_string(out, pub.blob);
  put_string(out, ns);
  put_string(out, std::string());
  put_string(out, std::string("sha512"));
  put_string(out, sigblob);
  return out;
}

} // namespace

PublicKey private_key_file_public(const std::string& text, const std::string& where) {
  Bytes b = pem_body(text, kKeyBegin, kKeyEnd, where, "an OpenSSH private key");
  static const char magic[] = "openssh-key-v1"; // followed by a NUL
  if (b.size() < sizeof magic || std::memcmp(b.data(), magic, sizeof magic) != 0)
    throw Error("'" + where + "' is not an openssh-key-v1 private key");
  Reader r(ByteSpan(b).subspan(sizeof magic), where);
  r.text(); // cipher
  r.text(); // kdf
  r.string(); // kdf options
  if (r.u32() != 1) throw Error("'" + where + "' holds more than one key");
  return parse_public_key_blob(r.string(), where);
}

Bytes sign(const PrivateKey& k, const std::string& ns, ByteSpan message_hash) {
  Bytes data = signed_data(ns, "sha512", message_hash);
  Pkey key(EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, k.seed.data(), 32));
  MdCtx ctx(EVP_MD_CTX_new());
  uint8_t sig[64];
  size_t n = sizeof sig;
  if (!key || !ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), sig, &n, data.data(), data.size()) != 1 || n != 64)
    throw Error("Ed25519 signing failed");
  return sshsig_blob(k.pub, ns, ByteSpan(sig, 64));
}

std::string armor(ByteSpan blob) {
  std::string b = base64_encode(blob), out = kSigBegin + "\n";
  for (size_t i = 0; i < b.size(); i += 70) out += b.substr(i, 70) + "\n";
  return out + kSigEnd + "\n";
}

Bytes dearmor(const std::string& text, const std::string& where) { return pem_body(text, kSigBegin, kSigEnd, where, "an SSH signature"); }

Signature parse_signature(ByteSpan blob, const std::string& where) {
  if (blob.size() < 6 || std::memcmp(blob.data(), kMagic.data(), 6) != 0) throw Error("'" + where + "' is not an SSHSIG signature");
  Reader r(blob.subspan(6), where);
  uint32_t version = r.u32();
  if (version != 1) throw Error("'" + where + "' has SSHSIG version " + std::to_string(version) + " (1 expected)");
  Signature s;
  s.key = parse_public_key_blob(r.string(), where);
  s.ns = r.text();
  r.string(); // reserved
  s.hash_alg = r.text();
  ByteSpan sigblob = r.string();
  if (!r.done()) throw Error("'" + where + "' has bytes after its signature");
  Reader sr(sigblob, where);
  std::string type = sr.text();
  if (type != kKeyType) throw Error("'" + where + "' holds a signature of type '" + type + "'; hpak handles only ssh-ed25519");
  ByteSpan sig = sr.string();
  if (sig.size() != 64 || !sr.done()) throw Error("'" + where + "' holds a malformed ssh-ed25519 signature");
  std::memcpy(s.sig.data(), sig.data(), 64);
  md_for(s.hash_alg); // throws for an unsupported one
  return s;
}

bool signature_valid(const Signature& s, ByteSpan message_hash) {
  Bytes data = signed_data(s.ns, s.hash_alg, message_hash);
  Pkey key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, s.key.key.data(), 32));
  MdCtx ctx(EVP_MD_CTX_new());
  return key && ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) == 1 &&
         EVP_DigestVerify(ctx.get(), s.sig.data(), s.sig.size(), data.data(), data.size()) == 1;
}

std::vector<AllowedSigner> parse_allowed_signers(const std::string& text, const std::string& where) {
  std::vector<AllowedSigner> out;
  size_t start = 0;
  int lineno = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = trim(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    start = nl == std::string::npos ? text.size() + 1 : nl + 1;
    lineno++;
    if (line.empty() || line[0] == '#') continue;
    std::string at = where + ":" + std::to_string(lineno);
    auto f = fields_of(line);
    if (f.size() < 3) throw Error("'" + at + "' is not an allowed_signers line (principals [options] keytype key)");
    AllowedSigner a;
    a.line = lineno;
    a.principals = split_commas(f[0]);
    size_t k = 1;
    if (f[1].find("ssh-") != 0 && f[1].find("ecdsa-") != 0 && f[1].find("sk-") != 0) {
      for (auto& opt : options_of(f[1])) {
        auto eq = opt.find('=');
        std::string name = opt.substr(0, eq), value = eq == std::string::npos ? "" : opt.substr(eq + 1);
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
        for (auto& c : name) c = char(tolower(c));
        if (name == "cert-authority") {
          a.cert_authority = true;
        } else if (name == "namespaces") {
          a.namespaces = split_commas(value);
        } else if (name == "valid-after" || name == "valid-before") {
          auto t = parse_time(value);
          if (!t) throw Error("'" + at + "' has a bad " + name + " time '" + value + "' (YYYYMMDD[HHMM[SS]][Z] expected)");
          (name == "valid-after" ? a.valid_after : a.valid_before) = *t;
        } else {
          throw Error("'" + at + "' has an unknown option '" + name + "'");
        }
      }
      k = 2;
    }
    if (f.size() < k + 2) throw Error("'" + at + "' has no key");
    if (f[k] != kKeyType) continue; // other key types: never match an Ed25519 signature
    a.key = parse_public_key_line(f[k] + " " + f[k + 1], at);
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<AllowedSigner> load_allowed_signers(const std::string& path) {
  Bytes b = read_regular(path, Follow::Links, 1 << 20); // never blocking on a FIFO, never more than 1 MiB
  return parse_allowed_signers(std::string(b.begin(), b.end()), path);
}

Verdict check(const std::vector<AllowedSigner>& allowed, const Signature& s, const std::string& ns,
              const std::function<Bytes(const std::string& alg)>& hash_for, int64_t now, const std::string& identity) {
  Verdict v;
  std::string fp = s.key.fingerprint();
  if (s.ns != ns) {
    v.why = "signature by key " + fp + " is for namespace '" + s.ns + "', not '" + ns + "'";
    return v;
  }
  if (!signature_valid(s, hash_for(s.hash_alg))) {
    v.why = "signature by key " + fp + " does not match the data (changed since it was signed)";
    return v;
  }
  std::string first_problem;
  for (const AllowedSigner& a : allowed) {
    if (a.cert_authority || a.key.blob != s.key.blob) continue;
    std::string who;
    for (size_t i = 0; i < a.principals.size(); i++) who += (i ? "," : "") + a.principals[i];
    who = "'" + who + "' (" + fp + ")";
    std::string problem;
    if (!identity.empty() && !match_list(identity, a.principals)) problem = "key " + fp + " is not allowed for identity '" + identity + "'";
    else if (!a.namespaces.empty() && !match_list(ns, a.namespaces)) problem = "signer " + who + " is not allowed to sign namespace '" + ns + "'";
    else if (a.valid_after && now < *a.valid_after) problem = "signer " + who + " is valid only after " + show_time(*a.valid_after);
    else if (a.valid_before && now > *a.valid_before) problem = "signer " + who + " expired on " + show_time(*a.valid_before);
    if (problem.empty()) {
      v.ok = true;
      v.signer = who;
      return v;
    }
    if (first_problem.empty()) first_problem = problem;
  }
  v.why = first_problem.empty() ? "key " + fp + " is not an allowed signer" : first_problem;
  return v;
}

namespace {

// `ssh-keygen -Y sign -f KEY -n NS FILE` on a private temp copy of the message.
std::string sign_via_ssh_keygen(const std::string& key_path, const std::string& ns, ByteSpan message) {
  const char* tmpdir = getenv("TMPDIR");
  std::string templ = std::string(tmpdir && tmpdir[0] == '/' ? tmpdir : "/tmp") + "/hpak-sign-XXXXXX";
  if (!os::make_temp_dir(templ)) throw_errno("unable to create a temporary directory");
  std::string dir = templ, msg = dir + "/message", sig = msg + ".sig";
  std::string result, error;
  {
    int fd = os::open_path(msg.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      Fd g(fd);
      write_all(fd, message, msg);
    }
    const int status = os::run_program({"ssh-keygen", "-q", "-Y", "sign", "-f", key_path, "-n", ns, msg});
    if (status < 0) {
      error = "unable to run ssh-keygen to sign with the passphrase-protected key '" + key_path + "'";
    } else if (status != 0) {
      error = "ssh-keygen could not sign with '" + key_path + "'";
    } else {
      Bytes b = read_file(sig);
      result.assign(b.begin(), b.end());
    }
  }
  os::unlink_path(sig.c_str());
  os::unlink_path(msg.c_str());
  os::rmdir_path(dir.c_str());
  if (!error.empty()) throw Error(error);
  return result;
}

} // namespace

namespace {

// The ssh-agent protocol (draft-miller-ssh-agent, OpenSSH PROTOCOL.agent):
// each message is u32 length, byte type, payload.
constexpr uint8_t kAgentFailure = 5, kAgentRequestIdentities = 11, kAgentIdentitiesAnswer = 12;
constexpr uint8_t kAgentSignRequest = 13, kAgentSignResponse = 14;
constexpr uint32_t kAgentMaxReply = 256 * 1024;

class Agent {
public:
  // Connects to $SSH_AUTH_SOCK; false with `why` set when there is no agent.
  bool connect(std::string& why) {
    const char* sock = getenv("SSH_AUTH_SOCK");
    if (!sock || !*sock) {
      why = "no ssh-agent is running (SSH_AUTH_SOCK is not set)";
      return false;
    }
    path_ = sock;
    fd_ = Fd(os::connect_local(path_, 120)); // an agent that asks for confirmation gets two minutes
    if (!fd_ && errno == ENAMETOOLONG) {
      why = "the ssh-agent socket path '" + path_ + "' is too long";
      return false;
    }
    if (!fd_) {
      why = "the ssh-agent at '" + path_ + "' cannot be reached (" + std::strerror(errno) + ")";
      return false;
    }
    return true;
  }
  // Sends one request, returns the reply (its type first).
  Bytes request(uint8_t type, ByteSpan payload) {
    Bytes msg;
    put_u32be(msg, uint32_t(payload.size() + 1));
    msg.push_back(type);
    msg.insert(msg.end(), payload.begin(), payload.end());
    for (size_t done = 0; done < msg.size();) {
      long n = os::send(fd_.get(), msg.data() + done, msg.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw_errno("unable to talk to the ssh-agent at '" + path_ + "'");
      done += size_t(n);
    }
    uint8_t len[4];
    read_exact(len, 4);
    uint32_t n = uint32_t(len[0]) << 24 | uint32_t(len[1]) << 16 | uint32_t(len[2]) << 8 | len[3];
    if (n == 0 || n > kAgentMaxReply) throw Error("the ssh-agent at '" + path_ + "' sent a malformed reply");
    Bytes reply(n);
    read_exact(reply.data(), n);
    return reply;
  }

private:
  void read_exact(uint8_t* p, size_t n) {
    for (size_t done = 0; done < n;) {
      long got = os::recv(fd_.get(), p + done, n - done);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw_errno("no answer from the ssh-agent at '" + path_ + "'");
      if (got == 0) throw Error("the ssh-agent at '" + path_ + "' closed the connection");
      done += size_t(got);
    }
  }
  Fd fd_;
  std::string path_;
};

// Whether the agent lists `pub` among its identities.
bool agent_holds(Agent& agent, const PublicKey& pub) {
  Bytes reply = agent.request(kAgentRequestIdentities, ByteSpan());
  if (reply[0] != kAgentIdentitiesAnswer) return false;
  Reader r(ByteSpan(reply).subspan(1), "the ssh-agent's list of keys");
  uint32_t count = r.u32();
  for (uint32_t i = 0; i < count; i++) {
    ByteSpan blob = r.string();
    r.string(); // comment
    if (blob.size() == pub.blob.size() && std::memcmp(blob.data(), pub.blob.data(), blob.size()) == 0) return true;
  }
  return false;
}

// Signs `data` (the SSHSIG signed data) with `pub` held by the ssh-agent;
// returns the 64-byte Ed25519 signature, or nullopt with `why` set when no
// agent holds the key.
std::optional<Bytes> agent_sign(const PublicKey& pub, ByteSpan data, std::string& why) {
  Agent agent;
  if (!agent.connect(why)) return std::nullopt;
  if (!agent_holds(agent, pub)) {
    why = "the ssh-agent does not hold it";
    return std::nullopt;
  }
  Bytes req;
  put_string(req, pub.blob);
  put_string(req, data);
  put_u32be(req, 0); // flags: none (Ed25519 has one signature algorithm)
  Bytes reply = agent.request(kAgentSignRequest, req);
  if (reply[0] == kAgentFailure) throw Error("the ssh-agent refused to sign with key " + pub.fingerprint() + " (was confirmation denied?)");
  if (reply[0] != kAgentSignResponse) throw Error("the ssh-agent sent an unexpected reply to a sign request");
  Reader r(ByteSpan(reply).subspan(1), "the ssh-agent's signature");
  Reader sig(r.string(), "the ssh-agent's signature");
  if (sig.text() != kKeyType) throw Error("the ssh-agent signed with another key type than ssh-ed25519");
  ByteSpan raw = sig.string();
  if (raw.size() != 64) throw Error("the ssh-agent sent a malformed Ed25519 signature");
  return Bytes(raw.begin(), raw.end());
}

// Whether a passphrase can be asked for: a controlling terminal (what
// ssh-keygen prompts on).
bool can_prompt() {
  if (!os::is_terminal(os::kStdin)) return false;
  int fd = os::open_path("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return false;
  os::close(fd);
  return true;
}

} // namespace

std::string sign_with_key_file(const std::string& key_path, const std::string& ns, ByteSpan message) {
  Bytes b = read_file(key_path);
  std::string text(b.begin(), b.end());
  Bytes hash = hash_message("sha512", message);
  std::optional<PrivateKey> k = parse_private_key(text, key_path);
  if (k) return armor(sign(*k, ns, hash));
  // Passphrase-protected: signed by the ssh-agent that holds it, else by
  // ssh-keygen asking for the passphrase on the terminal, else refused.
  PublicKey pub = private_key_file_public(text, key_path);
  std::string why;
  if (std::optional<Bytes> sig = agent_sign(pub, signed_data(ns, "sha512", hash), why)) {
    Bytes blob = sshsig_blob(pub, ns, *sig);
    if (!signature_valid(parse_signature(blob, "the ssh-agent's signature"), hash))
      throw Error("the ssh-agent returned a signature that does not verify with key " + pub.fingerprint());
    return armor(blob);
  }
  if (can_prompt()) return sign_via_ssh_keygen(key_path, ns, message);
  throw Error("key '" + key_path + "' (" + pub.fingerprint() + ") is passphrase-protected and " + why +
              ": load it with 'ssh-add " + key_path + "', or sign from a terminal");
}

} // namespace hpak::sshsig
