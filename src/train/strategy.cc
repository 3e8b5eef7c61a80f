#include "train/strategy.h"

namespace cohort::train {
namespace {

// A sum over one worker is already complete.
class CompletedSum : public PendingSum {
 public:
  Status Wait(std::chrono::milliseconds) override { return Status::OK(); }
};

// A sum that becomes an average once it completes: divides on the thread that waits.
class DividedSum : public PendingSum {
 public:
  DividedSum(std::unique_ptr<PendingSum> sum, float* data, size_t count, int divisor)
      : sum_(std::move(sum)), data_(data), count_(count), divisor_(divisor) {}
  Status Wait(std::chrono::milliseconds timeout) override {
    COHORT_RETURN_IF_ERROR(sum_->Wait(timeout));
    const float divisor = static_cast<float>(divisor_);
    for (size_t i = 0; i < count_; ++i) data_[i] /= divisor;
    return Status::OK();
  }

 private:
  std::unique_ptr<PendingSum> sum_;
  float* data_;
  size_t count_;
  int divisor_;
};

}  // namespace

StatusOr<std::unique_ptr<PendingSum>> Strategy::StartAverage(float* data, size_t count) {
  auto sum = StartSum(data, count);
  if (!sum.ok()) return sum.status();
  if (num_workers() == 1) return sum;
  return std::unique_ptr<PendingSum>(
      std::make_unique<DividedSum>(std::move(sum).value(), data, count, num_workers()));
}

StatusOr<std::unique_ptr<PendingSum>> SingleProcessStrategy::StartSum(float*, size_t) {
  return std::unique_ptr<PendingSum>(std::make_unique<CompletedSum>());
}

StatusOr<std::unique_ptr<PendingSum>> SingleProcessStrategy::StartSum16(uint16_t*, size_t,
                                                                        collective::DataType) {
  return std::unique_ptr<PendingSum>(std::make_unique<CompletedSum>());
}

}  // namespace cohort::train
