// A tiny training job for the process tests: linear regression y = x . w* + b* with a dense
// weight vector split over the servers, plus an embedding table whose rows are pulled toward
// known targets. Each worker trains on its own data, prefetching the next pull while it computes.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "testing/ps_cluster.h"

namespace cohort::testing {

inline constexpr int kDimensions = 32;
inline constexpr char kTable[] = "emb";
inline constexpr int kTableWidth = 4;

inline float TrueWeight(int j) { return 0.1f * static_cast<float>(j - kDimensions / 2) / 16.0f; }
inline constexpr float kTrueBias = 0.3f;
inline float TargetRow(int64_t id, int column) {
  return 0.01f * static_cast<float>(id) + 0.1f * static_cast<float>(column);
}

inline std::vector<ps::DenseVariable> ModelVariables() {
  ps::OptimizerConfig sgd{.kind = ps::OptimizerKind::kSgd, .learning_rate = 0.2f};
  return {{{"w", kDimensions, 1}, sgd, std::vector<float>(kDimensions, 0.0f)},
          {{"b", 1, 1}, sgd, {0.0f}}};
}

inline ps::EmbeddingTableSpec ModelTable() {
  return {kTable, kTableWidth, 7, 0.1f, {.kind = ps::OptimizerKind::kSgd, .learning_rate = 0.5f}};
}

// Client options that split "w" over every server.
inline ps::ParameterServerClientOptions TrainingOptions(const PsCluster& cluster,
                                                        const cluster::TaskId& self) {
  auto options = cluster.ClientOptions(self);
  options.min_shard_bytes = 16;
  return options;
}

inline StatusOr<std::unique_ptr<ps::ParameterServerClient>> ConnectAndCreate(
    ps::ParameterServerClientOptions options) {
  auto client = ps::ParameterServerClient::Connect(std::move(options));
  if (!client.ok()) return client.status();
  COHORT_RETURN_IF_ERROR((*client)->CreateVariables(ModelVariables()));
  COHORT_RETURN_IF_ERROR((*client)->CreateTable(ModelTable()));
  return client;
}

// Trains `steps` steps; reports "step N" as it goes and "loss X" at the end. Exit code 0 when the
// worker's own loss ends below 1e-4.
inline int TrainWorker(ps::ParameterServerClient& client, int worker_index, int steps,
                       std::chrono::milliseconds pause = std::chrono::milliseconds(0)) {
  std::mt19937 random(1234 + worker_index);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  constexpr int kBatch = 16;
  std::vector<float> w(kDimensions), b(1), next_w(kDimensions), next_b(1);
  std::vector<int64_t> ids = {worker_index * 3, worker_index * 3 + 1, worker_index * 3 + 2, 100};
  std::vector<float> rows(ids.size() * kTableWidth), row_gradient(rows.size());
  ps::PendingPull pending = client.StartPull({{"w", next_w.data()}, {"b", next_b.data()}});
  auto loss_of = [&](const std::vector<float>& weights, float bias) {
    double loss = 0;
    std::mt19937 fixed(99 + worker_index);
    for (int i = 0; i < 64; ++i) {
      float error = bias - kTrueBias;
      for (int j = 0; j < kDimensions; ++j) error += uniform(fixed) * (weights[j] - TrueWeight(j));
      loss += 0.5 * error * error / 64;
    }
    return loss;
  };
  for (int step = 0; step < steps; ++step) {
    Status pulled = pending.Wait();
    if (!pulled.ok()) {
      Report("pull failed at step " + std::to_string(step) + ": " + pulled.ToString());
      return 1;
    }
    w = next_w;
    b = next_b;
    // Prefetch the next step's parameters while this one computes.
    pending = client.StartPull({{"w", next_w.data()}, {"b", next_b.data()}});
    std::vector<float> gradient_w(kDimensions, 0.0f), gradient_b(1, 0.0f);
    for (int i = 0; i < kBatch; ++i) {
      float x[kDimensions];
      float error = b[0] - kTrueBias;
      for (int j = 0; j < kDimensions; ++j) {
        x[j] = uniform(random);
        error += x[j] * (w[j] - TrueWeight(j));
      }
      for (int j = 0; j < kDimensions; ++j) gradient_w[j] += error * x[j] / kBatch;
      gradient_b[0] += error / kBatch;
    }
    Status status = pending.valid() ? Status::OK() : Status::Internal("no prefetch");
    if (status.ok()) status = client.Push({{"w", gradient_w.data()}, {"b", gradient_b.data()}});
    if (status.ok()) status = client.PullRows(kTable, ids.data(), ids.size(), rows.data());
    if (status.ok()) {
      for (size_t r = 0; r < ids.size(); ++r) {
        for (int c = 0; c < kTableWidth; ++c) {
          row_gradient[r * kTableWidth + c] = rows[r * kTableWidth + c] - TargetRow(ids[r], c);
        }
      }
      status = client.PushRows(kTable, ids.data(), ids.size(), row_gradient.data());
    }
    if (status.ok()) status = client.FinishStep();
    if (!status.ok()) {
      IgnoreError(pending.Wait(), "the step's failure is what is reported");
      Report("step " + std::to_string(step) + " failed: " + status.ToString());
      return 1;
    }
    Report("step " + std::to_string(step));
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
  }
  Status last = pending.Wait();
  if (!last.ok()) {
    Report("final pull failed: " + last.ToString());
    return 1;
  }
  double loss = loss_of(next_w, next_b[0]);
  Report("loss " + std::to_string(loss));
  return loss < 1e-4 ? 0 : 1;
}

// What the chief checks at the end: the weights and the table rows reached their targets.
inline Status CheckModel(ps::ParameterServerClient& client) {
  std::vector<float> w(kDimensions), b(1);
  COHORT_RETURN_IF_ERROR(client.Pull({{"w", w.data()}, {"b", b.data()}}));
  for (int j = 0; j < kDimensions; ++j) {
    if (std::abs(w[j] - TrueWeight(j)) > 1e-2) {
      return Status::Internal("w[" + std::to_string(j) + "] = " + std::to_string(w[j]) +
                              ", expected " + std::to_string(TrueWeight(j)));
    }
  }
  if (std::abs(b[0] - kTrueBias) > 1e-2) return Status::Internal("b = " + std::to_string(b[0]));
  std::vector<int64_t> ids = {0, 1, 2, 100};
  std::vector<float> rows(ids.size() * kTableWidth);
  COHORT_RETURN_IF_ERROR(client.PullRows(kTable, ids.data(), ids.size(), rows.data()));
  for (size_t r = 0; r < ids.size(); ++r) {
    for (int c = 0; c < kTableWidth; ++c) {
      if (std::abs(rows[r * kTableWidth + c] - TargetRow(ids[r], c)) > 1e-3) {
        return Status::Internal("row " + std::to_string(ids[r]) + " did not converge");
      }
    }
  }
  return Status::OK();
}

}  // namespace cohort::testing
