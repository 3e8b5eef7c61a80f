// emulated_net_probe: the small network tool the emulated-hosts tests run on their hosts.
//
//   emulated_net_probe listen PORT             TCP: take connections, read each to its end, then
//                                              answer one byte; prints "listening" once bound
//   emulated_net_probe send HOST PORT BYTES TIMEOUT_MS
//                                              TCP: connect, send BYTES, wait for the answer;
//                                              prints "sent N bytes in S s: R Mbit/s"
//   emulated_net_probe udp-sink PORT IDLE_MS   UDP: count datagrams until none came for IDLE_MS
//                                              (after the first; at most 60 s); prints
//                                              "listening", then "received N"
//   emulated_net_probe udp-send HOST PORT COUNT
//                                              UDP: send COUNT 64-byte datagrams, paced
//
// HOST is resolved by name (getaddrinfo, so the host's /etc/hosts). Exit status 0 on success, 1
// with a message on failure, 2 for bad arguments.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Fail(const std::string& what) {
  std::printf("error: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

[[noreturn]] void Usage() {
  std::printf(
      "usage: emulated_net_probe listen PORT | send HOST PORT BYTES TIMEOUT_MS | "
      "udp-sink PORT IDLE_MS | udp-send HOST PORT COUNT\n");
  std::exit(2);
}

long Number(const char* text, long low, long high) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < low || value > high) Usage();
  return value;
}

sockaddr_in Resolve(const char* host, long port, int type) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = type;
  addrinfo* found = nullptr;
  const int error = getaddrinfo(host, nullptr, &hints, &found);
  if (error != 0 || found == nullptr) {
    std::printf("error: resolving %s: %s\n", host, gai_strerror(error));
    std::exit(1);
  }
  sockaddr_in address;
  std::memcpy(&address, found->ai_addr, sizeof(address));
  address.sin_port = htons(static_cast<uint16_t>(port));
  freeaddrinfo(found);
  return address;
}

int Bound(int type, long port) {
  const int fd = socket(AF_INET, type, 0);
  if (fd < 0) Fail("socket");
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) Fail("bind");
  return fd;
}

int Listen(long port) {
  const int listener = Bound(SOCK_STREAM, port);
  if (listen(listener, 16) != 0) Fail("listen");
  std::printf("listening\n");
  std::fflush(stdout);
  while (true) {
    const int connection = accept(listener, nullptr, nullptr);
    if (connection < 0) continue;
    std::vector<char> buffer(1 << 16);
    while (read(connection, buffer.data(), buffer.size()) > 0) {
    }
    [[maybe_unused]] ssize_t answered = write(connection, "k", 1);
    close(connection);
  }
}

int Send(const char* host, long port, long bytes, long timeout_ms) {
  const sockaddr_in address = Resolve(host, port, SOCK_STREAM);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) Fail("socket");
  const auto start = Clock::now();
  // A connect bounded by the timeout: non-blocking, then poll.
  fcntl(fd, F_SETFL, O_NONBLOCK);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 &&
      errno != EINPROGRESS) {
    Fail(std::string("connecting to ") + host);
  }
  pollfd poll_fd{fd, POLLOUT, 0};
  if (poll(&poll_fd, 1, static_cast<int>(timeout_ms)) <= 0) {
    std::printf("error: connecting to %s: no connection within %ld ms\n", host, timeout_ms);
    return 1;
  }
  int error = 0;
  socklen_t length = sizeof(error);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
  if (error != 0) {
    errno = error;
    Fail(std::string("connecting to ") + host);
  }
  fcntl(fd, F_SETFL, 0);
  timeval limit{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  std::vector<char> buffer(1 << 16, 'x');
  long left = bytes;
  while (left > 0) {
    const ssize_t sent = write(fd, buffer.data(), std::min<long>(left, buffer.size()));
    if (sent <= 0) Fail("sending");
    left -= sent;
  }
  shutdown(fd, SHUT_WR);
  char answer;
  if (read(fd, &answer, 1) != 1) Fail("waiting for the receiver's answer");
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("sent %ld bytes in %.3f s: %.1f Mbit/s\n", bytes, seconds,
              static_cast<double>(bytes) * 8 / seconds / 1e6);
  close(fd);
  return 0;
}

int UdpSink(long port, long idle_ms) {
  const int fd = Bound(SOCK_DGRAM, port);
  // A deep receive buffer, so that a busy machine does not drop what the link delivered.
  const int bytes = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes));
  std::printf("listening\n");
  std::fflush(stdout);
  long received = 0;
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  char buffer[2048];
  while (Clock::now() < give_up) {
    pollfd poll_fd{fd, POLLIN, 0};
    if (poll(&poll_fd, 1, received == 0 ? 1000 : static_cast<int>(idle_ms)) <= 0) {
      if (received > 0) break;
      continue;
    }
    if (recv(fd, buffer, sizeof(buffer), 0) > 0) ++received;
  }
  std::printf("received %ld\n", received);
  return 0;
}

int UdpSend(const char* host, long port, long count) {
  const sockaddr_in address = Resolve(host, port, SOCK_DGRAM);
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) Fail("socket");
  char payload[64] = {};
  for (long i = 0; i < count; ++i) {
    std::memcpy(payload, &i, sizeof(i));
    if (sendto(fd, payload, sizeof(payload), 0, reinterpret_cast<const sockaddr*>(&address),
               sizeof(address)) < 0) {
      Fail("sendto");
    }
    if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::printf("sent %ld datagrams\n", count);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 2) Usage();
  const std::string mode = argv[1];
  if (mode == "listen" && argc == 3) return Listen(Number(argv[2], 1, 65535));
  if (mode == "send" && argc == 6) {
    return Send(argv[2], Number(argv[3], 1, 65535), Number(argv[4], 0, 1L << 34),
                Number(argv[5], 1, 600'000));
  }
  if (mode == "udp-sink" && argc == 4) {
    return UdpSink(Number(argv[2], 1, 65535), Number(argv[3], 1, 60'000));
  }
  if (mode == "udp-send" && argc == 5) {
    return UdpSend(argv[2], Number(argv[3], 1, 65535), Number(argv[4], 1, 10'000'000));
  }
  Usage();
}
