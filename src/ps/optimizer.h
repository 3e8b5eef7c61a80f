// Server-side optimizers: how a parameter server turns a gradient into an update.
//
// Workers push gradients, not new values, and the server applies them where the variable lives,
// so a push is one message and two workers' updates to the same rows compose instead of
// overwriting each other. The formulas are TensorFlow's training kernels (ApplyGradientDescent,
// Keras Adagrad, ApplyAdam, ApplyFtrl) with Keras defaults, so a model tuned under TensorFlow
// behaves the same here:
//
//   SGD      w -= lr * g
//   Adagrad  a += g^2;  w -= lr * g / (sqrt(a) + epsilon)            a starts at 0.1
//   Adam     m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//            w -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + epsilon)
//   FTRL     n' = n + g^2;  z += g - (n'^-p - n^-p) / lr * w          n starts at 0.1, p = -0.5
//            w = |z| > l1 ? (sign(z) l1 - z) / (n'^-p / lr + 2 l2) : 0
//
// Each optimizer keeps per-parameter slots of the variable's shape (Adagrad: accumulator; Adam:
// m, v; FTRL: accumulator n, linear z). Embedding rows are updated the same way, row by row, and
// only the rows a push touches change: for Adam that is "lazy" Adam (tfa.optimizers.LazyAdam),
// because decaying every row of an unbounded table on every step is neither affordable nor what
// sparse training wants.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace cohort::ps {

enum class OptimizerKind : uint8_t { kSgd = 0, kAdagrad = 1, kAdam = 2, kFtrl = 3 };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  float learning_rate = 0.01f;
  float epsilon = 1e-7f;                   // Adagrad, Adam
  float initial_accumulator_value = 0.1f;  // Adagrad, FTRL
  float beta1 = 0.9f;                      // Adam
  float beta2 = 0.999f;                    // Adam
  float learning_rate_power = -0.5f;       // FTRL
  float l1 = 0.0f;                         // FTRL
  float l2 = 0.0f;                         // FTRL

  bool operator==(const OptimizerConfig&) const = default;
};

// "sgd", "adagrad", "adam", "ftrl".
std::string OptimizerName(OptimizerKind kind);
StatusOr<OptimizerKind> ParseOptimizerKind(const std::string& name);

// InvalidArgument naming the field when a setting is out of TensorFlow's range (a learning rate
// that is not positive, a beta outside [0, 1), a positive FTRL learning_rate_power...).
Status ValidateOptimizerConfig(const OptimizerConfig& config);

// How many slots of the variable's shape the optimizer keeps.
int SlotCount(OptimizerKind kind);

// The value every element of slot `slot` starts at.
float SlotInitialValue(const OptimizerConfig& config, int slot);

class Optimizer {
 public:
  // `config` must have passed ValidateOptimizerConfig.
  explicit Optimizer(const OptimizerConfig& config) : config_(config) {}

  const OptimizerConfig& config() const { return config_; }

  // Applies `gradient` to `count` consecutive parameters. slots[i] points at the same range of
  // slot i (SlotCount(kind) of them). `step` is the 1-based count of updates these parameters have
  // received, this one included; only Adam's bias correction uses it.
  void Apply(float* parameters, float* const* slots, const float* gradient, size_t count,
             int64_t step) const;

 private:
  OptimizerConfig config_;
};

}  // namespace cohort::ps
