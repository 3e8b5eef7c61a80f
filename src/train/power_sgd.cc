#include "train/power_sgd.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <string>

namespace cohort::train {
namespace {

// Keeps a column that is all zeros (a layer whose gradient vanished) from becoming NaN.
constexpr float kOrthogonalizeEpsilon = 1e-8f;

// Makes the columns of `p` ([rows, rank]) orthonormal in place, by Gram-Schmidt from the first
// column on, as PyTorch's powerSGD_hook does for small ranks.
void Orthogonalize(torch::Tensor& p) {
  const int64_t rank = p.size(1);
  for (int64_t i = 0; i < rank; ++i) {
    torch::Tensor column = p.narrow(1, i, 1);
    column.div_(column.norm() + kOrthogonalizeEpsilon);
    if (i + 1 < rank) {
      torch::Tensor rest = p.narrow(1, i + 1, rank - i - 1);
      rest.sub_((column * rest).sum(0, /*keepdim=*/true) * column);
    }
  }
}

torch::Tensor RandomQ(int64_t cols, int64_t rank, uint64_t seed) {
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  return torch::randn({cols, rank}, generator, torch::kFloat32);
}

}  // namespace

Status CheckPowerSgdOptions(const PowerSgdOptions& options) {
  if (options.rank < 1 || options.rank > 64) {
    return Status::InvalidArgument("PowerSGD rank must be 1 to 64, not " +
                                   std::to_string(options.rank));
  }
  if (options.start_step < 0) {
    return Status::InvalidArgument("PowerSGD start step must not be negative, not " +
                                   std::to_string(options.start_step));
  }
  return Status::OK();
}

PowerSgdReducer::PowerSgdReducer(std::vector<torch::Tensor> parameters, Strategy* strategy,
                                 PowerSgdOptions options)
    : parameters_(std::move(parameters)), strategy_(strategy), options_(options) {
  matrix_of_.assign(parameters_.size(), -1);
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const torch::Tensor& parameter = parameters_[i];
    total_floats_ += static_cast<size_t>(parameter.numel());
    if (parameter.dim() >= 2) {
      Matrix matrix;
      matrix.parameter = i;
      matrix.rows = parameter.size(0);
      matrix.cols = parameter.numel() / matrix.rows;
      matrix.rank = std::min<int64_t>({options_.rank, matrix.rows, matrix.cols});
      // PyTorch's min_compression_rate of 2: low rank must at least halve what is sent.
      if (2 * (matrix.rows + matrix.cols) * matrix.rank <= matrix.rows * matrix.cols) {
        matrix_of_[i] = static_cast<int>(matrices_.size());
        matrices_.push_back(std::move(matrix));
        continue;
      }
    }
    vectors_.push_back(i);
  }
  Reset();
}

void PowerSgdReducer::Reset() {
  torch::NoGradGuard no_grad;
  for (size_t m = 0; m < matrices_.size(); ++m) {
    Matrix& matrix = matrices_[m];
    matrix.error = torch::zeros({matrix.rows, matrix.cols}, torch::kFloat32);
    matrix.q = RandomQ(matrix.cols, matrix.rank, options_.seed + m);
  }
}

bool PowerSgdReducer::compresses(size_t index) const {
  return index < matrix_of_.size() && matrix_of_[index] >= 0;
}

size_t PowerSgdReducer::compressed_floats() const {
  size_t floats = 0;
  for (size_t index : vectors_) floats += static_cast<size_t>(parameters_[index].numel());
  for (const Matrix& matrix : matrices_) {
    floats += static_cast<size_t>((matrix.rows + matrix.cols) * matrix.rank);
  }
  return floats;
}

std::vector<torch::Tensor> PowerSgdReducer::Gradients() {
  std::vector<torch::Tensor> gradients;
  gradients.reserve(parameters_.size());
  for (torch::Tensor& parameter : parameters_) {
    torch::Tensor& gradient = parameter.mutable_grad();
    if (!gradient.defined() || !gradient.is_contiguous()) {
      gradient = gradient.defined() ? gradient.contiguous() : torch::zeros_like(parameter);
    }
    gradients.push_back(gradient);
  }
  return gradients;
}

Status PowerSgdReducer::Average(torch::Tensor& flat, std::chrono::milliseconds timeout) {
  if (flat.numel() == 0) return Status::OK();
  auto pending = strategy_->StartAverage(flat.data_ptr<float>(), static_cast<size_t>(flat.numel()));
  if (!pending.ok()) return pending.status();
  return (*pending)->Wait(timeout);
}

