// JobStore's files: whole-file replacement and the job directory as the name's claim.
#include "exec/job_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "exec_test_support.h"

namespace cohort::exec {
namespace {

using ::testing::HasSubstr;

TEST(WriteFileAtomicallyTest, ReplacesTheWholeContents) {
  ScratchDirectory directory;
  std::filesystem::path path = directory.path() / "status.json";
  ASSERT_TRUE(WriteFileAtomically(path, std::string(10000, 'x')).ok());
  ASSERT_TRUE(WriteFileAtomically(path, "short\n").ok());
  StatusOr<std::string> contents = ReadFile(path);
  ASSERT_TRUE(contents.ok());
  EXPECT_EQ(*contents, "short\n");  // nothing of the longer old file is left
  // No temporary file stays behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(directory.path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST(WriteFileAtomicallyTest, AFailedWriteLeavesTheOldFile) {
  ScratchDirectory directory;
  std::filesystem::path path = directory.path() / "status.json";
  ASSERT_TRUE(WriteFileAtomically(path, "old\n").ok());
  // The temporary file cannot be created where a directory of that name stands.
  std::filesystem::path temporary = path;
  temporary += ".tmp." + std::to_string(getpid());
  std::filesystem::create_directory(temporary);
  Status status = WriteFileAtomically(path, "new\n");
  EXPECT_EQ(status.code(), Status::Code::kIOError) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr(temporary.string()));
  StatusOr<std::string> contents = ReadFile(path);
  ASSERT_TRUE(contents.ok());
  EXPECT_EQ(*contents, "old\n");
}

// A secret is created with its final permissions, even where a killed writer left a temporary
// file of the same name with wider ones.
TEST(WriteFileAtomicallyTest, CreatesTheFileWithTheGivenPermissions) {
  ScratchDirectory directory;
  std::filesystem::path path = directory.path() / "secret";
  std::filesystem::path temporary = path;
  temporary += ".tmp." + std::to_string(getpid());
  std::ofstream(temporary) << "left behind";
  chmod(temporary.c_str(), 0644);
  ASSERT_TRUE(WriteFileAtomically(path, "s3cret", 0600).ok());
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_EQ(*ReadFile(path), "s3cret");
}

TEST(JobStoreTest, ASecondJobOfTheSameNameIsRefused) {
  ScratchDirectory home;
  JobStore store(home.path());
  job::Job job = ShellJob("twice", 1, "exit 0");
  SupervisorLock first;
  ASSERT_TRUE(store.CreateJob(job, &first).ok());
  SupervisorLock second;
  Status again = store.CreateJob(job, &second);
  EXPECT_EQ(again.code(), Status::Code::kAlreadyExists);
  EXPECT_THAT(again.message(), HasSubstr("cohort delete twice"));
  EXPECT_FALSE(second.held());
  ASSERT_EQ(store.ListJobs().size(), 1u);
  EXPECT_EQ(store.ListJobs()[0].name, "twice");
}

}  // namespace
}  // namespace cohort::exec
