// AWS Signature Version 4, the request signing every S3 request carries (and Cloud Storage's
// S3-interoperable XML API accepts with HMAC keys). Pure functions of the request, the scope and
// the keys, so that the signer is checked offline against AWS's published test vectors
// (tests/base/sigv4_test.cc) before any server sees a request.
//
// The steps, as AWS specifies them: a canonical request (method, URI path, sorted query, sorted
// lower-case headers with trimmed values, the signed header names, the payload's SHA-256), a string
// to sign (algorithm, time, scope, the canonical request's SHA-256), a signing key derived from the
// secret by four HMAC-SHA256 rounds (date, region, service, "aws4_request"), and the signature,
// the HMAC of the string to sign under that key, in hex.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cohort {

// A request as the signer sees it. `canonical_uri` is the path exactly as sent, already
// percent-encoded (S3 encodes each key segment once and never normalises the path; see
// UriEncode). `query` holds decoded name/value pairs in any order. `headers` are every header to
// sign, `host` included, with values as sent; a name given twice is signed as one header whose
// values are joined by commas in the order given.
struct SigV4Request {
  std::string method;
  std::string canonical_uri;
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload_sha256;  // lower-case hex of the body's SHA-256
};

// Who signs and for what: the time (ISO 8601 basic, "20150830T123600Z", the x-amz-date value), the
// region ("us-east-1"; Cloud Storage takes "auto") and the service ("s3").
struct SigV4Scope {
  std::string amz_date;
  std::string region;
  std::string service;
};

// Every intermediate result, so that a test can name the step that went wrong.
struct SigV4Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signed_headers;  // "host;x-amz-content-sha256;x-amz-date"
  std::string signature;       // 64 lower-case hex digits
  std::string authorization;   // the Authorization header's value
};

// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters (A-Z a-z 0-9 - . _ ~) stay,
// every other byte becomes %XX in upper case; '/' stays unless `encode_slash` (query values and
// names encode it, object key paths do not).
std::string UriEncode(std::string_view text, bool encode_slash);

// The canonical query string: each name and value encoded, pairs sorted by name then value,
// joined with '&' ("max-keys=2&prefix=J"). Also what is sent on the wire, so the two never differ.
std::string CanonicalQueryString(const std::vector<std::pair<std::string, std::string>>& query);

// The SigV4 signing key (32 raw bytes) for a secret, a date ("20150830"), a region and a service.
std::string SigV4SigningKey(std::string_view secret_access_key, std::string_view date,
                            std::string_view region, std::string_view service);

// Signs `request` for `scope` with the given key pair.
SigV4Signature SignV4(const SigV4Request& request, const SigV4Scope& scope,
                      std::string_view access_key_id, std::string_view secret_access_key);

}  // namespace cohort
