// InProcessConnectionSet: a second implementation of the transport seam (net/connection_set.h),
// for tests: the ranks are threads of one process and messages are copied through queues in
// memory. The collectives run over it unchanged, which is what the seam promises: no algorithm
// knows which transport it runs on.
//
//   auto group = std::make_shared<InProcessGroup>(4);
//   // in thread r:
//   auto communicator = Communicator::Create(
//       std::make_shared<InProcessConnectionSet>(group, r), options);
//
// It keeps the contract of connection_set.h that algorithms rely on: messages between two ranks in
// order, each checked against its posted receive (tag, and size or capacity), every wait bounded
// by the exchange's deadline, and the first failure recorded for the whole group and returned by
// every later wait. Sends are eager (copied at once), so they complete when posted. It has no
// same-host memory capability, so the Communicator keeps to its message-passing algorithms.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/connection_set.h"

namespace cohort::collective {

// What the ranks of one in-process group share.
class InProcessGroup {
 public:
  explicit InProcessGroup(int size)
      : size_(size),
        queues_(static_cast<size_t>(size) * size),
        bytes_sent_(static_cast<size_t>(size) * size, 0) {}

  int size() const { return size_; }

 private:
  friend class InProcessConnectionSet;
  friend class InProcessExchange;

  struct Message {
    uint64_t tag;
    std::vector<uint8_t> bytes;
  };

  std::deque<Message>& Queue(int from, int to) {
    return queues_[static_cast<size_t>(from) * size_ + to];
  }

  const int size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::deque<Message>> queues_;  // by (from, to)
  std::vector<uint64_t> bytes_sent_;         // by (from, to)
  Status failure_;                           // the first failure of the group
};

class InProcessExchange : public net::PeerExchange {
 public:
  InProcessExchange(std::shared_ptr<InProcessGroup> group, int rank, std::vector<int> peers,
                    uint64_t tag, std::string description, net::Deadline deadline,
                    const std::vector<std::string>* names)
      : group_(std::move(group)),
        rank_(rank),
        peers_(std::move(peers)),
        tag_(tag),
        description_(std::move(description)),
        deadline_(deadline),
        names_(names),
        posted_(group_->size()),
        sent_(group_->size(), 0),
        received_(group_->size(), 0) {
    std::lock_guard<std::mutex> lock(group_->mutex_);
    initial_status_ = group_->failure_.WithContext(description_);
  }

  Status status() const override { return initial_status_; }

  void Send(int peer, const void* data, size_t size) override {
    std::lock_guard<std::mutex> lock(group_->mutex_);
    const auto* bytes = static_cast<const uint8_t*>(data);
    group_->Queue(rank_, peer).push_back({tag_, std::vector<uint8_t>(bytes, bytes + size)});
    group_->bytes_sent_[static_cast<size_t>(rank_) * group_->size() + peer] += size;
    ++sent_[peer];
    group_->changed_.notify_all();
  }

  void Receive(int peer, void* buffer, size_t size) override {
    posted_[peer].push_back({static_cast<uint8_t*>(buffer), size, nullptr});
  }

  void ReceiveAtMost(int peer, void* buffer, size_t capacity, uint32_t* received_size) override {
    posted_[peer].push_back({static_cast<uint8_t*>(buffer), capacity, received_size});
  }

  uint64_t sends_completed(int peer) const override { return sent_[peer]; }
  uint64_t receives_completed(int peer) const override { return received_[peer]; }

  Status WaitForReceives(int peer, uint64_t count) override {
    return WaitUntil([&] { return received_[peer] >= count; });
  }
  Status WaitForSends(int peer, uint64_t count) override {
    return WaitUntil([&] { return sent_[peer] >= count; });
  }
  Status Finish() override {
    return WaitUntil([&] {
      for (int peer : peers_) {
        if (!posted_[peer].empty()) return false;
      }
      return true;
    });
  }
  Status Service() override {
    std::unique_lock<std::mutex> lock(group_->mutex_);
    return DeliverLocked();
  }

  Status ReadPeerMemory(int peer, uint64_t, void*, size_t) override {
    return Fail(Status::FailedPrecondition("an in-process group cannot read the memory of " +
                                           (*names_)[peer]));
  }

  Status Fail(const Status& failure, const std::string& peer_report = "") override {
    std::lock_guard<std::mutex> lock(group_->mutex_);
    return FailLocked(failure);
  }

