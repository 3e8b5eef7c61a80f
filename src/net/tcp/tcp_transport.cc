#include "net/tcp/tcp_transport.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "cluster/peer_report.h"
#include "net/auth.h"
#include "net/rendezvous.h"
#include "net/shared_memory_file.h"
#include "net/tcp/tcp_exchange.h"

namespace cohort::net {
namespace {

// The monitor wakes at least this often to send heartbeats and check silence.
constexpr std::chrono::milliseconds kMaxMonitorTick(100);

void Signal(int event_fd) {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t ignored = write(event_fd, &one, sizeof(one));
}

void Drain(int event_fd) {
  uint64_t count;
  [[maybe_unused]] ssize_t ignored = read(event_fd, &count, sizeof(count));
}

Status ValidateOptions(const TransportOptions& options) {
  using std::chrono::milliseconds;
  if (options.heartbeat_interval <= milliseconds::zero()) {
    return Status::InvalidArgument("heartbeat interval must be positive");
  }
  if (options.peer_timeout < 3 * options.heartbeat_interval) {
    return Status::InvalidArgument("peer timeout (" + FormatSeconds(options.peer_timeout) +
                                   ") must be at least three heartbeat intervals (" +
                                   FormatSeconds(options.heartbeat_interval) +
                                   "), or a live peer could be declared dead");
  }
  if (options.startup_timeout <= milliseconds::zero() ||
      options.startup_timeout > std::chrono::hours(24 * 7)) {
    return Status::InvalidArgument("startup timeout must be between 1 ms and 7 days");
  }
  if (options.handshake_timeout <= milliseconds::zero()) {
    return Status::InvalidArgument("handshake timeout must be positive");
  }
  return Status::OK();
}

}  // namespace

StatusOr<Group> GroupFromCluster(const cluster::ClusterSpec& cluster, const cluster::TaskId& self,
                                 const std::vector<std::string>& participant_types) {
  if (participant_types.empty()) return Status::InvalidArgument("no participant task types");
  Group group;
  bool found = false;
  std::string participant_list;
  for (const std::string& type : participant_types) {
    if (!participant_list.empty()) participant_list += ", ";
    participant_list += type;
    for (int index = 0; index < cluster.NumTasks(type); ++index) {
      cluster::TaskId task{type, index};
      if (task == self) {
        group.rank = static_cast<int>(group.members.size());
        found = true;
      }
      group.members.push_back({task, cluster.Endpoint(task)});
    }
  }
  if (!found) {
    return Status::InvalidArgument("task " + self.ToString() +
                                   " does not take part in collectives (participants: " +
                                   participant_list + ") or is not in the cluster spec");
  }
  return group;
}

StatusOr<std::unique_ptr<TcpTransport>> TcpTransport::Connect(const cluster::ClusterSpec& cluster,
                                                              const cluster::TaskId& self,
                                                              TransportOptions options) {
  COHORT_RETURN_IF_ERROR(ValidateOptions(options));
  auto group = GroupFromCluster(cluster, self, options.participant_types);
  if (!group.ok()) return group.status();
  return Connect(std::move(group->members), group->rank, std::move(options));
}

StatusOr<std::unique_ptr<TcpTransport>> TcpTransport::Connect(std::vector<GroupMember> members,
                                                              int rank, TransportOptions options) {
  COHORT_RETURN_IF_ERROR(ValidateOptions(options));
  if (rank < 0 || rank >= static_cast<int>(members.size())) {
    return Status::InvalidArgument("rank " + std::to_string(rank) +
                                   " is not a member of a group of " +
                                   std::to_string(members.size()));
  }
  if (!options.log_warning) {
    options.log_warning = [](const std::string& message) {
      std::fprintf(stderr, "cohort net: warning: %s\n", message.c_str());
    };
  }

  Rendezvous::Participants participants;
  for (const GroupMember& member : members) {
    auto endpoint = ParseEndpoint(member.endpoint);
    if (!endpoint.ok()) {
      return endpoint.status().WithContext("cluster spec entry of " + member.task.ToString());
    }
    participants.tasks.push_back(member.task);
    participants.names.push_back(member.task.ToString() + " (" + member.endpoint + ")");
    participants.endpoints.push_back(*endpoint);
  }
  participants.self_rank = rank;
  const cluster::TaskId self = members[rank].task;

  JobSecret secret =
      options.secret.has_value() ? JobSecret(*options.secret) : JobSecret::FromEnvironment();
  const int size = static_cast<int>(participants.tasks.size());
  if (!secret.authenticated() && size > 1) {
    options.log_warning(
        std::string(kJobSecretVariable) +
        " is not set: the transport runs in open mode, and any process that can reach port " +
        std::to_string(participants.endpoints[rank].port) + " can pass for a task of job \"" +
        options.job_name + "\"");
  }

  std::unique_ptr<TcpTransport> transport(
      new TcpTransport(options, participants.tasks, participants.names, rank));
  transport->connections_.resize(size);
  if (size == 1) {
    if (options.listening_fd >= 0) close(options.listening_fd);
    return transport;
  }

  Socket listener;
  if (options.listening_fd >= 0) {
    listener = Socket(options.listening_fd);
    COHORT_RETURN_IF_ERROR(SetNonBlocking(listener.fd()));
  } else {
    auto listening = ListenTcp(options.listen_host, participants.endpoints[rank].port, 128);
    if (!listening.ok()) return listening.status().WithContext(participants.names[rank]);
    listener = std::move(*listening);
  }

  HandshakeConfig handshake;
  handshake.job_name = options.job_name;
  handshake.self = self;
  handshake.secret = secret;
  std::vector<std::string> endpoints;
  for (const GroupMember& member : members) endpoints.push_back(member.endpoint);
  handshake.cluster = ViewOfCluster(options.job_name, participants.tasks, endpoints);
  Rendezvous rendezvous(participants, handshake, options.startup_timeout, options.handshake_timeout,
                        options.log_warning);
  rendezvous.set_waiting_report_interval(options.waiting_report_interval);
  auto established = rendezvous.Run(std::move(listener));
  if (!established.ok()) return established.status();

  transport->can_read_all_peers_ = true;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    EstablishedConnection& link = (*established)[peer];
    transport->can_read_all_peers_ &= link.handshake.can_read_peer_memory;
    transport->connections_[peer] = std::make_unique<Connection>(
        peer, participants.names[peer], std::move(link.socket), link.handshake.peer.process,
        link.handshake.can_read_peer_memory);
  }
  transport->StartMonitor();
  return transport;
}

