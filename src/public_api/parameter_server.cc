#include "cohort/parameter_server.h"

#include <signal.h>
#include <torch/autograd.h>
#include <torch/nn/modules/embedding.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/serialize/output-archive.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "base/file.h"
#include "base/object_url.h"
#include "base/storage.h"
#include "base/time.h"
#include "net/auth.h"
#include "net/deadline.h"
#include "ps/parameter_server.h"
#include "public_api/internal.h"
#include "train/model_manifest.h"
#include "train/parameter_server/checkpoint_evaluator.h"
#include "train/parameter_server/model_evaluation.h"
#include "train/parameter_server/parameter_server_trainer.h"
#include "train/parameter_server/parameter_sources.h"
#include "train/run_identity.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;

// What the callbacks ask of a parameter-server run (callbacks.h; parameter_server.h says how each
// is done here).
struct CallbackSettings {
  std::string backup_dir;
  int64_t backup_every_steps = 0;
  std::string checkpoint_dir;
  std::string log_dir;
  int64_t update_every_steps = 0;
  bool progress = false;
};

CallbackSettings ReadCallbacks(const std::vector<Callback>& callbacks) {
  CallbackSettings settings;
  for (const Callback& callback : callbacks) {
    const Callback::Impl& impl = internal::CallbackAccess::impl(callback);
    if (!impl.backup_dir.empty()) {
      settings.backup_dir = impl.backup_dir;
      settings.backup_every_steps = impl.backup_every_steps;
    }
    if (!impl.checkpoint_dir.empty()) {
      if (impl.save_best_only) {
        ThrowError(Status::InvalidArgument(
            "ModelCheckpoint(save_best_only) is not supported with ParameterServer: no "
            "validation runs at epoch ends, so there is no best epoch (save every epoch instead)"));
      }
      settings.checkpoint_dir = impl.checkpoint_dir;
    }
    if (!impl.log_dir.empty()) {
      settings.log_dir = impl.log_dir;
      settings.update_every_steps = impl.update_every_steps;
    }
    settings.progress = settings.progress || impl.progress;
  }
  return settings;
}

// The servers' update for the user's torch::optim optimizer, or InvalidArgument naming what has
// no server-side equivalent.
StatusOr<ps::OptimizerConfig> ServerUpdateOf(torch::optim::Optimizer& optimizer) {
  const auto& groups = optimizer.param_groups();
  if (groups.empty()) return Status::InvalidArgument("the optimizer has no parameter groups");
  const auto same_settings = [&](auto* first) {
    using Options = std::remove_pointer_t<decltype(first)>;
    for (const auto& group : groups) {
      if (!(static_cast<const Options&>(group.options()) == *first)) return false;
    }
    return true;
  };
  const auto unsupported = [](const std::string& what) {
    return Status::InvalidArgument("ParameterServer: the servers cannot apply " + what);
  };
  ps::OptimizerConfig config;
  if (dynamic_cast<torch::optim::SGD*>(&optimizer) != nullptr) {
    auto& options = static_cast<const torch::optim::SGDOptions&>(groups[0].options());
    if (!same_settings(&options)) return unsupported("parameter groups with different settings");
    if (options.momentum() != 0 || options.nesterov()) return unsupported("SGD with momentum");
    if (options.weight_decay() != 0) return unsupported("SGD with weight_decay");
    config.kind = ps::OptimizerKind::kSgd;
    config.learning_rate = static_cast<float>(options.lr());
  } else if (dynamic_cast<torch::optim::Adagrad*>(&optimizer) != nullptr) {
    auto& options = static_cast<const torch::optim::AdagradOptions&>(groups[0].options());
    if (!same_settings(&options)) return unsupported("parameter groups with different settings");
    if (options.lr_decay() != 0) return unsupported("Adagrad with lr_decay");
    if (options.weight_decay() != 0) return unsupported("Adagrad with weight_decay");
    config.kind = ps::OptimizerKind::kAdagrad;
    config.learning_rate = static_cast<float>(options.lr());
    config.epsilon = static_cast<float>(options.eps());
    config.initial_accumulator_value = static_cast<float>(options.initial_accumulator_value());
  } else if (dynamic_cast<torch::optim::Adam*>(&optimizer) != nullptr) {
    auto& options = static_cast<const torch::optim::AdamOptions&>(groups[0].options());
    if (!same_settings(&options)) return unsupported("parameter groups with different settings");
    if (options.amsgrad()) return unsupported("Adam with amsgrad");
    if (options.weight_decay() != 0) return unsupported("Adam with weight_decay");
    config.kind = ps::OptimizerKind::kAdam;
    config.learning_rate = static_cast<float>(options.lr());
    config.beta1 = static_cast<float>(std::get<0>(options.betas()));
    config.beta2 = static_cast<float>(std::get<1>(options.betas()));
    config.epsilon = static_cast<float>(options.eps());
  } else {
    return unsupported(
        "this optimizer: they apply SGD (without momentum), Adagrad and Adam (torch::optim)");
  }
  COHORT_RETURN_IF_ERROR(ps::ValidateOptimizerConfig(config));
  return config;
}

