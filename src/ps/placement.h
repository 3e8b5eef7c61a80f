// Variable placement: which parameter server holds which rows of which variable.
//
// Dense variables follow TensorFlow's recommended ParameterServerStrategy setting,
// MinSizePartitioner(min_shard_bytes = 256 KiB, max_shards = number of ps): a variable is cut
// along dim 0 into as many shards as keep every shard at least `min_shard_bytes`, but never more
// than one shard per parameter server. Rows are split "div" style, as TensorFlow's ShardedVariable
// does: contiguous ranges, the first shards one row longer when the split is uneven (13 rows in 5
// shards: 3, 3, 3, 2, 2). Shards are dealt round-robin over the parameter servers in creation
// order, one counter for all variables, so small variables (one shard each) spread evenly and a
// large variable's shards land on distinct servers.
//
// Embedding tables are addressed by row id, not by a dense range, and their ids are unbounded, so
// a table lives on every parameter server and row `id` belongs to server `id mod num_ps`
// (TensorFlow's "mod" partition strategy). A row's initial value depends only on the table's seed
// and the id (embedding_table.h), so it does not change with the number of servers.
//
// The plan is a pure function of the variable list and the server count: every worker computes the
// same plan without talking to anybody.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace cohort::ps {

inline constexpr int64_t kDefaultMinShardBytes = 256 << 10;
inline constexpr int64_t kBytesPerFloat = 4;

// A dense float32 variable of shape [rows, row_width] (a vector is [rows, 1]).
struct VariableShape {
  std::string name;
  int64_t rows = 0;
  int64_t row_width = 1;
};

// Rows [first_row, first_row + row_count) of `variable`, held by parameter server `ps_index`.
struct ShardPlacement {
  std::string variable;
  int shard_index = 0;
  int shard_count = 1;
  int ps_index = 0;
  int64_t first_row = 0;
  int64_t row_count = 0;
};

// The number of shards TensorFlow's MinSizePartitioner gives a [rows, row_width] variable:
// ceil(rows / ceil(min_shard_bytes / bytes_per_row)), clamped to [1, max_shards].
int MinSizeShardCount(int64_t rows, int64_t row_width, int64_t min_shard_bytes, int max_shards);

// The "div" split of `rows` rows into `shards` contiguous ranges: (first_row, row_count) pairs.
std::vector<std::pair<int64_t, int64_t>> DivideRows(int64_t rows, int shards);

// The parameter server that holds row `id` of every embedding table.
int EmbeddingRowOwner(int64_t id, int num_ps);

class VariablePlacement {
 public:
  // Plans `variables` over `num_ps` servers. InvalidArgument for no servers, an empty or
  // duplicate name, or a shape with no rows or no columns.
  static StatusOr<VariablePlacement> Plan(const std::vector<VariableShape>& variables, int num_ps,
                                          int64_t min_shard_bytes = kDefaultMinShardBytes);

  int num_ps() const { return num_ps_; }
  // Every shard, variable by variable in the order given, shard by shard.
  const std::vector<ShardPlacement>& shards() const { return shards_; }
  // The shards of one variable, by shard index; empty for an unknown name.
  std::vector<ShardPlacement> ShardsOf(const std::string& variable) const;
  // The shards one server holds.
  std::vector<ShardPlacement> ShardsOn(int ps_index) const;

 private:
  int num_ps_ = 0;
  std::vector<ShardPlacement> shards_;
};

}  // namespace cohort::ps
