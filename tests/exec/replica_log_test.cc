// A replica's log with a bound: rotation keeps the start, the last files and the current one.
#include "exec/replica_log.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "testing/scratch_directory.h"

namespace cohort::exec {
namespace {

std::string Read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ReplicaLogTest, RotatesAtTheBoundKeepingTheStartAndTheLastFiles) {
  testing::ScratchDirectory scratch("replica-log");
  const std::filesystem::path path = scratch.path() / "worker-0.log";
  StatusOr<ReplicaLog> log = ReplicaLog::Open(path, LogRotation{.max_bytes = 4096, .max_files = 2});
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  std::string written;
  for (int i = 0; i < 2000; ++i) {
    const std::string line = "line " + std::to_string(i) + "\n";
    ASSERT_TRUE(log->Append(line).ok());
    written += line;
  }
  const std::string start = Read(path.string() + ".start");
  const std::string older = Read(path.string() + ".2");
  const std::string newer = Read(path.string() + ".1");
  const std::string current = Read(path);
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".3"));
  EXPECT_EQ(start.size(), 4096u);
  EXPECT_EQ(older.size(), 4096u);
  EXPECT_EQ(newer.size(), 4096u);
  EXPECT_LE(current.size(), 4096u);
  EXPECT_EQ(log->size(), current.size());
  EXPECT_EQ(start, written.substr(0, 4096));
  EXPECT_EQ(older + newer + current,
            written.substr(written.size() - older.size() - newer.size() - current.size()));
  // A run that began before the rotation begins at the new file's start.
  EXPECT_EQ(log->run_start(), 0u);
  log->BeginRun();
  EXPECT_EQ(log->run_start(), current.size());
}

TEST(ReplicaLogTest, APieceLargerThanAFileIsCutAcrossFiles) {
  testing::ScratchDirectory scratch("replica-log");
  const std::filesystem::path path = scratch.path() / "worker-0.log";
  StatusOr<ReplicaLog> log = ReplicaLog::Open(path, LogRotation{.max_bytes = 4096, .max_files = 0});
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE(log->Append(std::string(10000, 'z')).ok());
  EXPECT_EQ(Read(path.string() + ".start"), std::string(4096, 'z'));
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".1"));
  EXPECT_EQ(Read(path), std::string(10000 - 2 * 4096, 'z'));
}

TEST(ReplicaLogTest, TheBoundsComeFromTheEnvironment) {
  setenv("COHORT_LOG_MAX_BYTES", "8M", 1);
  setenv("COHORT_LOG_MAX_FILES", "5", 1);
  StatusOr<LogRotation> rotation = LogRotation::FromEnvironment();
  ASSERT_TRUE(rotation.ok()) << rotation.status().ToString();
  EXPECT_EQ(rotation->max_bytes, uint64_t{8} << 20);
  EXPECT_EQ(rotation->max_files, 5);
  setenv("COHORT_LOG_MAX_BYTES", "12", 1);
  EXPECT_EQ(LogRotation::FromEnvironment().status().message(),
            "COHORT_LOG_MAX_BYTES=\"12\": must be a size of at least 4096 bytes, e.g. 1048576, "
            "64M or 1G");
  setenv("COHORT_LOG_MAX_BYTES", "1G", 1);
  setenv("COHORT_LOG_MAX_FILES", "x", 1);
  EXPECT_EQ(LogRotation::FromEnvironment().status().message(),
            "COHORT_LOG_MAX_FILES=\"x\": must be a number of files from 0 to 100");
  unsetenv("COHORT_LOG_MAX_BYTES");
  unsetenv("COHORT_LOG_MAX_FILES");
  rotation = LogRotation::FromEnvironment();
  ASSERT_TRUE(rotation.ok());
  EXPECT_EQ(rotation->max_bytes, uint64_t{64} << 20);
  EXPECT_EQ(rotation->max_files, 3);
}

}  // namespace
}  // namespace cohort::exec