static_assert(static_cast<int>(ServerOptimizer::Kind::kSgd) ==
              static_cast<int>(ps::OptimizerKind::kSgd));
static_assert(static_cast<int>(ServerOptimizer::Kind::kAdagrad) ==
              static_cast<int>(ps::OptimizerKind::kAdagrad));
static_assert(static_cast<int>(ServerOptimizer::Kind::kAdam) ==
              static_cast<int>(ps::OptimizerKind::kAdam));
static_assert(static_cast<int>(ServerOptimizer::Kind::kFtrl) ==
              static_cast<int>(ps::OptimizerKind::kFtrl));

// ParameterServerOptions::optimizer_for as the servers' configurations, each checked.
StatusOr<std::map<std::string, ps::OptimizerConfig>> OptimizerOverrides(
    const std::map<std::string, ServerOptimizer>& optimizers) {
  std::map<std::string, ps::OptimizerConfig> configs;
  for (const auto& [prefix, optimizer] : optimizers) {
    ps::OptimizerConfig config;
    config.kind = static_cast<ps::OptimizerKind>(optimizer.kind);
    config.learning_rate = static_cast<float>(optimizer.learning_rate);
    config.epsilon = static_cast<float>(optimizer.epsilon);
    config.initial_accumulator_value = static_cast<float>(optimizer.initial_accumulator_value);
    config.beta1 = static_cast<float>(optimizer.beta1);
    config.beta2 = static_cast<float>(optimizer.beta2);
    config.learning_rate_power = static_cast<float>(optimizer.learning_rate_power);
    config.l1 = static_cast<float>(optimizer.l1);
    config.l2 = static_cast<float>(optimizer.l2);
    if (Status valid = ps::ValidateOptimizerConfig(config); !valid.ok()) {
      return Status::InvalidArgument("ParameterServerOptions::optimizer_for[\"" + prefix +
                                     "\"]: " + valid.message());
    }
    configs[prefix] = config;
  }
  return configs;
}

// One batch of the user's source, or why it could not be had (ExampleSource::Encode cannot fail,
// so the error travels with the batch to the model, which reports it).
class ModuleBatch : public train::EncodedBatch {
 public:
  int64_t size() const override { return batch.size(); }
  cohort::Batch batch;
  Status error;
};

// The user's source as the parameter-server trainer's examples.
class ModuleExamples : public train::ExampleSource {
 public:
  ModuleExamples(const BatchSource& source, std::string what)
      : source_(source), what_(std::move(what)) {}
  int64_t size() const override { return source_.size(); }
  std::unique_ptr<train::EncodedBatch> NewBatch() const override {
    return std::make_unique<ModuleBatch>();
  }
  void Encode(std::span<const int64_t> indices, train::EncodedBatch* encoded) const override {
    auto* batch = static_cast<ModuleBatch*>(encoded);
    batch->error = Status::OK();
    try {
      batch->batch = source_.Get(std::vector<int64_t>(indices.begin(), indices.end()));
      if (!batch->batch.inputs.defined() || !batch->batch.targets.defined()) {
        batch->error =
            Status::InvalidArgument(what_ + ": Get returned a batch without inputs or targets");
      } else if (batch->batch.size() != static_cast<int64_t>(indices.size())) {
        batch->error = Status::InvalidArgument(
            what_ + ": Get was asked for " + std::to_string(indices.size()) +
            " samples and returned " + std::to_string(batch->batch.size()));
      }
    } catch (const c10::Error& error) {
      batch->error = Status::InvalidArgument(what_ + ": " + error.what_without_backtrace());
    } catch (const std::exception& error) {
      batch->error = Status::InvalidArgument(what_ + ": " + error.what());
    }
  }

 private:
  const BatchSource& source_;
  std::string what_;
};

// An embedding of the module, a table on the servers.
struct Table {
  std::string name;  // its weight's parameter name
  torch::nn::EmbeddingImpl* embedding = nullptr;
  torch::Tensor weight;
};

// Sets the embeddings' gradients sparse (only the rows looked up) while it lives.
class SparseGradients {
 public:
  explicit SparseGradients(const std::vector<Table>& tables) : tables_(tables) {
    for (const Table& table : tables_) {
      was_sparse_.push_back(table.embedding->options.sparse());
      table.embedding->options.sparse(true);
    }
  }
  ~SparseGradients() {
    for (size_t i = 0; i < tables_.size(); ++i)
      tables_[i].embedding->options.sparse(was_sparse_[i]);
  }

 private:
  const std::vector<Table>& tables_;
  std::vector<bool> was_sparse_;
};

