#include "kube/client/http_api.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "kube/client/server_status.h"
#include "kube/client/watch_stream.h"

namespace cohort::kube {
namespace {

using std::chrono::milliseconds;

std::string PercentEncode(const std::string& text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// InvalidArgument when a segment of `path` (before any query) is "." or "..", which a URL
// resolves into another path.
Status CheckPathSegments(const std::string& path, const std::string& action) {
  const std::string without_query = path.substr(0, path.find('?'));
  size_t begin = 0;
  while (begin <= without_query.size()) {
    size_t end = without_query.find('/', begin);
    if (end == std::string::npos) end = without_query.size();
    const std::string segment = without_query.substr(begin, end - begin);
    if (segment == "." || segment == "..") {
      return Status::InvalidArgument("cannot " + action + ": the request path " + without_query +
                                     " holds a name \"" + segment +
                                     "\", which is not a valid Kubernetes name");
    }
    begin = end + 1;
  }
  return Status::OK();
}

// "?a=1&b=2" from the pairs whose value is not empty.
std::string Query(const std::vector<std::pair<std::string, std::string>>& parameters) {
  std::string query;
  for (const auto& [key, value] : parameters) {
    if (value.empty()) continue;
    query += (query.empty() ? "?" : "&") + key + "=" + PercentEncode(value);
  }
  return query;
}

std::string ObjectName(const Resource& resource, const std::string& namespace_name,
                       const std::string& name) {
  if (!resource.namespaced) return resource.kind + " " + name;
  return resource.kind + " " + namespace_name + "/" + name;
}

std::string CollectionName(const Resource& resource, const std::string& namespace_name) {
  if (!resource.namespaced) return resource.kind + " objects";
  return resource.kind + " objects in " +
         (namespace_name.empty() ? "all namespaces" : "namespace " + namespace_name);
}

std::string SelectorText(const Selector& selector) {
  std::string text;
  if (!selector.label_selector.empty()) text += " with labels " + selector.label_selector;
  if (!selector.field_selector.empty()) text += " with fields " + selector.field_selector;
  return text;
}

void InitializeCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlSlist {
  curl_slist* list = nullptr;
  ~CurlSlist() { curl_slist_free_all(list); }
  void Add(const std::string& line) { list = curl_slist_append(list, line.c_str()); }
};

struct CurlHandle {
  CURL* handle = curl_easy_init();
  ~CurlHandle() { curl_easy_cleanup(handle); }
};

}  // namespace

// What one call sends, and what its answer's body is for.
struct HttpApi::Request {
  std::string method = "GET";
  std::string path;  // with its query
  std::string body;
  std::string content_type = "application/json";
  std::string action;  // "get Pod default/web-0", for messages
  milliseconds timeout{0};
  // For a watch or a log: each piece of a 2xx body as it arrives; false stops the transfer
  // (reported as OK). Absent: the body is kept, up to max_response_bytes.
  std::function<bool(std::string_view)> on_body;
  // Set by on_body when it stopped the transfer because of an error of its own.
  Status body_error;
  // Set when on_body has been given a piece: the request is then never tried again, since what
  // was handed on cannot be taken back.
  bool body_started = false;
};

struct HttpApi::Answer {
  long http_code = 0;
  std::string body;  // empty when on_body took it
  milliseconds retry_after{-1};
};

HttpApi::HttpApi(ConnectionConfig config, HttpApiOptions options)
    : config_(std::move(config)),
      options_(std::move(options)),
      authenticator_(config_.user, config_.cluster, options_.plugin_timeout) {
  InitializeCurlOnce();
}

HttpApi::~HttpApi() = default;

namespace {

// The transfer's state, reachable from curl's callbacks.
struct Transfer {
  CURL* handle = nullptr;
  std::string body;
  size_t max_body_bytes = 0;
  bool too_large = false;
  bool stopped = false;
  const std::function<bool(std::string_view)>* on_body = nullptr;
  bool* body_started = nullptr;
  long retry_after_seconds = -1;
};

size_t OnData(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  size_t bytes = size * count;
  long code = 0;
  curl_easy_getinfo(transfer->handle, CURLINFO_RESPONSE_CODE, &code);
  if (transfer->on_body != nullptr && code >= 200 && code < 300) {
    *transfer->body_started = true;
    if (!(*transfer->on_body)(std::string_view(data, bytes))) {
      transfer->stopped = true;
      return 0;
    }
    return bytes;
  }
  if (transfer->body.size() + bytes > transfer->max_body_bytes) {
    transfer->too_large = true;
    return 0;
  }
  transfer->body.append(data, bytes);
  return bytes;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  std::string_view line(data, size * count);
  constexpr std::string_view kRetryAfter = "retry-after:";
  if (line.size() > kRetryAfter.size()) {
    std::string name(line.substr(0, kRetryAfter.size()));
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    if (name == kRetryAfter) {
      transfer->retry_after_seconds =
          std::strtol(std::string(line.substr(kRetryAfter.size())).c_str(), nullptr, 10);
    }
  }
  return size * count;
}

// "https://host:port" -> host and port, for tls-server-name.
bool SplitServer(const std::string& server, std::string& host, std::string& port) {
  CURLU* url = curl_url();
  bool ok = curl_url_set(url, CURLUPART_URL, server.c_str(), 0) == CURLUE_OK;
  char* part = nullptr;
  if (ok && curl_url_get(url, CURLUPART_HOST, &part, 0) == CURLUE_OK) {
    host = part;
    curl_free(part);
  } else {
    ok = false;
  }
  if (ok && curl_url_get(url, CURLUPART_PORT, &part, CURLU_DEFAULT_PORT) == CURLUE_OK) {
    port = part;
    curl_free(part);
  } else {
    ok = false;
  }
  curl_url_cleanup(url);
  return ok;
}

}  // namespace

StatusOr<HttpApi::Answer> HttpApi::Send(Request& request, const RequestCredentials& credentials) {
  CurlHandle curl;
  if (curl.handle == nullptr) return Status::Internal("cannot " + request.action + ": no curl");
  CURL* h = curl.handle;
  Transfer transfer;
  transfer.handle = h;
  transfer.max_body_bytes = options_.max_response_bytes;
  if (request.on_body) transfer.on_body = &request.on_body;
  transfer.body_started = &request.body_started;

  // Names are percent-encoded into the path, but "." and ".." pass encoding unchanged and a URL
  // resolves them: a namespace or name of ".." would reach another resource. Refused here, for
  // every request, whichever name it came from.
  if (Status segments = CheckPathSegments(request.path, request.action); !segments.ok()) {
    return segments;
  }
  std::string url = config_.cluster.server + request.path;
  CurlSlist connect_to_list;
  if (!config_.cluster.tls_server_name.empty()) {
    // Ask for the server by the name its certificate carries, and connect to where it is.
    std::string host, port;
    if (!SplitServer(config_.cluster.server, host, port)) {
      return Status::InvalidArgument("cannot " + request.action + ": the server URL \"" +
                                     config_.cluster.server + "\" of " + config_.description +
                                     " is malformed");
    }
    url = config_.cluster.server.substr(0, config_.cluster.server.find("://") + 3) +
          config_.cluster.tls_server_name + ":" + port + request.path;
    connect_to_list.Add(config_.cluster.tls_server_name + ":" + port + ":" + host + ":" + port);
    curl_easy_setopt(h, CURLOPT_CONNECT_TO, connect_to_list.list);
  }
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);  // a quiet watch still notices a dead peer
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(h, CURLOPT_USERAGENT, options_.user_agent.c_str());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnData);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &transfer);
  char error_text[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_text);

  // TLS: whom we trust, and who we are.
  curl_blob authority{};
  if (!config_.cluster.certificate_authority_pem.empty()) {
    authority.data = const_cast<char*>(config_.cluster.certificate_authority_pem.data());
    authority.len = config_.cluster.certificate_authority_pem.size();
    authority.flags = CURL_BLOB_NOCOPY;
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &authority);
  }
  if (config_.cluster.insecure_skip_tls_verify) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  curl_blob certificate{}, key{};
  if (!credentials.client_certificate_pem.empty()) {
    certificate.data = const_cast<char*>(credentials.client_certificate_pem.data());
    certificate.len = credentials.client_certificate_pem.size();
    certificate.flags = CURL_BLOB_NOCOPY;
    key.data = const_cast<char*>(credentials.client_key_pem.data());
    key.len = credentials.client_key_pem.size();
    key.flags = CURL_BLOB_NOCOPY;
    curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &certificate);
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  }

  CurlSlist headers;
  headers.Add("Accept: application/json");
  headers.Add("Expect:");  // no 100-continue round trip before a large body
  if (!credentials.bearer_token.empty()) {
    headers.Add("Authorization: Bearer " + credentials.bearer_token);
  }
  if (request.method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    if (!request.body.empty()) {
      headers.Add("Content-Type: " + request.content_type);
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
    }
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.list);

  CURLcode result = curl_easy_perform(h);
  Answer answer;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &answer.http_code);
  if (transfer.retry_after_seconds >= 0) {
    answer.retry_after = std::chrono::seconds(transfer.retry_after_seconds);
  }
  answer.body = std::move(transfer.body);
  if (result == CURLE_OK) return answer;
  if (transfer.stopped) {
    if (!request.body_error.ok()) return request.body_error;
    return answer;  // the receiver has all it wanted
  }
  if (transfer.too_large) {
    return Status::Internal("cannot " + request.action + ": the server's answer is larger than " +
                            std::to_string(options_.max_response_bytes) +
                            " bytes (HttpApiOptions::max_response_bytes)");
  }
  std::string detail = error_text[0] != '\0' ? error_text : curl_easy_strerror(result);
  if (result == CURLE_OPERATION_TIMEDOUT) {
    if (request.on_body && answer.http_code >= 200 && answer.http_code < 300) {
      return answer;  // a streamed answer ran until the request's timeout: its end
    }
    return Status::DeadlineExceeded(
        "cannot " + request.action + ": no answer from " + config_.cluster.server + " within " +
        std::to_string(request.timeout.count()) + " ms (" + detail + ")");
  }
  return Status::Unavailable("cannot " + request.action + ": cannot reach " +
                             config_.cluster.server + " (" + config_.description + "): " + detail);
}

