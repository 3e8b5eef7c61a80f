#include "train/fused_adam.h"

#include <torch/utils.h>

#include <cmath>

namespace cohort::train {
namespace {

// One Adam update of n elements. Plain loops over restrict pointers: the compiler vectorises
// them, and every array is read and written exactly once.
void AdamUpdate(float* __restrict param, const float* __restrict grad, float* __restrict exp_avg,
                float* __restrict exp_avg_sq, int64_t n, float beta1, float beta2, float eps,
                float weight_decay, float step_size, float inverse_sqrt_bias_correction2) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i] + weight_decay * param[i];
    const float m = beta1 * exp_avg[i] + (1.0f - beta1) * g;
    const float v = beta2 * exp_avg_sq[i] + (1.0f - beta2) * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    param[i] -= step_size * m / (std::sqrt(v) * inverse_sqrt_bias_correction2 + eps);
  }
}

bool Fusable(const torch::Tensor& tensor) {
  return tensor.scalar_type() == torch::kFloat32 && tensor.is_contiguous() &&
         tensor.device().is_cpu();
}

}  // namespace

torch::Tensor FusedAdam::step(LossClosure closure) {
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    if (options.amsgrad()) return torch::optim::Adam::step(std::move(closure));
    for (const auto& parameter : group.params()) {
      const auto& grad = parameter.grad();
      if (grad.defined() && !(Fusable(parameter) && Fusable(grad))) {
        return torch::optim::Adam::step(std::move(closure));
      }
    }
  }

  torch::NoGradGuard no_grad;
  torch::Tensor loss = {};
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    const double beta1 = std::get<0>(options.betas()), beta2 = std::get<1>(options.betas());
    for (auto& parameter : group.params()) {
      if (!parameter.grad().defined()) continue;
      // The key and the state type are Adam's, so that Adam::save and Adam::load apply.
      const std::string key = c10::guts::to_string(parameter.unsafeGetTensorImpl());
      auto found = state_.find(key);
      if (found == state_.end()) {
        auto state = std::make_unique<torch::optim::AdamParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(parameter, torch::MemoryFormat::Contiguous));
        state->exp_avg_sq(torch::zeros_like(parameter, torch::MemoryFormat::Contiguous));
        found = state_.emplace(key, std::move(state)).first;
      }
      auto& state = static_cast<torch::optim::AdamParamState&>(*found->second);
      state.step(state.step() + 1);
      const double bias_correction1 = 1 - std::pow(beta1, state.step());
      const double bias_correction2 = 1 - std::pow(beta2, state.step());
      AdamUpdate(parameter.data_ptr<float>(), parameter.grad().data_ptr<float>(),
                 state.exp_avg().data_ptr<float>(), state.exp_avg_sq().data_ptr<float>(),
                 parameter.numel(), static_cast<float>(beta1), static_cast<float>(beta2),
                 static_cast<float>(options.eps()), static_cast<float>(options.weight_decay()),
                 static_cast<float>(options.lr() / bias_correction1),
                 static_cast<float>(1 / std::sqrt(bias_correction2)));
    }
  }
  return loss;
}

}  // namespace cohort::train
