// Connection: the authenticated byte stream to one peer, cut into frames.
//
// A connection has no thread of its own. Whoever owns it at the moment drives it: the Exchange of
// the collective operation that is running, or the transport's monitor thread between operations
// (to send heartbeats and notice a dead peer while the training loop computes). The owner holds
// io_mutex() while it touches anything below; Pump() never blocks.
//
// Data frames are matched, in order, with receives posted by the owner: the n-th data frame from
// the peer lands in the n-th posted buffer. A data frame that arrives before its receive is posted
// is left in the socket: reading it then would cost a copy into a temporary buffer, while leaving
// it there lets TCP flow control hold the sender back for free.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "base/status.h"
#include "net/deadline.h"
#include "net/frame.h"
#include "net/same_host.h"
#include "net/socket.h"

namespace cohort::net {

class Connection {
 public:
  enum class State {
    kOpen,
    kDeparted,  // the peer said goodbye: it sends nothing more, and that is not a failure
    kBroken,    // an I/O or protocol error; the transport has recorded why
  };

  Connection(int peer_rank, std::string peer_name, Socket socket, ProcessIdentity peer_process,
             bool can_read_peer_memory);

  int peer_rank() const { return peer_rank_; }
  // "worker:2 (localhost:23456)": every error about this peer uses this name.
  const std::string& peer_name() const { return peer_name_; }
  int fd() const { return socket_.fd(); }
  const ProcessIdentity& peer_process() const { return peer_process_; }
  bool can_read_peer_memory() const { return can_read_peer_memory_; }

  std::mutex& io_mutex() { return io_mutex_; }
  // How many Exchanges hold or wait for io_mutex. The monitor leaves claimed connections alone
  // and keeps their sockets out of its poll set, so it never competes for their bytes.
  std::atomic<int>& claims() { return claims_; }

  // Payload bytes of the data frames sent in full so far; readable without io_mutex.
  uint64_t data_bytes_sent() const { return data_bytes_sent_.load(std::memory_order_relaxed); }

  // ---- Everything below requires io_mutex. ----

  State state() const { return state_; }

  // Queues a data frame. `payload` is borrowed: it must stay valid and unchanged until
  // data_frames_sent() counts this frame, or until AbandonTransfers().
  void QueueData(uint64_t tag, const void* payload, uint32_t size);
  // Queues a control frame (heartbeat, failure notice, goodbye); the payload is copied.
  void QueueControl(FrameType type, std::string payload);
  // Queues the notice of a failure found by this task, once per connection, unless the peer is
  // gone or departed. `peer_report` is the failure as a peer report (cluster/peer_report.h), or
  // empty when it names no peer.
  void QueueFailureNotice(const std::string& failure, const std::string& peer_report);
  bool HasOutgoing() const { return !outgoing_.empty(); }
  uint64_t data_frames_sent() const { return data_frames_sent_; }

  // Posts a buffer for the next data frame, which must carry `tag` and exactly `size` bytes; or,
  // when `received_size` is given, at most `size` bytes, whose number is stored there once the
  // frame has arrived.
  void PostReceive(uint64_t tag, void* buffer, uint32_t size, uint32_t* received_size = nullptr);
  uint64_t data_frames_received() const { return data_frames_received_; }

  // Moves every byte the socket takes or has without blocking. A data frame with no posted
  // receive stops the reading, unless `discard_unclaimed_data` (the transport has failed and no
  // operation will ever claim it). Errors name the peer. A failure notice from the peer comes back
  // as an Unavailable status carrying the notice, which the caller records like any other failure.
  Status Pump(bool discard_unclaimed_data);

  // The poll() events this connection is waiting for.
  short PollEvents(bool discard_unclaimed_data) const;

  // True while a data frame sits unread at the head of the stream for want of a posted receive.
  bool BlockedOnUnclaimedData() const;

  // Queues a heartbeat if nothing was sent for `interval` and the stream is at a frame boundary.
  // Returns when the next heartbeat may be due.
  SteadyClock::time_point MaybeQueueHeartbeat(SteadyClock::time_point now,
                                              std::chrono::nanoseconds interval);