StatusOr<HttpApi::Answer> HttpApi::Call(Request& request) {
  if (request.timeout.count() == 0) request.timeout = options_.request_timeout;
  const bool retry_allowed = request.method == "GET";
  const int attempts = retry_allowed ? std::max(1, options_.get_attempts) : 1;
  bool refreshed = false;
  milliseconds backoff = options_.retry_backoff;
  for (int attempt = 1;; ++attempt) {
    StatusOr<RequestCredentials> credentials = authenticator_.Credentials();
    if (!credentials.ok()) {
      return credentials.status().WithContext("cannot " + request.action + " (" +
                                              config_.description + ")");
    }
    StatusOr<Answer> answer = Send(request, *credentials);
    if (answer.ok() && answer->http_code == 401 && !refreshed &&
        authenticator_.Refresh(*credentials)) {
      refreshed = true;
      --attempt;  // fresh credentials are not a retry of a failing server
      continue;
    }
    // Tried again: a GET whose answer was 429 or 5xx, or that reached no server; never once a
    // streamed body has been handed on.
    bool retryable = false;
    if (!request.body_started) {
      retryable = answer.ok() ? answer->http_code == 429 || answer->http_code >= 500
                              : answer.status().code() == Status::Code::kUnavailable;
    }
    if (retryable && attempt < attempts) {
      milliseconds wait = backoff;
      if (answer.ok() && answer->retry_after.count() >= 0) {
        wait = std::min(answer->retry_after, options_.max_retry_wait);
      }
      std::this_thread::sleep_for(wait);
      backoff *= 2;
      continue;
    }
    if (!answer.ok()) return answer.status();
    if (answer->http_code < 200 || answer->http_code >= 300) {
      Status status =
          StatusFromAnswer(static_cast<int>(answer->http_code), answer->body, request.action);
      if (answer->http_code == 401) {
        return status.WithContext("the server did not accept the credentials of " +
                                  config_.description);
      }
      return status;
    }
    return answer;
  }
}

