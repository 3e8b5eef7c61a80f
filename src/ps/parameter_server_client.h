// ParameterServerClient: how a worker (or the chief) uses the parameter servers of its job.
//
// The chief creates the variables with their initial values (placement.h decides where each shard
// lives; creates are idempotent, so a restarted chief creates the same list again); a worker,
// which plans the same placement from the same shapes, waits until the chief's variables exist on
// every server (WaitForVariables), as TensorFlow's workers wait for the model to be ready. Then
// each loops: pull the parameters, compute gradients on its shard of the data, push them. The next
// pull can be started before the gradient is computed (StartPull, then Wait), so communication
// overlaps computation. Large shards travel in chunks of at most `chunk_bytes`, pipelined on each
// server's connection, and the servers are driven in parallel.
//
// Modes, chosen by the job and matched by the servers:
//   - async (default): pushes are applied on arrival. With `max_staleness` >= 0, FinishStep()
//     keeps this worker at most that many steps ahead of the slowest live worker (step_clock.h).
//   - sync: each push carries the step; FinishStep() moves to the next one, or to the step the
//     servers are collecting when this worker fell behind (sync_aggregator.h).
//
// Faults: every request waits at most `request_timeout`; a server that cannot be reached is
// retried with backoff for `retry_timeout`, and then the call fails naming it
// (server_connection.h).
#pragma once

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "cluster/cluster_spec.h"
#include "ps/placement.h"
#include "ps/server_connection.h"

namespace cohort::ps {

struct ParameterServerClientOptions {
  ConnectionSettings connection;  // job name, this task, secret, timeouts, log
  cluster::ClusterSpec cluster;   // must list the ps tasks
  bool sync = false;
  int64_t max_staleness = -1;  // async only; -1 for unbounded
  int64_t min_shard_bytes = kDefaultMinShardBytes;
  size_t chunk_bytes = 4 << 20;
};

// A dense variable to create: its shape, its optimizer and its initial value (rows * row_width
// floats, or empty for zeros).
struct DenseVariable {
  VariableShape shape;
  OptimizerConfig optimizer;
  std::vector<float> initial;
};

// A pull started in the background (StartPull); Wait() for it before using the buffers.
class PendingPull {
 public:
  PendingPull() = default;
  explicit PendingPull(std::future<Status> result) : result_(std::move(result)) {}
  bool valid() const { return result_.valid(); }
  // The pull's result; every wait inside it is bounded by the request and retry timeouts.
  Status Wait() { return result_.valid() ? result_.get() : Status::FailedPrecondition("no pull"); }

 private:
  std::future<Status> result_;
};

class ParameterServerClient {
 public:
  // Connects to every ps of the cluster (in parallel, retrying as above).
  static StatusOr<std::unique_ptr<ParameterServerClient>> Connect(
      ParameterServerClientOptions options);

  int num_ps() const { return static_cast<int>(servers_.size()); }
  const VariablePlacement& placement() const { return placement_; }

  // Plans `variables` over the servers and creates every shard. Call once, with the same list on
  // every worker.
  Status CreateVariables(const std::vector<DenseVariable>& variables);
  // Creates an embedding table on every server.
  Status CreateTable(const EmbeddingTableSpec& spec);

  // Instead of the creates, for a task that only uses the variables: waits until `creator` (the
  // chief) has created `variables` (their initial values are not used) and `tables` on every
  // server, checking with one empty pull per shard and per table, with backoff, for at most
  // `timeout`; then DeadlineExceeded naming the creator, how long it waited and what was missing.
  // Logs one line when it starts waiting and one when the model is ready. Each later connection
  // checks again, and waits (up to the retry timeout) for the creator to create them again on a
  // server that restarted without a checkpoint (server_connection.h).
  Status WaitForVariables(const std::vector<DenseVariable>& variables,
                          const std::vector<EmbeddingTableSpec>& tables,
                          const cluster::TaskId& creator, std::chrono::milliseconds timeout);

  // Whole dense variables by name: each buffer holds rows * row_width floats.
  Status Pull(const std::vector<std::pair<std::string, float*>>& outputs);
  Status Push(const std::vector<std::pair<std::string, const float*>>& gradients);
  // Pull in the background; the buffers must stay alive and untouched until Wait() returns.
  PendingPull StartPull(std::vector<std::pair<std::string, float*>> outputs);

  // Embedding rows by id: `out` and `gradient` hold count * row_width floats, row i for ids[i].
  Status PullRows(const std::string& table, const int64_t* ids, size_t count, float* out);
  Status PushRows(const std::string& table, const int64_t* ids, size_t count,
                  const float* gradient);

  // Ends this worker's step: sync mode moves to the next step; bounded staleness reports to ps:0
  // and waits while this worker is too far ahead.
  Status FinishStep();
  int64_t steps_done() const { return steps_done_; }
  int64_t sync_step() const { return sync_step_; }

  // Chief: every server saves its shard, then the manifest is written. Returns its path.
  StatusOr<std::string> SaveCheckpoint(const std::string& directory, int64_t global_step);
  // Chief: the job is over; every server stops serving.
  Status ShutdownServers();

 private:
  explicit ParameterServerClient(ParameterServerClientOptions options);

  // Runs each server's batch in parallel (inline when only one server has work). Returns the
  // first connection failure, else the first call that the server refused.
  Status RunAll(std::vector<std::vector<Call>>& batches);
  // The dense chunks of `variable`, as (shard, first_row, row_count).
  StatusOr<std::vector<std::pair<const ShardPlacement*, std::pair<int64_t, int64_t>>>> Chunks(
      const std::string& variable) const;
  // Checks `variables` and plans them over the servers.
  StatusOr<VariablePlacement> PlanVariables(const std::vector<DenseVariable>& variables) const;
  // After a sync push: the step to collect next.
  void NotePushOutcomes(const std::vector<std::vector<Call>>& batches);

  const ParameterServerClientOptions options_;
  std::vector<std::unique_ptr<ServerConnection>> servers_;
  VariablePlacement placement_;
  std::map<std::string, VariableShape> shapes_;
  std::map<std::string, int64_t> table_widths_;
  // Initial values sent with creates, kept for replays after a server restart.
  std::vector<std::unique_ptr<std::vector<float>>> create_values_;
  std::vector<std::unique_ptr<std::string>> create_fields_;
  int64_t steps_done_ = 0;
  int64_t sync_step_ = 0;
  int64_t next_sync_step_ = 0;
};

}  // namespace cohort::ps
