#include "train/fused_adam.h"

#include <gtest/gtest.h>
#include <torch/serialize.h>

#include <sstream>

#include "test_support.h"

namespace cohort::train {
namespace {

std::vector<torch::Tensor> Parameters(int64_t seed) {
  torch::manual_seed(seed);
  return {torch::randn({300, 7}).requires_grad_(), torch::randn({5}).requires_grad_()};
}

void SetGradients(std::vector<torch::Tensor>& parameters, int64_t step) {
  torch::manual_seed(100 + step);
  for (auto& parameter : parameters) parameter.mutable_grad() = torch::randn_like(parameter);
}

// FusedAdam takes libtorch Adam's steps, and its state is Adam's: it saves and loads across.
TEST(FusedAdam, MatchesLibtorchAdamAndSharesItsCheckpoints) {
  testing::UseOneComputeThread();
  const auto options = torch::optim::AdamOptions(0.01).weight_decay(0.001);
  auto reference_parameters = Parameters(1), fused_parameters = Parameters(1);
  torch::optim::Adam reference(reference_parameters, options);
  FusedAdam fused(fused_parameters, options);
  for (int64_t step = 0; step < 5; ++step) {
    SetGradients(reference_parameters, step);
    SetGradients(fused_parameters, step);
    reference.step();
    fused.step();
  }
  for (size_t i = 0; i < reference_parameters.size(); ++i) {
    EXPECT_TRUE(torch::allclose(reference_parameters[i], fused_parameters[i], 1e-5, 1e-6))
        << "parameter " << i;
  }

  // FusedAdam's checkpoint continues in libtorch's Adam exactly as FusedAdam would continue.
  std::stringstream archive_bytes;
  torch::serialize::OutputArchive archive;
  fused.save(archive);
  archive.save_to(archive_bytes);
  auto continued_parameters = Parameters(2);
  for (size_t i = 0; i < continued_parameters.size(); ++i) {
    torch::NoGradGuard no_grad;
    continued_parameters[i].copy_(fused_parameters[i]);
  }
  torch::optim::Adam continued(continued_parameters, options);
  torch::serialize::InputArchive input;
  input.load_from(archive_bytes);
  continued.load(input);
  SetGradients(fused_parameters, 5);
  SetGradients(continued_parameters, 5);
  fused.step();
  continued.step();
  for (size_t i = 0; i < fused_parameters.size(); ++i) {
    EXPECT_TRUE(torch::allclose(continued_parameters[i], fused_parameters[i], 1e-5, 1e-6));
  }
}

}  // namespace
}  // namespace cohort::train
