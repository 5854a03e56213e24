// A published library on a web server (http://, https://): the object NAME
// is BASE/NAME, read with GET, ranges in parallel through the HttpClient
// (core/remote/http/http_client.hpp: servers that ignore Range, compressed
// answers, retries, redirects). Read-only: put, list and remove are
// RemoteUnsupported (publish writes the files into a directory the server
// serves). The S3 backend (core/remote/s3/) builds on it.
#pragma once

#include <memory>
#include <string>

#include "core/remote/backend.hpp"
#include "core/remote/http/http_client.hpp"
#include "core/remote/schemes.hpp"

namespace hpak::remote {

class HttpBackend : public Backend {
public:
  // `base`: http(s)://HOST[:PORT][/PATH] without a trailing slash.
  HttpBackend(std::string base, const HttpOptions& opts);
  std::string where(const std::string& name) const override { return base_ + "/" + name; }
  void get_many(const std::vector<GetRequest>& reqs, const std::function<void(size_t, Bytes&)>& done) override;
  void put(const std::string& name, ByteSpan bytes, const Digest* want = nullptr) override;
  std::vector<RemoteEntry> list(const std::string& prefix) override;
  void remove(const std::string& name) override;
  BackendStats stats() const override;

protected:
  // The HTTP request of one read (GET of BASE/NAME, its Range).
  virtual HttpRequest request_for(const GetRequest& g) const;
  // Sends `reqs` (PUT, DELETE: bodies discarded).
  void send(const std::vector<HttpRequest>& reqs);
  [[noreturn]] void unsupported(const std::string& what, const std::string& name, const std::string& why) const;

private:
  std::string base_;
  HttpClient http_;
};

std::string parse_http_url(const std::string& rest, bool as_url, RemoteUrl& url);
std::unique_ptr<Backend> open_http(const RemoteUrl& url, const BackendOptions& opts, Access access);

} // namespace hpak::remote
