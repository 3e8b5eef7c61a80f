// ParameterSource: where a parameter-server model's current values come from, and its two
// implementations:
//
//   ServerParameters      the live parameter servers, through a worker's client: what training
//                         and the chief's final evaluation read;
//   CheckpointParameters  a checkpoint on disk (every server's shard, ps/checkpoint.h), read
//                         without any server: what the evaluator side-car and a saved model read.
//
// A checkpoint row that no worker ever touched is not in any shard; it reads as its initial value
// (seed and id, embedding_table.h), exactly what a server would have answered.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "ps/checkpoint.h"
#include "ps/parameter_server_client.h"
#include "ps/shard_store.h"
#include "train/parameter_server/parameter_server_model.h"

namespace cohort::train {

class ParameterSource {
 public:
  virtual ~ParameterSource() = default;
  // Whole dense variables by name (rows * row_width floats each).
  virtual Status PullDense(const std::vector<std::pair<std::string, float*>>& outputs) = 0;
  // The rows of `ids` of `table`, count * row_width floats.
  virtual Status PullRows(const std::string& table, const int64_t* ids, size_t count,
                          float* out) = 0;
};

// Pulls every dense variable of `model` into `dense`, sized to fit.
Status PullDenseVariables(const ParameterServerModel& model, ParameterSource& source,
                          std::vector<std::vector<float>>* dense);
// Pulls the rows each lookup names.
Status PullLookupRows(ParameterSource& source, BatchLookups& lookups);

class ServerParameters : public ParameterSource {
 public:
  explicit ServerParameters(ps::ParameterServerClient* client) : client_(client) {}
  Status PullDense(const std::vector<std::pair<std::string, float*>>& outputs) override {
    return client_->Pull(outputs);
  }
  Status PullRows(const std::string& table, const int64_t* ids, size_t count, float* out) override {
    return client_->PullRows(table, ids, count, out);
  }

 private:
  ps::ParameterServerClient* client_;
};

class CheckpointParameters : public ParameterSource {
 public:
  // Reads the checkpoint that `manifest_file` (in `directory`) describes; errors name the file.
  static StatusOr<std::unique_ptr<CheckpointParameters>> Load(const std::string& directory,
                                                              const std::string& manifest_file);
  int64_t global_step() const { return manifest_.global_step; }
  // The shard files it was read from, by ps index.
  const std::vector<ps::SavedShard>& shards() const { return manifest_.shards; }

  Status PullDense(const std::vector<std::pair<std::string, float*>>& outputs) override;
  Status PullRows(const std::string& table, const int64_t* ids, size_t count, float* out) override;

 private:
  CheckpointParameters(ps::Manifest manifest, std::vector<std::unique_ptr<ps::ShardStore>> stores)
      : manifest_(std::move(manifest)), stores_(std::move(stores)) {}

  ps::Manifest manifest_;
  std::vector<std::unique_ptr<ps::ShardStore>> stores_;  // by ps index
};

}  // namespace cohort::train
