// Where a published library lives, as the user wrote it, parsed once
// (parse_remote_url) into a typed value the backends open
// (core/remote/schemes.hpp) and messages show.
//
//   DIR                         a directory (any text without "SCHEME://")
//   file:///ABSOLUTE/DIR        the same (no host: local directories only)
//   http[s]://HOST[:PORT][/PATH]
//   s3://BUCKET[/PREFIX]        path-style on the S3 endpoint (core/remote/s3/)
//
// Normalisation, here only: trailing slashes are removed (`text`, `path`),
// nothing else, so `text` is the URL as given and its hash (a restore cache's
// catalog names: remote_cache_name) stays what it was for every spelling that
// worked before. A URL that cannot be used fails with one line naming it and
// what is wrong.
#pragma once

#include <cstdint>
#include <string>

namespace hpak::remote {

struct RemoteUrl {
  std::string scheme; // a row of the scheme table: "file" (a plain DIR too), "http", "https", "s3"
  std::string text;   // as given, trailing slashes removed: shown in messages, hashed for cache names
  std::string host;   // http(s): the host as written ("127.0.0.1", "[::1]", "example.com")
  uint16_t port = 0;  // http(s): the port given, else the scheme's (80, 443)
  bool port_given = false;
  std::string bucket; // s3
  std::string path;   // file: the directory; http(s): "" or "/a/b"; s3: the key prefix ("" or "a/b")
};

// Parses `text` (see the header); throws Error "'TEXT' is not SHAPE URL: WHY"
// (SHAPE: the scheme's, "an s3://BUCKET/PREFIX"; "a remote" when the scheme
// is unknown).
RemoteUrl parse_remote_url(const std::string& text);

// Whether `text` is written as a URL ("SCHEME://..."), known scheme or not:
// `hpak restore` reads such an argument as a remote, anything else as a library.
bool looks_like_url(const std::string& text);

// `s` without its trailing slashes ("/" stays "/").
std::string strip_trailing_slashes(std::string s);

// Pieces of a URL's parse, for the scheme table's rows.
namespace url_parts {
// `s` with A-Z made a-z (schemes, hosts, header names).
std::string lower(std::string s);
// "HOST[:PORT]" (after "SCHEME://", before the path): fills host, port.
// `default_port` when none is given. Returns "" or why it is not usable.
std::string parse_authority(const std::string& authority, uint16_t default_port, RemoteUrl& out);
} // namespace url_parts

} // namespace hpak::remote
