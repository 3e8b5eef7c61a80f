#include "ps/shard_store.h"

namespace cohort::ps {

Status ShardStore::CreateDense(const DenseSliceSpec& spec, std::vector<float> initial) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = dense_.find(spec.variable);
    if (found != dense_.end()) {
      if (found->second->spec() == spec) return Status::OK();
      const DenseSliceSpec& held = found->second->spec();
      return Status::FailedPrecondition(
          "variable \"" + spec.variable + "\" already exists on " + Self() + " as rows [" +
          std::to_string(held.first_row) + ", " + std::to_string(held.first_row + held.row_count) +
          ") of width " + std::to_string(held.row_width) + " with " +
          OptimizerName(held.optimizer.kind) + "; this create asks for rows [" +
          std::to_string(spec.first_row) + ", " + std::to_string(spec.first_row + spec.row_count) +
          ") of width " + std::to_string(spec.row_width) + " with " +
          OptimizerName(spec.optimizer.kind) + " (or other optimizer settings)");
    }
  }
  // Built outside the lock: a large slice takes a while to allocate.
  auto slice = DenseSlice::Create(spec, std::move(initial));
  if (!slice.ok()) return slice.status();
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = dense_.emplace(spec.variable, std::move(*slice));
  if (!inserted && !(it->second->spec() == spec)) {
    return Status::FailedPrecondition("variable \"" + spec.variable + "\" was just created on " +
                                      Self() + " with another spec");
  }
  return Status::OK();
}

Status ShardStore::CreateTable(const EmbeddingTableSpec& spec) {
  auto table = EmbeddingTable::Create(spec, ps_index_, num_ps_);
  if (!table.ok()) return table.status();
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = tables_.emplace(spec.name, std::move(*table));
  if (!inserted && !(it->second->spec() == spec)) {
    const EmbeddingTableSpec& held = it->second->spec();
    return Status::FailedPrecondition(
        "embedding table \"" + spec.name + "\" already exists on " + Self() + " with width " +
        std::to_string(held.row_width) + ", seed " + std::to_string(held.seed) + " and " +
        OptimizerName(held.optimizer.kind) + "; this create asks for width " +
        std::to_string(spec.row_width) + ", seed " + std::to_string(spec.seed) + " and " +
        OptimizerName(spec.optimizer.kind) + " (or other settings)");
  }
  return Status::OK();
}

StatusOr<std::shared_ptr<DenseSlice>> ShardStore::Dense(const std::string& variable) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = dense_.find(variable);
  if (found == dense_.end()) {
    return Status::NotFound("variable \"" + variable + "\" is not held by " + Self() +
                            " (never created there, or the server restarted)");
  }
  return found->second;
}

StatusOr<std::shared_ptr<EmbeddingTable>> ShardStore::Table(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = tables_.find(name);
  if (found == tables_.end()) {
    return Status::NotFound("embedding table \"" + name + "\" is not held by " + Self() +
                            " (never created there, or the server restarted)");
  }
  return found->second;
}

std::vector<std::shared_ptr<DenseSlice>> ShardStore::DenseSlices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<DenseSlice>> result;
  for (const auto& [name, slice] : dense_) result.push_back(slice);
  return result;
}

std::vector<std::shared_ptr<EmbeddingTable>> ShardStore::Tables() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<EmbeddingTable>> result;
  for (const auto& [name, table] : tables_) result.push_back(table);
  return result;
}

void ShardStore::Replace(std::vector<std::shared_ptr<DenseSlice>> slices,
                         std::vector<std::shared_ptr<EmbeddingTable>> tables) {
  std::lock_guard<std::mutex> lock(mutex_);
  dense_.clear();
  tables_.clear();
  for (auto& slice : slices) dense_[slice->spec().variable] = std::move(slice);
  for (auto& table : tables) tables_[table->spec().name] = std::move(table);
}

}  // namespace cohort::ps
