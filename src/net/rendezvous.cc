#include "net/rendezvous.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <random>

namespace cohort::net {
namespace {

constexpr std::chrono::milliseconds kFirstBackoff(50);
constexpr std::chrono::milliseconds kMaxBackoff(1000);
// One connect() attempt; a peer that takes longer is retried rather than waited for.
constexpr std::chrono::milliseconds kConnectAttemptTimeout(3000);
// How often the accepting thread looks whether the rendezvous is over.
constexpr int kAcceptPollMs = 50;
// Handshakes in progress at once; more connections than this are closed at once.
constexpr size_t kMaxConcurrentHandshakes = 64;
constexpr char kNoAttemptYet[] = "no attempt finished yet";

std::string PeerAddress(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) < 0) return "unknown";
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&address), length, host, sizeof(host), port,
                  sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "unknown";
  }
  return std::string(host) + ":" + port;
}

}  // namespace

Rendezvous::Rendezvous(Participants participants, HandshakeConfig handshake,
                       std::chrono::milliseconds startup_timeout,
                       std::chrono::milliseconds handshake_timeout,
                       std::function<void(const std::string&)> log_warning)
    : participants_(std::move(participants)),
      handshake_(std::move(handshake)),
      handshake_timeout_(handshake_timeout),
      log_warning_(std::move(log_warning)),
      deadline_(Deadline::After(startup_timeout)) {}

StatusOr<std::vector<EstablishedConnection>> Rendezvous::Run(Socket listener) {
  const int size = static_cast<int>(participants_.tasks.size());
  const int self = participants_.self_rank;
  connections_.resize(size);
  connected_.assign(size, false);
  last_error_.assign(size, kNoAttemptYet);
  missing_ = size - 1;

  std::thread acceptor;
  if (self < size - 1) acceptor = std::thread([&] { AcceptLoop(listener); });
  std::vector<std::thread> connectors;
  for (int rank = 0; rank < self; ++rank) {
    connectors.emplace_back([this, rank] { ConnectLoop(rank); });
  }

  {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto started = SteadyClock::now();
    auto done = [&] { return missing_ == 0 || !fatal_.ok(); };
    while (!done() && !deadline_.Expired()) {
      auto until = deadline_.time();
      if (waiting_report_interval_ > std::chrono::milliseconds::zero()) {
        until = std::min(until, SteadyClock::now() + waiting_report_interval_);
      }
      if (changed_.wait_until(lock, until, done)) break;
      if (deadline_.Expired() || waiting_report_interval_ <= std::chrono::milliseconds::zero()) {
        continue;
      }
      const auto waited =
          std::chrono::duration_cast<std::chrono::seconds>(SteadyClock::now() - started);
      log_warning_("rendezvous: " + participants_.names[self] + " still waits, after " +
                   std::to_string(waited.count()) + " s, for " + std::to_string(missing_) + " of " +
                   std::to_string(size - 1) + " peers: " + MissingPeers());
    }
    stopped_ = true;
    // Interrupts handshakes still running: their next read or write fails at once.
    for (int fd : in_flight_fds_) shutdown(fd, SHUT_RDWR);
  }
  changed_.notify_all();
  if (acceptor.joinable()) acceptor.join();
  for (std::thread& connector : connectors) connector.join();
  for (std::thread& thread : handshake_threads_) thread.join();

  std::lock_guard<std::mutex> lock(mutex_);
  if (!fatal_.ok()) return fatal_;
  if (missing_ > 0) {
    return Status::DeadlineExceeded(
        "rendezvous of " + participants_.names[self] +
        " timed out before every peer was connected and authenticated; missing: " + MissingPeers());
  }
  return std::move(connections_);
}

std::string Rendezvous::MissingPeers() const {
  const int self = participants_.self_rank;
  std::string missing;
  for (int rank = 0; rank < static_cast<int>(participants_.tasks.size()); ++rank) {
    if (rank == self || connected_[rank]) continue;
    if (!missing.empty()) missing += "; ";
    missing += participants_.names[rank];
    if (rank < self || last_error_[rank] != kNoAttemptYet) {
      missing += " (last error: " + last_error_[rank] + ")";
    } else {
      missing += " (it never connected to this task)";
    }
  }
  return missing;
}

Deadline Rendezvous::HandshakeDeadline() const {
  return deadline_.Min(Deadline::After(handshake_timeout_));
}

int Rendezvous::RankOf(const cluster::TaskId& task) const {
  auto it = std::find(participants_.tasks.begin(), participants_.tasks.end(), task);
  return it == participants_.tasks.end() ? -1 : static_cast<int>(it - participants_.tasks.begin());
}

