#include "train/compute_threads.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <cstdlib>
#include <sstream>
#include <thread>

#include "train/models.h"

namespace cohort::train {
namespace {

BlasLibrary FromMaps(const std::string& text) {
  std::istringstream maps(text);
  return BlasFromMaps(maps);
}

constexpr char kOpenBlas[] =
    "7f00a000-7f00b000 r-xp 00000000 fe:01 123 "
    "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3\n";
constexpr char kReference[] =
    "7f00a000-7f00b000 r-xp 00000000 fe:01 124 /usr/lib/x86_64-linux-gnu/blas/libblas.so.3\n";

TEST(BlasFromMaps, RecognisesOpenBlasAndTheReferenceBlas) {
  const BlasLibrary openblas =
      FromMaps(std::string("55d0-55e0 r-xp 0 0:0 1 /usr/bin/x\n") + kOpenBlas);
  EXPECT_EQ(openblas.kind, BlasKind::kOpenBlas);
  EXPECT_EQ(openblas.path, "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3");
  EXPECT_EQ(BlasWarning(openblas), "");

  const BlasLibrary reference = FromMaps(kReference);
  EXPECT_EQ(reference.kind, BlasKind::kReference);
  const std::string warning = BlasWarning(reference);
  EXPECT_NE(warning.find("reference BLAS (/usr/lib/x86_64-linux-gnu/blas/libblas.so.3)"),
            std::string::npos)
      << warning;
  EXPECT_NE(warning.find("libopenblas0-pthread"), std::string::npos) << warning;
}

TEST(BlasFromMaps, AnotherOrNoBlasGetsNoWarning) {
  EXPECT_EQ(FromMaps("7f-80 r-xp 0 0:0 1 /opt/mkl/libblas.so.3\n").kind, BlasKind::kOther);
  EXPECT_EQ(FromMaps("7f-80 r-xp 0 0:0 1 /usr/lib/libc.so.6\n7f-80 rw-p 0 0:0 0 [heap]\n").kind,
            BlasKind::kNotLoaded);
  EXPECT_EQ(BlasWarning(FromMaps("")), "");
}

// This test binary links libtorch, which loads libblas.so.3: scripts/setup.sh pins it to OpenBLAS.
TEST(DetectBlas, FindsTheLibraryThisProcessLoaded) {
  const BlasLibrary blas = DetectBlas();
  EXPECT_NE(blas.kind, BlasKind::kNotLoaded);
  EXPECT_NE(blas.path.find("libblas.so"), std::string::npos);
}

long MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Training steps of the classic CNN (2.8 M weights: 11 MB of gradients, Adam's temporaries) on a
// batch of 64: with glibc's defaults each step faults thousands of pages back in (about 8,000,
// measured), with freed memory kept almost none once the first steps have sized the heap.
TEST(KeepFreedMemory, TrainingStepsDoNotFaultTheirTensorsBackIn) {
  // KeepFreedMemory leaves glibc's thresholds as the environment set them, if it did: this test
  // measures its own settings, so it takes those variables away first (glibc read them at start;
  // mallopt then overrides them).
  unsetenv("MALLOC_MMAP_THRESHOLD_");
  unsetenv("MALLOC_TRIM_THRESHOLD_");
  KeepFreedMemory();
  StatusOr<torch::nn::Sequential> model = MakeModel("cnn", ModelShape{});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  torch::optim::Adam optimizer((*model)->parameters());
  const torch::Tensor images = torch::rand({64, 1, 28, 28});
  const torch::Tensor labels = torch::randint(10, {64}, torch::kLong);
  auto step = [&] {
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy((*model)->forward(images), labels).backward();
    optimizer.step();
  };
  for (int warm_up = 0; warm_up < 3; ++warm_up) step();
  const long before = MinorFaults();
  constexpr int kSteps = 10;
  for (int i = 0; i < kSteps; ++i) step();
  EXPECT_LT((MinorFaults() - before) / kSteps, 500) << "pages faulted in per step";
}

// A subnormal operand multiplied by one: kept without flush-to-zero, zero with it. `volatile`
// keeps the compiler from folding the product at compile time.
float SubnormalTimesOne() {
  volatile float subnormal = 1e-39f;
  volatile float one = 1.0f;
  return subnormal * one;
}

TEST(SetComputeThreads, FlushesSubnormalsInThisThreadAndThoseItStarts) {
  // An earlier test in this process may have fixed libtorch's thread counts already, which
  // SetComputeThreads then reports; the flush setting is made first either way.
  (void)SetComputeThreads(1);
  EXPECT_EQ(SubnormalTimesOne(), 0.0f);
  float in_new_thread = -1;
  std::thread([&] { in_new_thread = SubnormalTimesOne(); }).join();
  EXPECT_EQ(in_new_thread, 0.0f);
}

}  // namespace
}  // namespace cohort::train
