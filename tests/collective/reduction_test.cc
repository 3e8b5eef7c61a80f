#include "collective/reduction.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "collective/data_type.h"
#include "element_value.h"

namespace cohort::collective {
namespace {

TEST(Float16Test, ConvertsExactValuesBothWays) {
  EXPECT_EQ(FloatToFloat16(1.0f), 0x3C00);
  EXPECT_EQ(FloatToFloat16(-2.0f), 0xC000);
  EXPECT_EQ(FloatToFloat16(65504.0f), 0x7BFF);               // largest finite
  EXPECT_EQ(FloatToFloat16(65520.0f), 0x7C00);               // rounds to infinity
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.0f, -25)), 0x0000);  // tie rounds to even (zero)
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(Float16ToFloat(0x3C00), 1.0f);
  EXPECT_EQ(Float16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(Float16ToFloat(0x7C00), INFINITY);
  EXPECT_TRUE(std::isnan(Float16ToFloat(FloatToFloat16(NAN))));
  // 1 + 2^-11 is halfway between 1 and the next float16: ties go to even (1).
  EXPECT_EQ(FloatToFloat16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(FloatToFloat16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
}

TEST(Float16Test, EveryHalfRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    uint16_t half = static_cast<uint16_t>(bits);
    float value = Float16ToFloat(half);
    if (std::isnan(value)) continue;
    EXPECT_EQ(FloatToFloat16(value), half) << bits;
  }
}

TEST(BFloat16Test, RoundsToNearestEven) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3F80);
  EXPECT_EQ(BFloat16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(FloatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie: even
  EXPECT_EQ(FloatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie: even (up)
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(NAN))));
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float value = BFloat16ToFloat(static_cast<uint16_t>(bits));
    if (!std::isnan(value)) {
      EXPECT_EQ(FloatToBFloat16(value), bits);
    }
  }
}

std::vector<uint8_t> RandomBuffer(DataType type, size_t count, std::mt19937_64& random) {
  std::vector<uint8_t> bytes(count * SizeOf(type));
  std::uniform_real_distribution<float> real(-100, 100);
  std::uniform_int_distribution<int64_t> integer(-1000000, 1000000);
  for (size_t i = 0; i < count; ++i) {
    uint8_t* at = bytes.data() + i * SizeOf(type);
    switch (type) {
      case DataType::kFloat32: {
        float v = real(random);
        std::memcpy(at, &v, 4);
        break;
      }
      case DataType::kFloat64: {
        double v = real(random);
        std::memcpy(at, &v, 8);
        break;
      }
      case DataType::kInt32: {
        int32_t v = static_cast<int32_t>(integer(random));
        std::memcpy(at, &v, 4);
        break;
      }
      case DataType::kInt64: {
        int64_t v = integer(random) << 20;
        std::memcpy(at, &v, 8);
        break;
      }
      case DataType::kBFloat16: {
        uint16_t v = FloatToBFloat16(real(random));
        std::memcpy(at, &v, 2);
        break;
      }
      case DataType::kFloat16: {
        uint16_t v = FloatToFloat16(real(random));
        std::memcpy(at, &v, 2);
        break;
      }
    }
  }
  return bytes;
}

// One element reduced the slow way, rounded to `type` as the kernel must round it.
double Expected(DataType type, ReduceOp op, double a, double b) {
  double result;
  switch (op) {
    case ReduceOp::kMin:
      result = b < a ? b : a;
      break;
    case ReduceOp::kMax:
      result = a < b ? b : a;
      break;
    default:
      result = a + b;
  }
  switch (type) {
    case DataType::kFloat32:
      return static_cast<float>(result);
    case DataType::kBFloat16:
      return BFloat16ToFloat(FloatToBFloat16(static_cast<float>(result)));
    case DataType::kFloat16:
      return Float16ToFloat(FloatToFloat16(static_cast<float>(result)));
    default:
      return result;
  }
}

