// ThreadGroup: the workers of a data-parallel group as threads of one test process, each with a
// Strategy whose collectives meet in memory. Every sum adds the ranks' buffers in rank order
// (in double) and gives every rank the same bits, as the real collectives do, so that tests of
// what is built on the collectives (PowerSGD, local SGD) can check agreement between ranks bit
// for bit without sockets. Each collective waits for the other ranks at most kWait.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "train/strategy.h"

namespace cohort::train::testing {

class ThreadGroup {
 public:
  static constexpr std::chrono::seconds kWait{30};

  explicit ThreadGroup(int size) : size_(size), arrived_(size, nullptr), counts_(size, 0) {
    for (int rank = 0; rank < size; ++rank) {
      strategies_.push_back(std::make_unique<RankStrategy>(this, rank));
    }
  }

  Strategy* strategy(int rank) { return strategies_[rank].get(); }
  int size() const { return size_; }

  // Runs body(rank) on one thread per rank and joins them all.
  void Run(const std::function<void(int rank)>& body) {
    std::vector<std::thread> threads;
    for (int rank = 0; rank < size_; ++rank) threads.emplace_back(body, rank);
    for (std::thread& thread : threads) thread.join();
  }

 private:
  class Done : public PendingSum {
   public:
    Status Wait(std::chrono::milliseconds) override { return Status::OK(); }
  };

  class RankStrategy : public Strategy {
   public:
    RankStrategy(ThreadGroup* group, int rank) : group_(group), rank_(rank) {}
    std::string name() const override { return "thread-group"; }
    int num_workers() const override { return group_->size_; }
    int rank() const override { return rank_; }
    bool is_chief() const override { return rank_ == 0; }
    int task_index() const override { return rank_; }
    Status Broadcast(std::string* bytes) override {
      std::vector<double> size = {rank_ == 0 ? static_cast<double>(bytes->size()) : 0};
      COHORT_RETURN_IF_ERROR(group_->Sum(rank_, size.data(), 1));
      std::vector<double> chars(static_cast<size_t>(size[0]), 0);
      if (rank_ == 0) {
        for (size_t i = 0; i < chars.size(); ++i)
          chars[i] = static_cast<unsigned char>((*bytes)[i]);
      }
      COHORT_RETURN_IF_ERROR(group_->Sum(rank_, chars.data(), chars.size()));
      bytes->resize(chars.size());
      for (size_t i = 0; i < chars.size(); ++i) (*bytes)[i] = static_cast<char>(chars[i]);
      return Status::OK();
    }
    Status SumAcrossWorkers(std::vector<double>* values) override {
      return group_->Sum(rank_, values->data(), values->size());
    }
    StatusOr<std::unique_ptr<PendingSum>> StartSum(float* data, size_t count) override {
      std::vector<double> values(data, data + count);
      COHORT_RETURN_IF_ERROR(group_->Sum(rank_, values.data(), count));
      for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>(values[i]);
      return std::unique_ptr<PendingSum>(std::make_unique<Done>());
    }
    StatusOr<std::unique_ptr<PendingSum>> StartSum16(uint16_t*, size_t,
                                                     collective::DataType) override {
      return Status::InvalidArgument("the thread group sums float32 and float64 only");
    }
    Status Barrier() override {
      double nothing = 0;
      return group_->Sum(rank_, &nothing, 1);
    }

   private:
    ThreadGroup* group_;
    int rank_;
  };

  // Adds every rank's values[0, count) in rank order and gives each rank the result.
  Status Sum(int rank, double* values, size_t count) {
    std::unique_lock lock(mutex_);
    const uint64_t generation = generation_;
    arrived_[rank] = values;
    counts_[rank] = count;
    if (++waiting_ == size_) {
      std::vector<double> total(count, 0.0);
      for (int r = 0; r < size_; ++r) {
        if (counts_[r] != count) {
          failure_ = "ranks summed different sizes";
        } else {
          for (size_t i = 0; i < count; ++i) total[i] += arrived_[r][i];
        }
      }
      for (int r = 0; r < size_; ++r) {
        if (counts_[r] == count) std::memcpy(arrived_[r], total.data(), count * sizeof(double));
      }
      waiting_ = 0;
      ++generation_;
      changed_.notify_all();
    } else if (!changed_.wait_for(lock, kWait, [&] { return generation_ != generation; })) {
      return Status::DeadlineExceeded("rank " + std::to_string(rank) +
                                      " waited 30 s for the other ranks' sum");
    }
    if (!failure_.empty()) return Status::Internal(failure_);
    return Status::OK();
  }

  const int size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t generation_ = 0;
  int waiting_ = 0;
  std::vector<double*> arrived_;
  std::vector<size_t> counts_;
  std::string failure_;
  std::vector<std::unique_ptr<RankStrategy>> strategies_;
};

}  // namespace cohort::train::testing
