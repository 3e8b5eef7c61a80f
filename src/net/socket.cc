#include "net/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace cohort::net {

std::string Endpoint::ToString() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

StatusOr<Endpoint> ParseEndpoint(const std::string& text) {
  std::string host;
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Status::InvalidArgument("endpoint \"" + text + "\" is not \"[ipv6]:port\"");
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon) {
      return Status::InvalidArgument("endpoint \"" + text + "\" is not \"host:port\"");
    }
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  if (host.empty()) return Status::InvalidArgument("endpoint \"" + text + "\" has no host");
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos) {
    return Status::InvalidArgument("endpoint \"" + text + "\" has no valid port");
  }
  int port = std::stoi(port_text);
  if (port < 1 || port > 65535) {
    return Status::InvalidArgument("endpoint \"" + text + "\" has port " + port_text +
                                   " outside 1..65535");
  }
  return Endpoint{host, static_cast<uint16_t>(port)};
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.Release();
  }
  return *this;
}

int Socket::Release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void Socket::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return Status::IOError("fcntl(O_NONBLOCK): " + ErrnoMessage(errno));
  }
  return Status::OK();
}

Status SetNoDelay(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
    return Status::IOError("setsockopt(TCP_NODELAY): " + ErrnoMessage(errno));
  }
  return Status::OK();
}

StatusOr<Socket> ListenTcp(const std::string& host, uint16_t port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* addresses = nullptr;
  std::string port_text = std::to_string(port);
  // With no host, prefer the IPv6 wildcard (which also accepts IPv4 unless the system disabled
  // dual stack), then fall back to the IPv4 wildcard.
  int rc =
      getaddrinfo(host.empty() ? nullptr : host.c_str(), port_text.c_str(), &hints, &addresses);
  if (rc != 0) {
    return Status::Unavailable("cannot resolve listen address \"" + host +
                               "\": " + gai_strerror(rc));
  }
  std::vector<addrinfo*> candidates;
  for (addrinfo* address = addresses; address != nullptr; address = address->ai_next) {
    candidates.push_back(address);
  }
  std::stable_partition(candidates.begin(), candidates.end(),
                        [](addrinfo* address) { return address->ai_family == AF_INET6; });
  std::string last_error = "no usable address";
  Socket result;
  for (addrinfo* address : candidates) {
    Socket candidate(socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC, 0));
    if (!candidate.valid()) {
      last_error = "socket(): " + ErrnoMessage(errno);
      continue;
    }
    int one = 1;
    setsockopt(candidate.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (address->ai_family == AF_INET6) {
      int zero = 0;  // dual stack: accept IPv4 peers too
      setsockopt(candidate.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    }
    if (bind(candidate.fd(), address->ai_addr, address->ai_addrlen) < 0) {
      last_error = "bind(port " + port_text + "): " + ErrnoMessage(errno);
      continue;
    }
    if (listen(candidate.fd(), backlog) < 0) {
      last_error = "listen(port " + port_text + "): " + ErrnoMessage(errno);
      continue;
    }
    Status status = SetNonBlocking(candidate.fd());
    if (!status.ok()) {
      last_error = status.message();
      continue;
    }
    result = std::move(candidate);
    break;
  }
  freeaddrinfo(addresses);
  if (!result.valid()) return Status::Unavailable("cannot listen: " + last_error);
  return result;
}

StatusOr<uint16_t> LocalPort(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) < 0) {
    return Status::IOError("getsockname: " + ErrnoMessage(errno));
  }
  if (address.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
}

StatusOr<Socket> AcceptPending(const Socket& listener) {
  while (true) {
    int fd = accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Socket accepted(fd);
      IgnoreError(SetNoDelay(fd), "best effort: latency, not correctness");
      return accepted;
    }
    if (errno == EINTR) continue;
    // A connection that died between SYN and accept() is not the listener's fault.
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED || errno == EPROTO) {
      return Socket();
    }
    return Status::IOError("accept: " + ErrnoMessage(errno));
  }
}

