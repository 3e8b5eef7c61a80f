#include "train/compute_threads.h"

#include <gtest/gtest.h>

#include <sstream>
#include <thread>

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
