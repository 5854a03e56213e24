// HTTP client of remote libraries (libcurl multi): many GETs, plain or ranged,
// run in parallel over reused connections (HTTP/2 multiplexed when a TLS server
// offers it), with servers taken as they are:
//  - a 200 with the whole body answering a range request: the wanted slice is
//    kept, the rest discarded as it arrives (the transfer stops after it);
//  - a short body, a 206 for another range, a connection reset, a timeout (no
//    byte for `timeout` seconds), a 408, 429 or 5xx: retried with exponential
//    backoff (Retry-After in seconds honoured, capped), `attempts` in all;
//  - redirects followed (at most 5, http and https only);
//  - a 404 or 410: HttpNotFound at once (a file a remote gc removed);
//  - a body above the size asked for: an error (never buffered without bound).
// Callbacks run on the calling thread; nothing here prints.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/util/bytes.hpp"
#include "core/util/error.hpp"

namespace hpak {

struct HttpOptions {
  unsigned parallel = 8;     // transfers at once
  int attempts = 6;          // per request, the first included
  double backoff = 0.25;     // seconds before the first retry; doubles, at most 8
  double max_retry_after = 30; // cap on a server's Retry-After
  long timeout = 30;         // seconds to connect, and without a byte before giving up
};

struct HttpRequest {
  std::string url;
  bool ranged = false;
  uint64_t start = 0, end = 0; // ranged: bytes [start, end)
  uint64_t max_size = 0;       // not ranged: refuse a longer body
  bool no_cache = false;       // ask caches to revalidate (the root)
};

class HttpNotFound : public Error {
public:
  using Error::Error;
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
  // order. Throws HttpNotFound or Error (after retries); transfers still
  // running are dropped first. An exception from `done` propagates the same.
  void run(const std::vector<HttpRequest>& reqs, const std::function<void(size_t, Bytes&)>& done);
  Bytes get(const HttpRequest& req);

  const HttpStats& stats() const { return stats_; }

private:
  struct Transfer;
  HttpOptions opts_;
  void* multi_ = nullptr;
  HttpStats stats_;
};

// "URL" or "URL (bytes A-B)" for messages.
std::string describe(const HttpRequest& r);

} // namespace hpak
