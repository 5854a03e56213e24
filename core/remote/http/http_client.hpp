// HTTP client of remote libraries (libcurl multi): many GETs, plain or ranged,
// run in parallel over reused connections (HTTP/2 multiplexed when a TLS server
// offers it), with servers taken as they are:
//  - a 200 with the whole body answering a range request (a server that
//    ignores Range, like `python3 -m http.server`): when the request gives
//    the file's size and the client a spool directory, the whole file is kept
//    in an unnamed temporary file there, which then serves every range of
//    that URL for the client's life, and the origin is read by whole files
//    from then on (each file once); the first ranged request to an origin
//    whose Range support is not yet known runs alone, so that only one
//    answer can be a whole file. Otherwise the wanted slice is kept and the
//    rest discarded as it arrives (the transfer stops after it);
//  - every request asks for the bytes as stored (Accept-Encoding: identity);
//    an answer compressed anyway (a Content-Encoding other than identity)
//    fails at once, naming its Content-Encoding;
//  - a short body, a 206 for another range, a connection reset, a timeout (no
//    byte for `timeout` seconds, or slower than the minimum rate: see
//    below), a 408, 429 or 5xx: retried with exponential backoff
//    (Retry-After in seconds honoured, capped), `attempts` in all;
//  - redirects: at most 5, http and https only, never from https to http;
//    by default only to the same origin (scheme, host and port), where the
//    request keeps its credentials; with `cross_origin_redirects` to another
//    origin too, but then without any (no signature, no session token:
//    credentials never reach another host);
//  - a 404 or 410: RemoteNotFound at once (a file a remote gc removed);
//  - what fails for good is a RemoteError of its kind (core/remote/backend.hpp):
//    Denied for a 401 or 403, Transient once the retries are spent, Protocol
//    for an answer that is not what was asked;
//  - a body above the size asked for: an error (never buffered without bound);
//    a body given to a BodySink is not buffered at all.
// Deadline: an attempt must have moved (received or sent) at least
// min_rate * (t - timeout) bytes t seconds after it started, so an attempt
// that moves N bytes ends within timeout + N / min_rate seconds whatever the
// server does; one that expects N bytes (a range, an upload, the size asked
// for) is given at most that long in any case.
// Callbacks run on the calling thread; nothing here prints.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/error.hpp"
#include "core/remote/backend.hpp"

namespace hpak::remote {

struct HttpRequest;

// The headers that authenticate one attempt of `req` to `url` ("Name: value"
// lines), e.g. an S3 signature (core/remote/s3/); called for every attempt
// sent to the request's own origin, never for another (a redirect).
using HttpSigner = std::function<std::vector<std::string>(const HttpRequest& req, const std::string& url)>;

struct HttpOptions {
  unsigned parallel = 8;     // transfers at once
  int attempts = 6;          // per request, the first included
  double backoff = 0.25;     // seconds before the first retry; doubles, at most 8
  double max_retry_after = 30; // cap on a server's Retry-After
  long timeout = 30;         // seconds to connect, and without a byte before giving up
  uint64_t min_rate = 8192;  // bytes per second an attempt must average after `timeout` seconds
  bool cross_origin_redirects = false; // follow redirects to other origins (without credentials)
  std::string spool_dir;     // whole files of a server that ignores Range ("" = slices cut out of its answers)
  std::string ca_file;       // CA certificates (PEM) for https ("" = $CURL_CA_BUNDLE, $SSL_CERT_FILE, the system's)
  HttpSigner sign;           // set: authenticates every attempt (see HttpSigner)
};

struct HttpRequest {
  std::string url;
  bool ranged = false;
  uint64_t start = 0, end = 0; // ranged: bytes [start, end)
  uint64_t file_size = 0;      // ranged: the whole file's size, when known (see the header)
  uint64_t max_size = 0;       // not ranged: refuse a longer body
  BodySink* sink = nullptr;    // not ranged: the body goes there (done() then gets an empty one)
  bool no_cache = false;       // ask caches to revalidate (the root)
  std::string method;          // "" = GET; "PUT" (sends `upload`), "DELETE"
  ByteSpan upload;
  std::vector<std::string> headers; // sent with every attempt ("Name: value")
};

struct HttpStats {
  uint64_t requests = 0; // attempts sent
  uint64_t retries = 0;
  uint64_t bytes = 0;    // body bytes received, discarded ones included
};

class HttpClient {
public:
  explicit HttpClient(const HttpOptions& opts);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Runs every request, at most `parallel` at a time; `done(i, body)` gets
  // each body (exactly end-start bytes when ranged) as it completes, in any
  // order. Throws a RemoteError (after retries; see the header); transfers still
  // running are dropped first. An exception from `done` propagates the same.
  void run(const std::vector<HttpRequest>& reqs, const std::function<void(size_t, Bytes&)>& done);

  const HttpStats& stats() const { return stats_; }

private:
  struct Transfer;
  struct Spool;
  enum class Ranges { Unknown, Honoured, Ignored };
  bool startable(Transfer& t, const std::vector<std::unique_ptr<Transfer>>& active);
  bool serve_from_spool(Transfer& t, const std::function<void(size_t, Bytes&)>& done);
  void learn_ranges(Transfer& t);
  [[noreturn]] void fail(const Transfer& t, const std::string& why, bool retried) const;
  HttpOptions opts_;
  std::map<std::string, Ranges> ranges_;               // per origin
  std::map<std::string, std::shared_ptr<Spool>> spools_; // per URL: whole files of origins that ignore Range
  void* multi_ = nullptr;
  HttpStats stats_;
};

// "URL" or "URL (bytes A-B)" for messages.
std::string describe(const HttpRequest& r);

} // namespace hpak::remote
