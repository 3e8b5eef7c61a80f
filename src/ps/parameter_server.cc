#include "ps/parameter_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "net/frame.h"
#include "net/handshake.h"
#include "net/same_host.h"
#include "ps/checkpoint.h"
#include "ps/protocol.h"

namespace cohort::ps {
namespace {

using namespace std::chrono_literals;

// Bulk sizes are checked before they are trusted as counts.
Status ExpectBulk(const std::string& what, size_t actual, uint64_t expected) {
  if (actual != expected) {
    return Status::InvalidArgument(what + " carries " + std::to_string(actual) +
                                   " bytes of values; its fields call for " +
                                   std::to_string(expected));
  }
  return Status::OK();
}

// Row counts that could overflow a byte count are refused before any multiplication.
constexpr uint64_t kMaxRowsPerMessage = kMaxBulkBytes / 4;

std::vector<cluster::TaskId> DefaultSyncWorkers(const ParameterServerOptions& options) {
  if (!options.sync_workers.empty()) return options.sync_workers;
  std::vector<cluster::TaskId> workers;
  for (int index = 0; index < options.cluster.NumTasks("worker"); ++index) {
    workers.push_back({"worker", index});
  }
  return workers;
}

}  // namespace

ParameterServer::ParameterServer(ParameterServerOptions options)
    : options_(std::move(options)),
      name_("ps:" + std::to_string(options_.ps_index)),
      store_(options_.ps_index, options_.cluster.NumTasks("ps")),
      aggregator_(SyncOptions{DefaultSyncWorkers(options_), options_.sync_timeout,
                              [this](const std::string& line) { Log(line); }}) {}

void ParameterServer::Log(const std::string& line) const {
  if (options_.log) {
    options_.log(name_ + ": " + line);
  } else {
    std::fprintf(stderr, "cohort ps %s: %s\n", name_.c_str(), line.c_str());
  }
}

StatusOr<std::unique_ptr<ParameterServer>> ParameterServer::Start(ParameterServerOptions options) {
  const int num_ps = options.cluster.NumTasks("ps");
  if (options.ps_index < 0 || options.ps_index >= num_ps) {
    if (options.listening_fd >= 0) close(options.listening_fd);
    return Status::InvalidArgument("ps:" + std::to_string(options.ps_index) +
                                   " is not a task of the cluster, which has " +
                                   std::to_string(num_ps) + " ps tasks");
  }
  std::unique_ptr<ParameterServer> server(new ParameterServer(std::move(options)));
  const ParameterServerOptions& settings = server->options_;
  if (settings.listening_fd >= 0) {
    server->listener_ = net::Socket(settings.listening_fd);
    COHORT_RETURN_IF_ERROR(net::SetNonBlocking(settings.listening_fd));
  } else {
    auto endpoint = net::ParseEndpoint(settings.cluster.Endpoint({"ps", settings.ps_index}));
    if (!endpoint.ok()) return endpoint.status().WithContext(server->name_);
    auto listener = net::ListenTcp("", endpoint->port, 128);
    if (!listener.ok()) return listener.status().WithContext(server->name_);
    server->listener_ = std::move(*listener);
  }
  auto port = net::LocalPort(server->listener_.fd());
  if (!port.ok()) return port.status();
  server->port_ = *port;
  if (!settings.secret.authenticated()) {
    server->Log("WARNING: no COHORT_JOB_SECRET; any process that reaches port " +
                std::to_string(server->port_) + " can pass for a task of the job");
  }
  if (!settings.checkpoint_dir.empty()) {
    auto restored = RestoreLatest(settings.checkpoint_dir, &server->store_,
                                  [&](const std::string& line) { server->Log(line); });
    if (restored.ok()) {
      server->restored_step_ = *restored;
      server->Log("restored its shard from the checkpoint of step " + std::to_string(*restored) +
                  " in " + settings.checkpoint_dir);
    } else if (restored.status().code() != Status::Code::kNotFound) {
      return restored.status().WithContext(server->name_);
    }
  }
  server->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (server->wake_fd_ < 0) return Status::Internal("eventfd: " + ErrnoMessage(errno));
  server->accept_thread_ = std::thread([raw = server.get()] { raw->AcceptLoop(); });
  return server;
}

ParameterServer::~ParameterServer() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

Status ParameterServer::Wait(net::Deadline deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!shutdown_requested_ && !stopping_) {
    if (deadline.IsNever()) {
      finished_.wait(lock);
    } else if (finished_.wait_until(lock, deadline.time()) == std::cv_status::timeout) {
      if (shutdown_requested_ || stopping_) break;
      return Status::DeadlineExceeded(name_ + " was still serving at the deadline");
    }
  }
  return Status::OK();
}

void ParameterServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !accept_thread_.joinable()) return;
    stopping_ = true;
    // Breaks every blocked read and write; idle connections also see the eventfd.
    for (int fd : live_fds_) shutdown(fd, SHUT_RDWR);
    finished_.notify_all();
  }
  uint64_t one = 1;
  if (wake_fd_ >= 0) [[maybe_unused]]
    ssize_t ignored = write(wake_fd_, &one, sizeof(one));
  aggregator_.Stop();
  clock_.Stop();
  if (accept_thread_.joinable()) accept_thread_.join();
  std::list<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    threads.swap(connection_threads_);
  }
  for (std::thread& thread : threads) thread.join();
  listener_.Close();
}

Status ParameterServer::Admit(const cluster::TaskId& task) const {
  static const std::set<std::string> kClients = {"chief", "master", "worker", "evaluator"};
  if (!kClients.count(task.type)) {
    return Status::FailedPrecondition(name_ + " serves chief, worker and evaluator tasks, not " +
                                      task.ToString());
  }
  // A sparse TF_CONFIG shows a ps only itself; then the job secret is the only check.
  const int listed = options_.cluster.NumTasks(task.type);
  if (listed > 0 && task.index >= listed) {
    return Status::FailedPrecondition(task.ToString() + " is not a task of the cluster (it has " +
                                      std::to_string(listed) + " " + task.type + " tasks)");
  }
  return Status::OK();
}

