#include "exec/free_ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include "base/file.h"

namespace cohort::exec {
namespace {

constexpr int kFirstUnprivilegedPort = 1024;
constexpr int kLastPort = 65535;

// Whether a socket of `family` can bind `port` on the wildcard address. The wildcard conflicts
// with a holder on any one address (127.0.0.1, ::1 or another), so a free answer covers whichever
// address "localhost" resolves to for the replica. No SO_REUSEADDR: a port in TIME_WAIT counts as
// taken, since not every program sets the option. `*unsupported` is set when the family has no
// support on this machine (no IPv6).
bool CanBind(int family, int port, bool* unsupported) {
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *unsupported = errno == EAFNOSUPPORT;
    return false;
  }
  *unsupported = false;
  int result;
  if (family == AF_INET6) {
    int v6_only = 1;  // the IPv4 check covers IPv4; a dual-stack bind would only repeat it
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6_only, sizeof v6_only);
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_any;
    address.sin6_port = htons(static_cast<uint16_t>(port));
    result = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  } else {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(static_cast<uint16_t>(port));
    result = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  }
  close(fd);
  return result == 0;
}

bool PortIsFree(int port) {
  bool unsupported = false;
  if (!CanBind(AF_INET, port, &unsupported)) return false;
  bool ipv6_free = CanBind(AF_INET6, port, &unsupported);
  return ipv6_free || unsupported;
}

// The old way, for a kernel whose ephemeral range is every port: bind to port 0 and read back
// what the kernel chose. All sockets stay open while choosing so no port is handed out twice.
StatusOr<std::vector<int>> PortsChosenByTheKernel(int count) {
  std::vector<int> sockets;
  std::vector<int> ports;
  Status status;
  for (int i = 0; i < count && status.ok(); ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      status = Status::Unavailable(std::string("socket: ") + ErrnoMessage(errno));
      break;
    }
    sockets.push_back(fd);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      status =
          Status::Unavailable(std::string("cannot reserve a local port: ") + ErrnoMessage(errno));
      break;
    }
    ports.push_back(ntohs(address.sin_port));
  }
  for (int fd : sockets) close(fd);
  if (!status.ok()) return status;
  return ports;
}

}  // namespace

PortRange EphemeralPortRange() {
  PortRange range{32768, 60999};
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  PortRange read;
  if (in >> read.first >> read.last && read.first <= read.last) range = read;
  return range;
}

StatusOr<std::vector<int>> ReserveFreePorts(int count, PortRange ephemeral) {
  std::vector<int> candidates;
  for (int port = kFirstUnprivilegedPort; port <= kLastPort; ++port) {
    if (port < ephemeral.first || port > ephemeral.last) candidates.push_back(port);
  }
  if (candidates.empty()) return PortsChosenByTheKernel(count);
  // Random order, so that jobs started at the same moment rarely check the same ports.
  std::shuffle(candidates.begin(), candidates.end(), std::mt19937(std::random_device()()));
  std::vector<int> ports;
  for (int port : candidates) {
    if (static_cast<int>(ports.size()) == count) break;
    if (PortIsFree(port)) ports.push_back(port);
  }
  if (static_cast<int>(ports.size()) < count) {
    return Status::Unavailable(
        "cannot reserve " + std::to_string(count) + " local ports: only " +
        std::to_string(ports.size()) + " of the " + std::to_string(candidates.size()) +
        " ports outside the ephemeral range " + std::to_string(ephemeral.first) + "-" +
        std::to_string(ephemeral.last) + " (/proc/sys/net/ipv4/ip_local_port_range) are free");
  }
  return ports;
}

StatusOr<std::vector<int>> ReserveFreePorts(int count) {
  return ReserveFreePorts(count, EphemeralPortRange());
}

}  // namespace cohort::exec
