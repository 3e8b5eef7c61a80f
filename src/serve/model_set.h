// ModelSet: the model versions a prediction server answers for, and their swap.
//
// Two sources, as TensorFlow Serving has a model config or one --model_base_path:
// - the model registry of `cohort ai-platform models|versions` (exec/model_registry.h): every
//   model's default version is loaded at start and whenever Refresh() finds the default
//   changed (`versions set-default`, or a first version created); another version is loaded
//   when a request names it (/versions/V), up to kMaxLoadedVersions in all;
// - one model at a path (`--model_path`, served as NAME version "1").
//
// A loaded version is one Servable behind its own DynamicBatcher. Find() hands out a shared
// reference: a request holds it until answered, so a version swapped out (a new default) or
// deleted from the registry still answers every request it was given, and is unloaded (its
// batcher drained, its threads joined) when the last of them is answered. Nothing is dropped.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "exec/model_registry.h"
#include "serve/batcher.h"
#include "serve/servable.h"

namespace cohort::serve {

inline constexpr size_t kMaxLoadedVersions = 16;

struct LoadedVersion {
  std::string model;
  std::string version;
  std::string path;  // what was loaded
  std::shared_ptr<Servable> servable;
  std::unique_ptr<DynamicBatcher> batcher;  // destroyed first: drains before the servable goes
  ~LoadedVersion() { batcher.reset(); }
};

struct ModelSetOptions {
  BatcherOptions batching;
  // Called after each forward pass with the model's name and the batch's size (metrics).
  std::function<void(const std::string& model, int64_t instances)> on_batch;
};

class ModelSet {
 public:
  // The registry at `registry_root` ($COHORT_HOME/models): loads every model's default version.
  // A version that cannot be loaded fails the start, naming model, version and why.
  static StatusOr<std::unique_ptr<ModelSet>> FromRegistry(std::filesystem::path registry_root,
                                                          ModelSetOptions options);
  // One model, `name`, version "1", from `path` (a saved model directory or TorchScript file).
  static StatusOr<std::unique_ptr<ModelSet>> FromPath(const std::string& name,
                                                      const std::string& path,
                                                      ModelSetOptions options);

  // The version to answer with: `version`, or the model's default when empty. NotFound for a
  // model or version that does not exist; Unavailable when kMaxLoadedVersions are loaded.
  StatusOr<std::shared_ptr<LoadedVersion>> Find(const std::string& model,
                                                const std::string& version);

  // Re-reads the registry: loads new default versions and swaps them in, forgets models and
  // versions deleted from it. A version that fails to load keeps the old one served and is
  // returned as the error (the next Refresh tries again). Nothing to do for a path's model.
  Status Refresh();

  struct ModelState {
    std::string name;
    std::string default_version;
    std::vector<std::string> loaded_versions;
  };
  std::vector<ModelState> Models() const;

  // The model's versions as the registry has them ({} for a path's model: only "1").
  StatusOr<std::vector<std::string>> RegistryVersions(const std::string& model) const;

 private:
  struct Model {
    std::string default_version;
    std::map<std::string, std::shared_ptr<LoadedVersion>> loaded;
  };
  explicit ModelSet(ModelSetOptions options) : options_(std::move(options)) {}
  StatusOr<std::shared_ptr<LoadedVersion>> Load(const std::string& model,
                                                const std::string& version,
                                                const std::string& path) const;
  size_t LoadedCount() const;  // mutex_ held

  const ModelSetOptions options_;
  std::optional<exec::ModelRegistry> registry_;
  std::mutex load_mutex_;  // one load at a time (loading is slow; answers go on meanwhile)
  mutable std::mutex mutex_;
  std::map<std::string, Model> models_;
};

}  // namespace cohort::serve