  // Unavailable when nothing has been heard from the peer for `timeout` although this side is
  // able to listen (it is not stopped at an unclaimed data frame, and the peer has not departed).
  Status CheckLiveness(SteadyClock::time_point now, std::chrono::nanoseconds timeout) const;
  SteadyClock::time_point last_heard() const { return last_heard_; }

  // Called when an operation ends before its transfers did: drops queued data frames and posted
  // receives, finishes a half-written frame with zeros (the user's buffer may be gone) and skips
  // the rest of a half-read one, so that the stream is back at a frame boundary and control frames
  // can still flow.
  void AbandonTransfers();

  // Records that the connection is unusable (the caller reports why to the transport).
  void MarkBroken() { state_ = State::kBroken; }

  // True when the last error Pump() returned was a failure notice sent by the peer (which the
  // peer has already sent to every task), rather than a failure found here.
  bool received_failure_notice() const { return received_failure_notice_; }
  // The peer report that notice carried ("peer worker:1 hung (...)"), or empty.
  const std::string& received_peer_report() const { return received_peer_report_; }

  // For shutdown: stops this side's writing (the peer sees the end of the stream) ...
  void ShutdownWriting();
  // ... and reads and drops whatever arrives. Returns true once the peer ended its side too (or
  // the connection broke), false when it would have to wait. Closing a socket with unread bytes
  // makes the kernel reset the connection, and a reset destroys bytes the peer has not read yet,
  // such as this task's goodbye; draining first avoids that.
  bool DiscardIncoming();

 private:
  struct OutgoingFrame {
    uint8_t header[kFrameHeaderSize];
    const uint8_t* payload = nullptr;  // borrowed (data) or points into `owned_payload`
    uint32_t payload_size = 0;
    bool is_data = false;
    bool zero_payload = false;  // abandoned: the rest of the payload is sent as zeros
    std::string owned_payload;
  };
  struct PostedReceive {
    uint64_t tag;
    uint8_t* buffer;
    uint32_t size;
    uint32_t* received_size;  // null: the frame must be exactly `size` bytes
  };

  Status PumpWrites();
  Status PumpReads(bool discard_unclaimed_data);
  // Reads into up to two buffers; returns bytes read, 0 when it would block, or an error.
  StatusOr<size_t> ReadSome(void* first, size_t first_size, void* second, size_t second_size);
  Status HandleControlFrame();
  std::string Describe(const std::string& what) const { return peer_name_ + " " + what; }

  const int peer_rank_;
  const std::string peer_name_;
  Socket socket_;
  const ProcessIdentity peer_process_;
  const bool can_read_peer_memory_;
  std::mutex io_mutex_;
  std::atomic<int> claims_{0};

  State state_ = State::kOpen;

  std::deque<OutgoingFrame> outgoing_;
  size_t front_written_ = 0;  // bytes of outgoing_.front() already written, header included
  uint64_t data_frames_sent_ = 0;
  std::atomic<uint64_t> data_bytes_sent_{0};
  SteadyClock::time_point last_sent_;

  std::deque<PostedReceive> receives_;
  uint64_t data_frames_received_ = 0;
  uint8_t header_bytes_[kFrameHeaderSize];
  size_t header_filled_ = 0;
  bool in_frame_ = false;  // header decoded, payload not yet fully read
  FrameHeader frame_;
  size_t payload_done_ = 0;
  std::string control_payload_;
  size_t discard_left_ = 0;  // payload bytes of an abandoned frame still to skip
  // The peer sent something malformed or out of step: its stream can no longer be read, but it
  // may still be written to (a failure notice, the goodbye), since the peer itself is alive.
  bool reading_stopped_ = false;
  bool received_failure_notice_ = false;
  std::string received_peer_report_;
  bool failure_notice_queued_ = false;
  SteadyClock::time_point last_heard_;
};

}  // namespace cohort::net
