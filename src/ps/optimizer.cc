#include "ps/optimizer.h"

#include <cmath>

namespace cohort::ps {

std::string OptimizerName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return "sgd";
    case OptimizerKind::kAdagrad:
      return "adagrad";
    case OptimizerKind::kAdam:
      return "adam";
    case OptimizerKind::kFtrl:
      return "ftrl";
  }
  return "optimizer " + std::to_string(static_cast<int>(kind));
}

StatusOr<OptimizerKind> ParseOptimizerKind(const std::string& name) {
  for (OptimizerKind kind :
       {OptimizerKind::kSgd, OptimizerKind::kAdagrad, OptimizerKind::kAdam, OptimizerKind::kFtrl}) {
    if (OptimizerName(kind) == name) return kind;
  }
  return Status::InvalidArgument("unknown optimizer \"" + name +
                                 "\"; expected sgd, adagrad, adam or ftrl");
}

Status ValidateOptimizerConfig(const OptimizerConfig& config) {
  const std::string name = OptimizerName(config.kind);
  if (static_cast<uint8_t>(config.kind) > static_cast<uint8_t>(OptimizerKind::kFtrl)) {
    return Status::InvalidArgument("unknown " + name);
  }
  if (!(config.learning_rate > 0) || !std::isfinite(config.learning_rate)) {
    return Status::InvalidArgument(name + ": learning_rate must be positive, got " +
                                   std::to_string(config.learning_rate));
  }
  if (config.kind == OptimizerKind::kAdagrad || config.kind == OptimizerKind::kAdam) {
    if (!(config.epsilon >= 0)) return Status::InvalidArgument(name + ": epsilon must be >= 0");
  }
  if (config.kind == OptimizerKind::kAdagrad || config.kind == OptimizerKind::kFtrl) {
    if (!(config.initial_accumulator_value >= 0)) {
      return Status::InvalidArgument(name + ": initial_accumulator_value must be >= 0");
    }
  }
  if (config.kind == OptimizerKind::kAdagrad && config.initial_accumulator_value == 0 &&
      config.epsilon == 0) {
    return Status::InvalidArgument(
        "adagrad: initial_accumulator_value and epsilon are both 0, so the first update divides "
        "by zero");
  }
  if (config.kind == OptimizerKind::kAdam) {
    if (!(config.beta1 >= 0 && config.beta1 < 1) || !(config.beta2 >= 0 && config.beta2 < 1)) {
      return Status::InvalidArgument("adam: beta1 and beta2 must be in [0, 1)");
    }
  }
  if (config.kind == OptimizerKind::kFtrl) {
    if (!(config.learning_rate_power <= 0)) {
      return Status::InvalidArgument("ftrl: learning_rate_power must be <= 0, got " +
                                     std::to_string(config.learning_rate_power));
    }
    if (!(config.l1 >= 0) || !(config.l2 >= 0)) {
      return Status::InvalidArgument("ftrl: l1 and l2 must be >= 0");
    }
  }
  return Status::OK();
}

int SlotCount(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return 0;
    case OptimizerKind::kAdagrad:
      return 1;
    case OptimizerKind::kAdam:
    case OptimizerKind::kFtrl:
      return 2;
  }
  return 0;
}

float SlotInitialValue(const OptimizerConfig& config, int slot) {
  if (config.kind == OptimizerKind::kAdagrad) return config.initial_accumulator_value;
  if (config.kind == OptimizerKind::kFtrl && slot == 0) return config.initial_accumulator_value;
  return 0.0f;
}

void Optimizer::Apply(float* parameters, float* const* slots, const float* gradient, size_t count,
                      int64_t step) const {
  const float lr = config_.learning_rate;
  switch (config_.kind) {
    case OptimizerKind::kSgd: {
      // __restrict: a gradient never aliases the parameters, and saying so lets the compiler
      // vectorise without a runtime overlap check.
      float* __restrict out = parameters;
      const float* __restrict in = gradient;
      for (size_t i = 0; i < count; ++i) out[i] -= lr * in[i];
      return;
    }
    case OptimizerKind::kAdagrad: {
      float* accumulator = slots[0];
      const float epsilon = config_.epsilon;
      for (size_t i = 0; i < count; ++i) {
        accumulator[i] += gradient[i] * gradient[i];
        parameters[i] -= lr * gradient[i] / (std::sqrt(accumulator[i]) + epsilon);
      }
      return;
    }
    case OptimizerKind::kAdam: {
      float* m = slots[0];
      float* v = slots[1];
      const double t = static_cast<double>(step < 1 ? 1 : step);
      const float beta1 = config_.beta1, beta2 = config_.beta2, epsilon = config_.epsilon;
      const float lr_t =
          static_cast<float>(lr * std::sqrt(1.0 - std::pow(beta2, t)) / (1.0 - std::pow(beta1, t)));
      for (size_t i = 0; i < count; ++i) {
        m[i] += (gradient[i] - m[i]) * (1 - beta1);
        v[i] += (gradient[i] * gradient[i] - v[i]) * (1 - beta2);
        parameters[i] -= lr_t * m[i] / (std::sqrt(v[i]) + epsilon);
      }
      return;
    }
    case OptimizerKind::kFtrl: {
      float* accumulator = slots[0];
      float* linear = slots[1];
      const float power = -config_.learning_rate_power;
      const bool square_root = config_.learning_rate_power == -0.5f;
      const float l1 = config_.l1, l2 = config_.l2;
      auto raise = [&](float value) {
        return square_root ? std::sqrt(value) : std::pow(value, power);
      };
      for (size_t i = 0; i < count; ++i) {
        const float g = gradient[i];
        const float new_accumulator = accumulator[i] + g * g;
        const float new_power = raise(new_accumulator);
        linear[i] += g - (new_power - raise(accumulator[i])) / lr * parameters[i];
        const float quadratic = new_power / lr + 2 * l2;
        parameters[i] =
            std::fabs(linear[i]) > l1 ? ((linear[i] > 0 ? l1 : -l1) - linear[i]) / quadratic : 0.0f;
        accumulator[i] = new_accumulator;
      }
      return;
    }
  }
}

}  // namespace cohort::ps
