#include "ps/server_connection.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>

#include "net/frame.h"
#include "net/handshake.h"

namespace cohort::ps {
namespace {

// The server's verdict as a local Status with the same code.
Status RemoteStatus(Status::Code code, const std::string& message) {
  switch (code) {
    case Status::Code::kOk:
      return Status::OK();
    case Status::Code::kInvalidArgument:
      return Status::InvalidArgument(message);
    case Status::Code::kNotFound:
      return Status::NotFound(message);
    case Status::Code::kAlreadyExists:
      return Status::AlreadyExists(message);
    case Status::Code::kFailedPrecondition:
      return Status::FailedPrecondition(message);
    case Status::Code::kUnavailable:
      return Status::Unavailable(message);
    case Status::Code::kDeadlineExceeded:
      return Status::DeadlineExceeded(message);
    case Status::Code::kIOError:
      return Status::IOError(message);
    case Status::Code::kInternal:
      return Status::Internal(message);
    case Status::Code::kAborted:
      return Status::Aborted(message);
    case Status::Code::kOutOfRange:
      return Status::OutOfRange(message);
  }
  return Status::Internal(message);
}

}  // namespace

ServerConnection::ServerConnection(int ps_index, std::string endpoint,
                                   const ConnectionSettings& settings)
    : ps_index_(ps_index),
      endpoint_(std::move(endpoint)),
      name_("ps:" + std::to_string(ps_index) + " (" + endpoint_ + ")"),
      settings_(settings) {}

void ConnectionSettings::Log(const std::string& line) const {
  if (log) {
    log(line);
  } else {
    std::fprintf(stderr, "cohort %s: %s\n", self.ToString().c_str(), line.c_str());
  }
}

void ServerConnection::AddSetupCall(Call call) {
  std::lock_guard<std::mutex> lock(mutex_);
  setup_calls_.push_back(std::move(call));
}

void ServerConnection::AddSetupCheck(Call call, const std::string& creator) {
  std::lock_guard<std::mutex> lock(mutex_);
  setup_calls_.push_back(std::move(call));
  setup_creator_ = creator;
}

Status ServerConnection::Connect(net::Deadline deadline) {
  socket_.Close();
  waiting_for_creator_ = false;
  auto endpoint = net::ParseEndpoint(endpoint_);
  if (!endpoint.ok()) return Status::FailedPrecondition(name_ + ": " + endpoint.status().message());
  auto socket = net::ConnectTcp(*endpoint, deadline);
  if (!socket.ok()) return socket.status();
  net::HandshakeConfig config;
  config.job_name = settings_.job_name;
  config.self = settings_.self;
  config.secret = settings_.secret;
  config.deadline = deadline.Min(net::Deadline::After(settings_.handshake_timeout));
  auto handshake = net::ConnectHandshake(socket->fd(), config, {"ps", ps_index_}, name_);
  if (!handshake.ok()) return handshake.status();
  socket_ = std::move(*socket);
  push_from_memory_ =
      settings_.same_host_pushes && handshake->can_read_peer_memory && !memory_refused_;
  if (setup_calls_.empty()) return Status::OK();
  std::vector<Call> setup = setup_calls_;
  Status exchanged = Exchange(setup, net::Deadline::After(settings_.request_timeout));
  if (!exchanged.ok()) {
    socket_.Close();
    return exchanged;
  }
  for (const Call& call : setup) {
    if (call.status.code() == Status::Code::kNotFound && !setup_creator_.empty()) {
      // The server restarted without a checkpoint: the creator has yet to create it again.
      socket_.Close();
      waiting_for_creator_ = true;
      return Status::Unavailable(call.status.message());
    }
    // A create the server refuses now (another worker created the variable differently) will
    // not succeed on a retry either.
    if (!call.status.ok()) return Status::FailedPrecondition(call.status.message());
  }
  return Status::OK();
}

bool ServerConnection::SendsFromMemory(const Call& call) const {
  return push_from_memory_ && call.operation == Operation::kPushDense && call.bulk.size() == 1;
}

Status ServerConnection::Exchange(std::vector<Call>& calls, net::Deadline deadline) {
  const int fd = socket_.fd();
  const uint64_t first_id = next_request_id_;
  next_request_id_ += calls.size();
  std::vector<bool> from_memory(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& call = calls[i];
    size_t bulk_size = 0;
    for (std::string_view piece : call.bulk) bulk_size += piece.size();
    if (bulk_size > kMaxBulkBytes) {
      return Status::InvalidArgument(OperationName(static_cast<uint8_t>(call.operation)) +
                                     " request of " + std::to_string(bulk_size) +
                                     " bytes exceeds one message");
    }
    from_memory[i] = SendsFromMemory(call);
    if (from_memory[i]) {
      const MemoryReference reference{reinterpret_cast<uintptr_t>(call.bulk[0].data()), bulk_size};
      std::string head = EncodeRequestHead(first_id + i, Operation::kPushDenseFromMemory,
                                           EncodeMemoryReference(reference) + call.fields, 0);
      COHORT_RETURN_IF_ERROR(
          net::WriteFully(fd, head.data(), head.size(), deadline, "request to " + name_));
      continue;
    }
    std::string head = EncodeRequestHead(first_id + i, call.operation, call.fields, bulk_size);
    COHORT_RETURN_IF_ERROR(
        net::WriteFully(fd, head.data(), head.size(), deadline, "request to " + name_));
    for (std::string_view piece : call.bulk) {
      COHORT_RETURN_IF_ERROR(
          net::WriteFully(fd, piece.data(), piece.size(), deadline, "request to " + name_));
    }
  }
  for (size_t i = 0; i < calls.size(); ++i) {
    Call& call = calls[i];
    const std::string what = "response from " + name_;
    uint8_t header_bytes[net::kFrameHeaderSize];
    COHORT_RETURN_IF_ERROR(net::ReadFully(fd, header_bytes, sizeof(header_bytes), deadline, what));
    auto header = net::DecodeFrameHeader(header_bytes);
    if (!header.ok()) return Status::Unavailable(name_ + " sent " + header.status().message());
    if (header->type != net::FrameType::kResponse || header->tag != first_id + i) {
      return Status::Unavailable(name_ + " answered out of order (a " +
                                 net::FrameTypeName(static_cast<uint8_t>(header->type)) +
                                 " frame for request " + std::to_string(header->tag) +
                                 ", expected a response to " + std::to_string(first_id + i) + ")");
    }
    // The 8-byte payload header tells how many bytes of fields come before the bulk.
    uint8_t payload_header[8];
    if (header->payload_size < sizeof(payload_header)) {
      return Status::Unavailable(name_ + " sent a response too short for its header");
    }
    COHORT_RETURN_IF_ERROR(net::ReadFully(fd, payload_header, 8, deadline, what));
    uint32_t fields_size = 0;
    for (int b = 3; b >= 0; --b) fields_size = (fields_size << 8) | payload_header[4 + b];
    const size_t bulk_offset = BulkOffset(fields_size);
    if (bulk_offset > header->payload_size) {
      return Status::Unavailable(name_ + " sent a response whose fields overrun it");
    }
    std::string fields(bulk_offset - 8, '\0');
    COHORT_RETURN_IF_ERROR(net::ReadFully(fd, fields.data(), fields.size(), deadline, what));
    fields.resize(fields_size);
    const size_t bulk_size = header->payload_size - bulk_offset;
    const bool fits = bulk_size == call.response_bulk_size && call.response_bulk != nullptr;
    char* bulk_target = call.response_bulk;
    if (!fits) {
      scratch_.resize((bulk_size + 7) / 8);
      bulk_target = reinterpret_cast<char*>(scratch_.data());
    }
    COHORT_RETURN_IF_ERROR(net::ReadFully(fd, bulk_target, bulk_size, deadline, what));
    net::WireReader reader(fields);
    std::string message = reader.String();
    if (!reader.ok()) return Status::Unavailable(name_ + " sent a response without a status");
    const uint8_t code = payload_header[0];
    if (code > static_cast<uint8_t>(Status::Code::kOutOfRange)) {
      return Status::Unavailable(name_ + " sent an unknown status code " + std::to_string(code));
    }
    call.response_fields = fields.substr(2 + message.size());
    if (code == 0) {
      call.status = Status::OK();
      if (!fits && bulk_size > 0) {
        call.status = Status::Internal(name_ + " answered with " + std::to_string(bulk_size) +
                                       " bytes of values, " +
                                       std::to_string(call.response_bulk_size) + " were expected");
      }
    } else {
      call.status = RemoteStatus(static_cast<Status::Code>(code), message).WithContext(name_);
    }
  }
  return ResendRefusedFromMemory(calls, from_memory, deadline);
}

Status ServerConnection::ResendRefusedFromMemory(std::vector<Call>& calls,
                                                 const std::vector<bool>& from_memory,
                                                 net::Deadline deadline) {
  std::vector<size_t> refused;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (from_memory[i] && calls[i].status.code() == Status::Code::kFailedPrecondition &&
        calls[i].status.message().find(kMemoryNotReadable) != std::string::npos) {
      refused.push_back(i);
    }
  }
  if (refused.empty()) return Status::OK();
  settings_.Log(name_ +
                " cannot read this task's memory; sending gradients over the connection instead");
  memory_refused_ = true;
  push_from_memory_ = false;
  std::vector<Call> resend;
  for (size_t i : refused) resend.push_back(calls[i]);
  COHORT_RETURN_IF_ERROR(Exchange(resend, deadline));
  for (size_t j = 0; j < refused.size(); ++j) calls[refused[j]] = std::move(resend[j]);
  return Status::OK();
}