std::string CollectionPath(const Resource& resource, const std::string& namespace_name) {
  std::string path = resource.group.empty() ? "/api/" + resource.version
                                            : "/apis/" + resource.group + "/" + resource.version;
  if (resource.namespaced && !namespace_name.empty()) {
    path += "/namespaces/" + PercentEncode(namespace_name);
  }
  return path + "/" + resource.plural;
}

std::string ObjectPath(const Resource& resource, const std::string& namespace_name,
                       const std::string& name) {
  return CollectionPath(resource, namespace_name) + "/" + PercentEncode(name);
}

namespace {

StatusOr<nlohmann::json> ParseObject(const std::string& body, const std::string& action) {
  nlohmann::json object = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded() || !object.is_object()) {
    return Status::Internal("cannot " + action + ": the server's answer is not a JSON object");
  }
  return object;
}

Status CheckName(const std::string& name, const std::string& action) {
  if (name.empty()) return Status::InvalidArgument("cannot " + action + ": no name given");
  return Status::OK();
}

Status CheckNamespace(const Resource& resource, const std::string& namespace_name,
                      const std::string& action) {
  if (resource.namespaced && namespace_name.empty()) {
    return Status::InvalidArgument("cannot " + action + ": " + resource.kind +
                                   " objects live in a namespace, and none was given");
  }
  return Status::OK();
}

}  // namespace

