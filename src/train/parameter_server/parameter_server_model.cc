#include "train/parameter_server/parameter_server_model.h"

#include <unordered_map>

namespace cohort::train {

void DeduplicateIds(std::span<const int64_t> ids, TableLookup* lookup) {
  std::unordered_map<int64_t, int64_t> position;
  position.reserve(ids.size());
  lookup->ids.clear();
  lookup->index.resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    auto [it, inserted] = position.try_emplace(ids[i], static_cast<int64_t>(lookup->ids.size()));
    if (inserted) lookup->ids.push_back(ids[i]);
    lookup->index[i] = it->second;
  }
}

}  // namespace cohort::train
