// ServingMetrics: the prediction server's /metrics, in Prometheus' text format (version 0.0.4):
//
//   cohort_serve_requests_total{model,version,code}       requests answered, by HTTP status
//   cohort_serve_request_duration_seconds{model}          histogram: arrival to answer
//   cohort_serve_batch_size{model}                        histogram: instances per forward pass
//   cohort_serve_instances_total{model}                   instances predicted
//
// Requests that name no servable model (404, 400 before routing) count under model "". Label
// sets are bounded: models and versions are those the server loaded, codes the few it answers.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace cohort::serve {

class ServingMetrics {
 public:
  void CountRequest(const std::string& model, const std::string& version, int code,
                    std::chrono::nanoseconds duration);
  void CountBatch(const std::string& model, int64_t instances);
  // The text of GET /metrics.
  std::string Text() const;

 private:
  struct Histogram {
    std::vector<uint64_t> buckets;  // cumulative counts are formed when printed
    uint64_t count = 0;
    double sum = 0;
  };
  static void Observe(Histogram& histogram, const std::vector<double>& bounds, double value);

  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, int>, uint64_t> requests_;
  std::map<std::string, Histogram> latency_;
  std::map<std::string, Histogram> batch_sizes_;
  std::map<std::string, uint64_t> instances_;
};

}  // namespace cohort::serve
