#include "core/remote/http/http_client.hpp"
#include "base/os/sys.hpp"

#include "core/remote/http/curl_api.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <climits>
#include <deque>
#include <memory>
#include <mutex>

#include "base/os/file.hpp"
#include "core/remote/remote_url.hpp"

namespace hpak::remote {

namespace {

using url_parts::lower;

using Clock = std::chrono::steady_clock;

bool retryable(CURLcode c) {
  switch (c) {
  case CURLE_COULDNT_CONNECT:
  case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR:
  case CURLE_PARTIAL_FILE:
  case CURLE_GOT_NOTHING:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_WEIRD_SERVER_REPLY:
    return true;
  default:
    return false;
  }
}

bool retryable_status(long s) { return s == 408 || s == 429 || (s >= 500 && s <= 599); }

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) i++;
  return s.substr(i);
}

const char* env(const char* name) {
  const char* v = getenv(name);
  return v && *v ? v : nullptr;
}

// Scheme, host and port (the default one when none is given) of a URL.
struct Origin {
  std::string scheme, host, port;
  bool ok() const { return !scheme.empty() && !host.empty(); }
  bool operator==(const Origin& o) const { return scheme == o.scheme && host == o.host && port == o.port; }
  std::string shown() const { return scheme + "://" + host + ":" + port; }
};

Origin origin_of(const std::string& url) {
  Origin o;
  CURLU* u = curl::api().url();
  if (!u) return o;
  if (curl::api().url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    auto part = [&](CURLUPart what, unsigned flags, std::string& out) {
      char* v = nullptr;
      if (curl::api().url_get(u, what, &v, flags) == CURLUE_OK && v) out = lower(v);
      curl::api().free(v);
    };
    part(CURLUPART_SCHEME, 0, o.scheme);
    part(CURLUPART_HOST, 0, o.host);
    part(CURLUPART_PORT, CURLU_DEFAULT_PORT, o.port);
  }
  curl::api().url_cleanup(u);
  return o;
}

// Why a redirect from `from` to `to` is not followed ("" if it is): only to
// http(s), never from https to http, and to another origin only when asked
// (the same host moving from http to https counts as the same).
std::string redirect_refusal(const std::string& from, const std::string& to, bool cross_origin) {
  Origin a = origin_of(from), b = origin_of(to);
  std::string head = "refusing its redirect to '" + to.substr(0, 200) + "'";
  if (!b.ok() || (b.scheme != "http" && b.scheme != "https")) return head + ": not an http:// or https:// URL";
  if (a.scheme == "https" && b.scheme == "http") return head + ": from https to http";
  bool upgrade = a.scheme == "http" && b.scheme == "https" && a.host == b.host;
  if (!(a == b) && !upgrade && !cross_origin)
    return head + ": another origin than " + a.shown() + " (--follow-redirects follows it, without credentials)";
  return "";
}

// Whether a request to `url` may carry the credentials meant for `base`.
bool same_origin(const std::string& url, const std::string& base) {
  Origin a = origin_of(url), b = origin_of(base);
  return a.ok() && (a == b || (b.scheme == "http" && a.scheme == "https" && a.host == b.host));
}

} // namespace

// A whole file of a server that ignores Range: an unnamed temporary file
// (nothing is left behind, whatever happens to the process).
struct HttpClient::Spool {
  Fd fd;
  uint64_t size = 0;