// The user's module as a parameter-server model (parameter_server_model.h): every embedding a
// table, every other parameter a dense variable; a step loads the pulled values into the module,
// runs the user's forward and loss, and reads the gradients back.
class ModuleModel : public train::ParameterServerModel {
 public:
  static StatusOr<std::unique_ptr<ModuleModel>> Create(const Model& model, LossFunction loss,
                                                       std::vector<Metric> metrics,
                                                       ps::OptimizerConfig optimizer,
                                                       const FitOptions& options,
                                                       const ParameterServerOptions& ps_options) {
    auto overrides = OptimizerOverrides(ps_options.optimizer_for);
    if (!overrides.ok()) return overrides.status();
    auto result = std::unique_ptr<ModuleModel>(
        new ModuleModel(model, std::move(loss), std::move(metrics), optimizer, options,
                        ps_options.embedding_init_scale));
    result->overrides_ = std::move(*overrides);
    result->binary_auc_ = ps_options.binary_auc;
    COHORT_RETURN_IF_ERROR(result->FindVariables());
    for (const auto& [prefix, config] : result->overrides_) {
      bool matches = false;
      for (const ps::VariableShape& shape : result->shapes_) {
        matches = matches || shape.name.rfind(prefix, 0) == 0;
      }
      for (const Table& table : result->tables_) {
        matches = matches || table.name.rfind(prefix, 0) == 0;
      }
      if (!matches) {
        return Status::InvalidArgument("ParameterServerOptions::optimizer_for[\"" + prefix +
                                       "\"] matches no parameter of the module");
      }
    }
    return result;
  }

  train::ModelDescription Describe() const override {
    train::ModelDescription description;
    description.name = name_;
    description.optimizer = ps::OptimizerName(optimizer_.kind);
    description.learning_rate = optimizer_.learning_rate;
    description.seed = seed_;
    return description;
  }

  std::vector<ps::DenseVariable> DenseVariables() const override {
    torch::NoGradGuard no_grad;
    std::vector<ps::DenseVariable> variables;
    for (size_t i = 0; i < dense_.size(); ++i) {
      torch::Tensor flat = dense_[i].detach().to(torch::kFloat32).contiguous().view({-1});
      variables.push_back(
          {shapes_[i], OptimizerFor(shapes_[i].name),
           std::vector<float>(flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel())});
    }
    return variables;
  }

  std::vector<ps::EmbeddingTableSpec> Tables() const override {
    std::vector<ps::EmbeddingTableSpec> specs;
    for (size_t i = 0; i < tables_.size(); ++i) {
      specs.push_back({tables_[i].name, tables_[i].weight.size(1), seed_ + i, init_scale_,
                       OptimizerFor(tables_[i].name)});
    }
    return specs;
  }

  // The rows each embedding looks up for `batch`: the user's forward and a backward to the
  // embeddings only, whose sparse gradients list exactly the ids used (libtorch has no forward
  // hooks). Buffers (batch norm's statistics) are put back as they were.
  train::BatchLookups Lookups(const train::EncodedBatch& encoded) const override {
    train::BatchLookups lookups;
    for (const Table& table : tables_) {
      lookups.tables.push_back({table.name, table.weight.size(1), {}, {}, {}, {}});
    }
    auto& batch = const_cast<ModuleBatch&>(static_cast<const ModuleBatch&>(encoded));
    if (tables_.empty() || !batch.error.ok()) return lookups;
    std::vector<torch::Tensor> buffers;
    try {
      {
        torch::NoGradGuard no_grad;
        for (const torch::Tensor& buffer : module_->buffers()) buffers.push_back(buffer.clone());
      }
      torch::AutoGradMode grad(true);
      SparseGradients sparse(tables_);
      torch::Tensor output = forward_(batch.batch.inputs);
      std::vector<torch::Tensor> weights;
      for (const Table& table : tables_) weights.push_back(table.weight);
      if (output.requires_grad()) {
        std::vector<torch::Tensor> gradients =
            torch::autograd::grad({output}, weights, {torch::ones_like(output)},
                                  /*retain_graph=*/false, /*create_graph=*/false,
                                  /*allow_unused=*/true);
        for (size_t i = 0; i < tables_.size(); ++i) {
          if (!gradients[i].defined()) continue;
          torch::Tensor ids = gradients[i].coalesce().indices().view({-1}).contiguous();
          lookups.tables[i].ids.assign(ids.data_ptr<int64_t>(),
                                       ids.data_ptr<int64_t>() + ids.numel());
        }
      }
      torch::NoGradGuard no_grad;
      size_t i = 0;
      for (torch::Tensor buffer : module_->buffers()) buffer.copy_(buffers[i++]);
    } catch (const c10::Error& error) {
      batch.error =
          Status::InvalidArgument(std::string("finding the embedding rows a batch uses: ") +
                                  error.what_without_backtrace());
    }
    return lookups;
  }

