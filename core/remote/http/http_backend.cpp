#include "core/remote/http/http_backend.hpp"

namespace hpak::remote {

std::string parse_http_url(const std::string& rest, bool, RemoteUrl& url) {
  if (rest.find_first_of("?#") != std::string::npos)
    return "a query or a fragment ('?', '#'): give the base URL of the published library";
  if (rest.find(' ') != std::string::npos) return "a space in it (write it as %20)";
  size_t slash = rest.find('/');
  url.path = slash == std::string::npos ? "" : rest.substr(slash);
  return url_parts::parse_authority(rest.substr(0, slash), url.scheme == "https" ? 443 : 80, url);
}

std::unique_ptr<Backend> open_http(const RemoteUrl& url, const BackendOptions& opts, Access) {
  return std::make_unique<HttpBackend>(url.text, opts.http);
}

HttpBackend::HttpBackend(std::string base, const HttpOptions& opts) : base_(std::move(base)), http_(opts) {}

HttpRequest HttpBackend::request_for(const GetRequest& g) const {
  HttpRequest r;
  r.url = where(g.name);
  r.ranged = g.ranged;
  r.start = g.offset;
  r.end = g.offset + g.length;
  r.file_size = g.object_size;
  r.max_size = g.max_size;
  r.sink = g.sink;
  r.no_cache = g.fresh;
  return r;
}

void HttpBackend::get_many(const std::vector<GetRequest>& reqs, const std::function<void(size_t, Bytes&)>& done) {
  std::vector<HttpRequest> http;
  http.reserve(reqs.size());
  for (const GetRequest& g : reqs) http.push_back(request_for(g));
  http_.run(http, done);
}

void HttpBackend::send(const std::vector<HttpRequest>& reqs) {
  http_.run(reqs, [](size_t, Bytes&) {});
}

void HttpBackend::unsupported(const std::string& what, const std::string& name, const std::string& why) const {
  throw RemoteUnsupported(where(name), why, "unable to " + what + " '" + where(name) + "': " + why);
}

namespace {
const char* const kReadOnly = "a web server is read-only to hpak (publish into the directory it serves)";
}

void HttpBackend::put(const std::string& name, ByteSpan, const Digest*) { unsupported("write", name, kReadOnly); }
std::vector<RemoteEntry> HttpBackend::list(const std::string& prefix) {
  unsupported("list", prefix, "HTTP has no listing (the published root names every file)");
}
void HttpBackend::remove(const std::string& name) { unsupported("remove", name, kReadOnly); }

BackendStats HttpBackend::stats() const {
  const HttpStats& s = http_.stats();
  return {s.requests, s.retries, s.bytes};
}

} // namespace hpak::remote