  explicit Spool(const std::string& dir) {
    int f = os::open_path(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (f < 0) { // no O_TMPFILE on that file system: a named one, unlinked at once
      std::string tmpl = dir + "/.tmp-spool-XXXXXX";
      f = os::make_temp_file(tmpl);
      if (f < 0) throw_errno("unable to create a temporary file in '" + dir + "'");
      os::unlink_path(tmpl.c_str());
    }
    fd = Fd(f);
  }
  void write(ByteSpan piece, uint64_t at) { pwrite_all(fd.get(), piece, os::Off(at), "a temporary file"); }
  // Bytes [start, end) of the file, or an empty vector when it is shorter.
  Bytes slice(uint64_t start, uint64_t end) const {
    Bytes out;
    if (end > size || start > end) return out;
    out.resize(end - start);
    const long n = pread_full(fd.get(), out, start);
    if (n < 0) throw_errno("unable to read a temporary file");
    if (size_t(n) < out.size()) throw Error("a temporary file ended at byte " + std::to_string(start + uint64_t(n)) + " of " + std::to_string(size));
    return out;
  }
};

std::string describe(const HttpRequest& r) {
  if (!r.ranged) return "'" + r.url + "'";
  return "'" + r.url + "' (bytes " + std::to_string(r.start) + "-" + std::to_string(r.end - 1) + ")";
}

// One request: its easy handle (for the current attempt) and what came back.
struct HttpClient::Transfer {
  size_t index = 0;
  const HttpRequest* req = nullptr;
  std::string url;          // req->url, or where a redirect pointed
  int redirects = 0;
  std::string redirect_to;  // set by outcome(): follow it (not an attempt)
  int attempt = 0;
  Clock::time_point ready{};
  CURL* easy = nullptr;
  CURLM* multi = nullptr;
  curl_slist* headers = nullptr;
  Bytes body;
  uint64_t seen = 0;        // body bytes received in this attempt
  long status = 0;
  std::string content_range;
  std::string content_encoding; // of the current response
  bool encoded = false;     // a 2xx body compressed anyway: refused
  std::string origin;       // of req->url (the Range support learnt)
  bool spoolable = false;   // ranged with a known file size and a spool directory
  bool whole_read = false;  // this attempt asks for the whole file (an origin that ignores Range)
  std::string spool_dir;
  std::shared_ptr<Spool> spool; // the whole file a 200 brought
  std::string spool_error;
  double retry_after = -1;
  bool slice_done = false;  // a 200 carried the whole file: the slice is in, stop
  bool too_long = false;
  size_t sent = 0;          // upload bytes handed to libcurl in this attempt
  std::string error_page;   // the start of an error answer's body
  uint64_t sunk = 0;        // body bytes given to req->sink in this attempt
  std::string sink_error;   // what the sink threw (fails the request)
  Clock::time_point started{};
  uint64_t min_rate = 0;
  long timeout = 0;
  bool cross_origin = false;
  bool too_slow = false;
  double slow_at = 0;       // seconds into the attempt when it was found too slow
  uint64_t slow_bytes = 0;
  char errbuf[CURL_ERROR_SIZE] = {};

  ~Transfer() { drop(); }
  void drop() {
    if (easy) {
      if (multi) curl::api().multi_remove_handle(multi, easy);
      curl::api().easy_cleanup(easy);
      easy = nullptr;
    }
    if (headers) curl::api().slist_free_all(headers);
    headers = nullptr;
  }
  uint64_t want() const { return req->end - req->start; }

  static size_t on_header(char* p, size_t size, size_t n, void* self) {
    auto* t = static_cast<Transfer*>(self);
    std::string line(p, size * n);
    if (line.rfind("HTTP/", 0) == 0) { // a new response (after a redirect or 100)
      t->content_range.clear();
      t->content_encoding.clear();
      t->retry_after = -1;
      return size * n;
    }
    size_t colon = line.find(':');
    if (colon == std::string::npos) return size * n;
    std::string key = lower(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "content-range") t->content_range = value;
    if (key == "content-encoding") t->content_encoding = lower(value);
    if (key == "retry-after" && !value.empty() && std::all_of(value.begin(), value.end(), ::isdigit) && value.size() < 9)
      t->retry_after = double(std::stol(value));
    return size * n;
  }

  static size_t on_read(char* p, size_t size, size_t n, void* self) {
    auto* t = static_cast<Transfer*>(self);
    size_t len = std::min(size * n, t->req->upload.size() - t->sent);
    memcpy(p, t->req->upload.data() + t->sent, len);
    t->sent += len;
    return len;
  }

