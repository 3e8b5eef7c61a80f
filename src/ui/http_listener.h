// Binding an HTTP server (cpp-httplib) to the address and port a user asked for, and the URL it is
// then reached at: shared by the dashboard (`cohort ui`) and the prediction server (`cohort
// serve`).
//
//   StatusOr<int> port = BindHttpServer(http, "127.0.0.1", 0);  // 0: any free port
//   if (port.ok()) std::thread([&] { http.listen_after_bind(); });
//   std::string url = HttpUrl("::1", *port);                      // "http://[::1]:PORT"
#pragma once

#include <string>

#include "base/status.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace cohort::ui {

// Binds `http` to `address`:`port` (port 0: any free port); the port bound, or Unavailable naming
// the address (and, for a given port, that it may be taken and how to choose another).
StatusOr<int> BindHttpServer(httplib::Server& http, const std::string& address, int port);

// "http://ADDRESS:PORT", an IPv6 address in brackets.
std::string HttpUrl(const std::string& address, int port);

}  // namespace cohort::ui
