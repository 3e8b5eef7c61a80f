// serve_bench: single-instance predictions through the prediction server (src/serve, in this
// process, over loopback HTTP with keep-alive clients) at 1, 8 and 64 concurrent clients, with
// dynamic batching and with batch-1 serving (--max_batch 1), against the limit: the same saved
// model's forward pass called in a plain loop (train::SavedModel, batch 1 and batch max_batch).
//
//   serve_bench --model_path DIR [--seconds 5] [--clients 1,8,64] [--max_batch 64]
//               [--max_wait_us 2000] [--threads 2]
//
// Each line: requests (or forward passes) per second, and p50 / p99 latency in ms, over
// --seconds after a warm-up of a quarter of that. The last line is the summary the goals read:
// "serve: p99 at 64 clients (batching) = X ms; batching / batch-1 at 64 clients = Yx".
#include <ATen/Parallel.h>
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "serve/model_set.h"
#include "serve/prediction_server.h"
#include "train/saved_model.h"

namespace cohort::serve {
namespace {

using Clock = std::chrono::steady_clock;

struct Figures {
  double per_second = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

Figures Summarise(std::vector<double> latencies_ms, double seconds, double items) {
  Figures figures;
  figures.per_second = items / seconds;
  if (latencies_ms.empty()) return figures;
  std::sort(latencies_ms.begin(), latencies_ms.end());
  auto at = [&](double q) {
    return latencies_ms[std::min(
        latencies_ms.size() - 1,
        static_cast<size_t>(q * static_cast<double>(latencies_ms.size())))];
  };
  figures.p50_ms = at(0.50);
  figures.p99_ms = at(0.99);
  return figures;
}

// The plain loop: `batch` images through the saved model's forward pass, again and again.
Figures Limit(train::SavedModel& model, int64_t batch, double seconds) {
  std::vector<float> images(static_cast<size_t>(batch * model.image_size()), 0.5f);
  const auto warm_until = Clock::now() + std::chrono::duration<double>(seconds / 4);
  while (Clock::now() < warm_until) (void)model.PredictProbabilities(images.data(), batch);
  std::vector<double> latencies;
  const auto start = Clock::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    const auto before = Clock::now();
    if (!model.PredictProbabilities(images.data(), batch).ok()) std::abort();
    latencies.push_back(std::chrono::duration<double, std::milli>(Clock::now() - before).count());
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  return Summarise(latencies, elapsed, static_cast<double>(latencies.size() * batch));
}

// `clients` threads, each sending one-image predict requests one after another on its own
// keep-alive connection.
Figures Clients(int port, const std::string& body, int clients, double seconds, int* failures) {
  std::atomic<bool> measuring = false, stop = false;
  std::vector<std::vector<double>> latencies(static_cast<size_t>(clients));
  std::atomic<int> failed = 0;
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client client("127.0.0.1", port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);  // headers and body are two writes: no Nagle wait between
      client.set_read_timeout(60, 0);
      while (!stop) {
        const auto before = Clock::now();
        httplib::Result result =
            client.Post("/v1/models/flagship:predict", body, "application/json");
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - before).count();
        if (!result || result->status != 200) {
          ++failed;
          continue;
        }
        if (measuring) latencies[static_cast<size_t>(c)].push_back(ms);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds / 4));  // warm-up, not order
  const auto start = Clock::now();
  measuring = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));  // the measured span
  measuring = false;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  for (std::thread& thread : threads) thread.join();
  std::vector<double> all;
  for (const auto& one : latencies) all.insert(all.end(), one.begin(), one.end());
  *failures += failed;
  return Summarise(all, elapsed, static_cast<double>(all.size()));
}

