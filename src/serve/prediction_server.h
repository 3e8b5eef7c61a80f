// PredictionServer: `cohort serve`'s HTTP server (cpp-httplib, as `cohort ui`), answering
// rest_api.h's routes for a ModelSet and GET /metrics (serving_metrics.h).
//
//   StatusOr<std::unique_ptr<PredictionServer>> server = PredictionServer::Start(options, models);
//   std::cout << (*server)->Url() << "\n";
//   (*server)->Wait();  // until Stop()
//
// Who may ask, as `cohort ui` (ui/access_control.h): bound to a loopback address, any local
// program may (the Host header must name a loopback host, so that a rebound DNS name cannot);
// bound to any other address, every request needs the token (Authorization: Bearer T or
// X-Cohort-Token: T; 401 otherwise), which must then be given (at least 16 characters).
// Bounds: a body of at most max_body_bytes (413), http_threads requests served at once (each
// waits for its batch), 10 s to read a request, prediction_timeout for its answer (504).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "base/status.h"
#include "serve/model_set.h"
#include "serve/rest_api.h"
#include "serve/serving_metrics.h"

namespace httplib {
class Server;
}

namespace cohort::serve {

struct ServerOptions {
  std::string address = "127.0.0.1";
  int port = 8501;  // TensorFlow Serving's REST port; 0: any free one
  std::string token;
  int http_threads = 128;
  size_t max_body_bytes = 16 << 20;
  std::chrono::milliseconds prediction_timeout{30000};
};

class PredictionServer {
 public:
  // Binds and serves on a thread of its own. InvalidArgument for a non-loopback address without
  // a token of 16 characters or more; Unavailable when the address cannot be bound.
  static StatusOr<std::unique_ptr<PredictionServer>> Start(ServerOptions options, ModelSet* models,
                                                           ServingMetrics* metrics);
  ~PredictionServer();

  int port() const { return port_; }
  std::string Url() const;  // http://ADDRESS:PORT
  void Wait();              // until Stop()
  void Stop();

 private:
  PredictionServer() = default;

  ServerOptions options_;
  bool loopback_ = true;
  int port_ = 0;
  ServingMetrics* metrics_ = nullptr;
  std::unique_ptr<RestApi> api_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace cohort::serve