  static int on_seek(void* self, curl_off_t offset, int origin) {
    auto* t = static_cast<Transfer*>(self);
    if (origin != SEEK_SET || offset < 0 || size_t(offset) > t->req->upload.size()) return CURL_SEEKFUNC_FAIL;
    t->sent = size_t(offset);
    return CURL_SEEKFUNC_OK;
  }

  // The request's own headers, and its credentials when `url` is of its own
  // origin (never for another host).
  void add_headers(const HttpOptions& o) {
    for (const std::string& h : req->headers) headers = curl::api().slist_append(headers, h.c_str());
    if (o.sign && same_origin(url, req->url))
      for (const std::string& h : o.sign(*req, url)) headers = curl::api().slist_append(headers, h.c_str());
  }

  static size_t on_body(char* p, size_t size, size_t n, void* self) {
    auto* t = static_cast<Transfer*>(self);
    size_t len = size * n;
    long code = 0;
    curl::api().easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    uint64_t at = t->seen;
    t->seen += len;
    if (code < 200 || code > 299 || (code != 200 && code != 206 && t->req->method.empty())) { // an error page: its start kept for the message
      if (t->error_page.size() < 2048) t->error_page.append(p, std::min<size_t>(len, 2048 - t->error_page.size()));
      return len;
    }
    const HttpRequest& r = *t->req;
    if (!r.method.empty()) return len;          // PUT/DELETE: the answer is not kept
    if (!t->content_encoding.empty() && t->content_encoding != "identity") {
      t->encoded = true;
      return 0;
    }
    if (!r.ranged) {
      if (t->body.size() + t->sunk + len > r.max_size) {
        t->too_long = true;
        return 0;
      }
      if (r.sink) {
        try {
          r.sink->data(ByteSpan(reinterpret_cast<const uint8_t*>(p), len));
        } catch (const std::exception& e) {
          t->sink_error = e.what();
          return 0;
        }
        t->sunk += len;
        return len;
      }
      t->body.insert(t->body.end(), p, p + len);
      return len;
    }
    if (code == 206) {
      if (t->body.size() + len > t->want()) {
        t->too_long = true;
        return 0;
      }
      t->body.insert(t->body.end(), p, p + len);
      return len;
    }
    // 200 for a range request: the whole file; kept whole when it can be,
    // else [start, end) of it.
    if (t->spoolable) return t->to_spool(p, len, at);
    uint64_t lo = std::max(at, r.start), hi = std::min(at + len, r.end);
    if (lo < hi) t->body.insert(t->body.end(), p + (lo - at), p + (hi - at));
    if (t->body.size() == t->want()) {
      t->slice_done = true;
      return 0; // stop the transfer: the rest is not needed
    }
    return len;
  }

  // A piece of the whole file (at `at`) into the spool, never past the size
  // the request gives the file.
  size_t to_spool(const char* p, size_t len, uint64_t at) {
    if (at + len > req->file_size) {
      too_long = true;
      return 0;
    }
    try {
      if (!spool) spool = std::make_shared<Spool>(spool_dir);
      spool->write(ByteSpan(reinterpret_cast<const uint8_t*>(p), len), at);
    } catch (const std::exception& e) {
      spool_error = e.what();
      return 0;
    }
    return len;
  }

  // The minimum rate (see the header): after `timeout` seconds an attempt
  // must have moved min_rate bytes for every second past it.
  static int on_progress(void* self, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t ulnow) {
    auto* t = static_cast<Transfer*>(self);
    double secs = std::chrono::duration<double>(Clock::now() - t->started).count();
    double owed = (secs - double(t->timeout)) * double(t->min_rate);
    if (owed > 0 && double(dlnow + ulnow) < owed) {
      t->too_slow = true;
      t->slow_at = secs;
      t->slow_bytes = uint64_t(dlnow + ulnow);
      return 1; // abort
    }
    return 0;
  }

  // The bytes this attempt expects to move, when known (0: not known).
  uint64_t expected_bytes() const {
    if (req->method == "PUT") return req->upload.size();
    if (!req->method.empty()) return 0;
    if (spoolable && !whole_read && !known_honoured) return req->file_size; // the answer may be the whole file
    return req->ranged ? (whole_read ? req->file_size : want()) : req->max_size;
  }
  bool known_honoured = false; // the origin is known to answer ranges with 206

