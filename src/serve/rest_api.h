// RestApi: TensorFlow Serving's REST API and AI Platform's online prediction, HTTP-free, so that
// it reads (and is tested) as a table of routes:
//
//   GET  /v1/models/NAME[/versions/V]             {"model_version_status": [...]}
//   GET  /v1/models/NAME[/versions/V]/metadata    {"model_spec": ..., "metadata":
//   {"signature_def"}} POST /v1/models/NAME[/versions/V]:predict     {"instances": [...]} ->
//   {"predictions": [...]}
//                                                 {"inputs": ...}      -> {"outputs": ...}
//   POST /v1/projects/P/models/NAME[/versions/V]:predict   AI Platform's body, its answer
//
// As TensorFlow Serving: the row form ("instances") answers "predictions", one per instance; the
// columnar form ("inputs": a list of instances, or {"INPUT": list}) answers "outputs", each
// output's values as a list (a prediction object's keys become the outputs). Errors are
// {"error": "..."} with 400 (a malformed body or instance: "instance 3[27][4]: ..."), 404 (no
// such model or version), 503 (a full queue), 504 (no answer in time), 500 (the model failed).
// Bounds: at most kMaxInstancesPerRequest instances; the body's size is the server's to bound.
#pragma once

#include <chrono>
#include <string>

#include "serve/model_set.h"
#include "serve/serving_metrics.h"

namespace cohort::serve {

inline constexpr size_t kMaxInstancesPerRequest = 1024;

struct RestResponse {
  int status = 200;
  std::string body;  // JSON
  // For the metrics: the model and version that answered ("" when none did).
  std::string model;
  std::string version;
};

class RestApi {
 public:
  RestApi(ModelSet* models, std::chrono::milliseconds prediction_timeout)
      : models_(models), prediction_timeout_(prediction_timeout) {}

  // Answers `method` on `path` (without the query) with `body`.
  RestResponse Handle(const std::string& method, const std::string& path,
                      const std::string& body) const;

 private:
  RestResponse ModelStatus(const std::string& model, const std::string& version) const;
  RestResponse Metadata(const std::string& model, const std::string& version) const;
  RestResponse Predict(const std::string& model, const std::string& version,
                       const std::string& body) const;

  ModelSet* models_;
  std::chrono::milliseconds prediction_timeout_;
};

// The HTTP status for a Status code (InvalidArgument 400, NotFound 404, ...).
int HttpStatusOf(const cohort::Status& status);

}  // namespace cohort::serve