  StatusOr<train::GradientStepResult> ComputeGradients(
      const train::EncodedBatch& encoded, const std::vector<std::vector<float>>& dense,
      train::BatchLookups& lookups,
      std::vector<std::vector<float>>* dense_gradients) const override {
    const auto& batch = static_cast<const ModuleBatch&>(encoded);
    COHORT_RETURN_IF_ERROR(batch.error);
    train::GradientStepResult result;
    try {
      module_->train();
      COHORT_RETURN_IF_ERROR(LoadValues(dense, lookups));
      for (torch::Tensor& parameter : module_->parameters()) parameter.mutable_grad().reset();
      SparseGradients sparse(tables_);
      torch::Tensor output = forward_(batch.batch.inputs);
      torch::Tensor loss = loss_(output, batch.batch.targets);
      if (!loss.defined() || loss.numel() != 1) {
        return Status::InvalidArgument(
            "the loss function must return a scalar tensor (the batch's mean loss)");
      }
      loss.backward();
      torch::NoGradGuard no_grad;
      result.loss = loss.item<double>();
      const double samples = static_cast<double>(batch.batch.size());
      for (const Metric& metric : metrics_) {
        result.metrics.emplace_back(metric.name,
                                    metric.sum(output.detach(), batch.batch.targets) / samples);
      }
      dense_gradients->resize(dense_.size());
      for (size_t i = 0; i < dense_.size(); ++i) {
        std::vector<float>& out = (*dense_gradients)[i];
        out.assign(static_cast<size_t>(dense_[i].numel()), 0.0f);
        const torch::Tensor& gradient = dense_[i].grad();
        if (!gradient.defined()) continue;
        torch::Tensor flat = gradient.to(torch::kFloat32).contiguous().view({-1});
        std::copy_n(flat.data_ptr<float>(), flat.numel(), out.data());
      }
      for (size_t t = 0; t < tables_.size(); ++t) {
        COHORT_RETURN_IF_ERROR(RowGradients(tables_[t], &lookups.tables[t]));
      }
    } catch (const c10::Error& error) {
      return Status::InvalidArgument(std::string("the training step failed: ") +
                                     error.what_without_backtrace());
    }
    return result;
  }

  StatusOr<train::BatchEvaluation> Evaluate(const train::EncodedBatch& encoded,
                                            const std::vector<std::vector<float>>& dense,
                                            const train::BatchLookups& lookups) const override {
    const auto& batch = static_cast<const ModuleBatch&>(encoded);
    COHORT_RETURN_IF_ERROR(batch.error);
    train::BatchEvaluation result;
    try {
      module_->eval();
      COHORT_RETURN_IF_ERROR(LoadValues(dense, lookups));
      torch::NoGradGuard no_grad;
      torch::Tensor output = forward_(batch.batch.inputs);
      const double samples = static_cast<double>(batch.batch.size());
      result.loss_sum = loss_(output, batch.batch.targets).item<double>() * samples;
      for (const Metric& metric : metrics_) {
        result.metric_sums.emplace_back(metric.name, metric.sum(output, batch.batch.targets));
      }
      if (binary_auc_) COHORT_RETURN_IF_ERROR(ScoresAndLabels(output, batch.batch, &result));
    } catch (const c10::Error& error) {
      return Status::InvalidArgument(std::string("evaluating a batch failed: ") +
                                     error.what_without_backtrace());
    }
    return result;
  }

  // Copies every value of `source` into the module: the dense variables and every row of every
  // embedding.
  Status LoadAll(train::ParameterSource& source) const {
    std::vector<std::vector<float>> dense;
    COHORT_RETURN_IF_ERROR(train::PullDenseVariables(*this, source, &dense));
    train::BatchLookups lookups;
    constexpr int64_t kRowsPerPull = 16384;
    torch::NoGradGuard no_grad;
    for (const Table& table : tables_) {
      const int64_t width = table.weight.size(1);
      for (int64_t first = 0; first < table.weight.size(0); first += kRowsPerPull) {
        const int64_t count = std::min(kRowsPerPull, table.weight.size(0) - first);
        std::vector<int64_t> ids(static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) ids[i] = first + i;
        std::vector<float> rows(static_cast<size_t>(count * width));
        COHORT_RETURN_IF_ERROR(source.PullRows(table.name, ids.data(), ids.size(), rows.data()));
        table.weight.slice(0, first, first + count)
            .copy_(torch::from_blob(rows.data(), {count, width}, torch::kFloat32));
      }
    }
    return LoadValues(dense, lookups);
  }

  torch::nn::Module& module() const { return *module_; }

 private:
  ModuleModel(const Model& model, LossFunction loss, std::vector<Metric> metrics,
              ps::OptimizerConfig optimizer, const FitOptions& options, float init_scale)
      : module_(model.module),
        forward_(model.forward),
        loss_(std::move(loss)),
        metrics_(std::move(metrics)),
        optimizer_(optimizer),
        name_(options.model_name),
        seed_(options.seed),
        init_scale_(init_scale) {}