TcpTransport::TcpTransport(TransportOptions options, std::vector<cluster::TaskId> tasks,
                           std::vector<std::string> names, int rank)
    : options_(std::move(options)),
      tasks_(std::move(tasks)),
      names_(std::move(names)),
      rank_(rank) {
  failure_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  monitor_wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

TcpTransport::~TcpTransport() {
  stopping_.store(true);
  if (monitor_.joinable()) {
    Signal(monitor_wake_fd_);
    monitor_.join();
  }
  // A failure found just before shutdown must still reach the peers, ahead of the goodbye, so
  // that they blame the task that failed rather than this one for leaving.
  if (failed()) SendFailureNotices();
  SayGoodbye();
  connections_.clear();
  if (failure_fd_ >= 0) close(failure_fd_);
  if (monitor_wake_fd_ >= 0) close(monitor_wake_fd_);
}

std::unique_ptr<PeerExchange> TcpTransport::OpenExchange(std::vector<int> peers, uint64_t tag,
                                                         std::string description,
                                                         Deadline deadline) {
  return std::make_unique<TcpExchange>(*this, std::move(peers), tag, std::move(description),
                                       deadline);
}

StatusOr<std::unique_ptr<SharedMemory>> TcpTransport::CreateSharedMemory(size_t bytes) {
  return MemoryFileSharedMemory::Create(bytes);
}

StatusOr<std::unique_ptr<SharedMemory>> TcpTransport::OpenSharedMemory(
    const SharedMemory::Invitation& invitation, size_t bytes) {
  return MemoryFileSharedMemory::Open(invitation, bytes);
}

const std::string& TcpTransport::HostIdentity(int rank) const {
  if (rank == rank_) return ThisProcess().host_identity;
  return connections_[rank]->peer_process().host_identity;
}

bool TcpTransport::CanReadMemoryOf(int rank) const {
  return rank != rank_ && connections_[rank]->can_read_peer_memory();
}

uint64_t TcpTransport::DataBytesSent() const {
  uint64_t bytes = 0;
  for (int rank = 0; rank < size(); ++rank) bytes += DataBytesSentTo(rank);
  return bytes;
}

uint64_t TcpTransport::DataBytesSentTo(int rank) const {
  const auto& connection = connections_[rank];
  return connection != nullptr ? connection->data_bytes_sent() : 0;
}

Status TcpTransport::health() const {
  if (!failed()) return Status::OK();
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_;
}

void TcpTransport::RecordFailure(const Status& failure, bool tell_peers,
                                 const std::string& peer_report) {
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (failed_.load()) return;
    failure_ = failure;
    failure_peer_report_ = peer_report;
    tell_peers_ = tell_peers;
    // Before the failure becomes visible: no thread can act on it (and exit) before job control
    // has been told.
    if (!peer_report.empty() && options_.on_peer_failure) options_.on_peer_failure(peer_report);
    failed_.store(true, std::memory_order_release);
  }
  options_.log_warning("collectives of " + names_[rank_] + " stopped: " + failure.message());
  Signal(failure_fd_);
  Signal(monitor_wake_fd_);
}

