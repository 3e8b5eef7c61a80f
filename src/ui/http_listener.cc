#include "ui/http_listener.h"

#include <httplib.h>

namespace cohort::ui {

StatusOr<int> BindHttpServer(httplib::Server& http, const std::string& address, int port) {
  if (port == 0) {
    const int bound = http.bind_to_any_port(address);
    if (bound <= 0) return Status::Unavailable("cannot bind " + address + " to any port");
    return bound;
  }
  if (!http.bind_to_port(address, port)) {
    return Status::Unavailable("cannot listen on " + address + ":" + std::to_string(port) +
                               " (taken? choose another with --port, or --port 0 for any)");
  }
  return port;
}

std::string HttpUrl(const std::string& address, int port) {
  const std::string host = address.find(':') != std::string::npos ? "[" + address + "]" : address;
  return "http://" + host + ":" + std::to_string(port);
}

}  // namespace cohort::ui