  Status FindVariables() {
    COHORT_RETURN_IF_ERROR(CheckHasParameters(*module_));
    for (const auto& item : module_->named_modules("", /*include_self=*/true)) {
      auto* embedding = dynamic_cast<torch::nn::EmbeddingImpl*>(item.value().get());
      if (embedding == nullptr) continue;
      const std::string name = item.key().empty() ? "weight" : item.key() + ".weight";
      if (embedding->options.max_norm().has_value()) {
        return Status::InvalidArgument(
            "the embedding " + name +
            " has max_norm, which renormalises the whole table in place on every lookup; a "
            "table on parameter servers cannot be");
      }
      if (embedding->options.scale_grad_by_freq()) {
        return Status::InvalidArgument("the embedding " + name +
                                       " has scale_grad_by_freq, which parameter servers do not "
                                       "apply");
      }
      tables_.push_back({name, embedding, embedding->weight});
    }
    for (const auto& item : module_->named_parameters()) {
      const bool is_table = std::any_of(tables_.begin(), tables_.end(), [&](const Table& table) {
        return table.weight.is_same(item.value());
      });
      if (is_table) continue;
      const torch::Tensor& value = item.value();
      if (!value.is_floating_point()) {
        return Status::InvalidArgument("the parameter " + item.key() +
                                       " is not floating point: parameter servers hold float32");
      }
      ps::VariableShape shape;
      shape.name = item.key();
      shape.rows = value.dim() == 0 ? 1 : value.size(0);
      shape.row_width = shape.rows == 0 ? 0 : value.numel() / shape.rows;
      if (value.numel() == 0) {
        return Status::InvalidArgument("the parameter " + item.key() + " is empty");
      }
      shapes_.push_back(shape);
      dense_.push_back(value);
    }
    return Status::OK();
  }

  // The optimizer of the parameter `name`: the longest optimizer_for key it begins with, else
  // Fit's.
  ps::OptimizerConfig OptimizerFor(const std::string& name) const {
    const ps::OptimizerConfig* chosen = &optimizer_;
    size_t longest = 0;
    for (const auto& [prefix, config] : overrides_) {
      if (name.rfind(prefix, 0) == 0 && prefix.size() >= longest) {
        chosen = &config;
        longest = prefix.size();
      }
    }
    return *chosen;
  }

  // A binary classifier's probabilities and labels, for the evaluation's AUC.
  static Status ScoresAndLabels(const torch::Tensor& output, const cohort::Batch& batch,
                                train::BatchEvaluation* result) {
    if (output.numel() != batch.size()) {
      return Status::InvalidArgument(
          "binary_auc: the module's output has " + std::to_string(output.numel()) + " values for " +
          std::to_string(batch.size()) +
          " samples; a binary classifier gives one logit per sample ([N] or [N, 1])");
    }
    torch::Tensor scores = torch::sigmoid(output.reshape({-1})).to(torch::kFloat64).contiguous();
    torch::Tensor labels = batch.targets.reshape({-1}).to(torch::kFloat64).contiguous();
    const double* score = scores.data_ptr<double>();
    const double* label = labels.data_ptr<double>();
    for (int64_t i = 0; i < scores.numel(); ++i) {
      if (label[i] != 0 && label[i] != 1) {
        return Status::InvalidArgument("binary_auc: a target is " + std::to_string(label[i]) +
                                       ", not 0 or 1");
      }
      result->scores.push_back(score[i]);
      result->labels.push_back(static_cast<uint8_t>(label[i]));
    }
    return Status::OK();
  }

