// Socket: the few POSIX TCP calls the transport needs, with deadlines and Status errors.
//
// Every socket the transport keeps is non-blocking; the helpers here turn "write these bytes" and
// "read these bytes" into poll loops bounded by a Deadline, which is what the rendezvous and the
// handshake need. The data path (connection.h) does its own non-blocking I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/file.h"
#include "base/status.h"
#include "net/deadline.h"

namespace cohort::net {

// "host:port" as a cluster spec writes it. IPv6 literals are bracketed: "[::1]:2222".
struct Endpoint {
  std::string host;
  uint16_t port = 0;

  std::string ToString() const;
};

StatusOr<Endpoint> ParseEndpoint(const std::string& text);

// Owns one file descriptor; closes it on destruction. Move-only.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { Close(); }
  Socket(Socket&& other) noexcept : fd_(other.Release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  int Release();
  void Close();

 private:
  int fd_ = -1;
};

// A non-blocking TCP socket listening on `port` of every local address (or of `host` when it is
// not empty), with SO_REUSEADDR so that a restarted task can take its port back at once.
StatusOr<Socket> ListenTcp(const std::string& host, uint16_t port, int backlog);

// The port a bound socket listens on (useful after binding port 0).
StatusOr<uint16_t> LocalPort(int fd);

// Accepts one pending connection from a non-blocking listener, or returns an invalid Socket when
// none is pending. The accepted socket is non-blocking with TCP_NODELAY.
StatusOr<Socket> AcceptPending(const Socket& listener);

// One attempt to connect to `endpoint`: resolves it (anew each time, since a peer's DNS name may
// appear only once its pod runs) and tries each address until one accepts or `deadline` passes.
// The socket returned is non-blocking with TCP_NODELAY. Fails with Unavailable when nobody
// listens yet, which callers treat as "retry later".
StatusOr<Socket> ConnectTcp(const Endpoint& endpoint, Deadline deadline);

Status SetNonBlocking(int fd);
Status SetNoDelay(int fd);

// Writes or reads exactly `size` bytes on a non-blocking socket, polling until `deadline`.
// `what` names the transfer in errors ("handshake with worker:1 (host:2222)").
Status WriteFully(int fd, const void* data, size_t size, Deadline deadline,
                  const std::string& what);
Status ReadFully(int fd, void* data, size_t size, Deadline deadline, const std::string& what);

}  // namespace cohort::net
