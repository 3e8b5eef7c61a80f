#include "net/auth.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace cohort::net {
namespace {

std::string Hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string text;
  for (unsigned char byte : bytes) {
    text += digits[byte >> 4];
    text += digits[byte & 15];
  }
  return text;
}

TEST(HmacTest, MatchesRfc4231TestCase2) {
  EXPECT_EQ(Hex(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(HmacTest, DependsOnKeyAndMessage) {
  EXPECT_NE(HmacSha256("key", "a"), HmacSha256("key", "b"));
  EXPECT_NE(HmacSha256("key1", "a"), HmacSha256("key2", "a"));
  EXPECT_EQ(HmacSha256("key", "a").size(), kProofSize);
}

TEST(ConstantTimeEqualsTest, ComparesContentAndLength) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

TEST(RandomBytesTest, GivesFreshBytes) {
  auto a = RandomBytes(kNonceSize);
  auto b = RandomBytes(kNonceSize);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), kNonceSize);
  EXPECT_NE(*a, *b);
}

TEST(JobSecretTest, ReadsTheEnvironment) {
  setenv(kJobSecretVariable, "s3cret", 1);
  EXPECT_TRUE(JobSecret::FromEnvironment().authenticated());
  EXPECT_EQ(JobSecret::FromEnvironment().key(), "s3cret");
  setenv(kJobSecretVariable, "", 1);
  EXPECT_FALSE(JobSecret::FromEnvironment().authenticated());
  unsetenv(kJobSecretVariable);
  EXPECT_FALSE(JobSecret::FromEnvironment().authenticated());
}

}  // namespace
}  // namespace cohort::net
