// Uses libtorch through Cohort::cohort alone: the package brings libtorch's headers and libraries.
#include <torch/torch.h>

#include <cstdio>

int main() {
  const torch::Tensor sum = torch::ones({4}).sum();
  std::printf("consumer: libtorch sum %.1f\n", sum.item<float>());
  return sum.item<float>() == 4.0f ? 0 : 1;
}
