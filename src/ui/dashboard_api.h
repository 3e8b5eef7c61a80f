// The dashboard's JSON API, shaped like the Kubernetes API a Kubeflow user knows, over the jobs a
// view::JobClient reads (ApiOptions::jobs): those in $COHORT_HOME, or a cluster's. Every kind of
// job::KindRegistry::Default() has its own routes under its group, version and plural (GROUP is
// kubeflow.org, VERSION v1, PLURAL tfjobs, pytorchjobs...). The pages use it, and so can scripts
// (README.md, "API"):
//
//   GET    /apis/GROUP/VERSION                        the kinds' resources (an APIResourceList)
//   GET    /apis/GROUP/VERSION/PLURAL                 every job of the kind (= cohort get PLURAL
//                                                     -A -o json)
//   GET    /apis/GROUP/VERSION/namespaces/NS/PLURAL   (= cohort get PLURAL -n NS -o json)
//   GET    .../namespaces/NS/PLURAL/NAME              (= cohort get KIND NAME -o json; Accept:
//                                                     application/yaml: -o yaml)
//   DELETE .../namespaces/NS/PLURAL/NAME              (= cohort delete KIND NAME; or POST
//                                                     .../delete)
//   POST   .../namespaces/NS/PLURAL/NAME/suspend | /resume
//   GET    .../namespaces/NS/PLURAL/NAME/replicas     the replica table
//   GET    .../namespaces/NS/PLURAL/NAME/events       the job's events
//   GET    .../namespaces/NS/PLURAL/NAME/scalars      training curves (local jobs)
//   GET    /api/v1/pods, /api/v1/namespaces/NS/pods[?labelSelector=]  replicas as pods
//   GET    /api/v1/namespaces/NS/pods/POD
//   GET    /api/v1/namespaces/NS/pods/POD/log[?previous&allRuns&tailLines&limitBytes&follow]
//   GET    /api/v1/events, /api/v1/namespaces/NS/events[?fieldSelector=involvedObject.name=NAME]
//
// Objects come from the read model (view/job_view.h, view/pod_view.h), the same functions
// `cohort get -o json` prints with, so the two never disagree: each job with its own apiVersion
// and kind, and an event's involvedObject its job's kind. Errors are Kubernetes Status objects
// ({"kind": "Status", "code": 404, "reason": "NotFound", "message": ...}). Logs are streamed from
// the file in chunks (ui/log_range.h), never read whole; a followed log goes on as the replica
// writes, as server-sent events when the client accepts text/event-stream, else as chunked text.
//
// DashboardApi does not speak HTTP: the server (dashboard_server.h) turns requests into ApiRequests
// and ApiResponses back; every handler asks the client afresh, so jobs created or deleted while the
// dashboard runs show at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "exec/job_state_store.h"
#include "ui/log_range.h"
#include "view/job_client.h"
#include "view/pod_view.h"
#include "view/training_scalars.h"

namespace cohort::ui {

struct ApiRequest {
  std::string method;  // "GET", "POST", "DELETE", "HEAD"
  std::string path;    // decoded, without the query
  std::multimap<std::string, std::string> params;
  std::string accept;         // the Accept header
  std::string last_event_id;  // an EventSource's Last-Event-ID header, when it reconnects
};

// Passes bytes on to the client; false once the client has gone.
using ResponseWriter = std::function<bool(std::string_view)>;

struct ApiResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the body is this stream instead: called once, it writes until it is done and
  // returns false when the client went away.
  std::function<bool(const ResponseWriter&)> stream;
};

struct ApiOptions {
  // Whose jobs: every read and action goes through it (view/job_client.h), this machine's or a
  // cluster's. Not owned; it outlives the api.
  view::JobClient* jobs = nullptr;
  // $COHORT_HOME when `jobs` are this machine's: logs are then served from their files by byte
  // range, and training curves read from the replicas' summaries. Empty for a cluster's jobs
  // (logs through the client, no curves).
  std::filesystem::path home;
  // A followed log ends after this long (a browser's EventSource reconnects and resumes).
  std::chrono::seconds max_follow = std::chrono::hours(1);
  std::chrono::milliseconds follow_poll = std::chrono::milliseconds(250);
  int max_open_streams = 32;  // followed logs at once; more get 503
};

