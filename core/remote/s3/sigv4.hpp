// AWS Signature Version 4 of one HTTP request (the Authorization header S3
// checks), computed here rather than by the transport: canonical request ->
// string to sign -> HMAC-SHA256 chain of the secret over date, region,
// service and "aws4_request" -> signature.
//
//   canonical request = METHOD \n PATH \n QUERY \n (name:value \n)* \n NAMES \n PAYLOAD-HASH
//   string to sign    = "AWS4-HMAC-SHA256" \n AMZ-DATE \n DATE/REGION/SERVICE/aws4_request \n hex(SHA-256(canonical request))
//
// PATH and QUERY are taken as they are sent (already percent-encoded; S3 does
// not encode twice), the query's parameters sorted; header names lower-case,
// sorted, values trimmed. Checked against AWS's published example
// (tests/unit/test_core_remote_s3.cpp) and a server that verifies signatures
// (tests/cli/test_remote_s3.sh).
#pragma once

#include <ctime>
#include <string>
#include <utility>
#include <vector>

namespace hpak::remote {

struct SigV4Key {
  std::string key_id, secret;
  std::string region = "us-east-1";
  std::string service = "s3";
};

struct SigV4Request {
  std::string method;  // "GET", "PUT", "DELETE"
  std::string path;    // "/bucket/key" as sent ("/" when empty)
  std::string query;   // "a=1&b=2" as sent, without '?' ("" when none)
  std::vector<std::pair<std::string, std::string>> headers; // every header signed, "host" and "x-amz-date" included
  std::string payload_hash; // hex SHA-256 of the body, or "UNSIGNED-PAYLOAD"
  std::string amz_date;     // YYYYMMDDTHHMMSSZ, the value of x-amz-date
};

std::string sigv4_canonical_request(const SigV4Request& r);
std::string sigv4_string_to_sign(const SigV4Request& r, const SigV4Key& k);
std::string sigv4_signature(const SigV4Request& r, const SigV4Key& k);
// "AWS4-HMAC-SHA256 Credential=KEY/DATE/REGION/SERVICE/aws4_request, SignedHeaders=..., Signature=..."
std::string sigv4_authorization(const SigV4Request& r, const SigV4Key& k);
// `t` as x-amz-date wants it (UTC).
std::string amz_date(std::time_t t);

} // namespace hpak::remote
