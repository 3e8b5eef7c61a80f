#include "ps/embedding_table.h"

#include <cstring>

#include "ps/placement.h"

namespace cohort::ps {
namespace {

// SplitMix64: a fast, well-mixed 64-bit hash; enough for initial values, and the same everywhere.
uint64_t Mix(uint64_t value) {
  value += 0x9E3779B97F4A7C15ull;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ull;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBull;
  return value ^ (value >> 31);
}

constexpr int64_t kMaxRowWidth = 1 << 20;

}  // namespace

float InitialRowValue(uint64_t seed, int64_t id, int64_t column, float init_scale) {
  uint64_t bits = Mix(Mix(seed ^ Mix(static_cast<uint64_t>(id))) + static_cast<uint64_t>(column));
  // The top 24 bits give a uniform float in [0, 1) exactly.
  float unit = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
  return init_scale * (2.0f * unit - 1.0f);
}

Status ValidateEmbeddingTableSpec(const EmbeddingTableSpec& spec) {
  if (spec.name.empty()) return Status::InvalidArgument("an embedding table has an empty name");
  if (spec.row_width <= 0 || spec.row_width > kMaxRowWidth) {
    return Status::InvalidArgument("embedding table \"" + spec.name + "\": row width " +
                                   std::to_string(spec.row_width) + " is not in 1-" +
                                   std::to_string(kMaxRowWidth));
  }
  if (!(spec.init_scale >= 0)) {
    return Status::InvalidArgument("embedding table \"" + spec.name +
                                   "\": init_scale must be >= 0");
  }
  Status optimizer = ValidateOptimizerConfig(spec.optimizer);
  if (!optimizer.ok()) return optimizer.WithContext("embedding table \"" + spec.name + "\"");
  return Status::OK();
}

StatusOr<std::unique_ptr<EmbeddingTable>> EmbeddingTable::Create(const EmbeddingTableSpec& spec,
                                                                 int ps_index, int num_ps) {
  EmbeddingTableState state;
  state.slots.resize(SlotCount(spec.optimizer.kind));
  return Restore(spec, ps_index, num_ps, std::move(state));
}

StatusOr<std::unique_ptr<EmbeddingTable>> EmbeddingTable::Restore(const EmbeddingTableSpec& spec,
                                                                  int ps_index, int num_ps,
                                                                  EmbeddingTableState state) {
  COHORT_RETURN_IF_ERROR(ValidateEmbeddingTableSpec(spec));
  if (num_ps <= 0 || ps_index < 0 || ps_index >= num_ps) {
    return Status::InvalidArgument("embedding table \"" + spec.name + "\": server " +
                                   std::to_string(ps_index) + " of " + std::to_string(num_ps));
  }
  const std::string what = "embedding table \"" + spec.name + "\": ";
  const size_t rows = state.ids.size();
  const size_t elements = rows * static_cast<size_t>(spec.row_width);
  if (state.values.size() != elements) {
    return Status::InvalidArgument(what + "saved values do not match its " + std::to_string(rows) +
                                   " rows");
  }
  if (state.slots.size() != static_cast<size_t>(SlotCount(spec.optimizer.kind))) {
    return Status::InvalidArgument(what + "wrong number of optimizer slots");
  }
  for (const auto& slot : state.slots) {
    if (slot.size() != elements) return Status::InvalidArgument(what + "a slot has the wrong size");
  }
  const bool adam = spec.optimizer.kind == OptimizerKind::kAdam;
  if (state.row_steps.size() != (adam ? rows : 0)) {
    return Status::InvalidArgument(what + "wrong number of row step counters");
  }
  std::unique_ptr<EmbeddingTable> table(new EmbeddingTable(spec, ps_index, num_ps));
  for (size_t row = 0; row < rows; ++row) {
    if (!table->index_.emplace(state.ids[row], row).second) {
      return Status::InvalidArgument(what + "row id " + std::to_string(state.ids[row]) +
                                     " is saved twice");
    }
  }
  COHORT_RETURN_IF_ERROR(table->CheckOwned(state.ids.data(), rows));
  table->state_ = std::move(state);
  return table;
}

Status EmbeddingTable::CheckOwned(const int64_t* ids, size_t count) const {
  for (size_t i = 0; i < count; ++i) {
    int owner = EmbeddingRowOwner(ids[i], num_ps_);
    if (owner != ps_index_) {
      return Status::InvalidArgument("row id " + std::to_string(ids[i]) + " of embedding table \"" +
                                     spec_.name + "\" belongs to ps:" + std::to_string(owner) +
                                     ", not ps:" + std::to_string(ps_index_));
    }
  }
  return Status::OK();
}

size_t EmbeddingTable::RowIndex(int64_t id) {
  auto found = index_.find(id);
  if (found != index_.end()) return found->second;
  const size_t row = state_.ids.size();
  const int64_t width = spec_.row_width;
  state_.ids.push_back(id);
  for (int64_t column = 0; column < width; ++column) {
    state_.values.push_back(InitialRowValue(spec_.seed, id, column, spec_.init_scale));
  }
  for (int slot = 0; slot < static_cast<int>(state_.slots.size()); ++slot) {
    state_.slots[slot].resize(state_.slots[slot].size() + width,
                              SlotInitialValue(spec_.optimizer, slot));
  }
  if (spec_.optimizer.kind == OptimizerKind::kAdam) state_.row_steps.push_back(0);
  index_.emplace(id, row);
  return row;
}

Status EmbeddingTable::Read(const int64_t* ids, size_t count, float* out) {
  COHORT_RETURN_IF_ERROR(CheckOwned(ids, count));
  const size_t width = static_cast<size_t>(spec_.row_width);
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < count; ++i) {
    size_t row = RowIndex(ids[i]);
    std::memcpy(out + i * width, state_.values.data() + row * width, width * sizeof(float));
  }
  return Status::OK();
}

Status EmbeddingTable::ApplyGradient(const int64_t* ids, size_t count, const float* gradient) {
  COHORT_RETURN_IF_ERROR(CheckOwned(ids, count));
  const size_t width = static_cast<size_t>(spec_.row_width);
  // Sum the gradients of repeated ids first, keeping the order of first appearance.
  std::unordered_map<int64_t, size_t> position;
  std::vector<int64_t> unique_ids;
  std::vector<float> summed;
  for (size_t i = 0; i < count; ++i) {
    auto [it, inserted] = position.emplace(ids[i], unique_ids.size());
    if (inserted) {
      unique_ids.push_back(ids[i]);
      summed.insert(summed.end(), gradient + i * width, gradient + (i + 1) * width);
    } else {
      float* total = summed.data() + it->second * width;
      for (size_t column = 0; column < width; ++column)
        total[column] += gradient[i * width + column];
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<float*> slots(state_.slots.size());
  for (size_t i = 0; i < unique_ids.size(); ++i) {
    size_t row = RowIndex(unique_ids[i]);
    for (size_t slot = 0; slot < slots.size(); ++slot) {
      slots[slot] = state_.slots[slot].data() + row * width;
    }
    int64_t step = 0;
    if (!state_.row_steps.empty()) step = ++state_.row_steps[row];
    optimizer_.Apply(state_.values.data() + row * width, slots.data(), summed.data() + i * width,
                     width, step);
  }
  return Status::OK();
}

size_t EmbeddingTable::row_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_.ids.size();
}

EmbeddingTableState EmbeddingTable::Snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

}  // namespace cohort::ps
