// cohort-serve: the prediction server (`cohort serve`) and local predictions (`cohort
// ai-platform predict`). It links libtorch, so it is a program of its own: the `cohort` CLI, job
// control, never links libtorch and runs this one (apps/cohort/commands/serve.cc).
//
//   cohort-serve [--model_path PATH [--model_name NAME]] [--address A] [--port 8501]
//                [--token T | --token-file F] [--max_batch 32] [--max_wait_us 2000] ...
//       serves the registry's models ($COHORT_HOME/models: each model's default version, the
//       others when asked for), or the one model at PATH, over TensorFlow Serving's REST API and
//       AI Platform's online prediction (src/serve/rest_api.h), until SIGINT or SIGTERM. The
//       registry is read again every --poll_interval_s: a new default version is loaded and
//       swapped in while requests go on.
//   cohort-serve predict --model M [--version V] (--json-instances FILE | --json-request FILE)
//       [--format json]
//       gcloud ai-platform predict's form: the version (the default when not named) runs here,
//       in this process, and the predictions are printed as gcloud prints them: a table whose
//       columns are the predictions' keys, or one prediction a line; --format json prints the
//       answer {"predictions": [...]}.
//
// Exit status: 0 success; 2 invalid flags or input (a malformed instance, over 100 instances,
// an address off loopback without a token); 3 other errors (no such model or version, a model
// that cannot be loaded, the port taken).
#include <ATen/Parallel.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "base/file.h"
#include "base/version.h"
#include "exec/job_store.h"
#include "exec/model_registry.h"
#include "serve/model_set.h"
#include "serve/prediction_server.h"
#include "serve/rest_api.h"