Status ServerConnection::Run(std::vector<Call>& calls) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point called = Clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  // A batch that waited while another gave up on this server gets that verdict: the server has
  // just been unreachable for a whole retry window, and a second window would double the time
  // before the caller names it (a prefetched pull and the push behind it, say).
  if (!gave_up_.ok() && gave_up_at_ >= called) return gave_up_;
  std::chrono::milliseconds backoff = settings_.initial_backoff;
  Clock::time_point give_up = Clock::time_point::max();
  std::string last_error;
  bool logged_waiting = false;
  while (true) {
    Status status = Status::OK();
    if (!socket_.valid()) {
      // Once retrying, no connection attempt runs past the retry window.
      status = Connect(
          net::Deadline::After(settings_.handshake_timeout).Min(net::Deadline::At(give_up)));
    }
    if (status.ok()) {
      status = Exchange(calls, net::Deadline::After(settings_.request_timeout));
      if (status.ok()) {
        if (give_up != Clock::time_point::max()) settings_.Log("reconnected to " + name_);
        return Status::OK();
      }
      if (status.code() == Status::Code::kInvalidArgument) return status;  // our own request
      socket_.Close();
    }
    if (status.code() == Status::Code::kFailedPrecondition) return status;
    last_error = status.message();
    const Clock::time_point now = Clock::now();
    if (give_up == Clock::time_point::max()) {
      give_up = now + settings_.retry_timeout;
      settings_.Log(name_ + " unreachable (" + last_error + "); retrying with backoff for up to " +
                    net::FormatSeconds(settings_.retry_timeout));
    }
    if (waiting_for_creator_ && !logged_waiting) {
      logged_waiting = true;
      settings_.Log(name_ + " came back without the model (" + last_error + "); waiting for " +
                    setup_creator_ + " to create it there again");
    }
    if (now >= give_up) {
      if (waiting_for_creator_) {
        gave_up_ = Status::Unavailable(name_ + " came back without the model and " +
                                       setup_creator_ + " did not create it there again within " +
                                       net::FormatSeconds(settings_.retry_timeout) +
                                       ", giving up: " + last_error);
      } else {
        gave_up_ = Status::Unavailable(name_ + " unreachable for " +
                                       net::FormatSeconds(settings_.retry_timeout) +
                                       ", giving up: " + last_error);
      }
      gave_up_at_ = Clock::now();
      return gave_up_;
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, give_up - now));
    backoff = std::min(backoff * 2, settings_.max_backoff);
  }
}

}  // namespace cohort::ps
