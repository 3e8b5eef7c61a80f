#include "collective/zero_skipping.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace cohort::collective {
namespace {

std::string KernelName(ZeroSkippingKernel kernel) {
  return kernel == ZeroSkippingKernel::kAvx512 ? "avx512" : "baseline";
}

// `count` words of which about `zero_fraction` are +0.0; the others are random bits, among them
// -0.0, a NaN and a denormal, which must survive exactly.
std::vector<uint32_t> Words(size_t count, double zero_fraction, uint32_t seed) {
  std::mt19937 random(seed);
  std::bernoulli_distribution zero(zero_fraction);
  std::vector<uint32_t> words(count);
  for (size_t i = 0; i < count; ++i) words[i] = zero(random) ? 0 : (random() | 1);
  const uint32_t specials[] = {0x80000000u, 0x7FC00001u, 0x00000001u};
  for (size_t i = 0; i < 3 && i < count; ++i) {
    if (words[count - 1 - i * 7 % count] != 0) words[count - 1 - i * 7 % count] = specials[i];
  }
  return words;
}

TEST(ZeroSkippingTest, EveryKernelRoundTripsEveryLengthAndDensity) {
  const size_t counts[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1001, 4099, 65536};
  const double fractions[] = {0.0, 0.1, 0.5, 0.9, 1.0};
  for (ZeroSkippingKernel kernel : ZeroSkippingKernelsThisHostRuns()) {
    for (size_t count : counts) {
      for (double fraction : fractions) {
        SCOPED_TRACE(KernelName(kernel) + " count " + std::to_string(count) + " zeros " +
                     std::to_string(fraction));
        const std::vector<uint32_t> words = Words(count, fraction, static_cast<uint32_t>(count));
        size_t kept = 0;
        for (uint32_t word : words) kept += word != 0;
        const size_t expected = 4 * kept + ZeroSkippingBitmapBytes(count);

        std::vector<uint8_t> buffer(4 * count + kZeroSkippingSlackBytes);
        const size_t encoded = EncodeZeroSkippingWith(kernel, words.data(), count, buffer.data());
        if (expected >= 4 * count) {
          EXPECT_EQ(encoded, 0u) << "an encoding that saves nothing is not used";
          continue;
        }
        ASSERT_EQ(encoded, expected);
        // The other kernels encode the same bytes.
        for (ZeroSkippingKernel other : ZeroSkippingKernelsThisHostRuns()) {
          std::vector<uint8_t> again(4 * count + kZeroSkippingSlackBytes);
          ASSERT_EQ(EncodeZeroSkippingWith(other, words.data(), count, again.data()), encoded);
          EXPECT_EQ(std::memcmp(again.data(), buffer.data(), encoded), 0) << KernelName(other);
        }
        std::memset(buffer.data() + encoded, 0xAB, buffer.size() - encoded);
        ASSERT_TRUE(ExpandZeroSkippingInPlaceWith(kernel, buffer.data(), encoded, count).ok());
        EXPECT_EQ(std::memcmp(buffer.data(), words.data(), 4 * count), 0);
      }
    }
  }
}

TEST(ZeroSkippingTest, TheLayoutIsTheKeptWordsThenOneBitPerWord) {
  const uint32_t words[10] = {0, 5, 0, 0, 0, 0, 0, 0, 0, 9};
  std::vector<uint8_t> out(40 + kZeroSkippingSlackBytes);
  ASSERT_EQ(EncodeZeroSkipping(words, 10, out.data()), 2 * 4 + 2u);
  uint32_t kept[2];
  std::memcpy(kept, out.data(), 8);
  EXPECT_EQ(kept[0], 5u);
  EXPECT_EQ(kept[1], 9u);
  EXPECT_EQ(out[8], 0b00000010);  // word 1
  EXPECT_EQ(out[9], 0b00000010);  // word 9
}

TEST(ZeroSkippingTest, WhatIsNotAnEncodingIsRefusedNamingWhy) {
  const std::vector<uint32_t> words = Words(64, 0.75, 3);
  std::vector<uint8_t> encoded(256 + kZeroSkippingSlackBytes);
  const size_t size = EncodeZeroSkipping(words.data(), 64, encoded.data());
  ASSERT_GT(size, 0u);
  for (ZeroSkippingKernel kernel : ZeroSkippingKernelsThisHostRuns()) {
    SCOPED_TRACE(KernelName(kernel));
    auto expand = [&](std::vector<uint8_t> bytes, size_t bytes_used, size_t count) {
      bytes.resize(std::max(bytes.size(), 4 * count));
      return ExpandZeroSkippingInPlaceWith(kernel, bytes.data(), bytes_used, count);
    };
    std::string message = expand(encoded, 256, 64).message();
    EXPECT_NE(message.find("not shorter"), std::string::npos) << message;
    message = expand(encoded, size - 1, 64).message();
    EXPECT_NE(message.find("does not end in a bitmap of 8 bytes"), std::string::npos) << message;
    message = expand(encoded, 4, 64).message();
    EXPECT_NE(message.find("bitmap"), std::string::npos) << message;
    std::vector<uint8_t> extra_bit = encoded;
    extra_bit[size - 1] ^= 0x80;
    message = expand(extra_bit, size, 64).message();
    EXPECT_NE(message.find("marks"), std::string::npos) << message;
    // The last word of 60: bits 60..63 of the bitmap lie past the end.
    std::vector<uint32_t> sixty(words.begin(), words.begin() + 60);
    sixty[59] = 0;
    std::vector<uint8_t> short_encoded(240 + kZeroSkippingSlackBytes);
    const size_t short_size = EncodeZeroSkipping(sixty.data(), 60, short_encoded.data());
    ASSERT_GT(short_size, 0u);
    short_encoded[short_size - 1] |= 0x10;  // word 60
    message = expand(short_encoded, short_size, 60).message();
    EXPECT_NE(message.find("past its end"), std::string::npos) << message;
    EXPECT_FALSE(expand(encoded, size, 0).ok());
  }
}

TEST(ZeroSkippingTest, OnlyDataWithManyZerosLooksWorthEncoding) {
  EXPECT_TRUE(ZeroSkippingLooksWorthwhile(Words(1 << 20, 0.5, 1).data(), 1 << 20));
  EXPECT_TRUE(ZeroSkippingLooksWorthwhile(Words(1000, 0.2, 1).data(), 1000));
  EXPECT_FALSE(ZeroSkippingLooksWorthwhile(Words(1 << 20, 0.0, 1).data(), 1 << 20));
  EXPECT_FALSE(ZeroSkippingLooksWorthwhile(Words(1 << 20, 0.03, 1).data(), 1 << 20));
  EXPECT_FALSE(ZeroSkippingLooksWorthwhile(nullptr, 0));
}

}  // namespace
}  // namespace cohort::collective
