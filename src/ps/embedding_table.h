// EmbeddingTable: the rows of a sparse embedding that one parameter server holds, by row id.
//
// Embedding vocabularies are large and sparsely touched (hashed feature ids span all of int64),
// so a table is not a dense array: a row exists once some worker reads or updates it. Its first
// value is drawn from a generator seeded by the table's seed and the row id alone, uniform in
// [-init_scale, init_scale], so every worker sees the same starting row whichever server holds
// it, a restarted job recreates the same rows, and tests can predict them (InitialRowValue).
//
// Row `id` belongs to server `id mod num_ps` (placement.h); a request for an id owned by another
// server is refused, naming the owner, because it means the worker's routing is wrong. Gradients
// for the same id within one push are summed before they are applied, as Keras deduplicates
// IndexedSlices, so a batch that looks an id up twice updates it once with the total gradient.
//
// Thread-safe: one lock per table.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "ps/optimizer.h"

namespace cohort::ps {

struct EmbeddingTableSpec {
  std::string name;
  int64_t row_width = 1;
  uint64_t seed = 0;
  float init_scale = 0.05f;
  OptimizerConfig optimizer;

  bool operator==(const EmbeddingTableSpec&) const = default;
};

// Element `column` of row `id`'s initial value.
float InitialRowValue(uint64_t seed, int64_t id, int64_t column, float init_scale);

// The rows a table holds, in no particular order: what a checkpoint saves.
struct EmbeddingTableState {
  std::vector<int64_t> ids;
  std::vector<float> values;              // ids.size() * row_width
  std::vector<std::vector<float>> slots;  // one per optimizer slot, like values
  std::vector<int64_t> row_steps;         // Adam only: updates per row
};

class EmbeddingTable {
 public:
  // A table on server `ps_index` of `num_ps`. InvalidArgument for a bad spec.
  static StatusOr<std::unique_ptr<EmbeddingTable>> Create(const EmbeddingTableSpec& spec,
                                                          int ps_index, int num_ps);
  static StatusOr<std::unique_ptr<EmbeddingTable>> Restore(const EmbeddingTableSpec& spec,
                                                           int ps_index, int num_ps,
                                                           EmbeddingTableState state);

  const EmbeddingTableSpec& spec() const { return spec_; }

  // Copies the rows of `ids` (count of them) into `out` (count * row_width floats), creating
  // rows never seen before.
  Status Read(const int64_t* ids, size_t count, float* out);
  // Applies `gradient` (count * row_width floats, row i for ids[i]) with the table's optimizer.
  Status ApplyGradient(const int64_t* ids, size_t count, const float* gradient);

  size_t row_count() const;
  EmbeddingTableState Snapshot() const;

  // InvalidArgument, naming the owner, for an id that belongs to another server.
  Status CheckOwned(const int64_t* ids, size_t count) const;

 private:
  EmbeddingTable(EmbeddingTableSpec spec, int ps_index, int num_ps)
      : spec_(std::move(spec)), optimizer_(spec_.optimizer), ps_index_(ps_index), num_ps_(num_ps) {}
  // The storage index of row `id`, created on first touch. Requires mutex_.
  size_t RowIndex(int64_t id);

  const EmbeddingTableSpec spec_;
  const Optimizer optimizer_;
  const int ps_index_;
  const int num_ps_;
  mutable std::mutex mutex_;
  std::unordered_map<int64_t, size_t> index_;
  EmbeddingTableState state_;
};

Status ValidateEmbeddingTableSpec(const EmbeddingTableSpec& spec);

}  // namespace cohort::ps
