#include "base/sigv4.h"

#include <openssl/hmac.h>

#include <algorithm>
#include <map>

#include "base/checksum.h"
#include "base/hex.h"

namespace cohort {
namespace {

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest, &length);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

std::string Lower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lower;
}

// Leading and trailing blanks removed, runs of blanks inside collapsed to one space.
std::string TrimHeaderValue(std::string_view value) {
  std::string trimmed;
  bool in_blank = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      in_blank = !trimmed.empty();
      continue;
    }
    if (in_blank) trimmed += ' ';
    in_blank = false;
    trimmed += c;
  }
  return trimmed;
}

}  // namespace

std::string UriEncode(std::string_view text, bool encode_slash) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string encoded;
  encoded.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool unreserved = (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') ||
                            (byte >= '0' && byte <= '9') || byte == '-' || byte == '.' ||
                            byte == '_' || byte == '~';
    if (unreserved || (byte == '/' && !encode_slash)) {
      encoded += c;
    } else {
      encoded += '%';
      encoded += kDigits[byte >> 4];
      encoded += kDigits[byte & 0xF];
    }
  }
  return encoded;
}

std::string CanonicalQueryString(const std::vector<std::pair<std::string, std::string>>& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query) {
    encoded.emplace_back(UriEncode(name, true), UriEncode(value, true));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string joined;
  for (const auto& [name, value] : encoded) {
    if (!joined.empty()) joined += '&';
    joined += name + "=" + value;
  }
  return joined;
}

std::string SigV4SigningKey(std::string_view secret_access_key, std::string_view date,
                            std::string_view region, std::string_view service) {
  const std::string date_key = HmacSha256("AWS4" + std::string(secret_access_key), date);
  const std::string region_key = HmacSha256(date_key, region);
  const std::string service_key = HmacSha256(region_key, service);
  return HmacSha256(service_key, "aws4_request");
}

SigV4Signature SignV4(const SigV4Request& request, const SigV4Scope& scope,
                      std::string_view access_key_id, std::string_view secret_access_key) {
  // Headers by lower-case name (std::map sorts them), repeated names joined in order.
  std::map<std::string, std::string> headers;
  for (const auto& [name, value] : request.headers) {
    std::string& joined = headers[Lower(name)];
    if (!joined.empty()) joined += ',';
    joined += TrimHeaderValue(value);
  }
  SigV4Signature result;
  std::string canonical_headers;
  for (const auto& [name, value] : headers) {
    canonical_headers += name + ":" + value + "\n";
    if (!result.signed_headers.empty()) result.signed_headers += ';';
    result.signed_headers += name;
  }
  result.canonical_request = request.method + "\n" + request.canonical_uri + "\n" +
                             CanonicalQueryString(request.query) + "\n" + canonical_headers + "\n" +
                             result.signed_headers + "\n" + request.payload_sha256;
  const std::string date = scope.amz_date.substr(0, 8);
  const std::string credential_scope =
      date + "/" + scope.region + "/" + scope.service + "/aws4_request";
  result.string_to_sign = "AWS4-HMAC-SHA256\n" + scope.amz_date + "\n" + credential_scope + "\n" +
                          Sha256Hex(result.canonical_request);
  result.signature =
      HexEncode(HmacSha256(SigV4SigningKey(secret_access_key, date, scope.region, scope.service),
                           result.string_to_sign));
  result.authorization = "AWS4-HMAC-SHA256 Credential=" + std::string(access_key_id) + "/" +
                         credential_scope + ", SignedHeaders=" + result.signed_headers +
                         ", Signature=" + result.signature;
  return result;
}

}  // namespace cohort