Status PowerSgdReducer::ReduceUncompressed(std::chrono::milliseconds timeout) {
  std::vector<torch::Tensor> gradients = Gradients();
  std::vector<torch::Tensor> flat_parts;
  for (const torch::Tensor& gradient : gradients) flat_parts.push_back(gradient.reshape({-1}));
  torch::Tensor flat = torch::cat(flat_parts);
  COHORT_RETURN_IF_ERROR(Average(flat, timeout));
  int64_t offset = 0;
  for (torch::Tensor& gradient : gradients) {
    gradient.copy_(flat.narrow(0, offset, gradient.numel()).view_as(gradient));
    offset += gradient.numel();
  }
  return Status::OK();
}

Status PowerSgdReducer::Reduce(int64_t global_step, std::chrono::milliseconds timeout) {
  torch::NoGradGuard no_grad;
  if (global_step < options_.start_step) return ReduceUncompressed(timeout);
  std::vector<torch::Tensor> gradients = Gradients();

  // First all-reduce: the vectors as they are, then each matrix's P = M Q.
  int64_t first_size = 0;
  for (size_t index : vectors_) first_size += gradients[index].numel();
  std::vector<int64_t> p_offsets;
  for (const Matrix& matrix : matrices_) {
    p_offsets.push_back(first_size);
    first_size += matrix.rows * matrix.rank;
  }
  torch::Tensor first = torch::empty({first_size}, torch::kFloat32);
  int64_t offset = 0;
  for (size_t index : vectors_) {
    const int64_t count = gradients[index].numel();
    first.narrow(0, offset, count).copy_(gradients[index].reshape({-1}));
    offset += count;
  }
  std::vector<torch::Tensor> with_error;  // M = G + E, by matrix
  for (size_t m = 0; m < matrices_.size(); ++m) {
    Matrix& matrix = matrices_[m];
    torch::Tensor mat =
        gradients[matrix.parameter].reshape({matrix.rows, matrix.cols}) + matrix.error;
    if (!options_.warm_start) {
      matrix.q = RandomQ(matrix.cols, matrix.rank,
                         options_.seed + static_cast<uint64_t>(global_step) * 1000003u + m);
    }
    torch::Tensor p =
        first.narrow(0, p_offsets[m], matrix.rows * matrix.rank).view({matrix.rows, matrix.rank});
    torch::mm_out(p, mat, matrix.q);
    with_error.push_back(std::move(mat));
  }
  COHORT_RETURN_IF_ERROR(Average(first, timeout));
  offset = 0;
  for (size_t index : vectors_) {
    torch::Tensor& gradient = gradients[index];
    gradient.copy_(first.narrow(0, offset, gradient.numel()).view_as(gradient));
    offset += gradient.numel();
  }

  // Second all-reduce: each matrix's Q = M^T P, with P orthonormal (the same on every worker).
  int64_t second_size = 0;
  std::vector<int64_t> q_offsets;
  for (const Matrix& matrix : matrices_) {
    q_offsets.push_back(second_size);
    second_size += matrix.cols * matrix.rank;
  }
  torch::Tensor second = torch::empty({second_size}, torch::kFloat32);
  std::vector<torch::Tensor> ps;
  for (size_t m = 0; m < matrices_.size(); ++m) {
    const Matrix& matrix = matrices_[m];
    torch::Tensor p =
        first.narrow(0, p_offsets[m], matrix.rows * matrix.rank).view({matrix.rows, matrix.rank});
    Orthogonalize(p);
    torch::Tensor q =
        second.narrow(0, q_offsets[m], matrix.cols * matrix.rank).view({matrix.cols, matrix.rank});
    torch::mm_out(q, with_error[m].t(), p);
    ps.push_back(p);
  }
  COHORT_RETURN_IF_ERROR(Average(second, timeout));

  // The approximation P Q^T becomes the gradient; what it left out, the next step's error.
  for (size_t m = 0; m < matrices_.size(); ++m) {
    Matrix& matrix = matrices_[m];
    matrix.q = second.narrow(0, q_offsets[m], matrix.cols * matrix.rank)
                   .view({matrix.cols, matrix.rank})
                   .clone();
    torch::Tensor approximation = torch::mm(ps[m], matrix.q.t());
    torch::sub_out(matrix.error, with_error[m], approximation);
    gradients[matrix.parameter].copy_(approximation.view_as(gradients[matrix.parameter]));
  }
  return Status::OK();
}

}  // namespace cohort::train
