// Who may use the dashboard (`cohort ui`): the rules every request passes before it is served.
//
//   AccessPolicy policy{.token = *NewToken(), .loopback = IsLoopbackAddress("127.0.0.1")};
//   AccessDecision decision = CheckAccess(policy, facts);  // facts: the request's headers
//   if (!decision.allowed) reply decision.http_status with decision.message;
//
// - Bound to a loopback address, reads (GET, HEAD) need no token, as any local program may read
//   $COHORT_HOME anyway; a request whose Host is not a loopback name is refused, so that a web
//   page whose DNS name was rebound to 127.0.0.1 cannot read the dashboard.
// - Bound to any other address, every request needs the token (401 without it): in the header
//   `Authorization: Bearer T` or `X-Cohort-Token: T`, in the cookie the first visit with `?token=T`
//   sets, or, for reads only, in `?token=T`.
// - A request that changes state (suspend, resume, delete: POST, DELETE) always needs the token in
//   a header, never the cookie alone, and is refused when the browser says it comes from another
//   origin (Origin other than this server's, or Sec-Fetch-Site other than same-origin). On loopback
//   the token is one made per process and embedded in the page the server serves.
#pragma once

#include <string>

#include "base/status.h"

namespace cohort::ui {

// The name of the cookie that carries the token after a first visit with ?token=.
inline constexpr char kTokenCookie[] = "cohort_token";

struct AccessPolicy {
  std::string token;     // never empty: given (--token), or made per process (NewToken)
  bool loopback = true;  // bound to a loopback address
};

// What of a request the rules look at (header values, "" when absent).
struct RequestFacts {
  std::string method;          // "GET"
  std::string host;            // Host header, "127.0.0.1:8080"
  std::string origin;          // Origin header
  std::string sec_fetch_site;  // Sec-Fetch-Site header
  std::string authorization;   // Authorization header
  std::string token_header;    // X-Cohort-Token header
  std::string cookie;          // Cookie header
  std::string query_token;     // ?token=
};

struct AccessDecision {
  bool allowed = false;
  int http_status = 200;  // 401 or 403 when refused
  std::string message;    // why it was refused
};

AccessDecision CheckAccess(const AccessPolicy& policy, const RequestFacts& request);

// Whether `address` (as given to --address) is a loopback one: 127.0.0.0/8, ::1 or localhost.
bool IsLoopbackAddress(const std::string& address);

// Whether the Host header names a loopback host (with or without a port).
bool IsLoopbackHost(const std::string& host);

// A new random token (32 bytes as hex) from the system's random source.
StatusOr<std::string> NewToken();

// Whether a request is a read (GET, HEAD), which changes nothing.
bool IsReadMethod(const std::string& method);

// The token the request carries, if any, and whether it came in a header.
struct PresentedToken {
  std::string value;
  bool in_header = false;
};
PresentedToken FindToken(const RequestFacts& request);

// Compares two tokens in time independent of where they differ.
bool TokensEqual(const std::string& a, const std::string& b);

}  // namespace cohort::ui
