// core/remote/s3: SigV4 as the S3 backend computes it, against the worked
// example of AWS's S3 documentation ("Signature Calculations for the
// Authorization Header", GET Object with a Range: its canonical request, the
// SHA-256 of it in the string to sign, and the signature); the pieces that
// example does not cover (query order, header case and blanks); and the S3
// backend's read-only listing.
#include <doctest/doctest.h>

#include "base/error.hpp"
#include "core/remote/remote_url.hpp"
#include "core/remote/s3/s3_backend.hpp"
#include "core/remote/s3/sigv4.hpp"

using namespace hpak;
using namespace hpak::remote;

namespace {

const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// GET /test.txt from examplebucket, bytes 0-9, on 2013-05-24 (the AWS example).
SigV4Request aws_example() {
  SigV4Request r;
  r.method = "GET";
  r.path = "/test.txt";
  r.amz_date = "20130524T000000Z";
  r.payload_hash = kEmptySha256;
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
               {"Range", "bytes=0-9"},
               {"x-amz-content-sha256", kEmptySha256},
               {"x-amz-date", "20130524T000000Z"}};
  return r;
}

const SigV4Key kExampleKey{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1", "s3"};

} // namespace

TEST_CASE("sigv4: the AWS S3 example, step by step") {
  SigV4Request r = aws_example();
  CHECK(sigv4_canonical_request(r) ==
        "GET\n/test.txt\n\n"
        "host:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
        "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
        "x-amz-date:20130524T000000Z\n\n"
        "host;range;x-amz-content-sha256;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sigv4_string_to_sign(r, kExampleKey) ==
        "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
        "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  CHECK(sigv4_signature(r, kExampleKey) == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  CHECK(sigv4_authorization(r, kExampleKey) ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST_CASE("sigv4: anything signed changes the signature") {
  const std::string base = sigv4_signature(aws_example(), kExampleKey);
  SigV4Request other = aws_example();
  other.path = "/test.txT";
  CHECK(sigv4_signature(other, kExampleKey) != base);
  other = aws_example();
  other.headers[1].second = "bytes=0-10";
  CHECK(sigv4_signature(other, kExampleKey) != base);
  SigV4Key wrong = kExampleKey;
  wrong.secret[0] = 'x';
  CHECK(sigv4_signature(aws_example(), wrong) != base);
  wrong = kExampleKey;
  wrong.region = "eu-west-1";
  CHECK(sigv4_signature(aws_example(), wrong) != base);
}

TEST_CASE("sigv4: query parameters sorted, header names lower-cased and sorted, values trimmed") {
  SigV4Request r;
  r.method = "GET";
  r.path = "";
  r.query = "prefix=packs%2F&list-type=2&delimiter";
  r.headers = {{"X-Amz-Date", "20240101T000000Z"}, {"HOST", "  h:9000 "}, {"x-amz-meta-a", "one   two"}};
  r.payload_hash = "UNSIGNED-PAYLOAD";
  r.amz_date = "20240101T000000Z";
  CHECK(sigv4_canonical_request(r) ==
        "GET\n/\ndelimiter=&list-type=2&prefix=packs%2F\n"
        "host:h:9000\nx-amz-date:20240101T000000Z\nx-amz-meta-a:one two\n\n"
        "host;x-amz-date;x-amz-meta-a\nUNSIGNED-PAYLOAD");
}

TEST_CASE("sigv4: x-amz-date is UTC, to the second") {
  CHECK(amz_date(0) == "19700101T000000Z");
  CHECK(amz_date(1369353600) == "20130524T000000Z");
}

TEST_CASE("s3 backend: objects are ENDPOINT/BUCKET/PREFIX/NAME, odd key bytes encoded; no listing") {
  S3Access a;
  a.endpoint = "http://127.0.0.1:9/";
  HttpOptions http;
  S3Backend b(parse_remote_url("s3://bucket/team lib+x"), a, http);
  CHECK(b.where("HPAKROOT") == "http://127.0.0.1:9/bucket/team%20lib%2Bx/HPAKROOT");
  CHECK_THROWS_AS(b.list("packs/"), RemoteUnsupported);
  a.endpoint = "ftp://x";
  CHECK_THROWS_WITH_AS(S3Backend(parse_remote_url("s3://bucket"), a, http), "S3 endpoint 'ftp://x' is not an http:// or https:// URL", Error);
}