  // The pulled values into the module's parameters and embedding rows.
  Status LoadValues(const std::vector<std::vector<float>>& dense,
                    const train::BatchLookups& lookups) const {
    if (dense.size() != dense_.size()) {
      return Status::Internal("got " + std::to_string(dense.size()) + " dense values for " +
                              std::to_string(dense_.size()) + " parameters");
    }
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < dense_.size(); ++i) {
      auto& values = const_cast<std::vector<float>&>(dense[i]);
      dense_[i].copy_(
          torch::from_blob(values.data(), {static_cast<int64_t>(values.size())}, torch::kFloat32)
              .view(dense_[i].sizes()));
    }
    for (size_t t = 0; t < lookups.tables.size() && t < tables_.size(); ++t) {
      const train::TableLookup& lookup = lookups.tables[t];
      if (lookup.ids.empty()) continue;
      const auto count = static_cast<int64_t>(lookup.ids.size());
      auto& ids = const_cast<std::vector<int64_t>&>(lookup.ids);
      auto& rows = const_cast<std::vector<float>&>(lookup.rows);
      tables_[t].weight.index_copy_(
          0, torch::from_blob(ids.data(), {count}, torch::kInt64),
          torch::from_blob(rows.data(), {count, lookup.row_width}, torch::kFloat32));
    }
    return Status::OK();
  }

  // The embedding's sparse gradient as one row per pulled id, in the lookup's order.
  static Status RowGradients(const Table& table, train::TableLookup* lookup) {
    lookup->gradient.assign(lookup->ids.size() * static_cast<size_t>(lookup->row_width), 0.0f);
    const torch::Tensor& gradient = table.weight.grad();
    if (!gradient.defined()) return Status::OK();
    torch::Tensor summed = gradient.coalesce();
    torch::Tensor ids = summed.indices().view({-1}).contiguous();
    torch::Tensor rows = summed.values().to(torch::kFloat32).contiguous();
    std::unordered_map<int64_t, size_t> position;
    for (size_t i = 0; i < lookup->ids.size(); ++i) position[lookup->ids[i]] = i;
    const int64_t* id = ids.data_ptr<int64_t>();
    const float* row = rows.data_ptr<float>();
    for (int64_t i = 0; i < ids.numel(); ++i) {
      auto found = position.find(id[i]);
      if (found == position.end()) {
        return Status::Internal("the step looked up row " + std::to_string(id[i]) + " of " +
                                table.name + ", which the first pass had not found");
      }
      std::copy_n(row + i * lookup->row_width, lookup->row_width,
                  lookup->gradient.data() + found->second * lookup->row_width);
    }
    return Status::OK();
  }

  std::shared_ptr<torch::nn::Module> module_;
  std::function<torch::Tensor(const torch::Tensor&)> forward_;
  LossFunction loss_;
  std::vector<Metric> metrics_;
  ps::OptimizerConfig optimizer_;
  std::string name_;
  uint64_t seed_;
  float init_scale_;
  std::map<std::string, ps::OptimizerConfig> overrides_;
  bool binary_auc_ = false;
  std::vector<Table> tables_;
  std::vector<ps::VariableShape> shapes_;
  std::vector<torch::Tensor> dense_;
};

// The module's weights as torch::save writes them, atomically into `path`.
Status SaveWeights(torch::nn::Module& module, const std::string& path) {
  std::ostringstream bytes;
  try {
    torch::serialize::OutputArchive archive;
    module.save(archive);
    archive.save_to(bytes);
  } catch (const c10::Error& error) {
    return Status::Internal("cannot serialize the model for " + path + ": " +
                            error.what_without_backtrace());
  }
  if (IsStorageUrl(path)) return WriteStorageFileAtomically(path, bytes.str());  // one object
  std::error_code error;
  fs::create_directories(fs::path(path).parent_path(), error);
  if (error) {
    return Status::IOError("cannot create " + fs::path(path).parent_path().string() + ": " +
                           error.message());
  }
  return WriteFileAtomically(path, bytes.str());
}

std::string JobName() {
  const char* job_name = std::getenv("COHORT_JOB_NAME");
  return job_name != nullptr ? job_name : "";
}

// The checkpoints of the servers live in <backup_dir>/ps.
std::string ServerCheckpointDir(const CallbackSettings& settings) {
  return settings.backup_dir.empty() ? "" : (fs::path(settings.backup_dir) / "ps").string();
}

// A ps task: serves its shard until the chief ends the job.
FitResult Serve(ParameterServer& strategy, const cluster::TfConfig& config,
                const CallbackSettings& settings) {
  const ParameterServerOptions& options = strategy.options();
  ps::ParameterServerOptions server_options;
  server_options.job_name = JobName();
  server_options.cluster = config.cluster;
  server_options.ps_index = config.task.index;
  server_options.secret = net::JobSecret::FromEnvironment();
  server_options.sync = options.sync;
  server_options.sync_workers = cluster::WorkerTasks(config.cluster);
  server_options.sync_timeout = options.sync_timeout;
  server_options.checkpoint_dir = ServerCheckpointDir(settings);
  if (!settings.progress) server_options.log = [](const std::string&) {};
  auto server = ValueOrThrow(ps::ParameterServer::Start(std::move(server_options)));
  if (settings.progress) {
    std::printf("%s serving %s training on port %d%s\n", server->name().c_str(),
                options.sync ? "sync" : "async", static_cast<int>(server->port()),
                server->restored_step() >= 0 ? ("; restored the checkpoint of global step " +
                                                std::to_string(server->restored_step()))
                                                   .c_str()
                                             : "");
    std::fflush(stdout);
  }
  const Status finished = server->Wait(net::Deadline::After(options.serve_timeout));
  if (finished.ok()) std::this_thread::sleep_for(options.linger);
  server->Stop();
  if (!finished.ok()) {
    ThrowError(Status::DeadlineExceeded(
        server->name() + ": the chief did not end the job within " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::seconds>(options.serve_timeout).count()) +
        " s (ParameterServerOptions::serve_timeout)"));
  }
  FitResult result;
  result.served = true;
  return result;
}

