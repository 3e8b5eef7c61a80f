#include "serve/model_set.h"

namespace cohort::serve {

StatusOr<std::unique_ptr<ModelSet>> ModelSet::FromRegistry(std::filesystem::path registry_root,
                                                           ModelSetOptions options) {
  std::unique_ptr<ModelSet> set(new ModelSet(std::move(options)));
  set->registry_.emplace(std::move(registry_root));
  COHORT_RETURN_IF_ERROR(set->Refresh());
  return set;
}

StatusOr<std::unique_ptr<ModelSet>> ModelSet::FromPath(const std::string& name,
                                                       const std::string& path,
                                                       ModelSetOptions options) {
  COHORT_RETURN_IF_ERROR(exec::CheckModelName(name, "--model_name"));
  std::unique_ptr<ModelSet> set(new ModelSet(std::move(options)));
  StatusOr<std::shared_ptr<LoadedVersion>> loaded = set->Load(name, "1", path);
  if (!loaded.ok()) return loaded.status();
  Model& model = set->models_[name];
  model.default_version = "1";
  model.loaded["1"] = std::move(*loaded);
  return set;
}

StatusOr<std::shared_ptr<LoadedVersion>> ModelSet::Load(const std::string& model,
                                                        const std::string& version,
                                                        const std::string& path) const {
  StatusOr<std::unique_ptr<Servable>> servable = LoadServable(path);
  if (!servable.ok()) {
    return servable.status().WithContext("model " + model + " version " + version);
  }
  auto loaded = std::make_shared<LoadedVersion>();
  loaded->model = model;
  loaded->version = version;
  loaded->path = path;
  loaded->servable = std::move(*servable);
  DynamicBatcher::BatchObserver observer;
  if (options_.on_batch) {
    observer = [on_batch = options_.on_batch, model](int64_t instances) {
      on_batch(model, instances);
    };
  }
  loaded->batcher =
      std::make_unique<DynamicBatcher>(loaded->servable, options_.batching, std::move(observer));
  return loaded;
}

size_t ModelSet::LoadedCount() const {
  size_t count = 0;
  for (const auto& [name, model] : models_) count += model.loaded.size();
  return count;
}

Status ModelSet::Refresh() {
  if (!registry_) return Status::OK();
  std::lock_guard load(load_mutex_);
  StatusOr<std::vector<exec::ModelRecord>> records = registry_->ListModels();
  if (!records.ok()) return records.status();
  Status first_error;
  std::map<std::string, std::string> defaults;
  for (const exec::ModelRecord& record : *records) {
    defaults[record.name] = record.default_version;
    std::shared_ptr<LoadedVersion> current;
    {
      std::lock_guard lock(mutex_);
      Model& model = models_[record.name];
      if (model.default_version == record.default_version) continue;
      if (auto it = model.loaded.find(record.default_version); it != model.loaded.end()) {
        model.default_version = record.default_version;
        continue;
      }
    }
    if (record.default_version.empty()) continue;
    StatusOr<exec::VersionRecord> version =
        registry_->GetVersion(record.name, record.default_version);
    StatusOr<std::shared_ptr<LoadedVersion>> loaded =
        version.ok() ? Load(record.name, version->name, version->deployment_uri)
                     : StatusOr<std::shared_ptr<LoadedVersion>>(version.status());
    if (!loaded.ok()) {
      if (first_error.ok()) first_error = loaded.status();
      continue;
    }
    std::lock_guard lock(mutex_);
    Model& model = models_[record.name];
    model.loaded[record.default_version] = std::move(*loaded);
    // The swap: new requests get the new default; those holding the old one finish with it.
    model.default_version = record.default_version;
  }
  // Forget what the registry no longer has; requests that hold it finish first.
  std::vector<std::shared_ptr<LoadedVersion>> forgotten;
  std::map<std::string, std::vector<std::string>> check;
  {
    std::lock_guard lock(mutex_);
    for (auto it = models_.begin(); it != models_.end();) {
      if (!defaults.contains(it->first)) {
        for (auto& [name, version] : it->second.loaded) forgotten.push_back(version);
        it = models_.erase(it);
        continue;
      }
      for (const auto& [name, version] : it->second.loaded) {
        if (name != it->second.default_version) check[it->first].push_back(name);
      }
      ++it;
    }
  }
  for (const auto& [model_name, versions] : check) {
    for (const std::string& version : versions) {
      if (registry_->GetVersion(model_name, version).status().code() != Status::Code::kNotFound) {
        continue;
      }
      std::lock_guard lock(mutex_);
      auto model = models_.find(model_name);
      if (model == models_.end()) continue;
      auto loaded = model->second.loaded.find(version);
      if (loaded == model->second.loaded.end()) continue;
      forgotten.push_back(std::move(loaded->second));
      model->second.loaded.erase(loaded);
    }
  }
  forgotten.clear();  // outside the lock: a last reference drains its batcher here
  return first_error;
}

StatusOr<std::shared_ptr<LoadedVersion>> ModelSet::Find(const std::string& model_name,
                                                        const std::string& version) {
  std::string wanted = version;
  {
    std::lock_guard lock(mutex_);
    auto model = models_.find(model_name);
    if (model == models_.end()) {
      std::string names;
      for (const auto& [name, unused] : models_) names += (names.empty() ? "" : ", ") + name;
      return Status::NotFound("no model " + model_name + " is served (" +
                              (names.empty() ? "none is" : "served: " + names) + ")");
    }
    if (wanted.empty()) wanted = model->second.default_version;
    if (wanted.empty()) {
      return Status::NotFound("model " + model_name + " has no versions yet");
    }
    if (auto it = model->second.loaded.find(wanted); it != model->second.loaded.end()) {
      return it->second;
    }
    if (!registry_) {
      return Status::NotFound("model " + model_name + " has no version " + wanted +
                              " (a model served from --model_path has version 1 only)");
    }
  }
  std::lock_guard load(load_mutex_);
  {
    std::lock_guard lock(mutex_);
    auto model = models_.find(model_name);
    if (model != models_.end()) {
      if (auto it = model->second.loaded.find(wanted); it != model->second.loaded.end()) {
        return it->second;
      }
    }
    if (LoadedCount() >= kMaxLoadedVersions) {
      return Status::Unavailable("this server holds " + std::to_string(kMaxLoadedVersions) +
                                 " model versions already; ask for a default version");
    }
  }
  StatusOr<exec::VersionRecord> record = registry_->GetVersion(model_name, wanted);
  if (!record.ok()) return record.status();
  StatusOr<std::shared_ptr<LoadedVersion>> loaded =
      Load(model_name, record->name, record->deployment_uri);
  if (!loaded.ok()) return loaded.status();
  std::lock_guard lock(mutex_);
  auto model = models_.find(model_name);
  if (model == models_.end()) return Status::NotFound("model " + model_name + " was deleted");
  model->second.loaded[wanted] = *loaded;
  return *loaded;
}

std::vector<ModelSet::ModelState> ModelSet::Models() const {
  std::lock_guard lock(mutex_);
  std::vector<ModelState> states;
  for (const auto& [name, model] : models_) {
    ModelState state{name, model.default_version, {}};
    for (const auto& [version, unused] : model.loaded) state.loaded_versions.push_back(version);
    states.push_back(std::move(state));
  }
  return states;
}

StatusOr<std::vector<std::string>> ModelSet::RegistryVersions(const std::string& model) const {
  if (!registry_) return std::vector<std::string>{};
  StatusOr<std::vector<exec::VersionRecord>> versions = registry_->ListVersions(model);
  if (!versions.ok()) return versions.status();
  std::vector<std::string> names;
  for (const exec::VersionRecord& version : *versions) names.push_back(version.name);
  return names;
}

}  // namespace cohort::serve
