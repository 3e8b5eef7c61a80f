#include "ui/dashboard_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>

#include "ui/freed_memory.h"
#include "ui/http_listener.h"
#include "ui/web_assets.h"

namespace cohort::ui {
namespace {

constexpr size_t kMaxBodyBytes = 64 * 1024;
// A large answer is written in pieces of this size.
constexpr size_t kLargeBodyPieceBytes = size_t{1} << 20;
constexpr char kTokenPlaceholder[] = "__COHORT_TOKEN__";

RequestFacts FactsOf(const httplib::Request& request) {
  RequestFacts facts;
  facts.method = request.method;
  facts.host = request.get_header_value("Host");
  facts.origin = request.get_header_value("Origin");
  facts.sec_fetch_site = request.get_header_value("Sec-Fetch-Site");
  facts.authorization = request.get_header_value("Authorization");
  facts.token_header = request.get_header_value("X-Cohort-Token");
  facts.cookie = request.get_header_value("Cookie");
  facts.query_token = request.get_param_value("token");
  return facts;
}

// The query's parameters, split at the first '=' of each (httplib splits at every '=', which
// loses selectors such as fieldSelector=involvedObject.name=mnist sent unencoded).
std::multimap<std::string, std::string> QueryParameters(const std::string& target) {
  std::multimap<std::string, std::string> parameters;
  size_t question = target.find('?');
  if (question == std::string::npos) return parameters;
  std::string query = target.substr(question + 1);
  size_t position = 0;
  while (position <= query.size()) {
    size_t amp = query.find('&', position);
    if (amp == std::string::npos) amp = query.size();
    std::string pair = query.substr(position, amp - position);
    if (!pair.empty()) {
      size_t equals = pair.find('=');
      std::string name = httplib::detail::decode_url(pair.substr(0, equals), true);
      std::string value = equals == std::string::npos
                              ? ""
                              : httplib::detail::decode_url(pair.substr(equals + 1), true);
      parameters.emplace(std::move(name), std::move(value));
    }
    position = amp + 1;
  }
  return parameters;
}

void SetSafetyHeaders(httplib::Response& response) {
  response.set_header("X-Content-Type-Options", "nosniff");
  response.set_header("X-Frame-Options", "DENY");
  response.set_header("Referrer-Policy", "no-referrer");
  response.set_header("Content-Security-Policy",
                      "default-src 'self'; img-src 'self' data:; style-src 'self' "
                      "'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action "
                      "'none'");
}

void Reply(httplib::Response& response, ApiResponse api) {
  response.status = api.status;
  for (const auto& [name, value] : api.headers) response.set_header(name, value);
  if (!api.stream && api.body.size() < kReturnFreedMemoryAfterBytes) {
    // As set_content, with the body moved rather than copied.
    response.body = std::move(api.body);
    response.headers.erase("Content-Type");
    response.set_header("Content-Type", api.content_type);
    return;
  }
  if (!api.stream) {
    // A large answer (a million points are tens of megabytes) is sent in pieces from the body it
    // owns, which is freed once sent, and then the freed memory goes back to the system.
    auto body = std::make_shared<std::string>(std::move(api.body));
    const std::string* bytes = body.get();
    response.set_chunked_content_provider(
        api.content_type,
        [bytes](size_t offset, httplib::DataSink& sink) {
          const size_t piece = std::min(kLargeBodyPieceBytes, bytes->size() - offset);
          if (!sink.write(bytes->data() + offset, piece)) return false;
          if (offset + piece == bytes->size()) sink.done();
          return true;
        },
        [body](bool) mutable {
          body.reset();
          ReturnFreedMemory();
        });
    return;
  }
  auto stream = api.stream;
  response.set_chunked_content_provider(
      api.content_type, [stream](size_t, httplib::DataSink& sink) {
        bool finished = stream([&](std::string_view bytes) {
          return sink.is_writable() && sink.write(bytes.data(), bytes.size());
        });
        if (finished) sink.done();
        return finished;
      });
}

}  // namespace

StatusOr<std::unique_ptr<DashboardServer>> DashboardServer::Start(ServerOptions options) {
  std::unique_ptr<DashboardServer> server(new DashboardServer());
  if (options.jobs == nullptr) return Status::InvalidArgument("the dashboard needs a JobClient");
  server->policy_.loopback = IsLoopbackAddress(options.address);
  if (options.token.empty()) {
    if (!server->policy_.loopback) {
      return Status::InvalidArgument(
          "--address " + options.address +
          " is not a loopback address: give --token or --token-file, which every request must "
          "carry");
    }
    StatusOr<std::string> token = NewToken();
    if (!token.ok()) return token.status();
    options.token = *token;
  } else if (options.token.size() < 16) {
    return Status::InvalidArgument("the token is " + std::to_string(options.token.size()) +
                                   " characters long; give one of at least 16");
  }
  server->policy_.token = options.token;
  server->options_ = options;
  LimitRetainedMemory();  // before the pool's threads start
  ApiOptions api_options;
  api_options.jobs = options.jobs;
  api_options.home = options.home;
  server->api_ = std::make_unique<DashboardApi>(api_options);
  server->server_ = std::make_unique<httplib::Server>();
  httplib::Server& http = *server->server_;
  int threads = options.threads;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(kMaxBodyBytes);
  http.set_read_timeout(10, 0);
  http.set_write_timeout(30, 0);
  http.set_keep_alive_max_count(100);
  http.set_keep_alive_timeout(5);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second `cohort ui` on a
  // port another one holds binds too and the kernel splits the connections between the two.
  http.set_socket_options([](int socket) {
    int yes = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // The errors cpp-httplib answers itself (a request it cannot read, a body over the limit) get a
  // Status body too, as every other error does.
  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request&, httplib::Response& response) {
        if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        const bool too_large = response.status == 413;
        Reply(response,
              StatusResponse(
                  response.status, too_large ? "RequestEntityTooLarge" : "BadRequest",
                  too_large ? "the request body is over " + std::to_string(kMaxBodyBytes) + " bytes"
                            : "the request could not be read (HTTP " +
                                  std::to_string(response.status) + ")"));
        return httplib::Server::HandlerResponse::Handled;
      }));
  server->Route();
  StatusOr<int> port = BindHttpServer(http, options.address, options.port);
  if (!port.ok()) return port.status();
  server->port_ = *port;
  server->thread_ = std::thread([&http] { http.listen_after_bind(); });
  return server;
}