StatusOr<nlohmann::json> HttpApi::Get(const Resource& resource, const std::string& namespace_name,
                                      const std::string& name) {
  Request request;
  request.action = "get " + ObjectName(resource, namespace_name, name);
  COHORT_RETURN_IF_ERROR(CheckName(name, request.action));
  COHORT_RETURN_IF_ERROR(CheckNamespace(resource, namespace_name, request.action));
  request.path = ObjectPath(resource, namespace_name, name);
  StatusOr<Answer> answer = Call(request);
  if (!answer.ok()) return answer.status();
  return ParseObject(answer->body, request.action);
}

StatusOr<ObjectList> HttpApi::List(const Resource& resource, const std::string& namespace_name,
                                   const Selector& selector) {
  Request request;
  request.action = "list " + CollectionName(resource, namespace_name) + SelectorText(selector);
  request.path = CollectionPath(resource, namespace_name) +
                 Query({{"labelSelector", selector.label_selector},
                        {"fieldSelector", selector.field_selector}});
  StatusOr<Answer> answer = Call(request);
  if (!answer.ok()) return answer.status();
  StatusOr<nlohmann::json> list = ParseObject(answer->body, request.action);
  if (!list.ok()) return list.status();
  ObjectList objects;
  if (list->contains("items") && (*list)["items"].is_array()) {
    for (nlohmann::json& item : (*list)["items"]) objects.items.push_back(std::move(item));
  } else if (!list->contains("items") || !(*list)["items"].is_null()) {
    return Status::Internal("cannot " + request.action + ": the server's answer has no items");
  }
  const nlohmann::json& metadata = list->value("metadata", nlohmann::json::object());
  objects.resource_version = metadata.value("resourceVersion", "");
  return objects;
}

StatusOr<nlohmann::json> HttpApi::Create(const Resource& resource,
                                         const std::string& namespace_name,
                                         const nlohmann::json& object) {
  const nlohmann::json& metadata = object.value("metadata", nlohmann::json::object());
  std::string name = metadata.value("name", "");
  if (name.empty()) name = metadata.value("generateName", "") + "*";
  Request request;
  request.action = "create " + ObjectName(resource, namespace_name, name);
  COHORT_RETURN_IF_ERROR(CheckNamespace(resource, namespace_name, request.action));
  request.method = "POST";
  request.path = CollectionPath(resource, namespace_name);
  request.body = object.dump();
  StatusOr<Answer> answer = Call(request);
  if (!answer.ok()) return answer.status();
  return ParseObject(answer->body, request.action);
}

