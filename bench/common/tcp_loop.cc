#include "tcp_loop.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace cohort::bench {
namespace {

// The most one send or receive call moves: Cohort's ring segment. Whole-buffer calls (megabytes
// at once) made the exchange 2 to 5 times slower at 1 MiB on loopback, and a ceiling that is
// easier to beat than it should be bounds nothing; 64 KiB calls were slower again.
constexpr size_t kMaxBytesPerCall = 256 * 1024;

}  // namespace

size_t RingAllReduceBytesPerRank(size_t size, int ranks) {
  if (ranks < 2) return 0;
  return static_cast<size_t>(2.0 * (ranks - 1) / ranks * static_cast<double>(size));
}

StatusOr<std::unique_ptr<RingExchange>> RingExchange::Connect(
    int rank, const std::vector<net::Endpoint>& endpoints, net::Socket listener,
    net::Deadline deadline) {
  const int ranks = static_cast<int>(endpoints.size());
  if (ranks < 2 || rank < 0 || rank >= ranks) {
    return Status::InvalidArgument("ring exchange: rank " + std::to_string(rank) + " of " +
                                   std::to_string(ranks) + " endpoints");
  }
  const net::Endpoint& next = endpoints[(rank + 1) % ranks];
  const int previous = (rank - 1 + ranks) % ranks;
  net::Socket to_next, from_previous;
  // Two ranks share one connection, used both ways, as a ring's two ranks do: rank 0 connects and
  // rank 1 accepts. (Two connections, one per direction, would cost each direction its own
  // acknowledgements, which data going the other way otherwise carries.)
  const bool connects = ranks > 2 || rank == 0;
  const bool accepts = ranks > 2 || rank == 1;
  Status last_error = Status::OK();
  while ((connects && !to_next.valid()) || (accepts && !from_previous.valid())) {
    if (deadline.Expired()) {
      return Status::DeadlineExceeded(
          "ring exchange: rank " + std::to_string(rank) + " could not " +
          (to_next.valid() ? "accept rank " + std::to_string(previous)
                           : "connect to " + next.ToString() + " (" + last_error.ToString() + ")"));
    }
    if (connects && !to_next.valid()) {
      auto connected = net::ConnectTcp(next, net::Deadline::After(std::chrono::seconds(1)));
      if (connected.ok()) {
        const int32_t self = rank;
        if (Status sent = net::WriteFully(connected->fd(), &self, sizeof(self), deadline,
                                          "ring exchange hello to " + next.ToString());
            !sent.ok()) {
          return sent;
        }
        to_next = std::move(*connected);
      } else {
        last_error = connected.status();
      }
    }
    if (accepts && !from_previous.valid()) {
      auto accepted = net::AcceptPending(listener);
      if (!accepted.ok()) return accepted.status();
      if (accepted->valid()) {
        int32_t peer = -1;
        if (Status read =
                net::ReadFully(accepted->fd(), &peer, sizeof(peer), deadline,
                               "ring exchange hello from rank " + std::to_string(previous));
            !read.ok()) {
          return read;
        }
        if (peer != previous) {
          return Status::FailedPrecondition("ring exchange: rank " + std::to_string(rank) +
                                            " expected rank " + std::to_string(previous) +
                                            ", was reached by rank " + std::to_string(peer));
        }
        from_previous = std::move(*accepted);
      }
    }
    if ((connects && !to_next.valid()) || (accepts && !from_previous.valid())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (!connects || !accepts) {
    net::Socket& shared = connects ? to_next : from_previous;
    const int copy = dup(shared.fd());
    if (copy < 0)
      return Status::Internal(std::string("ring exchange: dup: ") + std::strerror(errno));
    (connects ? from_previous : to_next) = net::Socket(copy);
  }
  return std::unique_ptr<RingExchange>(
      new RingExchange(std::move(to_next), std::move(from_previous)));
}

Status RingExchange::Exchange(const void* send, size_t send_size, void* receive,
                              size_t receive_size, size_t bytes, net::Deadline deadline) {
  if (send_size == 0 || receive_size == 0) {
    return Status::InvalidArgument("ring exchange: empty buffer");
  }
  const char* out = static_cast<const char*>(send);
  char* in = static_cast<char*>(receive);
  size_t sent = 0, received = 0;
  // Both directions are tried at once, without asking poll first; poll waits only when neither
  // moved, as a ring's data path does.
  while (sent < bytes || received < bytes) {
    bool moved = false;
    if (sent < bytes) {
      const size_t offset = sent % send_size;
      const size_t length = std::min({bytes - sent, send_size - offset, kMaxBytesPerCall});
      ssize_t n = ::send(to_next_.fd(), out + offset, length, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        moved = true;
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return Status::Unavailable(std::string("ring exchange: send to the next rank: ") +
                                   std::strerror(errno));
      }
    }
    if (received < bytes) {
      const size_t offset = received % receive_size;
      const size_t length = std::min({bytes - received, receive_size - offset, kMaxBytesPerCall});
      ssize_t n = ::recv(from_previous_.fd(), in + offset, length, 0);
      if (n > 0) {
        received += static_cast<size_t>(n);
        moved = true;
      } else if (n == 0) {
        return Status::Unavailable("ring exchange: the previous rank closed the connection");
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return Status::Unavailable(std::string("ring exchange: receive from the previous rank: ") +
                                   std::strerror(errno));
      }
    }
    if (moved || (sent >= bytes && received >= bytes)) continue;
    if (deadline.Expired()) {
      return Status::DeadlineExceeded("ring exchange: sent " + std::to_string(sent) +
                                      " and received " + std::to_string(received) + " of " +
                                      std::to_string(bytes) + " bytes by the deadline");
    }
    pollfd fds[2] = {{to_next_.fd(), static_cast<short>(sent < bytes ? POLLOUT : 0), 0},
                     {from_previous_.fd(), static_cast<short>(received < bytes ? POLLIN : 0), 0}};
    if (poll(fds, 2, 100) < 0 && errno != EINTR) {
      return Status::Internal(std::string("ring exchange: poll: ") + std::strerror(errno));
    }
  }
  return Status::OK();
}

double MeasureTcpLoop(int ranks, size_t buffer_bytes, size_t bytes, size_t total_bytes) {
  std::vector<net::Endpoint> endpoints;
  std::vector<net::Socket> listeners;
  for (int rank = 0; rank < ranks; ++rank) {
    auto listener = net::ListenTcp("127.0.0.1", 0, 4);
    if (!listener.ok()) {
      std::fprintf(stderr, "ring ceiling: %s\n", listener.status().ToString().c_str());
      return 0;
    }
    endpoints.push_back({"127.0.0.1", *net::LocalPort(listener->fd())});
    listeners.push_back(std::move(*listener));
  }
  // Each rank reports its best seconds through a pipe; the slowest rank's best is the figure.
  int report[2];
  if (pipe(report) != 0) return 0;
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> children;
  for (int rank = 0; rank < ranks; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      close(report[0]);
      const auto deadline = net::Deadline::After(std::chrono::minutes(2));
      auto ring = RingExchange::Connect(rank, endpoints, std::move(listeners[rank]), deadline);
      // Every rank exchanges the same number of times, or the ring would stall.
      const size_t repetitions = std::max<size_t>(1, (total_bytes + bytes - 1) / bytes);
      double seconds = 0;
      if (ring.ok()) {
        std::vector<char> send(buffer_bytes, 1), receive(buffer_bytes, 2);
        auto exchange = [&] {
          return (*ring)->Exchange(send.data(), send.size(), receive.data(), receive.size(), bytes,
                                   deadline);
        };
        Status done = exchange();
        if (done.ok()) done = exchange();
        auto start = std::chrono::steady_clock::now();
        for (size_t repetition = 0; done.ok() && repetition < repetitions; ++repetition) {
          done = exchange();
        }
        if (done.ok()) {
          seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
              static_cast<double>(repetitions);
        } else {
          std::fprintf(stderr, "ring ceiling: %s\n", done.ToString().c_str());
        }
      } else {
        std::fprintf(stderr, "ring ceiling: %s\n", ring.status().ToString().c_str());
      }
      const double best = seconds;
      [[maybe_unused]] ssize_t written = write(report[1], &best, sizeof(best));
      _exit(best > 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  close(report[1]);
  listeners.clear();
  double slowest = 0;
  bool failed = false;
  for (int rank = 0; rank < ranks; ++rank) {
    double seconds = 0;
    if (read(report[0], &seconds, sizeof(seconds)) != sizeof(seconds) || seconds <= 0) {
      failed = true;
    }
    slowest = std::max(slowest, seconds);
  }
  close(report[0]);
  for (pid_t child : children) {
    int status = 0;
    waitpid(child, &status, 0);
  }
  return failed || slowest <= 0 ? 0 : static_cast<double>(bytes) / slowest;
}

}  // namespace cohort::bench
