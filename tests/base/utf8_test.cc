// The one UTF-8 check: Unicode's well-formedness table, byte by byte, and against a decoder
// written from the definition (code point ranges), over every sequence of up to 3 bytes.
#include "base/utf8.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

namespace cohort {
namespace {

using namespace std::string_literals;

TEST(Utf8Test, AcceptsWellFormedText) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii, with a \0 byte"s));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9"));       // U+00E9
  EXPECT_TRUE(IsValidUtf8("\xE2\x82\xAC"));      // U+20AC
  EXPECT_TRUE(IsValidUtf8("\xED\x9F\xBF"));      // U+D7FF, below the surrogates
  EXPECT_TRUE(IsValidUtf8("\xEE\x80\x80"));      // U+E000, above them
  EXPECT_TRUE(IsValidUtf8("\xF0\x9F\x98\x80"));  // U+1F600
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF, the last
  EXPECT_EQ(Utf8SequenceLength("a\xF0\x9F\x98\x80", 1), 4u);
  EXPECT_EQ(Utf8SequenceLength("a", 0), 1u);
}

TEST(Utf8Test, RefusesIllFormedText) {
  for (const std::string& bad : {
           "\x80"s,              // a continuation byte alone
           "\xC0\xAF"s,          // overlong '/'
           "\xC1\xBF"s,          // overlong
           "\xE0\x9F\xBF"s,      // overlong 3 bytes
           "\xF0\x8F\xBF\xBF"s,  // overlong 4 bytes
           "\xED\xA0\x80"s,      // U+D800, a surrogate
           "\xED\xBF\xBF"s,      // U+DFFF
           "\xF4\x90\x80\x80"s,  // U+110000
           "\xF5\x80\x80\x80"s,  // no such lead
           "\xFF"s,
           "\xC3"s,  // cut short
           "\xE2\x82"s, "\xF0\x9F\x98"s,
           "\xC3\x41"s,  // continuation expected
       }) {
    EXPECT_FALSE(IsValidUtf8("ok " + bad + " ok")) << testing::PrintToString(bad);
    EXPECT_EQ(Utf8SequenceLength(bad, 0), 0u) << testing::PrintToString(bad);
  }
  EXPECT_EQ(Utf8SequenceLength("abc", 3), 0u);
}

// What the bytes decode to by Unicode's definition, or nothing: the shortest form of a scalar
// value (not a surrogate, at most U+10FFFF), written without the byte-range shortcuts above.
std::optional<uint32_t> DecodeByDefinition(const std::string& bytes) {
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])); };
  size_t length;
  uint32_t value;
  if (byte(0) < 0x80) return bytes.size() == 1 ? std::optional<uint32_t>(byte(0)) : std::nullopt;
  if ((byte(0) & 0xE0) == 0xC0) {
    length = 2, value = byte(0) & 0x1F;
  } else if ((byte(0) & 0xF0) == 0xE0) {
    length = 3, value = byte(0) & 0x0F;
  } else if ((byte(0) & 0xF8) == 0xF0) {
    length = 4, value = byte(0) & 0x07;
  } else {
    return std::nullopt;
  }
  if (bytes.size() != length) return std::nullopt;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return std::nullopt;
    value = (value << 6) | (byte(i) & 0x3F);
  }
  static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < kSmallest[length] || (value >= 0xD800 && value <= 0xDFFF) || value > 0x10FFFF) {
    return std::nullopt;
  }
  return value;
}

TEST(Utf8Test, AgreesWithTheDefinitionOnEverySequenceOfUpToThreeBytes) {
  std::string bytes;
  for (int first = 0; first < 256; ++first) {
    bytes.assign(1, static_cast<char>(first));
    ASSERT_EQ(IsValidUtf8(bytes), DecodeByDefinition(bytes).has_value()) << first;
    for (int second = 0; second < 256; ++second) {
      bytes.assign({static_cast<char>(first), static_cast<char>(second)});
      const bool two_valid = DecodeByDefinition(bytes.substr(0, 1)).has_value() &&
                             DecodeByDefinition(bytes.substr(1)).has_value();
      ASSERT_EQ(IsValidUtf8(bytes), DecodeByDefinition(bytes).has_value() || two_valid)
          << first << " " << second;
      for (int third = 0x7F; third <= 0xC0; ++third) {  // the bytes where the rules change
        bytes.resize(2);
        bytes.push_back(static_cast<char>(third));
        if (DecodeByDefinition(bytes)) ASSERT_EQ(Utf8SequenceLength(bytes, 0), 3u);
        if (Utf8SequenceLength(bytes, 0) == 3) ASSERT_TRUE(DecodeByDefinition(bytes).has_value());
      }
    }
  }
}

}  // namespace
}  // namespace cohort