void Rendezvous::AcceptLoop(const Socket& listener) {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_) return;
    }
    pollfd waiter{listener.fd(), POLLIN, 0};
    if (poll(&waiter, 1, kAcceptPollMs) <= 0) continue;
    while (true) {
      auto accepted = AcceptPending(listener);
      if (!accepted.ok()) {
        log_warning_("rendezvous: " + accepted.status().message());
        break;
      }
      if (!accepted->valid()) break;
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_) return;
      size_t running = in_flight_fds_.size();
      if (running >= kMaxConcurrentHandshakes) {
        log_warning_("rendezvous: closed a connection from " + PeerAddress(accepted->fd()) +
                     ": too many handshakes in progress");
        continue;
      }
      in_flight_fds_.insert(accepted->fd());
      handshake_threads_.emplace_back(
          [this, socket = std::move(*accepted)]() mutable { AcceptOne(std::move(socket)); });
    }
  }
}

void Rendezvous::AcceptOne(Socket socket) {
  const std::string address = PeerAddress(socket.fd());
  const int self = participants_.self_rank;
  int peer_rank = -1;
  auto admit = [&](const HelloMessage& hello) -> Status {
    peer_rank = RankOf(hello.task);
    if (peer_rank < 0) {
      return Status::FailedPrecondition(hello.task.ToString() +
                                        " is not a participant of this cluster");
    }
    if (peer_rank <= self) {
      return Status::FailedPrecondition(
          hello.task.ToString() + " ranks below " + participants_.tasks[self].ToString() + ", so " +
          participants_.tasks[self].ToString() + " is the one that connects");
    }
    return Status::OK();
  };
  HandshakeConfig config = handshake_;
  config.deadline = HandshakeDeadline();
  auto result = AcceptHandshake(socket.fd(), config, admit);
  TrackInFlight(socket.fd(), false);
  if (!result.ok()) {
    // An authenticated peer that sees another cluster: no connection can ever work.
    if (result.status().code() == Status::Code::kAborted) {
      Fail(result.status());
      return;
    }
    bool stopped;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped = stopped_;
      // What the waiting report and the timeout say about this peer, when it named itself.
      if (peer_rank > self) last_error_[peer_rank] = result.status().message();
    }
    if (!stopped) {
      log_warning_("rendezvous: refused a connection from " + address + ": " +
                   result.status().message());
    }
    return;
  }
  Register(peer_rank, EstablishedConnection{std::move(socket), std::move(*result)});
}

void Rendezvous::ConnectLoop(int rank) {
  const Endpoint& endpoint = participants_.endpoints[rank];
  const std::string& name = participants_.names[rank];
  std::minstd_rand jitter(static_cast<unsigned>(std::random_device{}()));
  std::chrono::milliseconds backoff = kFirstBackoff;
  while (!deadline_.Expired()) {
    Status attempt;
    auto socket = ConnectTcp(endpoint, deadline_.Min(Deadline::After(kConnectAttemptTimeout)));
    if (socket.ok()) {
      TrackInFlight(socket->fd(), true);
      HandshakeConfig config = handshake_;
      config.deadline = HandshakeDeadline();
      auto result = ConnectHandshake(socket->fd(), config, participants_.tasks[rank], name);
      TrackInFlight(socket->fd(), false);
      if (result.ok()) {
        Register(rank, EstablishedConnection{std::move(*socket), std::move(*result)});
        return;
      }
      if (result.status().code() == Status::Code::kFailedPrecondition) {
        Fail(result.status());
        return;
      }
      attempt = result.status();
    } else {
      attempt = socket.status();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      last_error_[rank] = attempt.message();
    }
    auto sleep = backoff / 2 + std::chrono::milliseconds(jitter() % (backoff.count() / 2 + 1));
    if (!SleepUnlessStopped(sleep)) return;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

void Rendezvous::Register(int rank, EstablishedConnection connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopped_) return;
  // A task that reconnects (its previous attempt timed out on its side after this side accepted)
  // replaces its previous connection.
  if (!connected_[rank]) --missing_;
  connected_[rank] = true;
  connections_[rank] = std::move(connection);
  changed_.notify_all();
}

void Rendezvous::Fail(const Status& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fatal_.ok()) fatal_ = status;
  changed_.notify_all();
}

bool Rendezvous::SleepUnlessStopped(std::chrono::milliseconds duration) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto until = std::min(SteadyClock::now() + duration, deadline_.time());
  changed_.wait_until(lock, until, [&] { return stopped_; });
  return !stopped_;
}

void Rendezvous::TrackInFlight(int fd, bool add) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (add) {
    in_flight_fds_.insert(fd);
    if (stopped_) shutdown(fd, SHUT_RDWR);
  } else {
    in_flight_fds_.erase(fd);
  }
}

}  // namespace cohort::net
