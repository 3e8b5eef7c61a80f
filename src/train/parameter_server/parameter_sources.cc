#include "train/parameter_server/parameter_sources.h"

#include <fstream>
#include <sstream>

#include "base/file.h"
#include "base/storage.h"
#include "ps/placement.h"

namespace cohort::train {

Status PullDenseVariables(const ParameterServerModel& model, ParameterSource& source,
                          std::vector<std::vector<float>>* dense) {
  const std::vector<ps::DenseVariable> variables = model.DenseVariables();
  dense->resize(variables.size());
  std::vector<std::pair<std::string, float*>> outputs;
  for (size_t i = 0; i < variables.size(); ++i) {
    (*dense)[i].resize(static_cast<size_t>(variables[i].shape.rows * variables[i].shape.row_width));
    outputs.emplace_back(variables[i].shape.name, (*dense)[i].data());
  }
  return source.PullDense(outputs);
}

Status PullLookupRows(ParameterSource& source, BatchLookups& lookups) {
  for (TableLookup& lookup : lookups.tables) {
    lookup.rows.resize(lookup.ids.size() * static_cast<size_t>(lookup.row_width));
    COHORT_RETURN_IF_ERROR(
        source.PullRows(lookup.table, lookup.ids.data(), lookup.ids.size(), lookup.rows.data()));
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<CheckpointParameters>> CheckpointParameters::Load(
    const std::string& directory, const std::string& manifest_file) {
  const std::string path = directory + "/" + manifest_file;
  StatusOr<std::string> text = ReadStorageFile(path);
  if (!text.ok()) return text.status();
  auto manifest = ps::DecodeManifest(*text);
  if (!manifest.ok()) return Status::InvalidArgument(path + ": " + manifest.status().message());
  auto stores = ps::LoadCheckpoint(directory, *manifest);
  if (!stores.ok()) return stores.status();
  return std::unique_ptr<CheckpointParameters>(
      new CheckpointParameters(std::move(*manifest), std::move(*stores)));
}

Status CheckpointParameters::PullDense(const std::vector<std::pair<std::string, float*>>& outputs) {
  for (const auto& [name, out] : outputs) {
    bool found = false;
    for (const auto& store : stores_) {
      auto slice = store->Dense(name);
      if (!slice.ok()) continue;  // this server holds no shard of it
      const ps::DenseSliceSpec& spec = (*slice)->spec();
      COHORT_RETURN_IF_ERROR(
          (*slice)->Read(spec.first_row, spec.row_count, out + spec.first_row * spec.row_width));
      found = true;
    }
    if (!found) {
      return Status::NotFound("checkpoint at step " + std::to_string(manifest_.global_step) +
                              " has no variable \"" + name + "\"");
    }
  }
  return Status::OK();
}

Status CheckpointParameters::PullRows(const std::string& table, const int64_t* ids, size_t count,
                                      float* out) {
  std::vector<std::shared_ptr<ps::EmbeddingTable>> tables;
  for (const auto& store : stores_) {
    auto held = store->Table(table);
    if (!held.ok()) {
      return Status::NotFound("checkpoint at step " + std::to_string(manifest_.global_step) + ": " +
                              held.status().message());
    }
    tables.push_back(*held);
  }
  const int64_t width = tables[0]->spec().row_width;
  for (size_t i = 0; i < count; ++i) {
    const int owner = ps::EmbeddingRowOwner(ids[i], manifest_.num_ps);
    COHORT_RETURN_IF_ERROR(tables[owner]->Read(ids + i, 1, out + i * width));
  }
  return Status::OK();
}

}  // namespace cohort::train