 private:
  struct Posted {
    uint8_t* buffer;
    size_t capacity;
    uint32_t* received_size;  // null: exactly `capacity` bytes
  };

  Status FailLocked(const Status& failure) {
    if (group_->failure_.ok()) group_->failure_ = failure;
    group_->changed_.notify_all();
    return group_->failure_.WithContext(description_);
  }

  // Moves every queued message that has a posted receive into it, checking tag and size.
  Status DeliverLocked() {
    if (!group_->failure_.ok()) return group_->failure_.WithContext(description_);
    for (int peer : peers_) {
      std::deque<InProcessGroup::Message>& queue = group_->Queue(peer, rank_);
      while (!posted_[peer].empty() && !queue.empty()) {
        const InProcessGroup::Message& message = queue.front();
        const Posted& posted = posted_[peer].front();
        if (message.tag != tag_) {
          return FailLocked(Status::FailedPrecondition(
              (*names_)[peer] + " sent a message of operation tag " + std::to_string(message.tag) +
              " where tag " + std::to_string(tag_) + " was expected: the tasks are out of step"));
        }
        const bool fits = posted.received_size != nullptr ? message.bytes.size() <= posted.capacity
                                                          : message.bytes.size() == posted.capacity;
        if (!fits) {
          return FailLocked(Status::FailedPrecondition(
              (*names_)[peer] + " sent " + std::to_string(message.bytes.size()) + " bytes where " +
              std::to_string(posted.capacity) + " were expected"));
        }
        if (!message.bytes.empty()) {
          std::memcpy(posted.buffer, message.bytes.data(), message.bytes.size());
        }
        if (posted.received_size != nullptr) {
          *posted.received_size = static_cast<uint32_t>(message.bytes.size());
        }
        queue.pop_front();
        posted_[peer].pop_front();
        ++received_[peer];
      }
    }
    return Status::OK();
  }

  template <typename Done>
  Status WaitUntil(Done done) {
    std::unique_lock<std::mutex> lock(group_->mutex_);
    while (true) {
      COHORT_RETURN_IF_ERROR(DeliverLocked());
      if (done()) return Status::OK();
      if (deadline_.Expired()) {
        return FailLocked(Status::DeadlineExceeded("did not finish within its deadline"));
      }
      if (deadline_.IsNever()) {
        group_->changed_.wait(lock);
      } else {
        group_->changed_.wait_until(lock, deadline_.time());
      }
    }
  }

  const std::shared_ptr<InProcessGroup> group_;
  const int rank_;
  const std::vector<int> peers_;
  const uint64_t tag_;
  const std::string description_;
  const net::Deadline deadline_;
  const std::vector<std::string>* const names_;
  std::vector<std::deque<Posted>> posted_;  // by peer, in order
  std::vector<uint64_t> sent_;              // by peer
  std::vector<uint64_t> received_;          // by peer
  Status initial_status_;
};

class InProcessConnectionSet : public net::ConnectionSet {
 public:
  InProcessConnectionSet(std::shared_ptr<InProcessGroup> group, int rank)
      : group_(std::move(group)), rank_(rank) {
    for (int peer = 0; peer < group_->size(); ++peer) {
      names_.push_back("thread:" + std::to_string(peer));
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  const std::string& PeerName(int rank) const override { return names_[rank]; }
  // One process: one host.
  const std::string& HostIdentity(int) const override { return host_; }
  size_t MaxMessageBytes() const override { return size_t{64} << 20; }
  Status health() const override {
    std::lock_guard<std::mutex> lock(group_->mutex_);
    return group_->failure_;
  }
  uint64_t DataBytesSent() const override {
    uint64_t bytes = 0;
    for (int peer = 0; peer < size(); ++peer) bytes += DataBytesSentTo(peer);
    return bytes;
  }
  uint64_t DataBytesSentTo(int rank) const override {
    std::lock_guard<std::mutex> lock(group_->mutex_);
    return group_->bytes_sent_[static_cast<size_t>(rank_) * group_->size() + rank];
  }
  std::unique_ptr<net::PeerExchange> OpenExchange(std::vector<int> peers, uint64_t tag,
                                                  std::string description,
                                                  net::Deadline deadline) override {
    return std::make_unique<InProcessExchange>(group_, rank_, std::move(peers), tag,
                                               std::move(description), deadline, &names_);
  }

 private:
  const std::shared_ptr<InProcessGroup> group_;
  const int rank_;
  std::vector<std::string> names_;
  const std::string host_ = "in-process";
};

}  // namespace cohort::collective
