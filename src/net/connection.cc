#include "net/connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace cohort::net {
namespace {

// Source of the zeros that finish an abandoned frame, and sink for skipped payload bytes.
constexpr size_t kScratchSize = 64 * 1024;
const uint8_t kZeros[kScratchSize] = {};
thread_local uint8_t discard_sink[kScratchSize];

// At most this many frames go into one sendmsg(), so that small frames share a system call.
constexpr int kMaxWriteVector = 64;

}  // namespace

Connection::Connection(int peer_rank, std::string peer_name, Socket socket,
                       ProcessIdentity peer_process, bool can_read_peer_memory)
    : peer_rank_(peer_rank),
      peer_name_(std::move(peer_name)),
      socket_(std::move(socket)),
      peer_process_(std::move(peer_process)),
      can_read_peer_memory_(can_read_peer_memory),
      last_sent_(SteadyClock::now()),
      last_heard_(SteadyClock::now()) {}

void Connection::QueueData(uint64_t tag, const void* payload, uint32_t size) {
  OutgoingFrame& frame = outgoing_.emplace_back();
  EncodeFrameHeader({FrameType::kData, tag, size}, frame.header);
  frame.payload = static_cast<const uint8_t*>(payload);
  frame.payload_size = size;
  frame.is_data = true;
}

void Connection::QueueControl(FrameType type, std::string payload) {
  OutgoingFrame& frame = outgoing_.emplace_back();
  frame.owned_payload = std::move(payload);
  EncodeFrameHeader({type, 0, static_cast<uint32_t>(frame.owned_payload.size())}, frame.header);
  frame.payload = reinterpret_cast<const uint8_t*>(frame.owned_payload.data());
  frame.payload_size = static_cast<uint32_t>(frame.owned_payload.size());
}

void Connection::QueueFailureNotice(const std::string& failure, const std::string& peer_report) {
  if (failure_notice_queued_ || state_ != State::kOpen) return;
  failure_notice_queued_ = true;
  // Both strings fit the control frame's bound (2 + 2 bytes of lengths): the report first, since
  // job control reads it, then as much of the failure as is left.
  const std::string report = peer_report.substr(0, kMaxControlPayload / 2);
  WireWriter notice;
  notice.String(failure.substr(0, kMaxControlPayload - 4 - report.size()));
  notice.String(report);
  QueueControl(FrameType::kPeerFailed, notice.bytes());
}

void Connection::PostReceive(uint64_t tag, void* buffer, uint32_t size, uint32_t* received_size) {
  receives_.push_back({tag, static_cast<uint8_t*>(buffer), size, received_size});
}

Status Connection::Pump(bool discard_unclaimed_data) {
  if (state_ == State::kBroken) return Status::OK();
  COHORT_RETURN_IF_ERROR(PumpWrites());
  return PumpReads(discard_unclaimed_data);
}

short Connection::PollEvents(bool discard_unclaimed_data) const {
  if (state_ == State::kBroken) return 0;
  short events = 0;
  if (!outgoing_.empty()) events |= POLLOUT;
  bool blocked = BlockedOnUnclaimedData() && !discard_unclaimed_data;
  if (state_ == State::kOpen && !blocked && !reading_stopped_) events |= POLLIN;
  return events;
}

bool Connection::BlockedOnUnclaimedData() const {
  return in_frame_ && frame_.type == FrameType::kData && receives_.empty();
}

