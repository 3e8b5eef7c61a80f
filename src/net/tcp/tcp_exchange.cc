#include "net/tcp/tcp_exchange.h"

#include <poll.h>

#include <algorithm>
#include <cassert>

#include "cluster/peer_report.h"

namespace cohort::net {

TcpExchange::TcpExchange(TcpTransport& transport, std::vector<int> peers, uint64_t tag,
                         std::string description, Deadline deadline)
    : transport_(transport),
      tag_(tag),
      description_(std::move(description)),
      deadline_(deadline),
      link_of_rank_(transport.size(), -1) {
  // Locks in rank order, so that two Exchanges over overlapping peers cannot deadlock.
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  for (int peer : peers) {
    assert(peer >= 0 && peer < transport.size() && peer != transport.rank());
    Connection* connection = transport.connection(peer);
    connection->claims().fetch_add(1);
    connection->io_mutex().lock();
    link_of_rank_[peer] = static_cast<int>(links_.size());
    links_.push_back(
        {peer, connection, connection->data_frames_sent(), connection->data_frames_received()});
  }
  initial_status_ = WithDescription(transport.health());
}

TcpExchange::~TcpExchange() {
  for (Link& link : links_) {
    Connection* connection = link.connection;
    bool finished =
        connection->data_frames_sent() - link.sends_at_start == link.sends_posted &&
        connection->data_frames_received() - link.receives_at_start == link.receives_posted;
    if (!finished) connection->AbandonTransfers();
    connection->io_mutex().unlock();
    connection->claims().fetch_sub(1);
  }
}

TcpExchange::Link& TcpExchange::LinkTo(int peer) {
  assert(peer >= 0 && peer < static_cast<int>(link_of_rank_.size()) && link_of_rank_[peer] >= 0);
  return links_[link_of_rank_[peer]];
}

const TcpExchange::Link& TcpExchange::LinkTo(int peer) const {
  assert(peer >= 0 && peer < static_cast<int>(link_of_rank_.size()) && link_of_rank_[peer] >= 0);
  return links_[link_of_rank_[peer]];
}

void TcpExchange::Send(int peer, const void* data, size_t size) {
  assert(size <= kMaxDataPayload);
  Link& link = LinkTo(peer);
  link.connection->QueueData(tag_, data, static_cast<uint32_t>(size));
  ++link.sends_posted;
}

void TcpExchange::Receive(int peer, void* buffer, size_t size) {
  assert(size <= kMaxDataPayload);
  Link& link = LinkTo(peer);
  link.connection->PostReceive(tag_, buffer, static_cast<uint32_t>(size));
  ++link.receives_posted;
}

void TcpExchange::ReceiveAtMost(int peer, void* buffer, size_t capacity, uint32_t* received_size) {
  assert(capacity <= kMaxDataPayload && received_size != nullptr);
  Link& link = LinkTo(peer);
  link.connection->PostReceive(tag_, buffer, static_cast<uint32_t>(capacity), received_size);
  ++link.receives_posted;
}

uint64_t TcpExchange::sends_completed(int peer) const {
  const Link& link = LinkTo(peer);
  return link.connection->data_frames_sent() - link.sends_at_start;
}

uint64_t TcpExchange::receives_completed(int peer) const {
  const Link& link = LinkTo(peer);
  return link.connection->data_frames_received() - link.receives_at_start;
}

Status TcpExchange::WaitForReceives(int peer, uint64_t count) {
  return WaitUntil([&] { return receives_completed(peer) >= count; },
                   [&] {
                     return "message " + std::to_string(receives_completed(peer) + 1) + " of " +
                            std::to_string(LinkTo(peer).receives_posted) + " from " +
                            transport_.PeerName(peer);
                   });
}

Status TcpExchange::WaitForSends(int peer, uint64_t count) {
  return WaitUntil([&] { return sends_completed(peer) >= count; },
                   [&] {
                     return "sending message " + std::to_string(sends_completed(peer) + 1) +
                            " of " + std::to_string(LinkTo(peer).sends_posted) + " to " +
                            transport_.PeerName(peer);
                   });
}

Status TcpExchange::Finish() {
  auto all_done = [&] {
    for (const Link& link : links_) {
      if (link.connection->data_frames_sent() - link.sends_at_start < link.sends_posted ||
          link.connection->data_frames_received() - link.receives_at_start < link.receives_posted) {
        return false;
      }
    }
    return true;
  };
  auto pending = [&] {
    std::string text;
    for (const Link& link : links_) {
      uint64_t sent = link.connection->data_frames_sent() - link.sends_at_start;
      uint64_t received = link.connection->data_frames_received() - link.receives_at_start;
      if (sent < link.sends_posted || received < link.receives_posted) {
        if (!text.empty()) text += ", ";
        text += transport_.PeerName(link.rank) + " (" + std::to_string(sent) + "/" +
                std::to_string(link.sends_posted) + " messages sent, " + std::to_string(received) +
                "/" + std::to_string(link.receives_posted) + " received)";
      }
    }
    return text;
  };
  return WaitUntil(all_done, pending);
}

Status TcpExchange::Service() {
  if (transport_.failed()) {
    TellPeersNow();
    return WithDescription(transport_.health());
  }
  const auto now = SteadyClock::now();
  for (Link& link : links_) {
    Connection* connection = link.connection;
    connection->MaybeQueueHeartbeat(now, transport_.options().heartbeat_interval);
    COHORT_RETURN_IF_ERROR(PumpLink(link));
    Status alive = connection->CheckLiveness(now, transport_.options().peer_timeout);
    if (!alive.ok()) {
      connection->MarkBroken();
      return Fail(alive, transport_.PeerReportOf(*connection, alive, /*silent=*/true));
    }
  }
  return Status::OK();
}

Status TcpExchange::ReadPeerMemory(int peer, uint64_t address, void* destination, size_t size) {
  Connection* connection = LinkTo(peer).connection;
  if (!connection->can_read_peer_memory()) {
    return Fail(Status::FailedPrecondition("cannot read the memory of " +
                                           transport_.PeerName(peer) + " directly"));
  }
  Status status = ReadProcessMemory(connection->peer_process().process_id, address, destination,
                                    size, transport_.PeerName(peer));
  if (status.ok()) return status;
  // The peer most likely gave up on this operation (and reused its buffer) because of a failure
  // it has already told this task about: that notice is the better explanation.
  for (Link& link : links_) {
    IgnoreError(PumpLink(link), "only to take in a notice; the transport's health says the rest");
  }
  if (transport_.failed()) return WithDescription(transport_.health());
  return Fail(status);
}

Status TcpExchange::Fail(const Status& failure, const std::string& peer_report) {
  transport_.RecordFailure(failure, /*tell_peers=*/true, peer_report);
  TellPeersNow();
  return WithDescription(transport_.health());
}

void TcpExchange::TellPeersNow() {
  std::optional<std::string> failure = transport_.FailureMessage();
  if (!failure.has_value()) return;
  const std::string peer_report = transport_.FailurePeerReport();
  for (Link& link : links_) {
    Connection* connection = link.connection;
    connection->AbandonTransfers();
    connection->QueueFailureNotice(*failure, peer_report);
    // Best effort and never blocking: the monitor sends whatever the socket does not take now.
    if (!connection->Pump(true).ok()) connection->MarkBroken();
  }
}

Status TcpExchange::WithDescription(const Status& status) const {
  return status.WithContext(description_);
}

Status TcpExchange::PumpLink(Link& link) {
  Connection* connection = link.connection;
  Status status = connection->Pump(false);
  if (status.ok()) return status;
  transport_.RecordFailure(status, !connection->received_failure_notice(),
                           transport_.PeerReportOf(*connection, status, /*silent=*/false));
  TellPeersNow();
  return WithDescription(transport_.health());
}

Status TcpExchange::WaitUntil(const std::function<bool()>& done,
                              const std::function<std::string()>& waiting_for) {
  const auto heartbeat_interval = transport_.options().heartbeat_interval;
  const auto peer_timeout = transport_.options().peer_timeout;
  std::vector<pollfd>& fds = poll_fds_;
  fds.resize(links_.size() + 1);
  bool pump_all = true;
  while (true) {
    if (transport_.failed()) {
      TellPeersNow();
      return WithDescription(transport_.health());
    }
    if (done()) return Status::OK();
    if (pump_all) {
      for (Link& link : links_) COHORT_RETURN_IF_ERROR(PumpLink(link));
      if (done()) return Status::OK();
    }
    const auto now = SteadyClock::now();
    if (deadline_.Expired()) {
      return Fail(Status::DeadlineExceeded(
          "did not finish within its deadline; still waiting for " + waiting_for()));
    }
    auto wake = deadline_.time();
    for (size_t i = 0; i < links_.size(); ++i) {
      Link& link = links_[i];
      Connection* connection = link.connection;
      if (connection->state() == Connection::State::kDeparted) {
        bool needed =
            connection->data_frames_received() - link.receives_at_start < link.receives_posted ||
            connection->data_frames_sent() - link.sends_at_start < link.sends_posted;
        if (needed) {
          return Fail(Status::Unavailable(transport_.PeerName(link.rank) +
                                          " shut down (said goodbye) before this operation "
                                          "finished; still waiting for " +
                                          waiting_for()),
                      cluster::FormatPeerReport({transport_.task(link.rank), "left",
                                                 "shut down before an operation finished"}));
        }
      }
      wake = std::min(wake, connection->MaybeQueueHeartbeat(now, heartbeat_interval));
      Status alive = connection->CheckLiveness(now, peer_timeout);
      if (!alive.ok()) {
        connection->MarkBroken();
        return Fail(alive, transport_.PeerReportOf(*connection, alive, /*silent=*/true));
      }
      if (connection->state() == Connection::State::kOpen) {
        wake =
            std::min(wake, connection->last_heard() + peer_timeout + std::chrono::milliseconds(1));
      }
      fds[i] = {connection->fd(), connection->PollEvents(false), 0};
    }
    fds[links_.size()] = {transport_.failure_fd(), POLLIN, 0};
    auto left = wake - SteadyClock::now();
    int timeout_ms =
        left <= std::chrono::nanoseconds::zero()
            ? 0
            : static_cast<int>(std::min<long long>(
                  std::chrono::ceil<std::chrono::milliseconds>(left).count(), 1 << 30));
    int ready = poll(fds.data(), fds.size(), timeout_ms);
    pump_all = false;
    if (ready <= 0) continue;
    for (size_t i = 0; i < links_.size(); ++i) {
      if (fds[i].revents != 0) COHORT_RETURN_IF_ERROR(PumpLink(links_[i]));
    }
  }
}

}  // namespace cohort::net
