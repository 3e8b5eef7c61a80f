#include "net/handshake.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <thread>

#include "net/socket.h"

namespace cohort::net {
namespace {

struct Outcome {
  Status client;
  Status server;
  HandshakeResult client_result;
  HandshakeResult server_result;
};

HandshakeConfig Config(const std::string& job, cluster::TaskId self, const std::string& secret) {
  HandshakeConfig config;
  config.job_name = job;
  config.self = std::move(self);
  config.secret = JobSecret(secret);
  config.deadline = Deadline::After(std::chrono::seconds(10));
  return config;
}

// Runs both sides of a handshake over a socket pair.
Outcome Shake(const HandshakeConfig& client, const HandshakeConfig& server,
              const cluster::TaskId& client_target,
              std::function<Status(const HelloMessage&)> admit = nullptr) {
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Socket client_socket(fds[0]), server_socket(fds[1]);
  SetNonBlocking(fds[0]);
  SetNonBlocking(fds[1]);
  if (!admit) admit = [](const HelloMessage&) { return Status::OK(); };
  Outcome outcome;
  std::thread server_thread([&] {
    auto result = AcceptHandshake(server_socket.fd(), server, admit);
    outcome.server = result.status();
    if (result.ok()) outcome.server_result = *result;
    // Like the transport: a refused client is disconnected.
    if (!result.ok()) server_socket.Close();
  });
  auto result = ConnectHandshake(client_socket.fd(), client, client_target, "server (test)");
  outcome.client = result.status();
  if (result.ok()) outcome.client_result = *result;
  if (!result.ok()) client_socket.Close();
  server_thread.join();
  return outcome;
}

const cluster::TaskId kChief{"chief", 0};
const cluster::TaskId kWorker{"worker", 1};

TEST(HelloTest, EncodesAndDecodes) {
  HelloMessage hello;
  hello.job_name = "mnist";
  hello.task = kWorker;
  hello.addressee = kChief;
  hello.nonce = std::string(kNonceSize, 'n');
  hello.authenticated = true;
  hello.process = {"boot/pid:[1]/user:[2]", 1234, 0x7fff0000, 42};
  auto decoded = DecodeHello(EncodeHello(hello));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(*decoded == hello);
}

TEST(HelloTest, RejectsTruncatedAndOversizedHellos) {
  HelloMessage hello;
  hello.job_name = "mnist";
  std::string bytes = EncodeHello(hello);
  for (size_t size = 0; size < bytes.size(); ++size) {
    EXPECT_FALSE(DecodeHello(bytes.substr(0, size)).ok()) << size;
  }
  EXPECT_FALSE(DecodeHello(bytes + "x").ok());
}

TEST(HandshakeTest, TasksWithTheSameSecretAdmitEachOther) {
  Outcome outcome =
      Shake(Config("job", kWorker, "s3cret"), Config("job", kChief, "s3cret"), kChief);
  ASSERT_TRUE(outcome.client.ok()) << outcome.client.ToString();
  ASSERT_TRUE(outcome.server.ok()) << outcome.server.ToString();
  EXPECT_EQ(outcome.client_result.peer.task, kChief);
  EXPECT_EQ(outcome.server_result.peer.task, kWorker);
  // Two threads of one process are not two processes: no same-host memory path to itself.
  EXPECT_FALSE(outcome.client_result.can_read_peer_memory);
}

TEST(HandshakeTest, OpenModeWorksWhenNeitherSideHasASecret) {
  Outcome outcome = Shake(Config("job", kWorker, ""), Config("job", kChief, ""), kChief);
  EXPECT_TRUE(outcome.client.ok()) << outcome.client.ToString();
  EXPECT_TRUE(outcome.server.ok()) << outcome.server.ToString();
}

TEST(HandshakeTest, ClientWithTheWrongSecretIsRefused) {
  Outcome outcome = Shake(Config("job", kWorker, "guess"), Config("job", kChief, "s3cret"), kChief);
  EXPECT_FALSE(outcome.server.ok());
  ASSERT_FALSE(outcome.client.ok());
  // The client cannot verify the server's proof either, so it gives up first.
  EXPECT_EQ(outcome.client.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(outcome.client.message().find("does not know the job secret"), std::string::npos)
      << outcome.client.ToString();
}

TEST(HandshakeTest, ClientWithoutASecretIsRefused) {
  Outcome outcome = Shake(Config("job", kWorker, ""), Config("job", kChief, "s3cret"), kChief);
  ASSERT_FALSE(outcome.server.ok());
  EXPECT_NE(outcome.server.message().find("open mode"), std::string::npos)
      << outcome.server.ToString();
  ASSERT_FALSE(outcome.client.ok());
  EXPECT_NE(outcome.client.message().find("refused"), std::string::npos)
      << outcome.client.ToString();
}

TEST(HandshakeTest, ServerWithoutASecretIsNotTrusted) {
  Outcome outcome = Shake(Config("job", kWorker, "s3cret"), Config("job", kChief, ""), kChief);
  EXPECT_FALSE(outcome.client.ok());
  EXPECT_FALSE(outcome.server.ok());
}

TEST(HandshakeTest, OtherJobsAndMisdirectedTasksAreRefused) {
  Outcome other_job = Shake(Config("job-a", kWorker, "s"), Config("job-b", kChief, "s"), kChief);
  ASSERT_FALSE(other_job.client.ok());
  EXPECT_NE(other_job.client.message().find("job-a"), std::string::npos);
  Outcome misdirected =
      Shake(Config("job", kWorker, "s"), Config("job", kChief, "s"), cluster::TaskId{"ps", 0});
  ASSERT_FALSE(misdirected.client.ok());
  EXPECT_NE(misdirected.client.message().find("meant to reach ps:0"), std::string::npos)
      << misdirected.client.ToString();
}

TEST(HandshakeTest, AdmissionRuleCanRefuse) {
  Outcome outcome =
      Shake(Config("job", kWorker, "s"), Config("job", kChief, "s"), kChief,
            [](const HelloMessage& hello) {
              return Status::FailedPrecondition(hello.task.ToString() + " is not in the cluster");
            });
  ASSERT_FALSE(outcome.client.ok());
  EXPECT_NE(outcome.client.message().find("worker:1 is not in the cluster"), std::string::npos)
      << outcome.client.ToString();
}

TEST(HandshakeTest, GarbageInsteadOfAHelloIsRejected) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Socket client(fds[0]), server(fds[1]);
  SetNonBlocking(fds[1]);
  const char garbage[] = "GET / HTTP/1.1\r\nHost: cohort\r\n\r\n";
  ASSERT_EQ(write(client.fd(), garbage, sizeof(garbage)), static_cast<ssize_t>(sizeof(garbage)));
  auto result = AcceptHandshake(server.fd(), Config("job", kChief, "s"),
                                [](const HelloMessage&) { return Status::OK(); });
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("magic"), std::string::npos);
}

TEST(HandshakeTest, SilentClientTimesOut) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Socket client(fds[0]), server(fds[1]);
  SetNonBlocking(fds[1]);
  HandshakeConfig config = Config("job", kChief, "s");
  config.deadline = Deadline::After(std::chrono::milliseconds(100));
  auto result =
      AcceptHandshake(server.fd(), config, [](const HelloMessage&) { return Status::OK(); });
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Status::Code::kDeadlineExceeded);
}

}  // namespace
}  // namespace cohort::net