class DashboardApi {
 public:
  explicit DashboardApi(ApiOptions options) : options_(std::move(options)) {}

  // Whether `path` is the API's (else it is one of the pages').
  static bool IsApiPath(const std::string& path);

  ApiResponse Handle(const ApiRequest& request);

  // Ends every followed log soon (the server is stopping).
  void Stop() { stopping_ = true; }

 private:
  // The handlers of a kind's routes act on jobs of that kind alone.
  ApiResponse ResourceList(const std::string& group, const std::string& version);
  ApiResponse JobsList(const ApiRequest& request, const std::string& namespace_name, bool all,
                       const job::JobKind& kind);
  ApiResponse JobGet(const ApiRequest& request, const std::string& namespace_name,
                     const std::string& name, const job::JobKind& kind);
  ApiResponse JobReplicas(const std::string& namespace_name, const std::string& name,
                          const job::JobKind& kind);
  ApiResponse JobAction(const std::string& namespace_name, const std::string& name,
                        const std::string& action, const job::JobKind& kind);
  ApiResponse PodsList(const ApiRequest& request, const std::string& namespace_name, bool all);
  ApiResponse PodGet(const std::string& namespace_name, const std::string& pod);
  ApiResponse PodLog(const ApiRequest& request, const std::string& namespace_name,
                     const std::string& pod);
  // A cluster pod's log, through the client (followed logs are not served).
  ApiResponse ClientPodLog(const std::string& namespace_name, const std::string& pod,
                           const LogQuery& query, bool follow);
  ApiResponse JobScalars(const ApiRequest& request, const std::string& namespace_name,
                         const std::string& name, const job::JobKind& kind);
  // The note for a filtered scalars request that matched nothing: the tags, replicas and runs
  // the job does have.
  std::string NothingMatched(const exec::JobStore& store, const exec::JobKey& key,
                             const view::ScalarQuery& filter, const std::vector<std::string>& tags);
  ApiResponse Metrics();
  // `kind`: a job route's kind, else null (every kind).
  ApiResponse EventsList(const ApiRequest& request, const std::string& namespace_name, bool all,
                         const std::string& job_name, const job::JobKind* kind);

  // The jobs of a namespace (of all with `all`) through the client (whose local form tidies them
  // at most every few seconds: a page that polls 200 jobs every 2 s must not re-read every spec
  // each time), with `objects` their objects; of `kind` only, or of every kind (null).
  StatusOr<view::JobList> ListedJobs(const std::string& namespace_name, bool all,
                                     view::JobDetail detail, bool objects,
                                     const job::JobKind* kind);
  // One job (NotFound when it is not there, or not of `kind` unless null).
  StatusOr<view::JobList> OneJob(const std::string& namespace_name, const std::string& name,
                                 view::JobDetail detail, bool objects, const job::JobKind* kind);
  // A pod of a namespace's jobs, and the store that holds its job (`*store`).
  StatusOr<view::PodRef> FindPod(const std::string& namespace_name, const std::string& pod_name,
                                 std::shared_ptr<const exec::JobStateStore>* store);
  // `object` as YAML (Accept: application/yaml).
  static ApiResponse Yaml(const nlohmann::json& object);
  // The restart lines of a log, scanned once and then only as it grows (shared by requests).
  StatusOr<RunIndex> UpdatedRunIndex(const FileReader& file);

  ApiOptions options_;
  view::ScalarCache scalar_cache_;  // event files read so far, by path
  std::atomic<bool> stopping_{false};
  std::atomic<int> open_streams_{0};
  std::mutex run_indexes_mutex_;
  std::map<std::string, RunIndex> run_indexes_;  // by log path; bounded (kMaxRunIndexes)
};

// A Kubernetes Status object for an error: {"kind": "Status", "status": "Failure", "code": ...}.
ApiResponse StatusResponse(int http_status, const std::string& reason, const std::string& message);

// The HTTP status and Kubernetes reason for a Status code (NotFound -> 404 "NotFound").
std::pair<int, std::string> HttpStatusFor(const Status& status);

}  // namespace cohort::ui