DashboardServer::~DashboardServer() { Stop(); }

std::string DashboardServer::Url() const { return HttpUrl(options_.address, port_) + "/"; }

void DashboardServer::Wait() {
  if (thread_.joinable()) thread_.join();
}

void DashboardServer::Stop() {
  if (api_) api_->Stop();
  if (server_) server_->stop();
  Wait();
}

void DashboardServer::Route() {
  httplib::Server& http = *server_;
  http.set_pre_routing_handler([this](const httplib::Request& request,
                                      httplib::Response& response) {
    SetSafetyHeaders(response);
    AccessDecision decision = CheckAccess(policy_, FactsOf(request));
    if (decision.allowed) {
      // httplib would wait for a body without a length until the read timeout (10 s), then
      // answer 400 with nothing in it; `curl -X POST URL` sends exactly that.
      bool has_body =
          request.method == "POST" || request.method == "PUT" || request.method == "PATCH";
      if (!has_body || request.has_header("Content-Length") ||
          request.has_header("Transfer-Encoding")) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      Reply(response, StatusResponse(411, "LengthRequired",
                                     "a " + request.method +
                                         " needs a Content-Length header, 0 for no body "
                                         "(curl: add -d '')"));
      return httplib::Server::HandlerResponse::Handled;
    }
    ApiResponse refused = StatusResponse(decision.http_status,
                                         decision.http_status == 401 ? "Unauthorized" : "Forbidden",
                                         decision.message);
    if (decision.http_status == 401) response.set_header("WWW-Authenticate", "Bearer");
    Reply(response, refused);
    return httplib::Server::HandlerResponse::Handled;
  });
  auto api_handler = [this](const httplib::Request& request, httplib::Response& response) {
    ApiRequest api_request;
    api_request.method = request.method;
    api_request.path = request.path;
    for (const auto& [name, value] : QueryParameters(request.target)) {
      if (name != "token") api_request.params.emplace(name, value);
    }
    api_request.accept = request.get_header_value("Accept");
    api_request.last_event_id = request.get_header_value("Last-Event-ID");
    ApiResponse api_response = api_->Handle(api_request);
    api_response.headers.push_back({"Cache-Control", "no-store"});
    Reply(response, std::move(api_response));
  };
  auto page_handler = [this](const httplib::Request& request, httplib::Response& response) {
    std::string path = request.path == "/" ? "/index.html" : request.path;
    const WebAsset* asset = FindWebAsset(path);
    if (asset == nullptr) {
      Reply(response, StatusResponse(404, "NotFound", "no page " + request.path.substr(0, 200)));
      return;
    }
    std::string contents(asset->contents);
    if (path == "/index.html") {
      // The page carries the token that its requests that change state must send.
      size_t at = contents.find(kTokenPlaceholder);
      if (at != std::string::npos) {
        contents.replace(at, sizeof(kTokenPlaceholder) - 1, policy_.token);
      }
      response.set_header("Cache-Control", "no-store");
      // A first visit with ?token= leaves it in a cookie, so that the page's own requests
      // (EventSource included) carry it.
      std::string query_token = request.get_param_value("token");
      if (!query_token.empty() && TokensEqual(query_token, policy_.token)) {
        response.set_header("Set-Cookie", std::string(kTokenCookie) + "=" + policy_.token +
                                              "; Path=/; HttpOnly; SameSite=Strict");
      }
    }
    response.set_content(contents, std::string(asset->content_type).c_str());
  };
  http.Get(".*", [api_handler, page_handler](const httplib::Request& request,
                                             httplib::Response& response) {
    if (DashboardApi::IsApiPath(request.path)) {
      api_handler(request, response);
    } else {
      page_handler(request, response);
    }
  });
  http.Post(".*", api_handler);
  http.Delete(".*", api_handler);
  http.Put(".*", api_handler);
  http.Patch(".*", api_handler);
}

}  // namespace cohort::ui
