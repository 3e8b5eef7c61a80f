// EventRecorder: a job's events (job::Event, from the reconciler and the operator's own actions)
// as core/v1 Events on the server, the way client-go's recorder writes them.
//
// Each Event names the job as its involvedObject (apiVersion, kind, namespace, name, uid), its
// source component (the job kind's controller, as Kubeflow's: "tfjob-controller" for a TFJob,
// "pytorchjob-controller" for a PyTorchJob; the operator keeps one recorder per kind) and
// reporting controller, type, reason and message. An event equal to one this recorder wrote before
// for the same object (type, reason and message) is aggregated: the existing Event's count goes up
// and its lastTimestamp moves, instead of a new object; `kubectl describe` then shows "(x3 over
// 2m)". Aggregation state lives in memory, so a new operator starts new Events, as client-go's
// does.
//
// Failures to record are returned (the caller logs them); they never stop a sync.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "base/status.h"
#include "job/common_types.h"
#include "kube/client/api.h"

namespace cohort::kube {

class EventRecorder {
 public:
  // `component`: source.component and reportingComponent; `instance`: reportingInstance (the
  // operator's identity).
  EventRecorder(Api& api, std::string component, std::string instance);

  // `involved` is the job object as the server returned it.
  Status Record(const nlohmann::json& involved, const job::Event& event);

  // Forgets the aggregation state of a job that is gone.
  void Forget(const std::string& involved_uid);

 private:
  struct Recorded {
    std::string namespace_name;
    std::string name;
    int64_t count = 0;
  };
  using Key = std::tuple<std::string, std::string, std::string, std::string>;  // uid, type...

  Api& api_;
  const std::string component_;
  const std::string instance_;
  std::mutex mutex_;
  std::map<Key, Recorded> recorded_;
  // Numbers the Events' names (<job>.<time><sequence>). One counter for the whole process, so that
  // the recorders of two kinds, whose jobs may share a name, never name two Events alike.
  static std::atomic<uint64_t> sequence_;
};

}  // namespace cohort::kube
