#include "train/local_sgd.h"

#include <torch/torch.h>

#include <string>

namespace cohort::train {

Status CheckLocalSgdOptions(const LocalSgdOptions& options) {
  if (options.sync_every_steps < 1) {
    return Status::InvalidArgument(
        "local SGD's steps between synchronizations must be at least 1, "
        "not " +
        std::to_string(options.sync_every_steps));
  }
  if (!(options.outer_learning_rate > 0 && options.outer_learning_rate <= 10)) {
    return Status::InvalidArgument("local SGD's outer learning rate must be in (0, 10], not " +
                                   std::to_string(options.outer_learning_rate));
  }
  if (!(options.outer_momentum >= 0 && options.outer_momentum < 1)) {
    return Status::InvalidArgument("local SGD's outer momentum must be in [0, 1), not " +
                                   std::to_string(options.outer_momentum));
  }
  return Status::OK();
}

LocalSgdAverager::LocalSgdAverager(torch::nn::Module* module, Strategy* strategy,
                                   LocalSgdOptions options)
    : module_(module), strategy_(strategy), options_(options) {
  parameters_ = module_->parameters();
  for (const torch::Tensor& buffer : module_->buffers()) {
    if (buffer.scalar_type() == torch::kFloat32) buffers_.push_back(buffer);
  }
  Reset();
}

void LocalSgdAverager::Reset() {
  torch::NoGradGuard no_grad;
  anchor_.clear();
  momentum_.clear();
  for (const torch::Tensor& parameter : parameters_) {
    anchor_.push_back(parameter.detach().clone());
    momentum_.push_back(torch::zeros_like(parameter));
  }
}

size_t LocalSgdAverager::floats_per_synchronization() const {
  size_t floats = 1;  // the skipped steps
  for (const torch::Tensor& parameter : parameters_) floats += parameter.numel();
  for (const torch::Tensor& buffer : buffers_) floats += buffer.numel();
  return floats;
}

Status LocalSgdAverager::Synchronize(std::chrono::milliseconds timeout, double local_skipped_steps,
                                     double* total_skipped_steps) {
  torch::NoGradGuard no_grad;
  // One buffer: each parameter's outer gradient, each buffer's value, the skipped steps.
  torch::Tensor flat =
      torch::empty({static_cast<int64_t>(floats_per_synchronization())}, torch::kFloat32);
  int64_t offset = 0;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const int64_t count = parameters_[i].numel();
    torch::Tensor delta = flat.narrow(0, offset, count).view_as(anchor_[i]);
    torch::sub_out(delta, anchor_[i], parameters_[i]);
    offset += count;
  }
  for (const torch::Tensor& buffer : buffers_) {
    flat.narrow(0, offset, buffer.numel()).copy_(buffer.reshape({-1}));
    offset += buffer.numel();
  }
  flat.data_ptr<float>()[offset] = static_cast<float>(local_skipped_steps);
  auto pending = strategy_->StartAverage(flat.data_ptr<float>(), static_cast<size_t>(flat.numel()));
  if (!pending.ok()) return pending.status();
  COHORT_RETURN_IF_ERROR((*pending)->Wait(timeout));

  const float learning_rate = static_cast<float>(options_.outer_learning_rate);
  const float momentum = static_cast<float>(options_.outer_momentum);
  offset = 0;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const int64_t count = parameters_[i].numel();
    torch::Tensor delta = flat.narrow(0, offset, count).view_as(anchor_[i]);
    offset += count;
    // PyTorch's SGD with Nesterov momentum: v = m v + d; step = d + m v.
    momentum_[i].mul_(momentum).add_(delta);
    torch::Tensor step = delta + momentum * momentum_[i];
    anchor_[i].sub_(learning_rate * step);
    parameters_[i].copy_(anchor_[i]);
  }
  for (torch::Tensor& buffer : buffers_) {
    buffer.copy_(flat.narrow(0, offset, buffer.numel()).view_as(buffer));
    offset += buffer.numel();
  }
  *total_skipped_steps =
      static_cast<double>(flat.data_ptr<float>()[offset]) * strategy_->num_workers();
  return Status::OK();
}

}  // namespace cohort::train
