// HttpApi: kube::Api (api.h) over HTTPS to a real API server, with libcurl.
//
// It connects with a ConnectionConfig (kubeconfig.h): the server's URL, the authority it trusts
// and the credentials an Authenticator keeps fresh (client certificate, token, rotating token
// file, exec plugin). Each call is one HTTPS request (a handle of its own, so calls may run on
// several threads at once):
//   - REST paths as the server has them: /api/v1/... for the core group, /apis/GROUP/VERSION/...
//     otherwise, with namespaces/NS/ for namespaced resources;
//   - every request has a connect timeout and a total timeout, every answer a size bound; a
//     watch runs for its own timeout and bounds each event instead;
//   - GETs (Get, List, PodLog) are tried again, a bounded number of times with backoff (or the
//     server's Retry-After), when the server answers 429 or 5xx or cannot be reached; writes are
//     never repeated, except once after a 401 when fresh credentials may help;
//   - errors are Status codes as api.h lists them, their messages naming the verb, the object
//     and the server's own message.
//
//   StatusOr<std::unique_ptr<Api>> api = ConnectFromKubeconfig("kind-kind");
//   StatusOr<nlohmann::json> pod = (*api)->Get(PodResource(), "default", "mnist-worker-0");
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "kube/client/api.h"
#include "kube/client/authenticator.h"
#include "kube/client/kubeconfig.h"

namespace cohort::kube {

struct HttpApiOptions {
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds request_timeout{60'000};  // each request, not a watch
  size_t max_response_bytes = 64 << 20;               // an answer (a large List) at most
  size_t max_watch_event_bytes = 16 << 20;            // one watch event at most
  int get_attempts = 3;                               // tries of a GET on 429, 5xx or no answer
  std::chrono::milliseconds retry_backoff{250};       // before the second try; doubles
  std::chrono::milliseconds max_retry_wait{5'000};    // the most a Retry-After is honoured
  std::chrono::milliseconds plugin_timeout{60'000};   // an exec credential plugin's run
  std::string user_agent = "cohort";
};

class HttpApi : public Api {
 public:
  HttpApi(ConnectionConfig config, HttpApiOptions options);
  ~HttpApi() override;

  // The context's (or the pod's) namespace.
  const std::string& default_namespace() const { return config_.namespace_name; }
  const ConnectionConfig& config() const { return config_; }

  StatusOr<nlohmann::json> Get(const Resource& resource, const std::string& namespace_name,
                               const std::string& name) override;
  StatusOr<ObjectList> List(const Resource& resource, const std::string& namespace_name,
                            const Selector& selector = {}) override;
  StatusOr<nlohmann::json> Create(const Resource& resource, const std::string& namespace_name,
                                  const nlohmann::json& object) override;
  StatusOr<nlohmann::json> Update(const Resource& resource, const std::string& namespace_name,
                                  const nlohmann::json& object,
                                  bool status_subresource = false) override;
  StatusOr<nlohmann::json> Patch(const Resource& resource, const std::string& namespace_name,
                                 const std::string& name, const nlohmann::json& patch,
                                 bool status_subresource = false) override;
  Status Delete(const Resource& resource, const std::string& namespace_name,
                const std::string& name, const DeleteOptions& options = {}) override;
  Status Watch(const Resource& resource, const std::string& namespace_name,
               const Selector& selector, const std::string& resource_version,
               std::chrono::seconds timeout,
               const std::function<bool(const WatchEvent&)>& on_event) override;
  // The server's limitBytes would keep the beginning of a long log; api.h promises its end, so
  // the log is read through (within the request timeout) and only its last limit_bytes are kept.
  StatusOr<std::string> PodLog(const std::string& namespace_name, const std::string& pod,
                               const LogOptions& options) override;
  // follow=true, with the watch's deadline: `timeout` and a connect timeout more.
  Status FollowPodLog(const std::string& namespace_name, const std::string& pod,
                      const LogOptions& options, std::chrono::seconds timeout,
                      const std::function<bool(std::string_view)>& on_text) override;

 private:
  struct Request;
  struct Answer;

  // One request, its 401 retry and (for a GET) its retries; a non-2xx answer becomes the
  // Status api.h promises.
  StatusOr<Answer> Call(Request& request);
  StatusOr<Answer> Send(Request& request, const RequestCredentials& credentials);

  const ConnectionConfig config_;
  const HttpApiOptions options_;
  Authenticator authenticator_;
};

// The REST path of `resource`'s collection in `namespace_name` (all namespaces when empty or
// the resource is cluster-scoped), and of one object. Names are percent-encoded.
std::string CollectionPath(const Resource& resource, const std::string& namespace_name);
std::string ObjectPath(const Resource& resource, const std::string& namespace_name,
                       const std::string& name);

// An HttpApi for `context` of the kubeconfig kubectl would read ($KUBECONFIG, ~/.kube/config;
// empty context: current-context).
StatusOr<std::unique_ptr<Api>> ConnectFromKubeconfig(const std::string& context,
                                                     const HttpApiOptions& options = {});

// An HttpApi for the pod's service account.
StatusOr<std::unique_ptr<Api>> ConnectInCluster(
    const HttpApiOptions& options = {},
    const std::filesystem::path& service_account_directory = kServiceAccountDirectory);

// What Connect would use, as client-go chooses: the kubeconfig when a context is named or a
// kubeconfig file exists, else the in-cluster service account when running in a pod.
StatusOr<ConnectionConfig> LoadConnectionConfig(const std::string& context);

// An HttpApi for LoadConnectionConfig(context).
StatusOr<std::unique_ptr<Api>> Connect(const std::string& context,
                                       const HttpApiOptions& options = {});

}  // namespace cohort::kube