// Set by SIGTERM while an evaluator follows the checkpoints: the job has ended.
std::atomic<bool> evaluator_stop_requested{false};

FitResult FromEvaluation(const train::Evaluation& evaluation) {
  FitResult result;
  for (const auto& [name, value] : evaluation.metrics) {
    if (name == "loss") {
      result.loss = value;
    } else {
      result.metrics[name] = value;
    }
  }
  return result;
}

// An evaluator task: follows the chief's checkpoints.
FitResult EvaluateCheckpoints(ParameterServer& strategy, const ModuleModel& model,
                              const BatchSource& validation, const FitOptions& options,
                              const CallbackSettings& settings) {
  if (settings.backup_dir.empty()) {
    ThrowError(Status::InvalidArgument(
        "an evaluator task follows the chief's checkpoints: give Fit a BackupAndRestore callback "
        "(the same directory on every task)"));
  }
  struct sigaction action = {}, previous = {};
  action.sa_handler = [](int) { evaluator_stop_requested.store(true); };
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, &previous);
  train::CheckpointEvaluatorOptions evaluator;
  evaluator.checkpoint_dir = ServerCheckpointDir(settings);
  evaluator.tensorboard_dir = settings.log_dir;
  evaluator.idle_timeout = strategy.options().evaluator_timeout;
  evaluator.eval_batch = options.eval_batch;
  evaluator.run_identity = train::RunIdentity(net::JobSecret::FromEnvironment());
  evaluator.stop_requested = [] { return evaluator_stop_requested.load(); };
  evaluator.print = [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  const ModuleExamples examples(validation, "the validation data");
  auto evaluation = train::RunCheckpointEvaluator(evaluator, model, examples);
  sigaction(SIGTERM, &previous, nullptr);
  return FromEvaluation(ValueOrThrow(std::move(evaluation)));
}

}  // namespace

ParameterServer::ParameterServer(const Cluster& cluster, const ParameterServerOptions& options)
    : cluster_(cluster), options_(options) {
  if (cluster.NumTasks("ps") == 0) {
    ThrowError(Status::InvalidArgument(
        "ParameterServer needs ps tasks, and TF_CONFIG's cluster has none (" +
        std::string(cluster.tf_config().empty() ? "no TF_CONFIG: a process alone"
                                                : "run the job with PS replicas") +
        "; without ps tasks train with MultiWorkerMirrored, strategy.h)"));
  }
  if (num_workers() == 0) {
    ThrowError(Status::InvalidArgument(
        "ParameterServer: TF_CONFIG's cluster has no chief, master or worker task to train"));
  }
  if (options.max_staleness < -1) {
    ThrowError(
        Status::InvalidArgument("ParameterServerOptions::max_staleness must be -1 "
                                "(unbounded) or at least 0, got " +
                                std::to_string(options.max_staleness)));
  }
  if (options.sync && options.request_timeout <= options.sync_timeout) {
    ThrowError(Status::InvalidArgument(
        "ParameterServerOptions: request_timeout must exceed sync_timeout in sync mode (a ps "
        "answers a push when its step completes)"));
  }
  if (!(options.embedding_init_scale >= 0)) {
    ThrowError(
        Status::InvalidArgument("ParameterServerOptions::embedding_init_scale must be at least 0"));
  }
  if (options.linger.count() < 0) {
    ThrowError(Status::InvalidArgument("ParameterServerOptions::linger must be at least 0"));
  }
  for (auto [name, value] : {std::pair{"sync_timeout", options.sync_timeout},
                             {"startup_timeout", options.startup_timeout},
                             {"retry_timeout", options.retry_timeout},
                             {"request_timeout", options.request_timeout},
                             {"serve_timeout", options.serve_timeout},
                             {"evaluator_timeout", options.evaluator_timeout}}) {
    if (value.count() <= 0) {
      ThrowError(Status::InvalidArgument(std::string("ParameterServerOptions::") + name +
                                         " must be positive"));
    }
  }
}

ParameterServer::~ParameterServer() = default;

int ParameterServer::num_workers() const {
  return cluster_.NumTasks("chief") + cluster_.NumTasks("master") + cluster_.NumTasks("worker");
}

std::string ParameterServer::Describe() const {
  return cluster_.task().ToString() + " of a parameter-server job (" + std::to_string(num_ps()) +
         " ps, " + std::to_string(num_workers()) + " training tasks; " +
         (options_.sync ? "sync" : "async") + ")";
}