namespace {

// True when a socket connected to itself: connecting to a local port nobody listens on can pick
// that same port as the source port and "succeed" (TCP simultaneous open).
bool IsSelfConnection(int fd) {
  sockaddr_storage local{}, remote{};
  socklen_t local_length = sizeof(local), remote_length = sizeof(remote);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) < 0) return false;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &remote_length) < 0) return false;
  return local_length == remote_length && std::memcmp(&local, &remote, local_length) == 0;
}

}  // namespace

StatusOr<Socket> ConnectTcp(const Endpoint& endpoint, Deadline deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* addresses = nullptr;
  std::string port_text = std::to_string(endpoint.port);
  int rc = getaddrinfo(endpoint.host.c_str(), port_text.c_str(), &hints, &addresses);
  if (rc != 0) {
    return Status::Unavailable("cannot resolve \"" + endpoint.host + "\": " + gai_strerror(rc));
  }
  std::string last_error = "no address";
  Socket result;
  for (addrinfo* address = addresses; address != nullptr && !result.valid();
       address = address->ai_next) {
    Socket candidate(
        socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!candidate.valid()) {
      last_error = "socket(): " + ErrnoMessage(errno);
      continue;
    }
    int rc_connect = connect(candidate.fd(), address->ai_addr, address->ai_addrlen);
    if (rc_connect < 0 && errno != EINPROGRESS) {
      last_error = ErrnoMessage(errno);
      continue;
    }
    if (rc_connect < 0) {
      pollfd waiter{candidate.fd(), POLLOUT, 0};
      int ready;
      do {
        ready = poll(&waiter, 1, deadline.PollTimeoutMs());
      } while (ready < 0 && errno == EINTR);
      if (ready == 0) {
        last_error = "connect timed out";
        continue;
      }
      int error = 0;
      socklen_t length = sizeof(error);
      getsockopt(candidate.fd(), SOL_SOCKET, SO_ERROR, &error, &length);
      if (ready < 0 || error != 0) {
        last_error = ErrnoMessage(ready < 0 ? errno : error);
        continue;
      }
    }
    if (IsSelfConnection(candidate.fd())) {
      last_error = "connected to itself (nobody listens yet)";
      continue;
    }
    IgnoreError(SetNoDelay(candidate.fd()), "best effort: latency, not correctness");
    result = std::move(candidate);
  }
  freeaddrinfo(addresses);
  if (!result.valid()) {
    return Status::Unavailable("cannot connect to " + endpoint.ToString() + ": " + last_error);
  }
  return result;
}

namespace {

// Waits until `fd` is ready for `events` or the deadline passes.
Status WaitReady(int fd, short events, Deadline deadline, const std::string& what) {
  pollfd waiter{fd, events, 0};
  while (true) {
    int ready = poll(&waiter, 1, deadline.PollTimeoutMs());
    if (ready > 0) return Status::OK();
    if (ready == 0) return Status::DeadlineExceeded(what + ": timed out");
    if (errno != EINTR) return Status::IOError(what + ": poll: " + ErrnoMessage(errno));
  }
}

}  // namespace

Status WriteFully(int fd, const void* data, size_t size, Deadline deadline,
                  const std::string& what) {
  const char* cursor = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t written = send(fd, cursor, size, MSG_NOSIGNAL);
    if (written > 0) {
      cursor += written;
      size -= static_cast<size_t>(written);
      continue;
    }
    if (written < 0 && errno == EINTR) continue;
    if (written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      COHORT_RETURN_IF_ERROR(WaitReady(fd, POLLOUT, deadline, what));
      continue;
    }
    return Status::Unavailable(what + ": send failed: " + ErrnoMessage(errno));
  }
  return Status::OK();
}

Status ReadFully(int fd, void* data, size_t size, Deadline deadline, const std::string& what) {
  char* cursor = static_cast<char*>(data);
  while (size > 0) {
    ssize_t received = recv(fd, cursor, size, 0);
    if (received > 0) {
      cursor += received;
      size -= static_cast<size_t>(received);
      continue;
    }
    if (received == 0) return Status::Unavailable(what + ": connection closed by the peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      COHORT_RETURN_IF_ERROR(WaitReady(fd, POLLIN, deadline, what));
      continue;
    }
    return Status::Unavailable(what + ": receive failed: " + ErrnoMessage(errno));
  }
  return Status::OK();
}

}  // namespace cohort::net
