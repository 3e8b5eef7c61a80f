#include "ui/access_control.h"

#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "base/hex.h"

namespace cohort::ui {
namespace {

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// The host part of a Host header: "[::1]:80" -> "::1", "localhost:80" -> "localhost".
std::string HostName(const std::string& host) {
  if (!host.empty() && host[0] == '[') {
    size_t close = host.find(']');
    return close == std::string::npos ? host : host.substr(1, close - 1);
  }
  size_t colon = host.find(':');
  return colon == std::string::npos ? host : host.substr(0, colon);
}

// The value of cookie `name` in a Cookie header, "" when absent.
std::string CookieValue(const std::string& header, const std::string& name) {
  size_t position = 0;
  while (position < header.size()) {
    size_t end = header.find(';', position);
    if (end == std::string::npos) end = header.size();
    std::string pair = header.substr(position, end - position);
    size_t first = pair.find_first_not_of(' ');
    if (first != std::string::npos) pair = pair.substr(first);
    if (pair.rfind(name + "=", 0) == 0) return pair.substr(name.size() + 1);
    position = end + 1;
  }
  return "";
}

AccessDecision Refuse(int status, std::string message) {
  return AccessDecision{false, status, std::move(message)};
}

}  // namespace

bool IsReadMethod(const std::string& method) { return method == "GET" || method == "HEAD"; }

bool IsLoopbackAddress(const std::string& address) {
  std::string name = Lower(address);
  if (name == "localhost" || name == "::1" || name == "[::1]") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, name.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  return false;
}

bool IsLoopbackHost(const std::string& host) { return IsLoopbackAddress(HostName(host)); }

StatusOr<std::string> NewToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    return Status::Internal("the system's random source gave no bytes for the dashboard's token");
  }
  return HexEncode(std::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

bool TokensEqual(const std::string& a, const std::string& b) {
  return a.size() == b.size() && !a.empty() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

PresentedToken FindToken(const RequestFacts& request) {
  const std::string bearer = "Bearer ";
  if (request.authorization.rfind(bearer, 0) == 0) {
    return {request.authorization.substr(bearer.size()), true};
  }
  if (!request.token_header.empty()) return {request.token_header, true};
  std::string cookie = CookieValue(request.cookie, kTokenCookie);
  if (!cookie.empty()) return {cookie, false};
  return {request.query_token, false};
}

AccessDecision CheckAccess(const AccessPolicy& policy, const RequestFacts& request) {
  if (policy.loopback && !IsLoopbackHost(request.host)) {
    return Refuse(403, "Host \"" + request.host +
                           "\" is not a loopback name; this dashboard serves only "
                           "localhost, 127.0.0.1 and [::1] (a DNS-rebound page is refused)");
  }
  PresentedToken presented = FindToken(request);
  bool token_valid = TokensEqual(presented.value, policy.token);
  bool read = IsReadMethod(request.method);
  if (!policy.loopback && !token_valid) {
    return Refuse(401, presented.value.empty()
                           ? "this dashboard needs its token: open it with ?token=TOKEN, or send "
                             "Authorization: Bearer TOKEN"
                           : "the token given is not this dashboard's");
  }
  if (read) return AccessDecision{true, 200, ""};
  // A request that changes state: same origin only, and the token in a header.
  if (!request.origin.empty()) {
    std::string expected = "http://" + Lower(request.host);
    if (Lower(request.origin) != expected) {
      return Refuse(403, "cross-origin request refused: Origin " + request.origin +
                             " is not this dashboard (" + expected + ")");
    }
  }
  if (!request.sec_fetch_site.empty() && request.sec_fetch_site != "same-origin" &&
      request.sec_fetch_site != "none") {
    return Refuse(403,
                  "cross-origin request refused (Sec-Fetch-Site: " + request.sec_fetch_site + ")");
  }
  if (!presented.in_header || !token_valid) {
    // A script on loopback never saw the token the server made up for its page: say how to get
    // one it knows.
    return Refuse(401, "a " + request.method +
                           " changes a job and needs the dashboard's token in the header "
                           "X-Cohort-Token or Authorization: Bearer (from a script: start "
                           "`cohort ui --token-file FILE` and send that file's first line)");
  }
  return AccessDecision{true, 200, ""};
}

}  // namespace cohort::ui