StatusOr<nlohmann::json> HttpApi::Update(const Resource& resource,
                                         const std::string& namespace_name,
                                         const nlohmann::json& object, bool status_subresource) {
  std::string name;
  if (object.contains("metadata") && object["metadata"].is_object()) {
    name = object["metadata"].value("name", "");
  }
  Request request;
  request.action = "update " + std::string(status_subresource ? "the status of " : "") +
                   ObjectName(resource, namespace_name, name);
  COHORT_RETURN_IF_ERROR(CheckName(name, request.action + " (metadata.name)"));
  COHORT_RETURN_IF_ERROR(CheckNamespace(resource, namespace_name, request.action));
  request.method = "PUT";
  request.path = ObjectPath(resource, namespace_name, name) + (status_subresource ? "/status" : "");
  request.body = object.dump();
  StatusOr<Answer> answer = Call(request);
  if (!answer.ok()) return answer.status();
  return ParseObject(answer->body, request.action);
}

StatusOr<nlohmann::json> HttpApi::Patch(const Resource& resource, const std::string& namespace_name,
                                        const std::string& name, const nlohmann::json& patch,
                                        bool status_subresource) {
  Request request;
  request.action = "patch " + std::string(status_subresource ? "the status of " : "") +
                   ObjectName(resource, namespace_name, name);
  COHORT_RETURN_IF_ERROR(CheckName(name, request.action));
  COHORT_RETURN_IF_ERROR(CheckNamespace(resource, namespace_name, request.action));
  request.method = "PATCH";
  request.content_type = "application/merge-patch+json";
  request.path = ObjectPath(resource, namespace_name, name) + (status_subresource ? "/status" : "");
  request.body = patch.dump();
  StatusOr<Answer> answer = Call(request);
  if (!answer.ok()) return answer.status();
  return ParseObject(answer->body, request.action);
}

Status HttpApi::Delete(const Resource& resource, const std::string& namespace_name,
                       const std::string& name, const DeleteOptions& options) {
  Request request;
  request.action = "delete " + ObjectName(resource, namespace_name, name);
  COHORT_RETURN_IF_ERROR(CheckName(name, request.action));
  COHORT_RETURN_IF_ERROR(CheckNamespace(resource, namespace_name, request.action));
  request.method = "DELETE";
  request.path = ObjectPath(resource, namespace_name, name);
  nlohmann::json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  if (!options.uid.empty()) body["preconditions"] = {{"uid", options.uid}};
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  request.body = body.dump();
  StatusOr<Answer> answer = Call(request);
  return answer.status();
}

Status HttpApi::Watch(const Resource& resource, const std::string& namespace_name,
                      const Selector& selector, const std::string& resource_version,
                      std::chrono::seconds timeout,
                      const std::function<bool(const WatchEvent&)>& on_event) {
  Request request;
  request.action = "watch " + CollectionName(resource, namespace_name) + SelectorText(selector) +
                   (resource_version.empty() ? "" : " from resourceVersion " + resource_version);
  if (timeout.count() <= 0) {
    return Status::InvalidArgument("cannot " + request.action + ": the timeout must be positive");
  }
  request.path = CollectionPath(resource, namespace_name) +
                 Query({{"watch", "true"},
                        {"allowWatchBookmarks", "true"},
                        {"resourceVersion", resource_version},
                        {"timeoutSeconds", std::to_string(timeout.count())},
                        {"labelSelector", selector.label_selector},
                        {"fieldSelector", selector.field_selector}});
  // The server ends the watch at timeoutSeconds; the client's own deadline comes a connect
  // timeout later, for a server that does not.
  request.timeout = std::chrono::duration_cast<milliseconds>(timeout) + options_.connect_timeout;
  WatchLineSplitter splitter(options_.max_watch_event_bytes);
  auto on_line = [&](std::string_view line) {
    StatusOr<WatchEvent> event = ParseWatchEvent(line, request.action);
    if (!event.ok()) {
      request.body_error = event.status();
      return false;
    }
    return on_event(*event);
  };
  request.on_body = [&](std::string_view bytes) {
    StatusOr<bool> more = splitter.Feed(bytes, on_line);
    if (!more.ok()) {
      request.body_error = more.status().WithContext("cannot " + request.action);
      return false;
    }
    return *more;
  };
  StatusOr<Answer> answer = Call(request);
  return answer.status();
}