int Main(int argc, char** argv) {
  CLI::App app{"serve_bench: the prediction server against a plain libtorch loop"};
  std::string model_path;
  double seconds = 5;
  std::vector<int> client_counts = {1, 8, 64};
  int64_t max_batch = 64;
  int64_t max_wait_us = 2000;
  int threads = 2;
  app.add_option("--model_path", model_path, "a saved image classifier (cohort-train's)")
      ->required();
  app.add_option("--seconds", seconds, "measured per figure");
  app.add_option("--clients", client_counts, "concurrent clients")->delimiter(',');
  app.add_option("--max_batch", max_batch, "the batching server's maximum batch");
  app.add_option("--max_wait_us", max_wait_us, "the batching server's maximum wait");
  app.add_option("--threads", threads, "libtorch's compute threads");
  CLI11_PARSE(app, argc, argv);
  at::set_num_threads(threads);

  auto model = train::SavedModel::Load(model_path);
  if (!model.ok()) {
    std::fprintf(stderr, "serve_bench: %s\n", model.status().ToString().c_str());
    return 1;
  }
  std::printf("# model %s (%s, %lldx%lld), %d compute threads, %.1f s a figure\n",
              model_path.c_str(), (*model)->manifest().model.c_str(),
              static_cast<long long>((*model)->manifest().input_shape[1]),
              static_cast<long long>((*model)->manifest().input_shape[2]), threads, seconds);
  const Figures one = Limit(**model, 1, seconds);
  std::printf("limit batch 1: %.0f instances/s p50 %.3f ms p99 %.3f ms\n", one.per_second,
              one.p50_ms, one.p99_ms);
  const Figures many = Limit(**model, max_batch, seconds);
  std::printf("limit batch %lld: %.0f instances/s p50 %.3f ms p99 %.3f ms\n",
              static_cast<long long>(max_batch), many.per_second, many.p50_ms, many.p99_ms);
  std::fflush(stdout);

  // One image as a client sends it: 28x28 pixels in [0, 1].
  const int64_t rows = (*model)->manifest().input_shape[1];
  const int64_t cols = (*model)->manifest().input_shape[2];
  nlohmann::json image = nlohmann::json::array();
  for (int64_t r = 0; r < rows; ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t c = 0; c < cols; ++c)
      row.push_back(static_cast<float>((r * cols + c) % 256) / 255.0f);
    image.push_back(row);
  }
  const std::string body = nlohmann::json{{"instances", {image}}}.dump();

  std::map<std::pair<bool, int>, Figures> served;
  int failures = 0;
  for (bool batching : {true, false}) {
    ModelSetOptions options;
    options.batching.max_batch = batching ? max_batch : 1;
    options.batching.max_wait = std::chrono::microseconds(batching ? max_wait_us : 0);
    StatusOr<std::unique_ptr<ModelSet>> models =
        ModelSet::FromPath("flagship", model_path, options);
    if (!models.ok()) return 1;
    ServingMetrics metrics;
    ServerOptions server_options;
    server_options.port = 0;
    StatusOr<std::unique_ptr<PredictionServer>> server =
        PredictionServer::Start(server_options, models->get(), &metrics);
    if (!server.ok()) {
      std::fprintf(stderr, "serve_bench: %s\n", server.status().ToString().c_str());
      return 1;
    }
    for (int clients : client_counts) {
      const Figures figures = Clients((*server)->port(), body, clients, seconds, &failures);
      served[{batching, clients}] = figures;
      std::printf("serve %s clients %d: %.0f requests/s p50 %.3f ms p99 %.3f ms\n",
                  batching ? "batching" : "batch-1", clients, figures.per_second, figures.p50_ms,
                  figures.p99_ms);
      std::fflush(stdout);
    }
  }
  if (failures > 0) std::printf("failed requests: %d\n", failures);
  const int most = *std::max_element(client_counts.begin(), client_counts.end());
  const Figures& batched = served[{true, most}];
  const Figures& single = served[{false, most}];
  std::printf(
      "serve: p99 at %d clients (batching) = %.3f ms; batching / batch-1 at %d clients = "
      "%.2fx; failed %d\n",
      most, batched.p99_ms, most,
      single.per_second > 0 ? batched.per_second / single.per_second : 0.0, failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace cohort::serve

int main(int argc, char** argv) { return cohort::serve::Main(argc, argv); }
