#include "cohort/collectives.h"

#include <torch/serialize.h>

#include <filesystem>
#include <optional>
#include <sstream>

#include "base/checksum.h"
#include "base/file.h"
#include "base/object_url.h"
#include "base/storage.h"
#include "collective/data_type.h"
#include "public_api/internal.h"
#include "train/gradient_buckets.h"
#include "train/model_manifest.h"
#include "train/worker_dirs.h"

namespace cohort {
namespace {

using internal::StrategyAccess;

Status TorchError(const std::string& what, const c10::Error& error) {
  return Status::Internal(what + ": " + error.what_without_backtrace());
}

// One line per parameter and buffer: "parameter fc.weight float32 [10, 64]".
std::vector<std::string> DescribeModule(torch::nn::Module& module) {
  std::vector<std::string> lines;
  auto describe = [&](const char* kind, const std::string& name, const torch::Tensor& tensor) {
    std::ostringstream line;
    line << kind << " \"" << name << "\" " << c10::toString(tensor.scalar_type()) << " "
         << tensor.sizes();
    lines.push_back(line.str());
  };
  for (const auto& item : module.named_parameters())
    describe("parameter", item.key(), item.value());
  for (const auto& item : module.named_buffers()) describe("buffer", item.key(), item.value());
  return lines;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The first line where `mine` and `chiefs` differ, or -1 when they are the same.
int64_t FirstDifference(const std::vector<std::string>& mine,
                        const std::vector<std::string>& chiefs) {
  const size_t common = std::min(mine.size(), chiefs.size());
  for (size_t i = 0; i < common; ++i) {
    if (mine[i] != chiefs[i]) return static_cast<int64_t>(i);
  }
  return mine.size() == chiefs.size() ? -1 : static_cast<int64_t>(common);
}

std::string Entry(const std::vector<std::string>& lines, int64_t index) {
  return index < static_cast<int64_t>(lines.size()) ? lines[index] : "nothing (the list ends)";
}

collective::DataType DataTypeOf(const torch::Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case torch::kFloat32:
      return collective::DataType::kFloat32;
    case torch::kFloat64:
      return collective::DataType::kFloat64;
    case torch::kInt32:
      return collective::DataType::kInt32;
    case torch::kInt64:
      return collective::DataType::kInt64;
    default:
      ThrowError(Status::InvalidArgument(
          std::string("collectives work on float32, float64, int32 and int64 tensors, not ") +
          c10::toString(tensor.scalar_type())));
  }
}

void CheckCollectiveTensor(const torch::Tensor& tensor, const char* what) {
  if (!tensor.defined()) ThrowError(Status::InvalidArgument(std::string(what) + ": no tensor"));
  if (!tensor.device().is_cpu() || !tensor.is_contiguous()) {
    ThrowError(Status::InvalidArgument(std::string(what) +
                                       " needs a contiguous CPU tensor (call .contiguous())"));
  }
  DataTypeOf(tensor);
}

collective::ReduceOp InternalOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return collective::ReduceOp::kSum;
    case ReduceOp::kAverage:
      return collective::ReduceOp::kAverage;
    case ReduceOp::kMin:
      return collective::ReduceOp::kMin;
    case ReduceOp::kMax:
      return collective::ReduceOp::kMax;
  }
  return collective::ReduceOp::kSum;
}

// Runs `serialize` on the chief, broadcasts the bytes, runs `load` on the others.
template <typename Save, typename Load>
void BroadcastArchive(MultiWorkerMirrored& strategy, const std::string& what, Save save,
                      Load load) {
  if (strategy.world_size() == 1) return;
  std::string bytes;
  if (strategy.is_chief()) {
    try {
      torch::serialize::OutputArchive archive;
      save(archive);
      std::ostringstream out;
      archive.save_to(out);
      bytes = out.str();
    } catch (const c10::Error& error) {
      ThrowError(TorchError("cannot serialize the chief's " + what, error));
    }
  }
  ThrowIfError(StrategyAccess::strategy(strategy).Broadcast(&bytes).WithContext(
      "broadcasting the chief's " + what));
  if (strategy.is_chief()) return;
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(bytes.data(), bytes.size());
    load(archive);
  } catch (const c10::Error& error) {
    ThrowError(TorchError("cannot load the chief's " + what, error));
  }
}

}  // namespace

