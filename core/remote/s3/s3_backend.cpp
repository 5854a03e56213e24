#include "core/remote/s3/s3_backend.hpp"

#include <cctype>
#include <cstdlib>
#include <ctime>

#include "base/error.hpp"
#include "base/hash.hpp"

namespace hpak::remote {

namespace {

constexpr const char* kUnsignedPayload = "UNSIGNED-PAYLOAD";
constexpr const char* kPayloadHeader = "x-amz-content-sha256";

const char* env(const char* name) {
  const char* v = getenv(name);
  return v && *v ? v : nullptr;
}

// A key as S3 wants it in a path: every byte but A-Z a-z 0-9 - . _ ~ and '/'
// percent-encoded (signed as sent: S3 does not encode twice).
std::string encode_key(const std::string& key) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') out += char(c);
    else out += {'%', hex[c >> 4], hex[c & 15]};
  }
  return out;
}

// ENDPOINT/BUCKET[/PREFIX] (path style).
std::string s3_base(const RemoteUrl& url, const S3Access& a) {
  std::string ep = strip_trailing_slashes(a.endpoint);
  if (ep.rfind("http://", 0) != 0 && ep.rfind("https://", 0) != 0)
    throw Error("S3 endpoint '" + ep + "' is not an http:// or https:// URL");
  return ep + "/" + url.bucket + (url.path.empty() ? "" : "/" + encode_key(url.path));
}

// The value of header `name` among `headers` ("Name: value"), or `fallback`.
std::string header_value(const std::vector<std::string>& headers, const std::string& name, const std::string& fallback) {
  for (const std::string& h : headers)
    if (h.size() > name.size() && h.compare(0, name.size(), name) == 0 && h[name.size()] == ':')
      return h.substr(h.find_first_not_of(' ', name.size() + 1));
  return fallback;
}

// The signing input of one attempt to `url` (scheme://authority/path?query).
SigV4Request sigv4_request(const HttpRequest& req, const std::string& url, const S3Access& a) {
  size_t start = url.find("://") + 3;
  size_t slash = std::min(url.find('/', start), url.size());
  std::string authority = url.substr(start, slash - start);
  authority = authority.substr(authority.rfind('@') == std::string::npos ? 0 : authority.rfind('@') + 1);
  std::string target = url.substr(slash);
  size_t q = target.find('?');
  SigV4Request r;
  r.method = req.method.empty() ? "GET" : req.method;
  r.path = target.substr(0, q);
  r.query = q == std::string::npos ? "" : target.substr(q + 1);
  r.payload_hash = header_value(req.headers, kPayloadHeader, kUnsignedPayload);
  r.amz_date = amz_date(std::time(nullptr));
  r.headers = {{"host", authority}, {kPayloadHeader, r.payload_hash}, {"x-amz-date", r.amz_date}};
  if (!a.token.empty()) r.headers.emplace_back("x-amz-security-token", a.token);
  return r;
}

// The HttpSigner of `a`: Host (the value signed), x-amz-date, the session
// token and the Authorization of each attempt.
HttpSigner signer(const S3Access& a) {
  return [a](const HttpRequest& req, const std::string& url) {
    SigV4Request r = sigv4_request(req, url, a);
    std::vector<std::string> out{"Host: " + r.headers[0].second, "x-amz-date: " + r.amz_date};
    if (!a.token.empty()) out.push_back("x-amz-security-token: " + a.token);
    out.push_back("Authorization: " + sigv4_authorization(r, SigV4Key{a.key_id, a.secret, a.region, "s3"}));
    return out;
  };
}

HttpOptions signed_options(HttpOptions opts, const S3Access& a) {
  if (!a.key_id.empty()) opts.sign = signer(a);
  return opts;
}

} // namespace

S3Access s3_access_from_env(const std::string& endpoint) {
  S3Access a;
  if (const char* r = env("AWS_REGION")) a.region = r;
  else if (const char* r2 = env("AWS_DEFAULT_REGION")) a.region = r2;
  if (!endpoint.empty()) a.endpoint = endpoint;
  else if (const char* e = env("AWS_ENDPOINT_URL_S3")) a.endpoint = e;
  else if (const char* e2 = env("AWS_ENDPOINT_URL")) a.endpoint = e2;
  else a.endpoint = "https://s3." + a.region + ".amazonaws.com";
  if (const char* k = env("AWS_ACCESS_KEY_ID")) a.key_id = k;
  if (const char* k = env("AWS_SECRET_ACCESS_KEY")) a.secret = k;
  if (const char* t = env("AWS_SESSION_TOKEN")) a.token = t;
  if (!a.key_id.empty() && a.secret.empty()) throw Error("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  return a;
}

std::string parse_s3_url(const std::string& rest, bool, RemoteUrl& url) {
  size_t slash = rest.find('/');
  url.bucket = rest.substr(0, slash);
  url.path = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (url.bucket.empty() || url.bucket.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-") != std::string::npos)
    return "bucket names are lower-case letters, digits, '.' and '-'";
  return "";
}

std::unique_ptr<Backend> open_s3(const RemoteUrl& url, const BackendOptions& opts, Access) {
  return std::make_unique<S3Backend>(url, s3_access_from_env(opts.s3_endpoint), opts.http);
}

S3Backend::S3Backend(const RemoteUrl& url, const S3Access& access, const HttpOptions& opts)
    : HttpBackend(s3_base(url, access), signed_options(opts, access)), access_(access) {}

HttpRequest S3Backend::signed_request(const std::string& name, const std::string& method, const std::string& payload_hash) const {
  HttpRequest r;
  r.url = where(name);
  r.method = method;
  if (!access_.key_id.empty()) r.headers.push_back(std::string(kPayloadHeader) + ": " + payload_hash);
  return r;
}

HttpRequest S3Backend::request_for(const GetRequest& g) const {
  HttpRequest r = HttpBackend::request_for(g);
  if (!access_.key_id.empty()) r.headers.push_back(std::string(kPayloadHeader) + ": " + kUnsignedPayload);
  return r;
}

void S3Backend::put(const std::string& name, ByteSpan bytes, const Digest* want) {
  Digest sum = sha256(bytes);
  if (want && sum != *want) throw DigestMismatch("'" + where(name) + "' does not match the SHA-256 given for it: not written");
  HttpRequest r = signed_request(name, "PUT", to_hex(sum));
  r.upload = bytes;
  send({r});
}

std::vector<RemoteEntry> S3Backend::list(const std::string& prefix) {
  unsupported("list", prefix, "listing a bucket is not implemented (hpak needs only GET, PUT and DELETE: no ListBucket right)");
}

void S3Backend::remove(const std::string& name) { send({signed_request(name, "DELETE", kUnsignedPayload)}); }

} // namespace hpak::remote