// Every compilation of the kernels that this CPU executes (AVX-512, AVX2 with F16C, baseline),
// not only the one ReduceInto picks, against the element-by-element reference.
TEST(ReduceWithTest, EveryKernelThisHostRunsMatchesTheReference) {
  const std::vector<ReductionKernel> kernels = ReductionKernelsThisHostRuns();
  ASSERT_FALSE(kernels.empty());
  EXPECT_EQ(kernels.back(), ReductionKernel::kBaseline);
  EXPECT_STREQ(ReductionKernelName(kernels.front()), ReductionKernelName());
  const DataType types[] = {DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16,
                            DataType::kFloat16, DataType::kInt32,   DataType::kInt64};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax};
  for (ReductionKernel kernel : kernels) {
    std::mt19937_64 random(7);
    for (DataType type : types) {
      for (ReduceOp op : ops) {
        for (size_t count : {0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 200, 1000}) {
          std::vector<uint8_t> accumulator = RandomBuffer(type, count, random);
          std::vector<uint8_t> input = RandomBuffer(type, count, random);
          std::vector<uint8_t> result = accumulator;
          ReduceWith(kernel, type, op, result.data(), input.data(), count);
          for (size_t i = 0; i < count; ++i) {
            double expected = Expected(type, op, ElementValue(type, accumulator.data(), i),
                                       ElementValue(type, input.data(), i));
            ASSERT_EQ(ElementValue(type, result.data(), i), expected)
                << Name(type) << " " << Name(op) << " count " << count << " element " << i
                << " kernel " << ReductionKernelName(kernel);
          }
        }
      }
    }
  }
}

// ReduceInto runs the widest kernel; the same check through it.
TEST(ReduceIntoTest, MatchesElementByElementForEveryTypeOpAndLength) {
  std::mt19937_64 random(7);
  const DataType types[] = {DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16,
                            DataType::kFloat16, DataType::kInt32,   DataType::kInt64};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax};
  for (DataType type : types) {
    for (ReduceOp op : ops) {
      for (size_t count : {0, 1, 7, 8, 15, 16, 17, 63, 64, 65, 200, 1000}) {
        std::vector<uint8_t> accumulator = RandomBuffer(type, count, random);
        std::vector<uint8_t> input = RandomBuffer(type, count, random);
        std::vector<uint8_t> result = accumulator;
        ReduceInto(type, op, result.data(), input.data(), count);
        for (size_t i = 0; i < count; ++i) {
          double expected = Expected(type, op, ElementValue(type, accumulator.data(), i),
                                     ElementValue(type, input.data(), i));
          ASSERT_EQ(ElementValue(type, result.data(), i), expected)
              << Name(type) << " " << Name(op) << " count " << count << " element " << i
              << " kernels " << ReductionKernelName();
        }
      }
    }
  }
}

TEST(ReduceIntoTest, IntegerSumsWrapAround) {
  int32_t a[1] = {INT32_MAX};
  int32_t b[1] = {1};
  ReduceInto(DataType::kInt32, ReduceOp::kSum, a, b, 1);
  EXPECT_EQ(a[0], INT32_MIN);
}

TEST(DivideInPlaceTest, DividesEveryType) {
  float f[3] = {3, 6, -9};
  DivideInPlace(DataType::kFloat32, f, 3, 3);
  EXPECT_EQ(f[0], 1);
  EXPECT_EQ(f[2], -3);
  int32_t i[2] = {7, -7};
  DivideInPlace(DataType::kInt32, i, 2, 2);
  EXPECT_EQ(i[0], 3);  // toward zero
  EXPECT_EQ(i[1], -3);
  uint16_t h[1] = {FloatToFloat16(3.0f)};
  DivideInPlace(DataType::kFloat16, h, 1, 2);
  EXPECT_EQ(Float16ToFloat(h[0]), 1.5f);
  uint16_t bf[1] = {FloatToBFloat16(3.0f)};
  DivideInPlace(DataType::kBFloat16, bf, 1, 2);
  EXPECT_EQ(BFloat16ToFloat(bf[0]), 1.5f);
}

TEST(ReductionKernelTest, ReportsItsInstructionSet) {
  std::string name = ReductionKernelName();
  EXPECT_TRUE(name == "avx512" || name == "avx2" || name == "baseline") << name;
}

}  // namespace
}  // namespace cohort::collective
