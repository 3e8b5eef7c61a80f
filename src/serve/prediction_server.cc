#include "serve/prediction_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>

#include "ui/access_control.h"  // compiled into cohort_serve (src/CMakeLists.txt)
#include "ui/http_listener.h"   // likewise

namespace cohort::serve {
namespace {

void ReplyJson(httplib::Response& response, int status, const std::string& body) {
  response.status = status;
  response.set_content(body, "application/json");
}

std::string ErrorBody(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump();
}

}  // namespace

StatusOr<std::unique_ptr<PredictionServer>> PredictionServer::Start(ServerOptions options,
                                                                    ModelSet* models,
                                                                    ServingMetrics* metrics) {
  std::unique_ptr<PredictionServer> server(new PredictionServer());
  server->loopback_ = ui::IsLoopbackAddress(options.address);
  if (!server->loopback_ && options.token.size() < 16) {
    return Status::InvalidArgument(
        "--address " + options.address + " is not a loopback address: give --token or " +
        "--token-file (at least 16 characters), which every request must carry");
  }
  if (!options.token.empty() && options.token.size() < 16) {
    return Status::InvalidArgument("the token is " + std::to_string(options.token.size()) +
                                   " characters long; give one of at least 16");
  }
  server->options_ = options;
  server->metrics_ = metrics;
  server->api_ = std::make_unique<RestApi>(models, options.prediction_timeout);
  server->server_ = std::make_unique<httplib::Server>();
  httplib::Server& http = *server->server_;
  const int threads = options.http_threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(options.max_body_bytes);
  http.set_read_timeout(10, 0);
  http.set_write_timeout(30, 0);
  http.set_keep_alive_max_count(100000);
  http.set_keep_alive_timeout(30);
  http.set_tcp_nodelay(true);
  // SO_REUSEADDR only, as `cohort ui`: with SO_REUSEPORT a second server would share the port.
  http.set_socket_options([](int socket) {
    int yes = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const size_t max_body = options.max_body_bytes;
  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [max_body](const httplib::Request&, httplib::Response& response) {
        if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        ReplyJson(response, response.status,
                  ErrorBody(response.status == 413
                                ? "the request body is over " + std::to_string(max_body) + " bytes"
                                : "the request could not be read (HTTP " +
                                      std::to_string(response.status) + ")"));
        return httplib::Server::HandlerResponse::Handled;
      }));
  PredictionServer* self = server.get();
  http.set_pre_routing_handler([self](const httplib::Request& request,
                                      httplib::Response& response) {
    if (self->loopback_ && !ui::IsLoopbackHost(request.get_header_value("Host"))) {
      ReplyJson(response, 403,
                ErrorBody("the Host \"" + request.get_header_value("Host") +
                          "\" is not a loopback name; this server serves only loopback"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!self->options_.token.empty()) {
      ui::RequestFacts facts;
      facts.authorization = request.get_header_value("Authorization");
      facts.token_header = request.get_header_value("X-Cohort-Token");
      ui::PresentedToken presented = ui::FindToken(facts);
      if (!presented.in_header || !ui::TokensEqual(presented.value, self->options_.token)) {
        ReplyJson(response, 401,
                  ErrorBody(presented.value.empty()
                                ? "this server needs its token: send Authorization: Bearer TOKEN"
                                : "the token given is not this server's"));
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http.Get("/metrics", [self](const httplib::Request&, httplib::Response& response) {
    response.set_content(self->metrics_->Text(), "text/plain; version=0.0.4");
  });
  auto handle = [self](const httplib::Request& request, httplib::Response& response) {
    const auto start = std::chrono::steady_clock::now();
    RestResponse answer = self->api_->Handle(request.method, request.path, request.body);
    ReplyJson(response, answer.status, answer.body);
    self->metrics_->CountRequest(answer.model, answer.version, answer.status,
                                 std::chrono::steady_clock::now() - start);
  };
  http.Get(R"(/v1/.*)", handle);
  http.Post(R"(/v1/.*)", handle);
  http.Get(R"(.*)", [](const httplib::Request& request, httplib::Response& response) {
    ReplyJson(response, 404, ErrorBody("no route " + request.path));
  });
  StatusOr<int> port = ui::BindHttpServer(http, options.address, options.port);
  if (!port.ok()) return port.status();
  server->port_ = *port;
  server->thread_ = std::thread([&http] { http.listen_after_bind(); });
  return server;
}

PredictionServer::~PredictionServer() { Stop(); }

std::string PredictionServer::Url() const { return ui::HttpUrl(options_.address, port_); }

void PredictionServer::Wait() {
  if (thread_.joinable()) thread_.join();
}

void PredictionServer::Stop() {
  if (server_) server_->stop();
  Wait();
}

}  // namespace cohort::serve
