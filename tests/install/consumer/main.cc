// The smallest program on an installed Cohort: the public API (include/cohort) and libtorch, both
// through Cohort::cohort alone. Alone (no TF_CONFIG) it is a cluster of one; it all-reduces a
// tensor (the identity for one worker) and prints what it got.
#include <cohort/cluster.h>
#include <cohort/collectives.h>
#include <cohort/status.h>
#include <cohort/strategy.h>
#include <torch/torch.h>

#include <cstdio>

int main() {
  return cohort::Main([] {
    cohort::Cluster cluster = cohort::Cluster::FromEnvironment();
    cohort::MultiWorkerMirrored strategy(cluster);
    torch::Tensor ones = torch::ones({4});
    cohort::AllReduce(strategy, ones);
    std::printf("consumer: %s of %d, all-reduced sum %.1f\n", cluster.task().ToString().c_str(),
                cluster.world_size(), ones.sum().item<float>());
    if (ones.sum().item<float>() != 4.0f * cluster.world_size()) {
      throw std::runtime_error("all-reduce gave the wrong sum");
    }
  });
}