Status CheckHasParameters(torch::nn::Module& module) {
  if (module.parameters().empty()) {
    return Status::InvalidArgument(
        "the module \"" + module.name() +
        "\" has no parameters, so there is nothing to train (are its layers registered with "
        "register_module, and its tensors with register_parameter?)");
  }
  return Status::OK();
}

Status CheckSameModel(MultiWorkerMirrored& strategy, torch::nn::Module& module) {
  COHORT_RETURN_IF_ERROR(CheckHasParameters(module));
  if (strategy.world_size() == 1) return Status::OK();
  train::Strategy& internal = StrategyAccess::strategy(strategy);
  const std::vector<std::string> mine = DescribeModule(module);
  std::string chiefs_text = strategy.is_chief() ? Join(mine) : std::string();
  COHORT_RETURN_IF_ERROR(internal.Broadcast(&chiefs_text)
                             .WithContext("comparing the model's parameters with the chief's"));
  const std::vector<std::string> chiefs = Split(chiefs_text);
  // Every worker learns where every other one differs: slot r holds 1 + worker r's first
  // difference, 0 when it has none.
  std::vector<double> differences(strategy.world_size(), 0);
  const int64_t difference = FirstDifference(mine, chiefs);
  differences[strategy.rank()] = static_cast<double>(difference + 1);
  COHORT_RETURN_IF_ERROR(internal.SumAcrossWorkers(&differences)
                             .WithContext("comparing the model's parameters with the chief's"));
  const std::string chief = TaskAtRank(strategy.cluster(), 0);
  if (difference >= 0) {
    return Status::InvalidArgument(
        "the model differs between workers: " + strategy.cluster().task().ToString() + " has " +
        Entry(mine, difference) + " where the chief (" + chief + ") has " +
        Entry(chiefs, difference) + " (entry " + std::to_string(difference + 1) +
        " of its parameters and buffers); every worker must build the same model");
  }
  std::string others;
  for (int rank = 0; rank < strategy.world_size(); ++rank) {
    if (differences[rank] == 0) continue;
    const int64_t index = static_cast<int64_t>(differences[rank]) - 1;
    others += (others.empty() ? "" : "; ") + TaskAtRank(strategy.cluster(), rank) +
              " differs from the chief's " + Entry(chiefs, index);
  }
  if (!others.empty()) {
    return Status::InvalidArgument("the model differs between workers: " + others + " (chief " +
                                   chief + "); every worker must build the same model");
  }
  return Status::OK();
}

Status CheckSameBatchCount(MultiWorkerMirrored& strategy, int64_t samples, int64_t per_worker_batch,
                           const std::string& what) {
  if (strategy.world_size() == 1) return Status::OK();
  std::vector<double> counts(strategy.world_size(), 0);
  counts[strategy.rank()] = static_cast<double>(samples);
  COHORT_RETURN_IF_ERROR(StrategyAccess::strategy(strategy).SumAcrossWorkers(&counts).WithContext(
      "comparing the number of batches of " + what + " across workers"));
  bool same = true;
  for (double count : counts) same = same && count == counts[0];
  if (same) return Status::OK();
  const int64_t global_batch = per_worker_batch * strategy.world_size();
  std::string listing;
  for (int rank = 0; rank < strategy.world_size(); ++rank) {
    const auto count = static_cast<int64_t>(counts[rank]);
    listing += (rank == 0 ? "" : ", ") + TaskAtRank(strategy.cluster(), rank) + " " +
               std::to_string(count / global_batch) + " batches (" + std::to_string(count) +
               " samples)";
  }
  return Status::InvalidArgument(
      what + " yields a different number of batches on each worker: " + listing +
      "; every worker must hold the same whole data set (Cohort gives each worker its share)");
}

struct GradientAllReduce::Impl {
  MultiWorkerMirrored* strategy = nullptr;
  std::vector<torch::Tensor> parameters;
  std::shared_ptr<train::GradientBuckets> buckets;  // only with several workers
  bool step_open = false;
};

