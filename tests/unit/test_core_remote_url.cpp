// core/remote/remote_url and the scheme table: a URL is parsed once into its
// scheme, host, port, bucket and path, trailing slashes removed there and
// nowhere else; a URL that cannot be used, or a scheme no row reads, fails
// with one line naming it and why; the table opens each scheme's backend and
// refuses to write where its scheme cannot.
#include <doctest/doctest.h>

#include <string>

#include "base/error.hpp"
#include "core/remote/dir/dir_backend.hpp"
#include "core/remote/http/http_backend.hpp"
#include "core/remote/remote_url.hpp"
#include "core/remote/s3/s3_backend.hpp"
#include "core/remote/schemes.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::remote;

namespace {

// The message parse_remote_url throws for `text` ("" if it parses).
std::string refusal(const std::string& text) {
  try {
    parse_remote_url(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

} // namespace

TEST_CASE("remote url: http and https give host, port (default or given) and path") {
  RemoteUrl u = parse_remote_url("http://127.0.0.1:8080/pub/lib");
  CHECK(u.scheme == "http");
  CHECK(u.host == "127.0.0.1");
  CHECK(u.port == 8080);
  CHECK(u.port_given);
  CHECK(u.path == "/pub/lib");
  CHECK(u.text == "http://127.0.0.1:8080/pub/lib");

  RemoteUrl s = parse_remote_url("https://example.com");
  CHECK(s.scheme == "https");
  CHECK(s.host == "example.com");
  CHECK(s.port == 443);
  CHECK_FALSE(s.port_given);
  CHECK(s.path == "");
  CHECK(parse_remote_url("http://example.com/x").port == 80);

  RemoteUrl v6 = parse_remote_url("http://[::1]:9000/a");
  CHECK(v6.host == "[::1]");
  CHECK(v6.port == 9000);
  RemoteUrl auth = parse_remote_url("https://user:secret@host.example:8443/p");
  CHECK(auth.host == "host.example");
  CHECK(auth.port == 8443);
  CHECK(parse_remote_url("HTTPS://Example.com/x").scheme == "https"); // the scheme is case-insensitive
}

TEST_CASE("remote url: trailing slashes are removed once, from the text and the path, nothing else changes") {
  RemoteUrl u = parse_remote_url("http://h/pub///");
  CHECK(u.text == "http://h/pub");
  CHECK(u.path == "/pub");
  CHECK(parse_remote_url("http://h/").text == "http://h");
  CHECK(parse_remote_url("http://h/a//b/").text == "http://h/a//b"); // inner slashes are the server's business
  CHECK(parse_remote_url("s3://bucket/team/lib/").path == "team/lib");
  CHECK(parse_remote_url("s3://bucket/").text == "s3://bucket");
  CHECK(parse_remote_url("/srv/www/").path == "/srv/www");
  CHECK(parse_remote_url("/").path == "/"); // the root directory stays itself
  CHECK(parse_remote_url("file:///srv/www/").path == "/srv/www");
  CHECK(parse_remote_url("file:///").path == "/");
  CHECK(parse_remote_url("file:///").text == "file:///");
  CHECK(strip_trailing_slashes("a//") == "a");
  CHECK(strip_trailing_slashes("//") == "/");
}

TEST_CASE("remote url: s3 gives the bucket and the key prefix") {
  RemoteUrl u = parse_remote_url("s3://my-bucket.1/team/lib");
  CHECK(u.scheme == "s3");
  CHECK(u.bucket == "my-bucket.1");
  CHECK(u.host == "");
  CHECK(u.path == "team/lib");
  CHECK(parse_remote_url("s3://b").path == "");
}

TEST_CASE("remote url: a directory, plain or file://") {
  RemoteUrl plain = parse_remote_url("relative/dir");
  CHECK(plain.scheme == "file");
  CHECK(plain.path == "relative/dir");
  CHECK(plain.text == "relative/dir");
  CHECK(parse_remote_url("./a://b").scheme == "file"); // "./a" is no scheme: a path
  RemoteUrl f = parse_remote_url("file:///srv/my%20www");
  CHECK(f.scheme == "file");
  CHECK(f.path == "/srv/my www");
  CHECK(f.text == "file:///srv/my%20www");
  CHECK(parse_remote_url("file://localhost/srv").path == "/srv");
}

TEST_CASE("remote url: a URL that cannot be used fails with one line naming it and why") {
  CHECK(refusal("http://") == "'http://' is not an http://HOST[:PORT][/PATH] URL: no host");
  CHECK(refusal("http://h:0/x") == "'http://h:0/x' is not an http://HOST[:PORT][/PATH] URL: port '0' is not a number from 1 to 65535");
  CHECK(contains(refusal("https://h:99999"), "port '99999' is not a number from 1 to 65535"));
  CHECK(contains(refusal("http://h:8x/"), "port '8x'"));
  CHECK(contains(refusal("http://h/x?sig=1"), "a query or a fragment"));
  CHECK(contains(refusal("http://h/a b"), "a space in it"));
  CHECK(refusal("s3://Bad_Bucket/x") ==
        "'s3://Bad_Bucket/x' is not an s3://BUCKET/PREFIX URL: bucket names are lower-case letters, digits, '.' and '-'");
  CHECK(contains(refusal("s3://"), "is not an s3://BUCKET/PREFIX URL"));
  CHECK(contains(refusal("file://server/share"), "a host ('server'): file:// URLs name local directories"));
  CHECK(contains(refusal("file:///a%zz"), "a '%' not followed by two hex digits"));
  CHECK(refusal("") == "'' is not a remote URL: it is empty");
  CHECK(contains(refusal("http://h/\n"), "a control character"));
  for (const char* bad : {"http://", "s3://Bad", "ftp://x", ""}) CHECK(refusal(bad).find('\n') == std::string::npos);
}

TEST_CASE("scheme table: an unknown scheme is refused, naming it and the schemes there are") {
  CHECK(refusal("ftp://host/x") ==
        "'ftp://host/x' is not a remote URL: unknown scheme 'ftp' (hpak reads file://, http://, https://, s3:// or a directory)");
  CHECK(find_scheme("ftp") == nullptr);
  CHECK(find_scheme("gs") == nullptr);
}

TEST_CASE("scheme table: one row per scheme, each opening its own backend") {
  for (const char* name : {"file", "http", "https", "s3"}) {
    const Scheme* s = find_scheme(name);
    REQUIRE(s != nullptr);
    CHECK(std::string(s->name) == name);
  }
  CHECK(schemes().size() == 4);
  fx::TempDir t("remote-url");
  BackendOptions opts;
  opts.s3_endpoint = "http://127.0.0.1:9";
  CHECK(dynamic_cast<DirBackend*>(open_backend(parse_remote_url(t.path()), opts, Access::Read).get()) != nullptr);
  CHECK(dynamic_cast<DirBackend*>(open_backend(parse_remote_url("file://" + t.path()), opts, Access::Read).get()) != nullptr);
  auto http = open_backend(parse_remote_url("http://127.0.0.1:9/pub/"), opts, Access::Read);
  CHECK(dynamic_cast<HttpBackend*>(http.get()) != nullptr);
  CHECK(http->where("HPAKROOT") == "http://127.0.0.1:9/pub/HPAKROOT");
  auto s3 = open_backend(parse_remote_url("s3://bucket/team/lib"), opts, Access::Write);
  CHECK(dynamic_cast<S3Backend*>(s3.get()) != nullptr);
  CHECK(s3->where("packs/x") == "http://127.0.0.1:9/bucket/team/lib/packs/x"); // path style
}

TEST_CASE("scheme table: writing where the scheme cannot is refused before anything is sent") {
  BackendOptions opts;
  try {
    open_backend(parse_remote_url("https://h/pub/"), opts, Access::Write);
    FAIL("opened an https:// URL for writing");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "'https://h/pub': publish writes to a directory or an s3:// URL, not over HTTP");
  }
}

TEST_CASE("remote url: looks_like_url tells a URL from a library directory") {
  CHECK(looks_like_url("http://h/x"));
  CHECK(looks_like_url("s3://b"));
  CHECK(looks_like_url("file:///x"));
  CHECK(looks_like_url("gopher://x")); // a URL, refused when parsed, never taken for a directory
  CHECK_FALSE(looks_like_url("/srv/lib"));
  CHECK_FALSE(looks_like_url("lib"));
  CHECK_FALSE(looks_like_url("./a://b"));
  CHECK_FALSE(looks_like_url("://x"));
}
