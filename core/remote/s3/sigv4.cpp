#include "core/remote/s3/sigv4.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>

#include "base/error.hpp"
#include "base/hash.hpp"
#include "core/remote/remote_url.hpp"

namespace hpak::remote {

namespace {

using url_parts::lower;

// Leading and trailing blanks removed, inner runs of them made one space.
std::string trim_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    bool blank = c == ' ' || c == '\t';
    if (blank && (out.empty() || out.back() == ' ')) continue;
    out += blank ? ' ' : c;
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::vector<std::pair<std::string, std::string>> sorted_headers(const SigV4Request& r) {
  std::vector<std::pair<std::string, std::string>> h;
  for (const auto& [name, value] : r.headers) h.emplace_back(lower(name), trim_value(value));
  std::sort(h.begin(), h.end());
  return h;
}

std::string signed_names(const SigV4Request& r) {
  std::string out;
  for (const auto& h : sorted_headers(r)) out += (out.empty() ? "" : ";") + h.first;
  return out;
}

std::string sorted_query(const std::string& q) {
  std::vector<std::string> params;
  for (size_t at = 0; at <= q.size() && !q.empty();) {
    size_t amp = std::min(q.find('&', at), q.size());
    std::string p = q.substr(at, amp - at);
    params.push_back(p.find('=') == std::string::npos ? p + "=" : p);
    at = amp + 1;
  }
  std::sort(params.begin(), params.end());
  std::string out;
  for (const std::string& p : params) out += (out.empty() ? "" : "&") + p;
  return out;
}

std::string hmac(const std::string& key, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), int(key.size()), reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len))
    throw Error("unable to compute an HMAC-SHA256 (OpenSSL)");
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string hex_sha256(const std::string& s) {
  return to_hex(sha256(ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size())));
}

std::string scope(const SigV4Request& r, const SigV4Key& k) {
  return r.amz_date.substr(0, 8) + "/" + k.region + "/" + k.service + "/aws4_request";
}

} // namespace

std::string sigv4_canonical_request(const SigV4Request& r) {
  std::string out = r.method + "\n" + (r.path.empty() ? "/" : r.path) + "\n" + sorted_query(r.query) + "\n";
  for (const auto& [name, value] : sorted_headers(r)) out += name + ":" + value + "\n";
  return out + "\n" + signed_names(r) + "\n" + r.payload_hash;
}

std::string sigv4_string_to_sign(const SigV4Request& r, const SigV4Key& k) {
  return "AWS4-HMAC-SHA256\n" + r.amz_date + "\n" + scope(r, k) + "\n" + hex_sha256(sigv4_canonical_request(r));
}

std::string sigv4_signature(const SigV4Request& r, const SigV4Key& k) {
  std::string key = hmac("AWS4" + k.secret, r.amz_date.substr(0, 8));
  for (const std::string& part : {k.region, k.service, std::string("aws4_request")}) key = hmac(key, part);
  std::string sig = hmac(key, sigv4_string_to_sign(r, k));
  return to_hex(ByteSpan(reinterpret_cast<const uint8_t*>(sig.data()), sig.size()));
}

std::string sigv4_authorization(const SigV4Request& r, const SigV4Key& k) {
  return "AWS4-HMAC-SHA256 Credential=" + k.key_id + "/" + scope(r, k) + ", SignedHeaders=" + signed_names(r) +
         ", Signature=" + sigv4_signature(r, k);
}

std::string amz_date(std::time_t t) {
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

} // namespace hpak::remote
