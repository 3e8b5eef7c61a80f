// CRC-32C: both implementations (the CPU's instruction where it has one, the portable tables)
// against published vectors and against each other at every length and alignment.
#include "train/summary/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace cohort::train::crc32c {
namespace {

using Implementation = uint32_t (*)(uint32_t, const void*, size_t);

struct Named {
  const char* name;
  Implementation extend;
};

std::vector<Named> Implementations() {
  return {{"portable", &ExtendPortable}, {"hardware", &ExtendHardware}, {"chosen", &Extend}};
}

TEST(Crc32cTest, KnownVectors) {
  // RFC 3720 (iSCSI) appendix B.4, and the check value of the CRC-32C catalogue.
  std::string ascending(32, '\0'), descending(32, '\0');
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<char>(i);
    descending[i] = static_cast<char>(31 - i);
  }
  for (const Named& crc : Implementations()) {
    SCOPED_TRACE(crc.name);
    EXPECT_EQ(crc.extend(0, "123456789", 9), 0xE3069283u);
    EXPECT_EQ(crc.extend(0, "", 0), 0u);
    EXPECT_EQ(crc.extend(0, std::string(32, '\0').data(), 32), 0x8A9136AAu);
    EXPECT_EQ(crc.extend(0, std::string(32, '\xff').data(), 32), 0x62A8AB43u);
    EXPECT_EQ(crc.extend(0, ascending.data(), 32), 0x46DD794Eu);
    EXPECT_EQ(crc.extend(0, descending.data(), 32), 0x113FDB5Cu);
    EXPECT_EQ(crc.extend(crc.extend(0, "1234", 4), "56789", 5), 0xE3069283u);
  }
}

TEST(Crc32cTest, ImplementationsAgreeAtEveryLengthAndAlignment) {
  std::mt19937 random(16);
  std::string bytes(600, '\0');
  for (char& byte : bytes) byte = static_cast<char>(random());
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t length = 0; length + offset <= bytes.size(); ++length) {
      const char* data = bytes.data() + offset;
      const uint32_t portable = ExtendPortable(0, data, length);
      ASSERT_EQ(ExtendHardware(0, data, length), portable) << offset << " " << length;
      ASSERT_EQ(Extend(0, data, length), portable);
      // Continued from a CRC, split anywhere.
      const size_t split = length / 3;
      ASSERT_EQ(Extend(ExtendPortable(0, data, split), data + split, length - split), portable);
    }
  }
}

TEST(Crc32cTest, SaysWhetherTheCpuHasTheInstruction) {
#if defined(__x86_64__)
  EXPECT_EQ(HasHardwareCrc(), static_cast<bool>(__builtin_cpu_supports("sse4.2")));
#else
  EXPECT_FALSE(HasHardwareCrc());
#endif
}

}  // namespace
}  // namespace cohort::train::crc32c