  void start(CURLM* m, const HttpOptions& o) {
    multi = m;
    body.clear();
    sunk = 0;
    sink_error.clear();
    too_slow = false;
    started = Clock::now();
    min_rate = std::max<uint64_t>(o.min_rate, 1);
    timeout = o.timeout;
    cross_origin = o.cross_origin_redirects;
    redirect_to.clear();
    if (url.empty()) url = req->url;
    if (req->sink) req->sink->start();
    seen = 0;
    status = 0;
    content_range.clear();
    content_encoding.clear();
    encoded = false;
    spool.reset();
    spool_error.clear();
    retry_after = -1;
    slice_done = too_long = false;
    sent = 0;
    error_page.clear();
    errbuf[0] = 0;
    easy = curl::api().easy_init();
    if (!easy) throw Error("unable to start an HTTP transfer (libcurl)");
    curl::api().easy_setopt(easy, CURLOPT_URL, url.c_str());
    curl::api().easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl::api().easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
    curl::api().easy_setopt(easy, CURLOPT_WRITEFUNCTION, &Transfer::on_body);
    curl::api().easy_setopt(easy, CURLOPT_WRITEDATA, this);
    curl::api().easy_setopt(easy, CURLOPT_HEADERFUNCTION, &Transfer::on_header);
    curl::api().easy_setopt(easy, CURLOPT_HEADERDATA, this);
    curl::api().easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L); // redirects: outcome() decides, run() follows
#if LIBCURL_VERSION_NUM >= 0x075500
    curl::api().easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl::api().easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl::api().easy_setopt(easy, CURLOPT_PROTOCOLS, long(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl::api().easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS, long(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl::api().easy_setopt(easy, CURLOPT_CONNECTTIMEOUT, o.timeout);
    curl::api().easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl::api().easy_setopt(easy, CURLOPT_LOW_SPEED_TIME, o.timeout);
    curl::api().easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
    curl::api().easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, &Transfer::on_progress);
    curl::api().easy_setopt(easy, CURLOPT_XFERINFODATA, this);
    if (uint64_t n = expected_bytes()) { // the deadline the minimum rate implies for its size
      double ms = (double(o.timeout) + double(n) / double(min_rate)) * 1000.0 + 1000.0;
      curl::api().easy_setopt(easy, CURLOPT_TIMEOUT_MS, long(std::min(ms, double(LONG_MAX / 2))));
    }
    curl::api().easy_setopt(easy, CURLOPT_HTTP_VERSION, long(CURL_HTTP_VERSION_2TLS));
    curl::api().easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
    curl::api().easy_setopt(easy, CURLOPT_USERAGENT, "hpak/0.1");
    if (req->ranged && !whole_read) {
      std::string range = std::to_string(req->start) + "-" + std::to_string(req->end - 1);
      curl::api().easy_setopt(easy, CURLOPT_RANGE, range.c_str()); // copied by libcurl
    }
    std::string ca = o.ca_file;
    if (ca.empty() && env("CURL_CA_BUNDLE")) ca = env("CURL_CA_BUNDLE");
    if (ca.empty() && env("SSL_CERT_FILE")) ca = env("SSL_CERT_FILE");
    if (!ca.empty()) curl::api().easy_setopt(easy, CURLOPT_CAINFO, ca.c_str()); // copied by libcurl
    if (req->method == "PUT") {
      curl::api().easy_setopt(easy, CURLOPT_UPLOAD, 1L);
      curl::api().easy_setopt(easy, CURLOPT_READFUNCTION, &Transfer::on_read);
      curl::api().easy_setopt(easy, CURLOPT_READDATA, this);
      curl::api().easy_setopt(easy, CURLOPT_INFILESIZE_LARGE, curl_off_t(req->upload.size()));
      curl::api().easy_setopt(easy, CURLOPT_SEEKFUNCTION, &Transfer::on_seek); // a rewind on a redirect
      curl::api().easy_setopt(easy, CURLOPT_SEEKDATA, this);
    } else if (req->method == "DELETE") {
      curl::api().easy_setopt(easy, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    add_headers(o);
    headers = curl::api().slist_append(headers, "Accept-Encoding: identity"); // the bytes as stored (hashes are over them)
    if (req->no_cache) {
      headers = curl::api().slist_append(headers, "Cache-Control: no-cache");
      headers = curl::api().slist_append(headers, "Pragma: no-cache");
    }
    if (headers) curl::api().easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    if (curl::api().multi_add_handle(m, easy) != CURLM_OK) throw Error("unable to start an HTTP transfer (libcurl)");
  }

  // A 200 to a ranged request brought the whole file: every byte of it
  // (the size the request gives), and the slice asked for.
  std::string whole_file_in() {
    if (seen != req->file_size || !spool)
      return "short body (" + std::to_string(seen) + " of the " + std::to_string(req->file_size) + " bytes of the whole file)";
    spool->size = seen;
    body = spool->slice(req->start, req->end);
    if (body.size() != want()) return "the whole file is shorter than the range asked for";
    return "";
  }

  // "HTTP 403" and, from an S3 error answer, " (SignatureDoesNotMatch)".
  std::string http_status() const {
    std::string out = "HTTP " + std::to_string(status);
    size_t a = error_page.find("<Code>"), b = error_page.find("</Code>");
    if (a != std::string::npos && b != std::string::npos && b > a + 6 && b - a < 80) {
      std::string code = error_page.substr(a + 6, b - a - 6);
      if (std::all_of(code.begin(), code.end(), ::isalnum)) out += " (" + code + ")";
    }
    return out;
  }

  // A 3xx: "" with redirect_to set when it is followed, else why not.
  std::string redirect() {
    char* loc = nullptr;
    curl::api().easy_getinfo(easy, CURLINFO_REDIRECT_URL, &loc);
    if (!loc || !*loc) return http_status() + " without a Location";
    std::string to = loc;
    std::string why = redirect_refusal(url, to, cross_origin);
    if (!why.empty()) return why;
    if (redirects >= 5) return "more than 5 redirects";
    redirect_to = to;
    return "";
  }

  // "" when the transfer delivered what was asked; else why not. Sets
  // `retry` when another attempt may succeed, throws RemoteNotFound on a 404.
  std::string outcome(CURLcode rc, bool& retry) {
    retry = false;
    curl::api().easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    const HttpRequest& r = *req;
    if (rc == CURLE_WRITE_ERROR && slice_done) return "";
    if (encoded)
      return "the answer is compressed (Content-Encoding: " + content_encoding.substr(0, 40) +
             ") though hpak asked for the bytes as stored (Accept-Encoding: identity); serve the files uncompressed";
    if (!sink_error.empty()) return sink_error;
    if (!spool_error.empty()) return spool_error;
    if (too_slow) {
      retry = true;
      char buf[160];
      snprintf(buf, sizeof buf, "slower than the minimum rate (%llu bytes in %.1f s; at least %llu bytes/s after the first %ld s)",
               (unsigned long long)slow_bytes, slow_at, (unsigned long long)min_rate, timeout);
      return buf;
    }
    if (too_long) {
      retry = r.ranged;
      return r.ranged ? "the server sent more bytes than the range asked for" : "larger than " + std::to_string(r.max_size) + " bytes";
    }
    if (rc != CURLE_OK) {
      retry = retryable(rc);
      return errbuf[0] ? std::string(errbuf) : curl::api().easy_strerror(rc);
    }
    if (status >= 300 && status <= 399 && status != 304) return redirect();
    if (!r.method.empty()) { // PUT or DELETE: any 2xx (DELETE of a missing key: 204 or 404)
      if ((status >= 200 && status <= 299) || (r.method == "DELETE" && status == 404)) return "";
      retry = retryable_status(status);
      return http_status();
    }
    if (status == 404 || status == 410)
      throw RemoteNotFound(r.url, "HTTP " + std::to_string(status),
                           "unable to fetch " + describe(r) + ": HTTP " + std::to_string(status) + " (not found)");
    if (retryable_status(status)) {
      retry = true;
      return http_status();
    }
    if (status == 206 && r.ranged) {
      std::string want_cr = "bytes " + std::to_string(r.start) + "-";
      if (content_range.rfind(want_cr, 0) != 0) {
        retry = true;
        return "the server answered another range ('" + content_range.substr(0, 60) + "')";
      }
    } else if (status != 200) {
      return http_status();
    }
    if (status == 200 && r.ranged && spoolable) {
      std::string why = whole_file_in();
      retry = !why.empty();
      return why;
    }
    if (whole_read) return "HTTP " + std::to_string(status) + " for the whole file";
    if (r.ranged && body.size() != want()) {
      retry = true;
      return "short body (" + std::to_string(body.size()) + " of " + std::to_string(want()) + " bytes)";
    }
    return "";
  }
};

HttpClient::HttpClient(const HttpOptions& opts) : opts_(opts) {
  if (opts_.parallel == 0) opts_.parallel = 1;
  if (opts_.attempts < 1) opts_.attempts = 1;
  CURLM* m = curl::api().multi_init();
  if (!m) throw Error("unable to start libcurl");
  curl::api().multi_setopt(m, CURLMOPT_PIPELINING, long(CURLPIPE_MULTIPLEX));
  curl::api().multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, long(opts_.parallel));
  multi_ = m;
}

HttpClient::~HttpClient() { curl::api().multi_cleanup(static_cast<CURLM*>(multi_)); }

// Whether `t` may start now (see the header on servers that ignore Range):
// not while the Range support of its origin is being learnt by another
// request, nor while another request reads its whole file. Sets how it reads.
bool HttpClient::startable(Transfer& t, const std::vector<std::unique_ptr<Transfer>>& active) {
  Transfer& tt = t;
  if (tt.origin.empty()) {
    tt.spoolable = t.req->ranged && t.req->method.empty() && t.req->file_size > 0 && !opts_.spool_dir.empty();
    tt.spool_dir = opts_.spool_dir;
    if (tt.spoolable) tt.origin = origin_of(t.req->url).shown();
  }
  if (!t.spoolable || spools_.count(t.req->url)) return true;
  Ranges known = ranges_[t.origin];
  tt.known_honoured = known == Ranges::Honoured;
  tt.whole_read = known == Ranges::Ignored;
  if (known == Ranges::Honoured) return true;
  for (const auto& a : active) {
    if (!a->spoolable) continue;
    if (known == Ranges::Unknown && a->origin == t.origin) return false; // it is learning
    if (known == Ranges::Ignored && a->whole_read && a->req->url == t.req->url) return false; // it brings the file
  }
  return true;
}

// A range of a whole file kept before: delivered without a transfer.
bool HttpClient::serve_from_spool(Transfer& t, const std::function<void(size_t, Bytes&)>& done) {
  auto it = t.spoolable ? spools_.find(t.req->url) : spools_.end();
  if (it == spools_.end()) return false;
  Bytes body = it->second->slice(t.req->start, t.req->end);
  if (body.size() != t.want())
    throw Error("unable to fetch " + describe(*t.req) + ": the whole file the server sent has " + std::to_string(it->second->size) + " bytes");
  done(t.index, body);
  return true;
}

// What a successful ranged answer says of its origin: a 206 honours ranges;
// a 200 with the whole file ignores them (the file is kept).
void HttpClient::learn_ranges(Transfer& t) {
  if (!t.spoolable) return;
  if (t.status == 206) ranges_[t.origin] = Ranges::Honoured;
  if (t.status == 200 && t.spool) {
    ranges_[t.origin] = Ranges::Ignored;
    spools_[t.req->url] = t.spool;
  }
}

// The request of `t` failed for good: a RemoteError of its kind (see the header).
void HttpClient::fail(const Transfer& t, const std::string& why, bool retried) const {
  const std::string& m = t.req->method;
  std::string message = std::string(m == "PUT" ? "unable to upload to " : m == "DELETE" ? "unable to delete " : "unable to fetch ") +
                        describe(*t.req) + ": " + why + (retried ? " (" + std::to_string(opts_.attempts) + " attempts)" : "");
  if (!t.spool_error.empty()) throw Error(message); // the local disk, not the remote
  RemoteErrc kind = retried ? RemoteErrc::Transient
                    : (t.status == 401 || t.status == 403) && why.rfind("HTTP ", 0) == 0 ? RemoteErrc::Denied
                                                                                          : RemoteErrc::Protocol;
  throw_remote(kind, t.req->url, why, message);
}

void HttpClient::run(const std::vector<HttpRequest>& reqs, const std::function<void(size_t, Bytes&)>& done) {
  CURLM* m = static_cast<CURLM*>(multi_);
  std::deque<std::unique_ptr<Transfer>> waiting; // not started, or waiting to retry
  std::vector<std::unique_ptr<Transfer>> active;
  for (size_t i = 0; i < reqs.size(); i++) {
    auto t = std::make_unique<Transfer>();
    t->index = i;
    t->req = &reqs[i];
    waiting.push_back(std::move(t));
  }
  size_t finished = 0;
  while (finished < reqs.size()) {
    auto now = Clock::now();
    for (auto it = waiting.begin(); it != waiting.end() && active.size() < opts_.parallel;) {
      if ((*it)->ready > now || !startable(**it, active)) {
        ++it;
        continue;
      }
      if (serve_from_spool(**it, done)) {
        finished++;
        it = waiting.erase(it);
        continue;
      }
      (*it)->start(m, opts_);
      stats_.requests++;
      active.push_back(std::move(*it));
      it = waiting.erase(it);
    }
    int running = 0;
    curl::api().multi_perform(m, &running);
    int left = 0;
    while (CURLMsg* msg = curl::api().multi_info_read(m, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      auto it = std::find_if(active.begin(), active.end(), [&](auto& t) { return t->easy == msg->easy_handle; });
      if (it == active.end()) continue;
      std::unique_ptr<Transfer> t = std::move(*it);
      active.erase(it);
      curl_off_t got = 0;
      curl::api().easy_getinfo(t->easy, CURLINFO_SIZE_DOWNLOAD_T, &got);
      stats_.bytes += uint64_t(got);
      bool retry = false;
      std::string why = t->outcome(msg->data.result, retry);
      t->drop();
      if (why.empty() && !t->redirect_to.empty()) { // followed at once (not an attempt)
        t->url = std::move(t->redirect_to);
        t->redirect_to.clear();
        t->redirects++;
        t->ready = Clock::now();
        waiting.push_front(std::move(t));
        continue;
      }
      if (why.empty()) {
        learn_ranges(*t);
        finished++;
        done(t->index, t->body);
        continue;
      }
      if (!retry || ++t->attempt >= opts_.attempts) fail(*t, why, retry);
      stats_.retries++;
      double delay = t->retry_after >= 0 ? std::min(t->retry_after, opts_.max_retry_after)
                                         : std::min(8.0, opts_.backoff * std::pow(2.0, t->attempt - 1));
      t->ready = Clock::now() + std::chrono::microseconds(int64_t(delay * 1e6));
      waiting.push_back(std::move(t));
    }
    if (finished == reqs.size()) break;
    int wait_ms = 1000;
    now = Clock::now();
    for (auto& t : waiting) {
      if (active.size() >= opts_.parallel) break; // a finished transfer wakes the poll
      if (!startable(*t, active)) continue;       // waits for another transfer, which wakes the poll
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t->ready - now).count();
      wait_ms = int(std::clamp<int64_t>(ms, 0, wait_ms));
    }
    if (active.empty() && wait_ms == 0) continue;
    curl::api().multi_poll(m, nullptr, 0, wait_ms, nullptr);
  }
}

} // namespace hpak::remote
