#include "exec/free_ports.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <set>

#include "testing/wait.h"

namespace cohort::exec {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// A socket bound to 127.0.0.1:port for the test's lifetime; bound() is false when it could not be.
class HeldPort {
 public:
  explicit HeldPort(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    bound_ = bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~HeldPort() { close(fd_); }
  bool bound() const { return bound_; }

 private:
  int fd_ = -1;
  bool bound_ = false;
};

// Ephemeral ports are what the kernel gives to outgoing connections, so one replica's connect()
// could take a port reserved for another; the reserved ports must lie outside that range.
TEST(ReserveFreePortsTest, PortsLieOutsideTheKernelsEphemeralRangeAndAreFree) {
  PortRange ephemeral = EphemeralPortRange();
  StatusOr<std::vector<int>> ports = ReserveFreePorts(16);
  ASSERT_TRUE(ports.ok()) << ports.status().ToString();
  ASSERT_EQ(ports->size(), 16u);
  EXPECT_EQ(std::set<int>(ports->begin(), ports->end()).size(), 16u);
  for (int port : *ports) {
    EXPECT_TRUE(port < ephemeral.first || port > ephemeral.last)
        << port << " is in the ephemeral range " << ephemeral.first << "-" << ephemeral.last;
    EXPECT_GE(port, 1024);
    EXPECT_LE(port, 65535);
    EXPECT_TRUE(HeldPort(port).bound()) << port;
  }
}

TEST(ReserveFreePortsTest, EphemeralRangeIsTheKernels) {
  PortRange range = EphemeralPortRange();
  EXPECT_GE(range.first, 1);
  EXPECT_LE(range.first, range.last);
  EXPECT_LE(range.last, 65535);
}

// Whether 127.0.0.1:port can be bound now (nothing holds it).
bool PortFree(int port) { return HeldPort(port).bound(); }

TEST(ReserveFreePortsTest, APortInUseIsNeverChosen) {
  // An ephemeral range that leaves only 65531-65535. The kernel's own ephemeral range (Debian's
  // 32768-60999) never reaches them, but a test running beside this one may hold one for a moment
  // (ReserveFreePorts picks among every port outside that range), and a closed connection keeps
  // its port through TIME_WAIT (60 s): wait until all five are free.
  PortRange ephemeral{1024, 65530};
  ASSERT_TRUE(cohort::testing::WaitUntil(
      [] {
        for (int port = 65531; port <= 65535; ++port) {
          if (!PortFree(port)) return false;
        }
        return true;
      },
      std::chrono::seconds(90), std::chrono::milliseconds(50)))
      << "ports 65531-65535 stayed in use for 90 s (ss -tanp shows by whom)";
  HeldPort first(65531);
  HeldPort second(65532);
  ASSERT_TRUE(first.bound() && second.bound()) << "65531-65532 were taken in the meantime";
  StatusOr<std::vector<int>> ports = ReserveFreePorts(3, ephemeral);
  ASSERT_TRUE(ports.ok()) << ports.status().ToString();
  EXPECT_THAT(*ports, UnorderedElementsAre(65533, 65534, 65535));

  StatusOr<std::vector<int>> too_many = ReserveFreePorts(4, ephemeral);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), Status::Code::kUnavailable);
  EXPECT_THAT(too_many.status().message(),
              HasSubstr("only 3 of the 5 ports outside the ephemeral range 1024-65530"));
}

TEST(ReserveFreePortsTest, AnEphemeralRangeOfEveryPortFallsBackToTheKernelsChoice) {
  StatusOr<std::vector<int>> ports = ReserveFreePorts(4, PortRange{1024, 65535});
  ASSERT_TRUE(ports.ok()) << ports.status().ToString();
  EXPECT_EQ(std::set<int>(ports->begin(), ports->end()).size(), 4u);
}

}  // namespace
}  // namespace cohort::exec