std::string TcpTransport::FailurePeerReport() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_peer_report_;
}

std::string TcpTransport::PeerReportOf(const Connection& connection, const Status& failure,
                                       bool silent) const {
  if (connection.received_failure_notice()) return connection.received_peer_report();
  // The connection's errors read "<peer name> <what happened>"; the report keeps what happened.
  std::string detail = failure.message();
  const std::string prefix = connection.peer_name() + " ";
  if (detail.rfind(prefix, 0) == 0) detail.erase(0, prefix.size());
  std::string what = "died";
  if (silent) {
    what = "hung";
    detail = "no heartbeat for " + FormatSeconds(options_.peer_timeout);
  } else if (failure.code() != Status::Code::kUnavailable) {
    what = "misbehaved";  // a malformed or out-of-step frame: alive, but not to be trusted
  }
  return cluster::FormatPeerReport({tasks_[connection.peer_rank()], what, detail});
}

void TcpTransport::StartMonitor() {
  monitor_ = std::thread([this] { MonitorLoop(); });
}

void TcpTransport::MonitorLoop() {
  const auto tick =
      std::min<std::chrono::nanoseconds>(options_.heartbeat_interval / 2, kMaxMonitorTick);
  std::vector<pollfd> fds;
  std::vector<Connection*> polled;
  while (!stopping_.load()) {
    const bool failed_now = failed();
    if (failed_now) SendFailureNotices();
    fds.clear();
    polled.clear();
    const auto now = SteadyClock::now();
    for (auto& owned : connections_) {
      Connection* connection = owned.get();
      if (connection == nullptr || connection->claims().load() > 0) continue;
      std::unique_lock<std::mutex> lock(connection->io_mutex(), std::try_to_lock);
      if (!lock.owns_lock() || connection->claims().load() > 0) continue;
      if (connection->state() == Connection::State::kBroken) continue;
      connection->MaybeQueueHeartbeat(now, options_.heartbeat_interval);
      Status status = connection->Pump(failed_now);
      bool silent = false;
      if (status.ok() && !failed_now) {
        status = connection->CheckLiveness(now, options_.peer_timeout);
        silent = !status.ok();
        if (silent) connection->MarkBroken();
      }
      if (!status.ok()) {
        RecordFailure(status, !connection->received_failure_notice(),
                      PeerReportOf(*connection, status, silent));
        continue;
      }
      short events = connection->PollEvents(failed_now);
      if (events != 0) {
        fds.push_back({connection->fd(), events, 0});
        polled.push_back(connection);
      }
    }
    fds.push_back({monitor_wake_fd_, POLLIN, 0});
    int timeout_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(tick).count());
    int ready = poll(fds.data(), fds.size(), timeout_ms);
    if (ready <= 0) continue;
    if (fds.back().revents != 0) Drain(monitor_wake_fd_);
    for (size_t i = 0; i < polled.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Connection* connection = polled[i];
      std::unique_lock<std::mutex> lock(connection->io_mutex(), std::try_to_lock);
      if (!lock.owns_lock() || connection->claims().load() > 0) continue;
      Status status = connection->Pump(failed());
      if (!status.ok()) {
        RecordFailure(status, !connection->received_failure_notice(),
                      PeerReportOf(*connection, status, /*silent=*/false));
      }
    }
  }
}

