// JobStore's files: the job directory as the name's claim.
#include "exec/job_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "exec_test_support.h"

namespace cohort::exec {
namespace {

using ::testing::HasSubstr;

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