GradientAllReduce::GradientAllReduce(MultiWorkerMirrored& strategy, torch::nn::Module& module,
                                     size_t bucket_bytes)
    : impl_(std::make_unique<Impl>()) {
  ThrowIfError(CheckHasParameters(module));
  impl_->strategy = &strategy;
  for (const torch::Tensor& parameter : module.parameters()) {
    if (parameter.requires_grad()) impl_->parameters.push_back(parameter);
  }
  if (impl_->parameters.empty()) {
    ThrowError(Status::InvalidArgument("the module \"" + module.name() +
                                       "\" has no parameter that requires a gradient"));
  }
  if (strategy.world_size() > 1) {
    impl_->buckets = std::make_shared<train::GradientBuckets>(
        impl_->parameters, &StrategyAccess::strategy(strategy), bucket_bytes);
  }
}

GradientAllReduce::~GradientAllReduce() {
  // A step that failed or was abandoned may have sums in flight into the buckets.
  if (impl_->step_open && impl_->buckets) {
    StrategyAccess::KeepUntilCollectivesEnd(*impl_->strategy, impl_->buckets);
  }
}

void GradientAllReduce::BeginStep() {
  impl_->step_open = true;
  if (impl_->buckets) {
    impl_->buckets->BeginStep();
  } else {
    for (torch::Tensor& parameter : impl_->parameters) parameter.mutable_grad().reset();
  }
}

void GradientAllReduce::FinishStep(std::chrono::milliseconds timeout) {
  if (!impl_->step_open) {
    ThrowError(Status::FailedPrecondition("GradientAllReduce::FinishStep without BeginStep"));
  }
  if (impl_->buckets) ThrowIfError(impl_->buckets->FinishStep(timeout));
  impl_->step_open = false;
}

size_t GradientAllReduce::num_buckets() const {
  return impl_->buckets ? impl_->buckets->num_buckets() : 1;
}

void BroadcastFromChief(MultiWorkerMirrored& strategy, torch::nn::Module& module) {
  ThrowIfError(CheckSameModel(strategy, module));
  BroadcastArchive(
      strategy, "parameters and buffers",
      [&](torch::serialize::OutputArchive& archive) { module.save(archive); },
      [&](torch::serialize::InputArchive& archive) { module.load(archive); });
}

void BroadcastFromChief(MultiWorkerMirrored& strategy, torch::optim::Optimizer& optimizer) {
  BroadcastArchive(
      strategy, "optimizer state",
      [&](torch::serialize::OutputArchive& archive) { optimizer.save(archive); },
      [&](torch::serialize::InputArchive& archive) { optimizer.load(archive); });
}

void Barrier(MultiWorkerMirrored& strategy) {
  ThrowIfError(StrategyAccess::strategy(strategy).Barrier());
}

void AllReduce(MultiWorkerMirrored& strategy, torch::Tensor& tensor, ReduceOp op) {
  CheckCollectiveTensor(tensor, "AllReduce");
  collective::Communicator* communicator = StrategyAccess::impl(strategy).communicator;
  if (communicator == nullptr) return;
  ThrowIfError(communicator->AllReduce(tensor.data_ptr(), tensor.numel(), DataTypeOf(tensor),
                                       InternalOp(op)));
}

void Broadcast(MultiWorkerMirrored& strategy, torch::Tensor& tensor, int root) {
  CheckCollectiveTensor(tensor, "Broadcast");
  if (root < 0 || root >= strategy.world_size()) {
    ThrowError(Status::InvalidArgument("Broadcast: root " + std::to_string(root) +
                                       " is not a rank of " +
                                       std::to_string(strategy.world_size()) + " workers"));
  }
  collective::Communicator* communicator = StrategyAccess::impl(strategy).communicator;
  if (communicator == nullptr) return;
  ThrowIfError(
      communicator->Broadcast(tensor.data_ptr(), tensor.numel(), DataTypeOf(tensor), root));
}

torch::Tensor AllGather(MultiWorkerMirrored& strategy, const torch::Tensor& tensor) {
  CheckCollectiveTensor(tensor, "AllGather");
  collective::Communicator* communicator = StrategyAccess::impl(strategy).communicator;
  if (communicator == nullptr) return tensor.unsqueeze(0).clone();
  std::vector<int64_t> shape = {strategy.world_size()};
  for (int64_t size : tensor.sizes()) shape.push_back(size);
  torch::Tensor output = torch::empty(shape, tensor.options());
  ThrowIfError(communicator->AllGather(tensor.data_ptr(), output.data_ptr(), tensor.numel(),
                                       DataTypeOf(tensor)));
  return output;
}