void TcpTransport::SendFailureNotices() {
  std::string failure;
  std::string peer_report;
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    // A failure learnt from a notice was already sent to everyone by the task that detected it.
    if (!tell_peers_ || notices_sent_) return;
    notices_sent_ = true;
    failure = failure_.message();
    peer_report = failure_peer_report_;
  }
  for (auto& owned : connections_) {
    Connection* connection = owned.get();
    if (connection == nullptr) continue;
    // Exchanges see the failure at once and let go of their connections, so this wait is short.
    std::lock_guard<std::mutex> lock(connection->io_mutex());
    connection->QueueFailureNotice(failure, peer_report);
    if (!connection->Pump(true).ok()) connection->MarkBroken();
  }
}

std::optional<std::string> TcpTransport::FailureMessage() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (!failed_.load()) return std::nullopt;
  return failure_.message();
}

void TcpTransport::SayGoodbye() {
  // Every peer gets a goodbye; then this task waits until each peer has read everything it sent
  // and acknowledged by ending its own side of the stream, or until the shutdown timeout. Closing
  // earlier could destroy data a slower peer still has to read (pytorch/gloo issues of the
  // "connection closed by peer" kind).
  std::vector<std::unique_lock<std::mutex>> locks;
  std::vector<Connection*> open;
  for (auto& owned : connections_) {
    Connection* connection = owned.get();
    if (connection == nullptr) continue;
    locks.emplace_back(connection->io_mutex());
    connection->AbandonTransfers();
    if (connection->state() == Connection::State::kOpen) {
      connection->QueueControl(FrameType::kGoodbye, "");
    }
    open.push_back(connection);
  }
  std::vector<bool> shut(open.size(), false), finished(open.size(), false);
  Deadline deadline = Deadline::After(options_.shutdown_timeout);
  while (!deadline.Expired()) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t i = 0; i < open.size(); ++i) {
      if (finished[i]) continue;
      Connection* connection = open[i];
      if (!shut[i]) {
        // A broken connection gets no goodbye, but still the end of the stream, so that the peer
        // does not wait for one.
        if (connection->state() == Connection::State::kBroken || !connection->Pump(true).ok()) {
          connection->MarkBroken();
        }
        if (connection->state() == Connection::State::kBroken || !connection->HasOutgoing()) {
          connection->ShutdownWriting();
          shut[i] = true;
        }
      }
      if (shut[i] && connection->DiscardIncoming()) {
        finished[i] = true;
        continue;
      }
      fds.push_back({connection->fd(), static_cast<short>(shut[i] ? POLLIN : POLLIN | POLLOUT), 0});
      which.push_back(i);
    }
    if (fds.empty()) break;
    poll(fds.data(), fds.size(), deadline.PollTimeoutMs());
  }
}

}  // namespace cohort::net
