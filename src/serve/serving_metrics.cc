#include "serve/serving_metrics.h"

#include <sstream>

namespace cohort::serve {
namespace {

const std::vector<double>& LatencyBounds() {
  static const std::vector<double> bounds = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                             0.1,    0.25,  0.5,   1,     2.5,  5,    10};
  return bounds;
}

const std::vector<double>& BatchBounds() {
  static const std::vector<double> bounds = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  return bounds;
}

// A label value with Prometheus' escapes.
std::string Quoted(const std::string& value) {
  std::string text = "\"";
  for (char c : value) {
    if (c == '\\' || c == '"') text += '\\';
    if (c == '\n') {
      text += "\\n";
      continue;
    }
    text += c;
  }
  return text + "\"";
}

std::string Number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

void ServingMetrics::Observe(Histogram& histogram, const std::vector<double>& bounds,
                             double value) {
  if (histogram.buckets.empty()) histogram.buckets.assign(bounds.size(), 0);
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (value <= bounds[i]) {
      ++histogram.buckets[i];
      break;
    }
  }
  ++histogram.count;
  histogram.sum += value;
}

void ServingMetrics::CountRequest(const std::string& model, const std::string& version, int code,
                                  std::chrono::nanoseconds duration) {
  std::lock_guard lock(mutex_);
  ++requests_[{model, version, code}];
  Observe(latency_[model], LatencyBounds(), std::chrono::duration<double>(duration).count());
}

void ServingMetrics::CountBatch(const std::string& model, int64_t instances) {
  std::lock_guard lock(mutex_);
  Observe(batch_sizes_[model], BatchBounds(), static_cast<double>(instances));
  instances_[model] += static_cast<uint64_t>(instances);
}

std::string ServingMetrics::Text() const {
  std::lock_guard lock(mutex_);
  std::ostringstream out;
  out << "# HELP cohort_serve_requests_total Prediction server requests answered, by HTTP "
         "status.\n# TYPE cohort_serve_requests_total counter\n";
  for (const auto& [key, count] : requests_) {
    const auto& [model, version, code] = key;
    out << "cohort_serve_requests_total{model=" << Quoted(model) << ",version=" << Quoted(version)
        << ",code=\"" << code << "\"} " << count << "\n";
  }
  auto histogram = [&](const std::string& name, const std::string& help,
                       const std::map<std::string, Histogram>& series,
                       const std::vector<double>& bounds) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
    for (const auto& [model, values] : series) {
      uint64_t cumulative = 0;
      for (size_t i = 0; i < bounds.size(); ++i) {
        cumulative += values.buckets[i];
        out << name << "_bucket{model=" << Quoted(model) << ",le=\"" << Number(bounds[i]) << "\"} "
            << cumulative << "\n";
      }
      out << name << "_bucket{model=" << Quoted(model) << ",le=\"+Inf\"} " << values.count << "\n";
      out << name << "_sum{model=" << Quoted(model) << "} " << Number(values.sum) << "\n";
      out << name << "_count{model=" << Quoted(model) << "} " << values.count << "\n";
    }
  };
  histogram("cohort_serve_request_duration_seconds", "Time from a request's arrival to its answer.",
            latency_, LatencyBounds());
  histogram("cohort_serve_batch_size", "Instances per forward pass.", batch_sizes_, BatchBounds());
  out << "# HELP cohort_serve_instances_total Instances predicted.\n"
         "# TYPE cohort_serve_instances_total counter\n";
  for (const auto& [model, count] : instances_) {
    out << "cohort_serve_instances_total{model=" << Quoted(model) << "} " << count << "\n";
  }
  return out.str();
}

}  // namespace cohort::serve
