#include "ps/placement.h"

#include <algorithm>
#include <set>

namespace cohort::ps {

int MinSizeShardCount(int64_t rows, int64_t row_width, int64_t min_shard_bytes, int max_shards) {
  if (rows <= 0 || row_width <= 0 || max_shards <= 1) return 1;
  // As partitioned_variables.min_max_variable_partitioner: whole rows per shard, enough of them to
  // reach the minimum size, then as many shards as the rows allow.
  const int64_t bytes_per_row = row_width * kBytesPerFloat;
  const int64_t rows_per_shard = std::max<int64_t>(
      1, (std::max<int64_t>(min_shard_bytes, 0) + bytes_per_row - 1) / bytes_per_row);
  const int64_t shards = (rows + rows_per_shard - 1) / rows_per_shard;
  return static_cast<int>(std::clamp<int64_t>(shards, 1, max_shards));
}

std::vector<std::pair<int64_t, int64_t>> DivideRows(int64_t rows, int shards) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  const int64_t base = rows / shards, extra = rows % shards;
  int64_t first = 0;
  for (int shard = 0; shard < shards; ++shard) {
    int64_t count = base + (shard < extra ? 1 : 0);
    ranges.emplace_back(first, count);
    first += count;
  }
  return ranges;
}

int EmbeddingRowOwner(int64_t id, int num_ps) {
  int64_t owner = id % num_ps;
  return static_cast<int>(owner < 0 ? owner + num_ps : owner);
}

StatusOr<VariablePlacement> VariablePlacement::Plan(const std::vector<VariableShape>& variables,
                                                    int num_ps, int64_t min_shard_bytes) {
  if (num_ps <= 0) {
    return Status::InvalidArgument("cannot place variables: the cluster has no ps task");
  }
  VariablePlacement plan;
  plan.num_ps_ = num_ps;
  std::set<std::string> names;
  int next_ps = 0;
  for (const VariableShape& variable : variables) {
    if (variable.name.empty()) return Status::InvalidArgument("a variable has an empty name");
    if (!names.insert(variable.name).second) {
      return Status::InvalidArgument("variable \"" + variable.name + "\" is declared twice");
    }
    if (variable.rows <= 0 || variable.row_width <= 0) {
      return Status::InvalidArgument(
          "variable \"" + variable.name + "\" has shape [" + std::to_string(variable.rows) + ", " +
          std::to_string(variable.row_width) + "]; both dimensions must be positive");
    }
    int count = MinSizeShardCount(variable.rows, variable.row_width, min_shard_bytes, num_ps);
    auto ranges = DivideRows(variable.rows, count);
    for (int shard = 0; shard < count; ++shard) {
      ShardPlacement placement;
      placement.variable = variable.name;
      placement.shard_index = shard;
      placement.shard_count = count;
      placement.ps_index = next_ps;
      placement.first_row = ranges[shard].first;
      placement.row_count = ranges[shard].second;
      plan.shards_.push_back(placement);
      next_ps = (next_ps + 1) % num_ps;
    }
  }
  return plan;
}

std::vector<ShardPlacement> VariablePlacement::ShardsOf(const std::string& variable) const {
  std::vector<ShardPlacement> result;
  for (const ShardPlacement& shard : shards_) {
    if (shard.variable == variable) result.push_back(shard);
  }
  return result;
}

std::vector<ShardPlacement> VariablePlacement::ShardsOn(int ps_index) const {
  std::vector<ShardPlacement> result;
  for (const ShardPlacement& shard : shards_) {
    if (shard.ps_index == ps_index) result.push_back(shard);
  }
  return result;
}

}  // namespace cohort::ps
