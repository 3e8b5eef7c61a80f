// The checksums of files read back: SHA-256 against known vectors, and a mismatch named with the
// file, what was expected and what was found.
#include "base/checksum.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "base/file.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(ChecksumTest, Sha256OfKnownVectors) {
  // FIPS 180-2's examples.
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("abc")));
  EXPECT_FALSE(IsSha256Hex("ABC"));
  EXPECT_FALSE(IsSha256Hex(std::string(64, 'g')));
}

class ChecksumFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "cohort-checksum-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  fs::path dir_;
};

TEST_F(ChecksumFileTest, ReadsAFileThatMatches) {
  ASSERT_TRUE(WriteFileAtomically(dir_ / "weights.pt", "the weights").ok());
  auto bytes = ReadVerifiedFile(dir_, ChecksumOf("weights.pt", "the weights"));
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, "the weights");
}

TEST_F(ChecksumFileTest, AFlippedByteIsNamedWithExpectedAndFound) {
  const FileChecksum expected = ChecksumOf("weights.pt", "the weights");
  ASSERT_TRUE(WriteFileAtomically(dir_ / "weights.pt", "the wEights").ok());
  auto bytes = ReadVerifiedFile(dir_, expected);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), Status::Code::kFailedPrecondition);
  const std::string message = bytes.status().message();
  EXPECT_THAT(message, HasSubstr((dir_ / "weights.pt").string() + ": checksum mismatch"));
  EXPECT_THAT(message, HasSubstr("expected 11 bytes sha256 " + expected.sha256));
  EXPECT_THAT(message, HasSubstr("found 11 bytes sha256 " + Sha256Hex("the wEights")));
}

TEST_F(ChecksumFileTest, TruncatedLongerAndMissingFilesFail) {
  const FileChecksum expected = ChecksumOf("weights.pt", "the weights");
  ASSERT_TRUE(WriteFileAtomically(dir_ / "weights.pt", "the wei").ok());
  auto truncated = ReadVerifiedFile(dir_, expected);
  ASSERT_FALSE(truncated.ok());
  EXPECT_THAT(truncated.status().message(), HasSubstr("found 7 bytes"));

  ASSERT_TRUE(WriteFileAtomically(dir_ / "weights.pt", "the weights and more").ok());
  auto longer = ReadVerifiedFile(dir_, expected);
  ASSERT_FALSE(longer.ok());
  EXPECT_THAT(longer.status().message(), HasSubstr("checksum mismatch"));

  auto missing = ReadVerifiedFile(dir_, ChecksumOf("absent.pt", "x"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace cohort