void ParameterServer::AcceptLoop() {
  while (true) {
    pollfd waiters[2] = {{listener_.fd(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int ready = poll(waiters, 2, -1);
    if (ready < 0 && errno == EINTR) continue;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
    }
    if (ready < 0) {
      Log("poll on the listening socket failed: " + ErrnoMessage(errno));
      return;
    }
    while (true) {
      auto accepted = net::AcceptPending(listener_);
      if (!accepted.ok()) {
        Log("accept failed: " + accepted.status().message());
        break;
      }
      if (!accepted->valid()) break;
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      live_fds_.insert(accepted->fd());
      connection_threads_.emplace_back(
          [this, socket = std::make_shared<net::Socket>(std::move(*accepted))]() mutable {
            Serve(std::move(*socket));
          });
    }
  }
}

void ParameterServer::Serve(net::Socket socket) {
  const int fd = socket.fd();
  auto forget = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    live_fds_.erase(fd);
  };
  net::HandshakeConfig config;
  config.job_name = options_.job_name;
  config.self = {"ps", options_.ps_index};
  config.secret = options_.secret;
  config.deadline = net::Deadline::After(options_.handshake_timeout);
  auto handshake = net::AcceptHandshake(
      fd, config, [this](const net::HelloMessage& hello) { return Admit(hello.task); });
  if (!handshake.ok()) {
    Log("refused a connection: " + handshake.status().message());
    forget();
    return;
  }
  const cluster::TaskId peer = handshake->peer.task;
  const std::string peer_name = peer.ToString();
  ConnectionBuffers buffers;
  while (true) {
    pollfd waiters[2] = {{fd, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int ready = poll(waiters, 2, -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0 || (waiters[1].revents & POLLIN)) break;
    const net::Deadline deadline = net::Deadline::After(options_.io_timeout);
    uint8_t header_bytes[net::kFrameHeaderSize];
    Status read = net::ReadFully(fd, header_bytes, sizeof(header_bytes), deadline,
                                 "request from " + peer_name);
    if (!read.ok()) break;  // the client closed its connection (or died): nothing to answer
    auto header = net::DecodeFrameHeader(header_bytes);
    if (!header.ok()) {
      Log(peer_name + " sent a malformed frame (" + header.status().message() +
          "); closing its connection");
      break;
    }
    if (header->type != net::FrameType::kRequest) {
      Log(peer_name + " sent a " + net::FrameTypeName(static_cast<uint8_t>(header->type)) +
          " frame where a request belongs; closing its connection");
      break;
    }
    buffers.payload.resize((header->payload_size + 7) / 8);
    char* payload = reinterpret_cast<char*>(buffers.payload.data());
    read = net::ReadFully(fd, payload, header->payload_size, deadline, "request from " + peer_name);
    if (!read.ok()) {
      Log(read.message());
      break;
    }
    Response response;
    Status status;
    auto view = SplitPayload(payload, header->payload_size);
    if (!view.ok()) {
      status = view.status();
    } else {
      status = Handle(*handshake, view->kind, view->fields, view->bulk, view->bulk_size, buffers,
                      &response);
      if (!status.ok()) status = status.WithContext(OperationName(view->kind) + " request");
    }
    if (!status.ok()) response = Response();
    std::string head = EncodeResponseHead(header->tag, status, response.fields, response.bulk_size);
    Status sent =
        net::WriteFully(fd, head.data(), head.size(), deadline, "response to " + peer_name);
    if (sent.ok() && response.bulk_size > 0) {
      sent = net::WriteFully(fd, response.bulk, response.bulk_size, deadline,
                             "response to " + peer_name);
    }
    if (!sent.ok()) {
      Log(sent.message());
      break;
    }
    if (view.ok() && view->kind == static_cast<uint8_t>(Operation::kShutdown) && status.ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      shutdown_requested_ = true;
      finished_.notify_all();
    }
  }
  clock_.Forget(peer);
  forget();
}

Status ParameterServer::Handle(const net::HandshakeResult& handshake, uint8_t operation,
                               std::string_view fields, const char* bulk, size_t bulk_size,
                               ConnectionBuffers& buffers, Response* response) {
  const cluster::TaskId& peer = handshake.peer.task;
  switch (static_cast<Operation>(operation)) {
    case Operation::kCreateDense: {
      auto spec = DecodeDenseSliceSpec(fields);
      if (!spec.ok()) return spec.status();
      COHORT_RETURN_IF_ERROR(ValidateDenseSliceSpec(*spec));
      std::vector<float> initial;
      if (bulk_size > 0) {
        COHORT_RETURN_IF_ERROR(ExpectBulk("variable \"" + spec->variable + "\"", bulk_size,
                                          spec->element_count() * sizeof(float)));
        initial.resize(spec->element_count());
        std::memcpy(initial.data(), bulk, bulk_size);
      }
      return store_.CreateDense(*spec, std::move(initial));
    }
    case Operation::kPullDense: {
      auto range = DecodeDenseRange(fields);
      if (!range.ok()) return range.status();
      COHORT_RETURN_IF_ERROR(ExpectBulk("a pull", bulk_size, 0));
      auto slice = store_.Dense(range->variable);
      if (!slice.ok()) return slice.status();
      COHORT_RETURN_IF_ERROR((*slice)->CheckRange(range->first_row, range->row_count));
      const uint64_t elements = range->row_count * (*slice)->spec().row_width;
      if (elements > kMaxRowsPerMessage) {
        return Status::InvalidArgument("a pull of " + std::to_string(elements) +
                                       " values exceeds one message; pull fewer rows at a time");
      }
      buffers.values.resize(elements);
      COHORT_RETURN_IF_ERROR(
          (*slice)->Read(range->first_row, range->row_count, buffers.values.data()));
      response->bulk = reinterpret_cast<const char*>(buffers.values.data());
      response->bulk_size = elements * sizeof(float);
      return Status::OK();
    }
    case Operation::kPushDense:
      return HandlePushDense(peer, fields, bulk, bulk_size, response);
    case Operation::kPushDenseFromMemory:
      COHORT_RETURN_IF_ERROR(ExpectBulk("a push from memory", bulk_size, 0));
      return HandlePushDenseFromMemory(handshake, fields, buffers, response);
    case Operation::kCreateTable: {
      auto spec = DecodeEmbeddingTableSpec(fields);
      if (!spec.ok()) return spec.status();
      COHORT_RETURN_IF_ERROR(ExpectBulk("a create", bulk_size, 0));
      return store_.CreateTable(*spec);
    }
    case Operation::kPullRows: {
      auto batch = DecodeRowBatch(fields);
      if (!batch.ok()) return batch.status();
      auto table = store_.Table(batch->table);
      if (!table.ok()) return table.status();
      const uint64_t width = (*table)->spec().row_width;
      if (batch->row_count > kMaxRowsPerMessage / width) {
        return Status::InvalidArgument(std::to_string(batch->row_count) +
                                       " rows exceed one message; pull fewer at a time");
      }
      COHORT_RETURN_IF_ERROR(ExpectBulk("a pull of " + std::to_string(batch->row_count) + " rows",
                                        bulk_size, batch->row_count * sizeof(int64_t)));
      buffers.values.resize(batch->row_count * width);
      COHORT_RETURN_IF_ERROR((*table)->Read(reinterpret_cast<const int64_t*>(bulk),
                                            batch->row_count, buffers.values.data()));
      response->bulk = reinterpret_cast<const char*>(buffers.values.data());
      response->bulk_size = buffers.values.size() * sizeof(float);
      return Status::OK();
    }
    case Operation::kPushRows:
      return HandlePushRows(peer, fields, bulk, bulk_size, response);
    case Operation::kSaveShard: {
      auto request = DecodeSaveRequest(fields);
      if (!request.ok()) return request.status();
      if (request->directory.empty()) return Status::InvalidArgument("no checkpoint directory");
      auto saved = SaveShard(store_, request->directory, request->global_step);
      if (!saved.ok()) return saved.status();
      Log("saved its shard for step " + std::to_string(request->global_step) + " to " +
          request->directory + "/" + saved->file + " (asked by " + peer.ToString() + ")");
      response->fields = EncodeSavedShard(*saved);
      return Status::OK();
    }
    case Operation::kClock: {
      auto request = DecodeClockRequest(fields);
      if (!request.ok()) return request.status();
      auto slowest = clock_.Advance(peer, request->steps_done, request->max_lead,
                                    net::Deadline::After(std::chrono::milliseconds(
                                        std::max<int64_t>(0, request->timeout_ms))));
      if (!slowest.ok()) return slowest.status();
      response->fields = EncodeInt64(*slowest);
      return Status::OK();
    }
    case Operation::kShutdown:
      Log(peer.ToString() + " ended the job");
      return Status::OK();
  }
  return Status::InvalidArgument("unknown operation " + std::to_string(operation));
}

Status ParameterServer::CheckPushMode(const cluster::TaskId& peer, bool sync_push) const {
  if (sync_push == options_.sync) return Status::OK();
  return Status::FailedPrecondition(
      name_ + " runs " + (options_.sync ? "synchronous" : "asynchronous") + " training but " +
      peer.ToString() + " pushed " + (sync_push ? "with" : "without") + " a sync step");
}

Status ParameterServer::HandlePushDense(const cluster::TaskId& peer, std::string_view fields,
                                        const char* bulk, size_t bulk_size, Response* response) {
  auto range = DecodeDenseRange(fields);
  if (!range.ok()) return range.status();
  auto slice = store_.Dense(range->variable);
  if (!slice.ok()) return slice.status();
  COHORT_RETURN_IF_ERROR((*slice)->CheckRange(range->first_row, range->row_count));
  const uint64_t elements = range->row_count * (*slice)->spec().row_width;
  COHORT_RETURN_IF_ERROR(
      ExpectBulk("a push to \"" + range->variable + "\"", bulk_size, elements * sizeof(float)));
  const float* gradient = reinterpret_cast<const float*>(bulk);
  const bool sync_push = range->sync_step != kNoSyncStep;
  COHORT_RETURN_IF_ERROR(CheckPushMode(peer, sync_push));
  PushOutcome outcome;
  if (!sync_push) {
    COHORT_RETURN_IF_ERROR((*slice)->ApplyGradient(range->first_row, range->row_count, gradient));
  } else {
    const std::string key = "\"" + range->variable + "\" rows [" +
                            std::to_string(range->first_row) + ", " +
                            std::to_string(range->first_row + range->row_count) + ")";
    auto result = aggregator_.ContributeDense(
        key, peer, range->sync_step, gradient, elements, [&](const float* average) {
          return (*slice)->ApplyGradient(range->first_row, range->row_count, average);
        });
    if (!result.ok()) return result.status();
    outcome = *result;
  }
  response->fields = EncodePushOutcome(outcome);
  return Status::OK();
}

Status ParameterServer::HandlePushDenseFromMemory(const net::HandshakeResult& handshake,
                                                  std::string_view fields,
                                                  ConnectionBuffers& buffers, Response* response) {
  const std::string peer_name = handshake.peer.task.ToString();
  std::string_view push_fields;
  auto reference = DecodeMemoryReference(fields, &push_fields);
  if (!reference.ok()) return reference.status();
  if (!handshake.can_read_peer_memory) {
    return Status::FailedPrecondition(name_ + " " + kMemoryNotReadable + " " + peer_name +
                                      "; send the gradient instead");
  }
  if (reference->size > kMaxBulkBytes || reference->size % sizeof(float) != 0) {
    return Status::InvalidArgument("a push from memory of " + std::to_string(reference->size) +
                                   " bytes: must be whole float32 values within one message");
  }
  // The client waits for this answer before touching its gradient again, so the bytes are stable
  // while they are read. What they must amount to is checked by HandlePushDense.
  buffers.values.resize(reference->size / sizeof(float));
  COHORT_RETURN_IF_ERROR(net::ReadProcessMemory(handshake.peer.process.process_id,
                                                reference->address, buffers.values.data(),
                                                reference->size, peer_name));
  return HandlePushDense(handshake.peer.task, push_fields,
                         reinterpret_cast<const char*>(buffers.values.data()), reference->size,
                         response);
}

Status ParameterServer::HandlePushRows(const cluster::TaskId& peer, std::string_view fields,
                                       const char* bulk, size_t bulk_size, Response* response) {
  auto batch = DecodeRowBatch(fields);
  if (!batch.ok()) return batch.status();
  auto table = store_.Table(batch->table);
  if (!table.ok()) return table.status();
  const uint64_t width = (*table)->spec().row_width;
  if (batch->row_count > kMaxRowsPerMessage / (width + 2)) {
    return Status::InvalidArgument(std::to_string(batch->row_count) +
                                   " rows exceed one message; push fewer at a time");
  }
  COHORT_RETURN_IF_ERROR(ExpectBulk("a push of " + std::to_string(batch->row_count) + " rows",
                                    bulk_size,
                                    batch->row_count * (sizeof(int64_t) + width * sizeof(float))));
  const int64_t* ids = reinterpret_cast<const int64_t*>(bulk);
  const float* gradient = reinterpret_cast<const float*>(bulk + batch->row_count * sizeof(int64_t));
  const bool sync_push = batch->sync_step != kNoSyncStep;
  COHORT_RETURN_IF_ERROR(CheckPushMode(peer, sync_push));
  PushOutcome outcome;
  if (!sync_push) {
    COHORT_RETURN_IF_ERROR((*table)->ApplyGradient(ids, batch->row_count, gradient));
  } else {
    // Refuse misrouted ids before they join a round.
    COHORT_RETURN_IF_ERROR((*table)->CheckOwned(ids, batch->row_count));
    auto result = aggregator_.ContributeRows(
        "table \"" + batch->table + "\"", peer, batch->sync_step, ids, batch->row_count, width,
        gradient, [&](const int64_t* unique_ids, size_t count, const float* average) {
          return (*table)->ApplyGradient(unique_ids, count, average);
        });
    if (!result.ok()) return result.status();
    outcome = *result;
  }
  response->fields = EncodePushOutcome(outcome);
  return Status::OK();
}

}  // namespace cohort::ps
