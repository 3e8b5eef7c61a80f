// cohort/status.h: errors keep their code, and cohort::Main turns what a program throws into the
// exit code job control acts on.
#include "cohort/status.h"

#include <gtest/gtest.h>
#include <torch/types.h>

namespace cohort {
namespace {

TEST(Status, ErrorKeepsItsCodeAndMessage) {
  const Error error(ErrorCode::kInvalidArgument, "per_worker_batch must be at least 1");
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_STREQ(error.what(), "per_worker_batch must be at least 1");
  EXPECT_FALSE(error.retryable());
  EXPECT_TRUE(Error(ErrorCode::kUnavailable, "peer died").retryable());
  EXPECT_TRUE(Error(ErrorCode::kDeadlineExceeded, "peer hung").retryable());
  EXPECT_FALSE(Error(ErrorCode::kIOError, "disk full").retryable());
}

TEST(Status, MainReturnsTheExitCodeJobControlExpects) {
  EXPECT_EQ(Main([] {}), kExitOk);
  EXPECT_EQ(Main([] { throw Error(ErrorCode::kUnavailable, "worker:1 died"); }), kExitRetryable);
  EXPECT_EQ(Main([] { throw Error(ErrorCode::kDeadlineExceeded, "worker:1 hung"); }),
            kExitRetryable);
  EXPECT_EQ(Main([] { throw Error(ErrorCode::kIOError, "/full: No space left on device"); }),
            kExitIOError);
  EXPECT_EQ(Main([] { throw Error(ErrorCode::kInvalidArgument, "bad"); }), kExitFailed);
  EXPECT_EQ(Main([] { torch::ones({2}).view({3}); }), kExitFailed);  // a c10::Error
  EXPECT_EQ(Main([] { throw std::runtime_error("anything"); }), kExitFailed);
}

TEST(Status, MainNamesTheErrorOnStderr) {
  ::testing::internal::CaptureStderr();
  Main([] { throw Error(ErrorCode::kUnavailable, "peer worker:2 died"); });
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(printed.find("error: peer worker:2 died"), std::string::npos) << printed;
  EXPECT_NE(printed.find("exiting with 138"), std::string::npos) << printed;
}

}  // namespace
}  // namespace cohort