// Where SaveModule records the SHA-256 of the module at `path`, as sha256sum writes it.
static std::string ChecksumFileOf(const std::string& path) { return path + ".sha256"; }

// `path`'s directory and file name, for a local path or an s3:// / gs:// URL alike.
static std::pair<std::string, std::string> SplitPath(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  if (slash == 0) return {"/", path.substr(1)};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

void SaveModule(torch::nn::Module& module, const std::string& path) {
  std::string bytes;
  try {
    torch::serialize::OutputArchive archive;
    module.save(archive);
    std::ostringstream out;
    archive.save_to(out);
    bytes = out.str();
  } catch (const c10::Error& error) {
    ThrowError(TorchError("cannot serialize the module for " + path, error));
  }
  const auto [parent, name] = SplitPath(path);
  if (!parent.empty() && !IsStorageUrl(path)) ThrowIfError(train::MakeDirectories(parent));
  // The old checksum goes first and the new one last, so that a crash between leaves a module
  // without one (loaded unverified) rather than one whose checksum belongs to other bytes. In a
  // bucket (base/storage.h) each is one whole object.
  const std::string checksum = ChecksumFileOf(path);
  ThrowIfError(RemoveStorageFile(checksum));
  ThrowIfError(WriteStorageFileAtomically(path, bytes));
  ThrowIfError(WriteStorageFileAtomically(checksum, Sha256Hex(bytes) + "  " + name + "\n"));
}

void LoadModule(torch::nn::Module& module, const std::string& path) {
  StatusOr<bool> exists = StorageFileExists(path);
  ThrowIfError(exists.status());
  if (!*exists) ThrowError(Status::NotFound("no saved module at " + path));
  // The module is verified before a byte is decoded: against the checksum SaveModule wrote
  // beside it, or for the weights of a saved model, against its manifest's.
  const auto [parent, name] = SplitPath(path);
  const std::string dir = parent.empty() ? "." : parent;
  std::optional<std::string> verified;
  const std::string checksum = ChecksumFileOf(path);
  StatusOr<bool> has_checksum = StorageFileExists(checksum);
  ThrowIfError(has_checksum.status());
  StatusOr<bool> has_manifest = StorageFileExists(JoinStoragePath(dir, train::kManifestFile));
  ThrowIfError(has_manifest.status());
  if (*has_checksum) {
    StatusOr<std::string> line = ReadStorageFile(checksum, 4096);
    ThrowIfError(line.status());
    const std::string expected = line->substr(0, line->find(' '));
    if (!IsSha256Hex(expected)) {
      ThrowError(
          Status::InvalidArgument(checksum + ": not a SHA-256 checksum line (\"HEX  NAME\")"));
    }
    StatusOr<std::string> bytes = ReadStorageFile(path);
    ThrowIfError(bytes.status());
    ThrowIfError(VerifyChecksum(path, *bytes, FileChecksum{name, bytes->size(), expected}));
    verified = std::move(*bytes);
  } else if (*has_manifest) {
    StatusOr<train::ModelManifest> manifest = train::ReadManifest(dir);
    ThrowIfError(manifest.status());
    if (manifest->weights == name) {
      StatusOr<std::string> bytes = train::ReadVerifiedWeights(dir, *manifest);
      ThrowIfError(bytes.status());
      verified = std::move(*bytes);
    }
  }
  // An object is read into memory in any case: libtorch reads only local files.
  if (!verified && IsStorageUrl(path)) {
    StatusOr<std::string> bytes = ReadStorageFile(path);
    ThrowIfError(bytes.status());
    verified = std::move(*bytes);
  }
  try {
    torch::serialize::InputArchive archive;
    if (verified) {
      std::istringstream in(*verified);
      archive.load_from(in);
    } else {
      archive.load_from(path);
    }
    module.load(archive);
  } catch (const c10::Error& error) {
    ThrowError(TorchError("cannot load the module from " + path, error));
  }
}

}  // namespace cohort
