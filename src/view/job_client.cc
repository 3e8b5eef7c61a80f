#include "view/job_client.h"

namespace cohort::view {

std::string ResourceName(const exec::JobStateStore& store, const exec::JobKey& key) {
  StatusOr<job::Job> spec = store.ReadSpec(key);
  const job::JobKind& kind =
      spec.ok() ? *spec->job_kind : *job::KindRegistry::Default().kinds().front();
  return kind.ResourceName();
}

std::vector<const job::JobKind*> KindsOf(const job::JobKind* kind) {
  if (kind != nullptr) return {kind};
  return job::KindRegistry::Default().kinds();
}

Status AmbiguousJobName(const exec::JobKey& key, const std::vector<const job::JobKind*>& kinds,
                        const std::string& command) {
  // "a TFJob and a PyTorchJob"; "cohort delete tfjob x, or cohort delete pytorchjob x".
  std::string which, choices;
  for (size_t i = 0; i < kinds.size(); ++i) {
    const bool last = i + 1 == kinds.size();
    which += (i == 0 ? "" : (last ? " and " : ", ")) + std::string("a ") + kinds[i]->name();
    choices += (i == 0 ? "" : (last ? ", or " : ", ")) + std::string("cohort ") + command + " " +
               job::LowerCase(kinds[i]->name()) + " " + key.name;
  }
  return Status::InvalidArgument("job " + key.ToString() + " is both " + which +
                                 "; name the kind: " + choices);
}

Status JobNotFound(const exec::JobKey& key, const job::JobKind* kind) {
  return Status::NotFound((kind == nullptr ? std::string("job") : kind->name()) + " " +
                          key.ToString() + " not found");
}

}  // namespace cohort::view
