#include "base/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace cohort {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.code(), Status::Code::kOk);
  EXPECT_EQ(status.ToString(), "OK");
  EXPECT_TRUE(Status::OK().ok());
}

TEST(StatusTest, EachConstructorKeepsItsCodeAndMessage) {
  struct Case {
    Status status;
    Status::Code code;
    const char* text;
  };
  const Case cases[] = {
      {Status::InvalidArgument("m"), Status::Code::kInvalidArgument, "invalid argument: m"},
      {Status::NotFound("m"), Status::Code::kNotFound, "not found: m"},
      {Status::AlreadyExists("m"), Status::Code::kAlreadyExists, "already exists: m"},
      {Status::FailedPrecondition("m"), Status::Code::kFailedPrecondition,
       "failed precondition: m"},
      {Status::Unavailable("m"), Status::Code::kUnavailable, "unavailable: m"},
      {Status::DeadlineExceeded("m"), Status::Code::kDeadlineExceeded, "deadline exceeded: m"},
      {Status::IOError("m"), Status::Code::kIOError, "I/O error: m"},
      {Status::Internal("m"), Status::Code::kInternal, "internal error: m"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(c.status.ok()) << c.text;
    EXPECT_EQ(c.status.code(), c.code) << c.text;
    EXPECT_EQ(c.status.message(), "m");
    EXPECT_EQ(c.status.ToString(), c.text);
  }
}

TEST(StatusTest, WithContextPrefixesTheMessageAndLeavesOkAlone) {
  Status status = Status::NotFound("job.yaml").WithContext("reading the spec");
  EXPECT_EQ(status.code(), Status::Code::kNotFound);
  EXPECT_EQ(status.message(), "reading the spec: job.yaml");
  EXPECT_TRUE(Status::OK().WithContext("anything").ok());
  EXPECT_EQ(Status::OK().WithContext("anything").message(), "");
}

TEST(StatusOrTest, HoldsAValue) {
  StatusOr<std::string> value = std::string("cohort");
  ASSERT_TRUE(value.ok());
  EXPECT_TRUE(value.status().ok());
  EXPECT_EQ(*value, "cohort");
  EXPECT_EQ(value->size(), 6u);
  EXPECT_EQ(value.value(), "cohort");
  std::string moved = std::move(value).value();
  EXPECT_EQ(moved, "cohort");
}

TEST(StatusOrTest, HoldsAnErrorInstead) {
  StatusOr<int> error = Status::Unavailable("peer worker-1 is gone");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.status().code(), Status::Code::kUnavailable);
  EXPECT_EQ(error.status().message(), "peer worker-1 is gone");
}

TEST(StatusOrTest, HoldsAMoveOnlyValue) {
  StatusOr<std::unique_ptr<int>> pointer = std::make_unique<int>(7);
  ASSERT_TRUE(pointer.ok());
  std::unique_ptr<int> taken = std::move(*pointer);
  EXPECT_EQ(*taken, 7);
}

Status FailsAt(int step, int* reached) {
  for (int i = 0; i < 3; ++i) {
    COHORT_RETURN_IF_ERROR(i == step ? Status::IOError("step " + std::to_string(i)) : Status::OK());
    *reached = i;
  }
  return Status::OK();
}

TEST(StatusTest, ReturnIfErrorStopsAtTheFirstError) {
  int reached = -1;
  Status status = FailsAt(1, &reached);
  EXPECT_EQ(status.ToString(), "I/O error: step 1");
  EXPECT_EQ(reached, 0);
  reached = -1;
  EXPECT_TRUE(FailsAt(5, &reached).ok());
  EXPECT_EQ(reached, 2);
}

}  // namespace
}  // namespace cohort