StatusOr<std::string> HttpApi::PodLog(const std::string& namespace_name, const std::string& pod,
                                      const LogOptions& options) {
  Request request;
  request.action = "read the log of Pod " + namespace_name + "/" + pod +
                   (options.container.empty() ? "" : " container " + options.container);
  COHORT_RETURN_IF_ERROR(CheckName(pod, request.action));
  COHORT_RETURN_IF_ERROR(CheckNamespace(PodResource(), namespace_name, request.action));
  request.path =
      ObjectPath(PodResource(), namespace_name, pod) + "/log" +
      Query(
          {{"container", options.container},
           {"previous", options.previous ? "true" : ""},
           {"tailLines", options.tail_lines ? std::to_string(*options.tail_lines) : ""},
           {"sinceSeconds", options.since_seconds ? std::to_string(*options.since_seconds) : ""}});
  // Only the end is kept: a log longer than limit_bytes is read through, holding at most twice
  // the limit at a time.
  std::string log;
  const size_t limit = options.limit_bytes;
  request.on_body = [&](std::string_view bytes) {
    log.append(bytes);
    if (log.size() > 2 * limit + 4096) log.erase(0, log.size() - limit);
    return true;
  };
  StatusOr<Answer> answer = Call(request);
  if (!answer.ok()) return answer.status();
  if (log.size() > limit) log.erase(0, log.size() - limit);
  return log;
}

Status HttpApi::FollowPodLog(const std::string& namespace_name, const std::string& pod,
                             const LogOptions& options, std::chrono::seconds timeout,
                             const std::function<bool(std::string_view)>& on_text) {
  Request request;
  request.action = "follow the log of Pod " + namespace_name + "/" + pod +
                   (options.container.empty() ? "" : " container " + options.container);
  COHORT_RETURN_IF_ERROR(CheckName(pod, request.action));
  COHORT_RETURN_IF_ERROR(CheckNamespace(PodResource(), namespace_name, request.action));
  if (timeout.count() <= 0) {
    return Status::InvalidArgument("cannot " + request.action + ": the timeout must be positive");
  }
  request.path =
      ObjectPath(PodResource(), namespace_name, pod) + "/log" +
      Query(
          {{"follow", "true"},
           {"container", options.container},
           {"previous", options.previous ? "true" : ""},
           {"tailLines", options.tail_lines ? std::to_string(*options.tail_lines) : ""},
           {"sinceSeconds", options.since_seconds ? std::to_string(*options.since_seconds) : ""}});
  request.timeout = std::chrono::duration_cast<milliseconds>(timeout) + options_.connect_timeout;
  request.on_body = [&](std::string_view bytes) { return on_text(bytes); };
  // A stream that runs until the timeout ends as OK (Send's streamed answers).
  StatusOr<Answer> answer = Call(request);
  return answer.status();
}

StatusOr<ConnectionConfig> LoadConnectionConfig(const std::string& context) {
  std::vector<std::filesystem::path> paths = DefaultKubeconfigPaths();
  bool any_kubeconfig = false;
  for (const std::filesystem::path& path : paths) {
    std::error_code error;
    any_kubeconfig = any_kubeconfig || std::filesystem::exists(path, error);
  }
  if (!context.empty() || any_kubeconfig || !RunningInCluster()) {
    return LoadKubeconfig(paths, context);
  }
  return LoadInClusterConfig();
}

StatusOr<std::unique_ptr<Api>> ConnectFromKubeconfig(const std::string& context,
                                                     const HttpApiOptions& options) {
  StatusOr<ConnectionConfig> config = LoadKubeconfig(DefaultKubeconfigPaths(), context);
  if (!config.ok()) return config.status();
  return std::unique_ptr<Api>(new HttpApi(std::move(*config), options));
}

StatusOr<std::unique_ptr<Api>> ConnectInCluster(
    const HttpApiOptions& options, const std::filesystem::path& service_account_directory) {
  StatusOr<ConnectionConfig> config = LoadInClusterConfig(service_account_directory);
  if (!config.ok()) return config.status();
  return std::unique_ptr<Api>(new HttpApi(std::move(*config), options));
}

StatusOr<std::unique_ptr<Api>> Connect(const std::string& context, const HttpApiOptions& options) {
  StatusOr<ConnectionConfig> config = LoadConnectionConfig(context);
  if (!config.ok()) return config.status();
  return std::unique_ptr<Api>(new HttpApi(std::move(*config), options));
}

}  // namespace cohort::kube