Status Connection::PumpWrites() {
  if (state_ != State::kOpen) {
    outgoing_.clear();  // the peer left; it reads nothing more
    front_written_ = 0;
    return Status::OK();
  }
  while (!outgoing_.empty()) {
    iovec parts[2 * kMaxWriteVector];
    int count = 0;
    size_t skip = front_written_;
    for (size_t i = 0; i < outgoing_.size() && i < kMaxWriteVector; ++i) {
      const OutgoingFrame& frame = outgoing_[i];
      if (skip < kFrameHeaderSize) {
        parts[count++] = {const_cast<uint8_t*>(frame.header) + skip, kFrameHeaderSize - skip};
        skip = 0;
      } else {
        skip -= kFrameHeaderSize;
      }
      size_t payload_left = frame.payload_size - skip;
      if (payload_left > 0) {
        if (frame.zero_payload) {
          parts[count++] = {const_cast<uint8_t*>(kZeros), std::min(payload_left, kScratchSize)};
          break;  // the zeros may not cover the whole payload; write them before going on
        }
        parts[count++] = {const_cast<uint8_t*>(frame.payload) + skip, payload_left};
      }
      skip = 0;
    }
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = static_cast<size_t>(count);
    ssize_t written = sendmsg(socket_.fd(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::OK();
      state_ = State::kBroken;
      return Status::Unavailable(
          Describe("is unreachable: sending failed (" + ErrnoMessage(errno) +
                   "); the process exited or was killed, or the network failed"));
    }
    last_sent_ = SteadyClock::now();
    size_t left = static_cast<size_t>(written);
    while (left > 0 || (!outgoing_.empty() &&
                        front_written_ == kFrameHeaderSize + outgoing_.front().payload_size)) {
      OutgoingFrame& frame = outgoing_.front();
      size_t frame_size = kFrameHeaderSize + frame.payload_size;
      size_t step = std::min(left, frame_size - front_written_);
      front_written_ += step;
      left -= step;
      if (front_written_ == frame_size) {
        if (frame.is_data) {
          ++data_frames_sent_;
          data_bytes_sent_.fetch_add(frame.payload_size, std::memory_order_relaxed);
        }
        outgoing_.pop_front();
        front_written_ = 0;
      }
    }
  }
  return Status::OK();
}

StatusOr<size_t> Connection::ReadSome(void* first, size_t first_size, void* second,
                                      size_t second_size) {
  iovec parts[2] = {{first, first_size}, {second, second_size}};
  msghdr message{};
  message.msg_iov = parts;
  message.msg_iovlen = second_size > 0 ? 2 : 1;
  while (true) {
    ssize_t received = recvmsg(socket_.fd(), &message, MSG_DONTWAIT);
    if (received > 0) {
      last_heard_ = SteadyClock::now();
      return static_cast<size_t>(received);
    }
    if (received == 0) {
      state_ = State::kBroken;
      return Status::Unavailable(
          Describe("closed the connection without saying goodbye: the process exited or was "
                   "killed"));
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return size_t{0};
    state_ = State::kBroken;
    return Status::Unavailable(Describe("is unreachable: receiving failed (" + ErrnoMessage(errno) +
                                        "); the process exited or was killed, or the network "
                                        "failed"));
  }
}

Status Connection::PumpReads(bool discard_unclaimed_data) {
  received_failure_notice_ = false;
  while (state_ == State::kOpen && !reading_stopped_) {
    if (discard_left_ > 0) {
      auto got = ReadSome(discard_sink, std::min(discard_left_, kScratchSize), nullptr, 0);
      if (!got.ok()) return got.status();
      if (*got == 0) return Status::OK();
      discard_left_ -= *got;
      continue;
    }
    if (!in_frame_) {
      if (header_filled_ < kFrameHeaderSize) {
        auto got =
            ReadSome(header_bytes_ + header_filled_, kFrameHeaderSize - header_filled_, nullptr, 0);
        if (!got.ok()) return got.status();
        if (*got == 0) return Status::OK();
        header_filled_ += *got;
        if (header_filled_ < kFrameHeaderSize) continue;
      }
      header_filled_ = 0;
      auto header = DecodeFrameHeader(header_bytes_);
      if (!header.ok()) {
        reading_stopped_ = true;
        return Status::InvalidArgument(
            Describe("sent a malformed frame (" + header.status().message() + ")"));
      }
      frame_ = *header;
      in_frame_ = true;
      payload_done_ = 0;
      if (frame_.type != FrameType::kData) control_payload_.assign(frame_.payload_size, '\0');
    }

    if (frame_.type != FrameType::kData) {
      if (payload_done_ < frame_.payload_size) {
        auto got = ReadSome(control_payload_.data() + payload_done_,
                            frame_.payload_size - payload_done_, nullptr, 0);
        if (!got.ok()) return got.status();
        if (*got == 0) return Status::OK();
        payload_done_ += *got;
        if (payload_done_ < frame_.payload_size) continue;
      }
      in_frame_ = false;
      COHORT_RETURN_IF_ERROR(HandleControlFrame());
      continue;
    }

    if (receives_.empty()) {
      if (!discard_unclaimed_data) return Status::OK();  // leave it for its operation
      discard_left_ = frame_.payload_size - payload_done_;
      in_frame_ = false;
      continue;
    }
    const PostedReceive& receive = receives_.front();
    if (payload_done_ == 0) {
      if (frame_.tag != receive.tag) {
        reading_stopped_ = true;
        return Status::FailedPrecondition(
            Describe("sent data for another collective operation (tag " +
                     std::to_string(frame_.tag) + ", expected " + std::to_string(receive.tag) +
                     "): the tasks did not call the same collectives in the same order"));
      }
      const bool size_fits = receive.received_size != nullptr ? frame_.payload_size <= receive.size
                                                              : frame_.payload_size == receive.size;
      if (!size_fits) {
        reading_stopped_ = true;
        return Status::FailedPrecondition(Describe(
            "sent " + std::to_string(frame_.payload_size) + " bytes where " +
            (receive.received_size != nullptr ? "at most " : "") + std::to_string(receive.size) +
            " were expected: the tasks called the same collective with different sizes"));
      }
    }
    size_t payload_left = frame_.payload_size - payload_done_;
    if (payload_left > 0) {
      // Reads the next frame's header in the same system call, when it is already there.
      auto got =
          ReadSome(receive.buffer + payload_done_, payload_left, header_bytes_, kFrameHeaderSize);
      if (!got.ok()) return got.status();
      if (*got == 0) return Status::OK();
      size_t into_payload = std::min(*got, payload_left);
      payload_done_ += into_payload;
      header_filled_ = *got - into_payload;
      if (payload_done_ < frame_.payload_size) continue;
    }
    if (receive.received_size != nullptr) *receive.received_size = frame_.payload_size;
    receives_.pop_front();
    ++data_frames_received_;
    in_frame_ = false;
  }
  return Status::OK();
}

Status Connection::HandleControlFrame() {
  switch (frame_.type) {
    case FrameType::kHeartbeat:
      return Status::OK();
    case FrameType::kGoodbye:
      // Nothing more goes to a task that left. Shutting down this side's writing acknowledges the
      // goodbye: the departing task waits for that before it closes (see Transport::SayGoodbye).
      state_ = State::kDeparted;
      outgoing_.clear();
      front_written_ = 0;
      shutdown(socket_.fd(), SHUT_WR);
      return Status::OK();
    case FrameType::kPeerFailed: {
      // The notice carries the failure as its detector described it; it already names the task
      // that failed, which is usually not this peer.
      WireReader reader(control_payload_);
      std::string failure = reader.String();
      std::string peer_report = reader.String();
      if (!reader.Finish("failure notice").ok()) {
        reading_stopped_ = true;
        return Status::InvalidArgument(Describe("sent a malformed failure notice"));
      }
      received_failure_notice_ = true;
      received_peer_report_ = std::move(peer_report);
      return Status::Unavailable(failure + " (reported by " + peer_name_ + ")");
    }
    default:
      reading_stopped_ = true;
      return Status::InvalidArgument(Describe("sent a " +
                                              FrameTypeName(static_cast<uint8_t>(frame_.type)) +
                                              " frame after the handshake"));
  }
}

SteadyClock::time_point Connection::MaybeQueueHeartbeat(SteadyClock::time_point now,
                                                        std::chrono::nanoseconds interval) {
  if (state_ != State::kOpen) return SteadyClock::time_point::max();
  if (now - last_sent_ >= interval && outgoing_.empty()) {
    QueueControl(FrameType::kHeartbeat, "");
    return now + interval;
  }
  // While a frame is being written, the next heartbeat can only follow it.
  if (!outgoing_.empty()) return now + interval;
  return last_sent_ + interval;
}

Status Connection::CheckLiveness(SteadyClock::time_point now,
                                 std::chrono::nanoseconds timeout) const {
  // Stopped at a data frame nobody has claimed yet, this side hears nothing more, because the
  // peer's heartbeats queue behind that frame (and flow control may hold back the rest of it):
  // the silence is this side's doing, so it says nothing about the peer. Skipping the check does
  // not let a partitioned peer escape detection, for two reasons. No wait depends on the peer's
  // next bytes while the stream is stopped: an operation posts a receive before it waits for
  // data (and posting it clears the stop), and a peer that sent data for a later operation has
  // already received everything this task sends it in the current one, since it finished that. And
  // once a receive is posted the frame is read, which restarts the clock, so a peer that has
  // fallen silent since is found within `timeout` of this task needing it; tasks that needed it
  // earlier found it themselves and told this one.
  if (state_ != State::kOpen || BlockedOnUnclaimedData() || reading_stopped_) {
    return Status::OK();
  }
  if (now - last_heard_ <= timeout) return Status::OK();
  return Status::Unavailable(Describe(
      "sent nothing, not even a heartbeat, for " + FormatSeconds(now - last_heard_) + " (limit " +
      FormatSeconds(timeout) + "): it is hung, overloaded or cut off from this task"));
}

void Connection::ShutdownWriting() { shutdown(socket_.fd(), SHUT_WR); }

bool Connection::DiscardIncoming() {
  while (true) {
    ssize_t received = recv(socket_.fd(), discard_sink, kScratchSize, MSG_DONTWAIT);
    if (received > 0) continue;
    if (received < 0 && errno == EINTR) continue;
    if (received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    return true;  // end of stream, or an error: either way nothing more will come
  }
}

void Connection::AbandonTransfers() {
  receives_.clear();
  if (in_frame_ && frame_.type == FrameType::kData && payload_done_ > 0) {
    discard_left_ = frame_.payload_size - payload_done_;
    in_frame_ = false;
  }
  std::deque<OutgoingFrame> kept;
  for (size_t i = 0; i < outgoing_.size(); ++i) {
    OutgoingFrame& frame = outgoing_[i];
    bool started = i == 0 && front_written_ > 0;
    if (!frame.is_data) {
      kept.push_back(std::move(frame));
    } else if (started) {
      frame.zero_payload = true;
      frame.payload = nullptr;
      kept.push_back(std::move(frame));
    }
  }
  // A frame that was started is always kept, so front_written_ still describes the front.
  outgoing_ = std::move(kept);
  for (OutgoingFrame& frame : outgoing_) {
    if (!frame.is_data)
      frame.payload = reinterpret_cast<const uint8_t*>(frame.owned_payload.data());
  }
}

}  // namespace cohort::net
