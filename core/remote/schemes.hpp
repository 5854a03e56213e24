// The scheme table: one row per kind of remote, naming the functions of its
// folder (core/remote/<kind>/) that parse its URLs and open its backend.
// parse_remote_url (core/remote/remote_url.hpp) finds a URL's row here, and
// open_backend opens it; nothing else in hpak knows which kinds there are.
//
//   scheme   folder              writes  reads
//   file     core/remote/dir/    yes     files of a directory (a plain DIR too)
//   http(s)  core/remote/http/   no      GET, ranges in parallel (libcurl)
//   s3       core/remote/s3/     yes     GET, PUT, DELETE signed with SigV4
//
// Adding a kind: a folder with its Backend, its parse and open functions, and
// one row in schemes.cpp (CONTRIBUTING.md, "A new remote backend").
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/remote/backend.hpp"
#include "core/remote/http/http_client.hpp"
#include "core/remote/remote_url.hpp"

namespace hpak::remote {

// How to reach a remote: the options of every kind, each reading its own.
struct BackendOptions {
  HttpOptions http;        // http://, https:// and s3:// transfers (parallelism, retries, TLS, the spool)
  std::string s3_endpoint; // s3://: "" = $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS (core/remote/s3/s3_backend.hpp)
};

enum class Access { Read, Write };

struct Scheme {
  const char* name;  // as written before "://", lower-case
  const char* label; // in messages: "a directory", "HTTP", "an s3:// URL"
  const char* shape; // in messages: "'URL' is not " SHAPE " URL: why"
  bool writable;     // publish can write there
  // Fills `url` (all but `scheme` and `text`) from what follows "SCHEME://"
  // (`as_url`), or from the whole text (a plain DIR); "" or why it is not usable.
  std::string (*parse)(const std::string& rest, bool as_url, RemoteUrl& url);
  std::unique_ptr<Backend> (*open)(const RemoteUrl& url, const BackendOptions& opts, Access access);
};

const std::vector<Scheme>& schemes();
// The row of `name` (lower-case), or nullptr.
const Scheme* find_scheme(std::string_view name);
// The backend of `url` (a parsed URL: its row exists). Writing where its
// scheme cannot: an Error naming the schemes that can.
std::unique_ptr<Backend> open_backend(const RemoteUrl& url, const BackendOptions& opts, Access access);

} // namespace hpak::remote
