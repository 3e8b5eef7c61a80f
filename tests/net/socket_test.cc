#include "net/socket.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace cohort::net {
namespace {

TEST(ParseEndpointTest, AcceptsHostPortAndBracketedIpv6) {
  auto plain = ParseEndpoint("worker-0.job.svc:2222");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->host, "worker-0.job.svc");
  EXPECT_EQ(plain->port, 2222);
  auto v6 = ParseEndpoint("[::1]:65535");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 65535);
  EXPECT_EQ(v6->ToString(), "[::1]:65535");
}

TEST(ParseEndpointTest, RejectsMalformedEndpoints) {
  for (const char* text : {"", "host", "host:", ":80", "host:0", "host:65536", "host:12a", "::1:80",
                           "[::1]80", "[::1", "host:123456"}) {
    EXPECT_FALSE(ParseEndpoint(text).ok()) << text;
  }
}

TEST(ConnectTcpTest, NobodyListeningIsUnavailable) {
  auto listener = ListenTcp("127.0.0.1", 0, 1);
  ASSERT_TRUE(listener.ok());
  uint16_t port = *LocalPort(listener->fd());
  listener->Close();
  auto socket = ConnectTcp({"127.0.0.1", port}, Deadline::After(std::chrono::seconds(2)));
  ASSERT_FALSE(socket.ok());
  EXPECT_EQ(socket.status().code(), Status::Code::kUnavailable);
}

TEST(ConnectTcpTest, ConnectsAndMovesBytes) {
  auto listener = ListenTcp("127.0.0.1", 0, 1);
  ASSERT_TRUE(listener.ok());
  uint16_t port = *LocalPort(listener->fd());
  auto client = ConnectTcp({"127.0.0.1", port}, Deadline::After(std::chrono::seconds(5)));
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  StatusOr<Socket> server = Socket();
  for (int attempt = 0; attempt < 100 && !server->valid(); ++attempt) {
    server = AcceptPending(*listener);
    ASSERT_TRUE(server.ok());
    if (!server->valid()) usleep(10000);
  }
  ASSERT_TRUE(server->valid());
  auto deadline = Deadline::After(std::chrono::seconds(5));
  ASSERT_TRUE(WriteFully(client->fd(), "ping", 4, deadline, "test").ok());
  char buffer[4];
  ASSERT_TRUE(ReadFully(server->fd(), buffer, 4, deadline, "test").ok());
  EXPECT_EQ(std::string(buffer, 4), "ping");
  client->Close();
  Status closed = ReadFully(server->fd(), buffer, 1, deadline, "test");
  EXPECT_EQ(closed.code(), Status::Code::kUnavailable);
}

}  // namespace
}  // namespace cohort::net