FitResult Fit(ParameterServer& strategy, const Model& model, torch::optim::Optimizer& optimizer,
              const BatchSource& train, const BatchSource& validation, const LossFunction& loss,
              const FitOptions& options) {
  CheckFitArguments(model, loss, options);
  if (options.epochs < 1) ThrowError(Status::InvalidArgument("epochs must be at least 1"));
  if (options.steps_per_epoch != 0) {
    ThrowError(Status::InvalidArgument(
        "FitOptions::steps_per_epoch must be 0 with ParameterServer: an epoch is one pass over "
        "the training data"));
  }
  const CallbackSettings settings = ReadCallbacks(options.callbacks);
  const cluster::TfConfig config =
      ValueOrThrow(cluster::ParseTfConfig(strategy.cluster().tf_config()));
  if (strategy.is_ps()) return Serve(strategy, config, settings);

  const ParameterServerOptions& ps_options = strategy.options();
  if (ps_options.set_compute_threads) SetComputeThreadsOnce(ps_options.compute_threads, config);
  const ps::OptimizerConfig server_optimizer = ValueOrThrow(ServerUpdateOf(optimizer));
  const std::unique_ptr<ModuleModel> module_model = ValueOrThrow(
      ModuleModel::Create(model, loss, options.metrics, server_optimizer, options, ps_options));
  if (strategy.is_evaluator()) {
    return EvaluateCheckpoints(strategy, *module_model, validation, options, settings);
  }

  const auto print = [progress = settings.progress](const std::string& line) {
    if (!progress) return;
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  train::ParameterServerTrainingOptions training;
  training.config = config;
  training.job_name = JobName();
  training.secret = net::JobSecret::FromEnvironment();
  training.example_noun = "samples";
  training.epochs = options.epochs;
  training.per_worker_batch = options.per_worker_batch;
  training.sync = ps_options.sync;
  training.max_staleness = ps_options.max_staleness;
  training.checkpoint_dir = ServerCheckpointDir(settings);
  training.tensorboard_dir = settings.log_dir;
  training.eval_batch = options.eval_batch;
  training.retry_timeout = ps_options.retry_timeout;
  training.request_timeout = ps_options.request_timeout;
  training.model_ready_timeout = ps_options.startup_timeout;
  training.log_every_steps = settings.update_every_steps > 0 ? settings.update_every_steps : 100;
  training.print = print;
  const int64_t num_workers = strategy.num_workers();
  const int64_t total_steps = options.epochs * train.size() / options.per_worker_batch /
                              (ps_options.sync ? num_workers : 1);
  if (!settings.backup_dir.empty()) {
    // Every save_every_steps global steps, else every epoch end.
    training.checkpoint_every_steps = settings.backup_every_steps > 0
                                          ? settings.backup_every_steps
                                          : std::max<int64_t>(1, total_steps / options.epochs);
  }
  if (!settings.checkpoint_dir.empty()) {
    training.on_epoch_end = [&](train::ParameterSource& values, int epoch) {
      COHORT_RETURN_IF_ERROR(module_model->LoadAll(values));
      return SaveWeights(
          module_model->module(),
          (fs::path(settings.checkpoint_dir) / ("ckpt-" + std::to_string(epoch) + ".pt")).string());
    };
  }
  training.before_shutdown = [&](train::ParameterSource& values,
                                 const train::Evaluation& evaluation) -> Status {
    COHORT_RETURN_IF_ERROR(module_model->LoadAll(values));
    if (options.saved_model_dir.empty()) return Status::OK();
    COHORT_RETURN_IF_ERROR(
        SaveWeights(module_model->module(), options.saved_model_dir + "/weights.pt"));
    train::ModelManifest manifest;
    manifest.model = options.model_name;
    for (const auto& [name, value] : evaluation.metrics) manifest.metrics["val_" + name] = value;
    manifest.training.epochs = options.epochs;
    manifest.training.steps_per_epoch = total_steps / options.epochs;
    manifest.training.per_worker_batch = options.per_worker_batch;
    manifest.training.num_workers = static_cast<int>(num_workers);
    manifest.training.global_batch =
        ps_options.sync ? options.per_worker_batch * num_workers : options.per_worker_batch;
    manifest.training.global_steps = total_steps;
    manifest.training.optimizer = ps::OptimizerName(server_optimizer.kind);
    manifest.training.learning_rate = server_optimizer.learning_rate;
    manifest.training.seed = options.seed;
    manifest.created_at = FormatTime(std::chrono::system_clock::now());
    return train::WriteManifest(options.saved_model_dir, manifest);
  };
  print(strategy.Describe() + "; " + std::to_string(options.epochs) + " epochs of " +
        std::to_string(train.size()) + " samples, batch " +
        std::to_string(options.per_worker_batch) + " per step, optimizer " +
        ps::OptimizerName(server_optimizer.kind) + " on the servers");

  const ModuleExamples train_examples(train, "the training data");
  const ModuleExamples validation_examples(validation, "the validation data");
  const train::ParameterServerTrainingResult trained =
      ValueOrThrow(train::TrainWithParameterServers(training, *module_model, train_examples,
                                                    validation_examples));
  FitResult result = trained.is_chief ? FromEvaluation(trained.evaluation) : FitResult{};
  result.global_steps = trained.global_step;
  result.already_complete = trained.local_steps == 0;
  return result;
}

}  // namespace cohort
