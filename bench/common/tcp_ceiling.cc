#include "tcp_ceiling.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "net/socket.h"

namespace cohort::bench {

double MeasureTcpCeiling(size_t buffer_bytes, size_t total_bytes) {
  auto listener = net::ListenTcp("127.0.0.1", 0, 1);
  if (!listener.ok()) return 0;
  uint16_t port = *net::LocalPort(listener->fd());
  pid_t sender = fork();
  if (sender == 0) {
    auto socket =
        net::ConnectTcp({"127.0.0.1", port}, net::Deadline::After(std::chrono::seconds(10)));
    if (!socket.ok()) _exit(1);
    std::vector<char> buffer(buffer_bytes, 1);
    for (size_t sent = 0; sent < total_bytes + buffer_bytes; sent += buffer_bytes) {
      if (!net::WriteFully(socket->fd(), buffer.data(), buffer_bytes, net::Deadline::Never(), "tcp")
               .ok()) {
        _exit(1);
      }
    }
    _exit(0);
  }
  StatusOr<net::Socket> accepted = net::Socket();
  while (accepted.ok() && !accepted->valid()) {
    accepted = net::AcceptPending(*listener);
    if (accepted.ok() && !accepted->valid())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<char> buffer(buffer_bytes, 2);
  double throughput = 0;
  if (accepted.ok()) {
    // The first buffer only starts the stream; the clock runs over the rest.
    net::ReadFully(accepted->fd(), buffer.data(), buffer_bytes, net::Deadline::Never(), "start");
    auto start = std::chrono::steady_clock::now();
    size_t received = 0;
    while (received < total_bytes) {
      if (!net::ReadFully(accepted->fd(), buffer.data(), buffer_bytes, net::Deadline::Never(),
                          "tcp")
               .ok()) {
        break;
      }
      received += buffer_bytes;
    }
    throughput =
        received / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  int status;
  waitpid(sender, &status, 0);
  return throughput;
}

}  // namespace cohort::bench
