// A published library in an S3-compatible bucket (s3://BUCKET/PREFIX),
// addressed path-style: the object NAME is ENDPOINT/BUCKET/PREFIX/NAME.
// Reads are the HTTP backend's (core/remote/http/http_backend.hpp); put is
// one PUT (atomic by S3's own rule: a reader sees the old object or the new
// one, never part), remove one DELETE (a missing key is fine); list is
// RemoteUnsupported (publish trusts its published root instead, so a
// publisher needs no ListBucket right). There is no writer lock: one
// publisher is taken on trust.
//
// Every request to the endpoint's origin is signed with AWS SigV4
// (core/remote/s3/sigv4.hpp) when a key is given: host, x-amz-date,
// x-amz-content-sha256 (the body's SHA-256 for a PUT, UNSIGNED-PAYLOAD
// otherwise) and x-amz-security-token with a session token. A redirect to
// another origin gets no signature and no token (core/remote/http/).
#pragma once

#include <memory>
#include <string>

#include "core/remote/http/http_backend.hpp"
#include "core/remote/s3/sigv4.hpp"

namespace hpak::remote {

struct S3Access {
  std::string endpoint; // http(s)://host[:port]
  std::string region = "us-east-1";
  std::string key_id, secret, token; // key_id "": unsigned (a public bucket)
};

// The S3 access an s3:// URL gets: endpoint from `endpoint` (an option), else
// $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else https://s3.REGION.amazonaws.com;
// region from $AWS_REGION, $AWS_DEFAULT_REGION, else us-east-1; credentials
// from $AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY, $AWS_SESSION_TOKEN.
S3Access s3_access_from_env(const std::string& endpoint);

class S3Backend : public HttpBackend {
public:
  S3Backend(const RemoteUrl& url, const S3Access& access, const HttpOptions& opts);
  void put(const std::string& name, ByteSpan bytes, const Digest* want = nullptr) override;
  std::vector<RemoteEntry> list(const std::string& prefix) override;
  void remove(const std::string& name) override;

protected:
  HttpRequest request_for(const GetRequest& g) const override;

private:
  HttpRequest signed_request(const std::string& name, const std::string& method, const std::string& payload_hash) const;
  S3Access access_;
};

std::string parse_s3_url(const std::string& rest, bool as_url, RemoteUrl& url);
std::unique_ptr<Backend> open_s3(const RemoteUrl& url, const BackendOptions& opts, Access access);

} // namespace hpak::remote