namespace cohort::serve {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitInvalidInput = 2;
constexpr int kExitError = 3;
// gcloud's limit on one online prediction request.
constexpr size_t kMaxPredictInstances = 100;
constexpr size_t kMaxPredictFileBytes = 16 << 20;

int Fail(const Status& status) {
  std::cerr << "cohort: " << status.message() << "\n";
  return status.code() == Status::Code::kInvalidArgument ? kExitInvalidInput : kExitError;
}

struct ServeFlags {
  std::string model_path;
  std::string model_name = "default";
  ServerOptions server;
  std::string token_file;
  BatcherOptions batching;
  int64_t max_wait_us = 2000;
  int threads = 0;
  double poll_interval_s = 1;
  int64_t prediction_timeout_s = 30;
};

struct PredictFlags {
  std::string model;
  std::string version;
  std::string json_instances;
  std::string json_request;
  std::string format;
};

void SetComputeThreads(int threads) {
  if (threads <= 0) return;
  at::set_num_threads(threads);
  at::set_num_interop_threads(threads);
}

int Serve(ServeFlags flags) {
  if (!flags.token_file.empty()) {
    if (!flags.server.token.empty()) {
      return Fail(Status::InvalidArgument("give --token or --token-file, not both"));
    }
    StatusOr<std::string> contents = ReadWholeFile(flags.token_file, 4096);
    if (!contents.ok()) return Fail(Status::InvalidArgument(contents.status().message()));
    flags.server.token = contents->substr(0, contents->find('\n'));
  }
  SetComputeThreads(flags.threads);
  flags.batching.max_wait = std::chrono::microseconds(flags.max_wait_us);
  flags.server.prediction_timeout = std::chrono::seconds(flags.prediction_timeout_s);
  // The signals are taken by sigwait below; every thread started after inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  ServingMetrics metrics;
  ModelSetOptions options;
  options.batching = flags.batching;
  options.on_batch = [&metrics](const std::string& model, int64_t instances) {
    metrics.CountBatch(model, instances);
  };
  StatusOr<std::unique_ptr<ModelSet>> models =
      flags.model_path.empty()
          ? ModelSet::FromRegistry(exec::DefaultCohortHome() / "models", options)
          : ModelSet::FromPath(flags.model_name, flags.model_path, options);
  if (!models.ok()) return Fail(models.status());
  StatusOr<std::unique_ptr<PredictionServer>> server =
      PredictionServer::Start(flags.server, models->get(), &metrics);
  if (!server.ok()) return Fail(server.status());
  std::cout << "serving on " << (*server)->Url() << " (";
  std::vector<ModelSet::ModelState> states = (*models)->Models();
  if (states.empty()) std::cout << "no models yet";
  for (size_t i = 0; i < states.size(); ++i) {
    std::cout << (i ? ", " : "") << states[i].name << " version "
              << (states[i].default_version.empty() ? "(none)" : states[i].default_version);
  }
  std::cout << "; batches of at most " << flags.batching.max_batch << ", waiting at most "
            << flags.max_wait_us << " us)" << std::endl;

  // The registry is read again every poll interval, until a signal.
  std::mutex mutex;
  std::condition_variable stop;
  bool stopping = false;
  std::thread poller;
  if (flags.model_path.empty()) {
    poller = std::thread([&] {
      const auto interval = std::chrono::duration<double>(flags.poll_interval_s);
      std::unique_lock lock(mutex);
      while (!stop.wait_for(lock, interval, [&] { return stopping; })) {
        lock.unlock();
        if (Status refreshed = (*models)->Refresh(); !refreshed.ok()) {
          std::cerr << "cohort-serve: " << refreshed.message() << " (still serving the others)\n";
        }
        lock.lock();
      }
    });
  }
  int received = 0;
  sigwait(&signals, &received);
  {
    std::lock_guard lock(mutex);
    stopping = true;
  }
  stop.notify_all();
  if (poller.joinable()) poller.join();
  (*server)->Stop();
  return kExitOk;
}

// The instances of --json-instances (one JSON value a line) or --json-request ({"instances"}).
StatusOr<nlohmann::json> ReadPredictRequest(const PredictFlags& flags) {
  const std::string& file =
      flags.json_instances.empty() ? flags.json_request : flags.json_instances;
  StatusOr<std::string> contents =
      ReadWholeFile(file == "-" ? "/dev/stdin" : file, kMaxPredictFileBytes);
  if (!contents.ok()) return Status::InvalidArgument(contents.status().message());
  nlohmann::json request;
  if (!flags.json_request.empty()) {
    request = nlohmann::json::parse(*contents, nullptr, false);
    if (request.is_discarded() || !request.is_object() || !request.contains("instances") ||
        !request["instances"].is_array()) {
      return Status::InvalidArgument(
          file + ": not a JSON request body {\"instances\": [...]} (--json-request)");
    }
  } else {
    request = {{"instances", nlohmann::json::array()}};
    size_t start = 0, line = 1;
    while (start < contents->size()) {
      size_t end = contents->find('\n', start);
      if (end == std::string::npos) end = contents->size();
      const std::string text = contents->substr(start, end - start);
      if (text.find_first_not_of(" \t\r") != std::string::npos) {
        nlohmann::json instance = nlohmann::json::parse(text, nullptr, false);
        if (instance.is_discarded()) {
          return Status::InvalidArgument(file + ":" + std::to_string(line) +
                                         ": not a JSON value (--json-instances takes one "
                                         "instance a line)");
        }
        request["instances"].push_back(std::move(instance));
      }
      start = end + 1;
      ++line;
    }
  }
  if (request["instances"].empty()) return Status::InvalidArgument(file + ": no instances");
  if (request["instances"].size() > kMaxPredictInstances) {
    return Status::InvalidArgument(
        "Online prediction can process no more than 100 instances per request. Please use batch "
        "prediction instead. (" +
        file + " has " + std::to_string(request["instances"].size()) + ")");
  }
  return request;
}

// A value in a gcloud table cell: strings bare, everything else as JSON.
std::string Cell(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  std::string text = value.dump();
  return text;
}

void PrintPredictions(const nlohmann::json& predictions, const std::string& format) {
  if (format == "json") {
    std::cout << nlohmann::json{{"predictions", predictions}}.dump(2) << "\n";
    return;
  }
  if (predictions.empty() || !predictions.front().is_object()) {
    for (const nlohmann::json& prediction : predictions) std::cout << Cell(prediction) << "\n";
    return;
  }
  std::vector<std::string> keys;
  for (const auto& [key, unused] : predictions.front().items()) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> heading;
  for (const std::string& key : keys) {
    std::string upper = key;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    heading.push_back(upper);
  }
  rows.push_back(heading);
  for (const nlohmann::json& prediction : predictions) {
    std::vector<std::string> row;
    for (const std::string& key : keys) {
      row.push_back(prediction.contains(key) ? Cell(prediction[key]) : "");
    }
    rows.push_back(row);
  }
  std::vector<size_t> widths(keys.size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
}

int Predict(const PredictFlags& flags) {
  if (flags.json_instances.empty() == flags.json_request.empty()) {
    return Fail(Status::InvalidArgument(
        "Exactly one of (--json-instances | --json-request) must be specified."));
  }
  if (!flags.format.empty() && flags.format != "json" && flags.format != "table") {
    return Fail(Status::InvalidArgument("--format " + flags.format + ": json or table"));
  }
  exec::ModelRegistry registry(exec::DefaultCohortHome() / "models");
  StatusOr<exec::ModelRecord> model = registry.GetModel(flags.model);
  if (!model.ok()) return Fail(model.status());
  const std::string version_name = flags.version.empty() ? model->default_version : flags.version;
  if (version_name.empty()) {
    return Fail(Status::NotFound("model " + flags.model +
                                 " has no versions (cohort ai-platform versions create)"));
  }
  StatusOr<exec::VersionRecord> version = registry.GetVersion(flags.model, version_name);
  if (!version.ok()) return Fail(version.status());
  StatusOr<nlohmann::json> request = ReadPredictRequest(flags);
  if (!request.ok()) return Fail(request.status());
  StatusOr<std::unique_ptr<Servable>> servable = LoadServable(version->deployment_uri);
  if (!servable.ok())
    return Fail(servable.status().WithContext("model " + flags.model + " version " + version_name));
  // Each instance decoded alone, then all of one shape in one forward pass.
  std::vector<DecodedInstance> decoded;
  const nlohmann::json& instances = (*request)["instances"];
  for (size_t i = 0; i < instances.size(); ++i) {
    StatusOr<DecodedInstance> instance = (*servable)->DecodeInstance(instances[i], i);
    if (!instance.ok()) return Fail(instance.status());
    if (i > 0 && instance->shape != decoded.front().shape) {
      return Fail(Status::InvalidArgument("instance " + std::to_string(i) +
                                          ": its shape differs from instance 0's"));
    }
    decoded.push_back(std::move(*instance));
  }
  std::vector<float> values;
  for (const DecodedInstance& instance : decoded) {
    values.insert(values.end(), instance.values.begin(), instance.values.end());
  }
  StatusOr<std::vector<nlohmann::json>> predictions =
      (*servable)->Predict(values, static_cast<int64_t>(decoded.size()), decoded.front().shape);
  if (!predictions.ok()) return Fail(predictions.status());
  PrintPredictions(*predictions, flags.format);
  return kExitOk;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "cohort-serve: serve models over TensorFlow Serving's REST API and AI Platform's "
      "online prediction",
      "cohort-serve"};
  app.set_version_flag("--version", VersionText("cohort-serve"));
  int exit_code = kExitOk;
  ServeFlags serve;
  app.add_option("--model_path", serve.model_path,
                 "serve this model only (a saved model directory or a TorchScript file) instead "
                 "of the registry's");
  app.add_option("--model_name", serve.model_name, "the name --model_path is served under")
      ->capture_default_str();
  app.add_option("--address", serve.server.address, "the address to listen on")
      ->capture_default_str();
  app.add_option("--port", serve.server.port, "the port (0: any free one)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--token", serve.server.token,
                 "the token every request must carry (required off loopback)");
  app.add_option("--token-file", serve.token_file, "a file whose first line is the token");
  app.add_option("--max_batch", serve.batching.max_batch,
                 "the most instances in one forward pass (1: no batching)")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}))
      ->capture_default_str();
  app.add_option("--max_wait_us", serve.max_wait_us,
                 "how long a batch waits for more requests after its first")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000}))
      ->capture_default_str();
  app.add_option("--batch_threads", serve.batching.threads,
                 "forward passes run at once, per model version")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--max_queued", serve.batching.max_queued_instances,
                 "the most instances waiting per model version (503 beyond)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--http_threads", serve.server.http_threads, "requests served at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--threads", serve.threads, "libtorch's compute threads (0: its default)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--poll_interval_s", serve.poll_interval_s,
                 "how often the registry is read again for new default versions")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  app.add_option("--prediction_timeout_s", serve.prediction_timeout_s,
                 "how long a request waits for its predictions (504 beyond)")
      ->check(CLI::Range(int64_t{1}, int64_t{3600}))
      ->capture_default_str();
  app.callback([&] {
    if (app.get_subcommands().empty()) exit_code = Serve(serve);
  });

  PredictFlags predict;
  CLI::App* predict_command = app.add_subcommand(
      "predict", "Predict with a model version here, as gcloud ai-platform predict");
  predict_command->add_option("--model", predict.model, "the model")->required();
  predict_command->add_option("--version", predict.version, "the version (default: the model's)");
  predict_command->add_option("--json-instances", predict.json_instances,
                              "a file of instances, one JSON value a line (- for stdin)");
  predict_command->add_option("--json-request", predict.json_request,
                              "a file holding a request body {\"instances\": [...]}");
  predict_command->add_option("--format", predict.format, "json, or table (the default)");
  predict_command->callback([&] { exit_code = Predict(predict); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? kExitOk : kExitInvalidInput;
  }
  return exit_code;
}

}  // namespace
}  // namespace cohort::serve

int main(int argc, char** argv) { return cohort::serve::Main(argc, argv); }
