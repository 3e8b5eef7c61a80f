// ServerConnection against scripted servers: one that plays a parameter server unable to read its
// clients' memory (the kernel's ptrace rules need not be symmetric): a push first goes out as a
// reference to the caller's gradient, is refused, and is sent again as bytes, once and for all;
// and one that falls silent, as a server behind a network partition does.
#include "ps/server_connection.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <cstring>
#include <mutex>
#include <thread>

#include "net/frame.h"
#include "net/handshake.h"
#include "ps/protocol.h"
#include "testing/ps_cluster.h"

namespace cohort::ps {
namespace {

using namespace std::chrono_literals;

constexpr char kJob[] = "connection-test";
constexpr char kSecret[] = "connection test secret";

// Accepts one client, then answers each request: a push from memory with the refusal a server
// gives when it cannot read the client, a push of bytes with success. Reports each operation and
// the bytes pushed, and exits when the client hangs up. A separate process, since a process never
// reads its own memory across (net/same_host.h).
int ServeRefusingMemoryReads(const net::Socket& listener) {
  pollfd waiter{listener.fd(), POLLIN, 0};
  if (poll(&waiter, 1, 10000) != 1) return 1;
  auto socket = net::AcceptPending(listener);
  if (!socket.ok() || !socket->valid()) return 2;
  const int fd = socket->fd();
  net::HandshakeConfig config;
  config.job_name = kJob;
  config.self = {"ps", 0};
  config.secret = net::JobSecret(kSecret);
  config.deadline = net::Deadline::After(10s);
  auto admit_all = [](const net::HelloMessage&) { return Status::OK(); };
  if (!net::AcceptHandshake(fd, config, admit_all).ok()) return 3;
  const net::Deadline deadline = net::Deadline::After(20s);
  while (true) {
    uint8_t header_bytes[net::kFrameHeaderSize];
    if (!net::ReadFully(fd, header_bytes, sizeof(header_bytes), deadline, "request").ok()) return 0;
    auto header = net::DecodeFrameHeader(header_bytes);
    if (!header.ok()) return 4;
    std::vector<uint64_t> buffer((header->payload_size + 7) / 8);
    char* payload = reinterpret_cast<char*>(buffer.data());
    if (!net::ReadFully(fd, payload, header->payload_size, deadline, "request").ok()) return 5;
    auto view = SplitPayload(payload, header->payload_size);
    if (!view.ok()) return 6;
    testing::Report("operation " + OperationName(view->kind));
    Status status = Status::OK();
    std::string fields;
    if (static_cast<Operation>(view->kind) == Operation::kPushDenseFromMemory) {
      status = Status::FailedPrecondition(std::string("ps:0 ") + kMemoryNotReadable +
                                          " worker:0; send the gradient instead");
    } else {
      const float* values = reinterpret_cast<const float*>(view->bulk);
      for (size_t i = 0; i < view->bulk_size / sizeof(float); ++i) {
        testing::Report("value " + std::to_string(static_cast<int>(values[i])));
      }
      fields = EncodePushOutcome({});
    }
    std::string head = EncodeResponseHead(header->tag, status, fields, 0);
    if (!net::WriteFully(fd, head.data(), head.size(), deadline, "response").ok()) return 7;
  }
}

Call DensePush(const float* gradient, int64_t rows) {
  Call call;
  call.operation = Operation::kPushDense;
  call.fields = EncodeDenseRange({"v", 0, rows, kNoSyncStep});
  call.bulk.push_back(
      std::string_view(reinterpret_cast<const char*>(gradient), rows * sizeof(float)));
  return call;
}

// A process serving ServeRefusingMemoryReads, and its endpoint.
std::pair<testing::Child, std::string> StartRefusingServer() {
  auto listener = net::ListenTcp("127.0.0.1", 0, 4);
  if (!listener.ok()) std::abort();
  std::string endpoint = "127.0.0.1:" + std::to_string(*net::LocalPort(listener->fd()));
  // The child keeps the listening socket; this process's copy closes on return.
  testing::Child server =
      testing::Child::Spawn([&listener] { return ServeRefusingMemoryReads(*listener); });
  return {std::move(server), std::move(endpoint)};
}

ConnectionSettings WorkerSettings() {
  ConnectionSettings settings;
  settings.job_name = kJob;
  settings.self = {"worker", 0};
  settings.secret = net::JobSecret(kSecret);
  settings.retry_timeout = 5s;
  return settings;
}

TEST(ServerConnection, SendsTheBytesWhenTheServerCannotReadItsMemory) {
  std::vector<std::string> log;
  ConnectionSettings settings = WorkerSettings();
  settings.log = [&log](const std::string& line) { log.push_back(line); };
  const float first[2] = {1, 2};
  const float second[3] = {3, 4, 5};
  auto [server, endpoint] = StartRefusingServer();
  {
    ServerConnection connection(0, endpoint, settings);
    std::vector<Call> batch = {DensePush(first, 2)};
    ASSERT_TRUE(connection.Run(batch).ok());
    EXPECT_TRUE(batch[0].status.ok()) << batch[0].status.ToString();
    // Refused once, the connection no longer tries.
    batch = {DensePush(second, 3)};
    ASSERT_TRUE(connection.Run(batch).ok());
    EXPECT_TRUE(batch[0].status.ok()) << batch[0].status.ToString();
  }
  testing::ChildOutcome outcome = server.Await(30s);
  ASSERT_EQ(outcome.exit_code, 0) << testing::Describe(outcome);
  EXPECT_EQ(outcome.report,
            "operation push dense from memory\n"
            "operation push dense\nvalue 1\nvalue 2\n"
            "operation push dense\nvalue 3\nvalue 4\nvalue 5\n");
  ASSERT_EQ(log.size(), 1u);
  EXPECT_NE(log[0].find("cannot read this task's memory"), std::string::npos) << log[0];
}

// With same-host pushes off, a push goes out as bytes from the start, as between hosts.
TEST(ServerConnection, SendsBytesWhenSameHostPushesAreOff) {
  ConnectionSettings settings = WorkerSettings();
  settings.same_host_pushes = false;
  const float gradient[2] = {6, 7};
  auto [server, endpoint] = StartRefusingServer();
  {
    ServerConnection connection(0, endpoint, settings);
    std::vector<Call> batch = {DensePush(gradient, 2)};
    ASSERT_TRUE(connection.Run(batch).ok());
    EXPECT_TRUE(batch[0].status.ok()) << batch[0].status.ToString();
  }
  testing::ChildOutcome outcome = server.Await(30s);
  ASSERT_EQ(outcome.exit_code, 0) << testing::Describe(outcome);
  EXPECT_EQ(outcome.report, "operation push dense\nvalue 6\nvalue 7\n");
}

// Accepts one client and passes the handshake, then reads requests without ever answering, as a
// server behind a network partition looks to its client (the listener stays open, so a new
// connection gets as far as the kernel's backlog and no further). Exits when the client hangs up.
int ServeThenFallSilent(const net::Socket& listener) {
  pollfd waiter{listener.fd(), POLLIN, 0};
  if (poll(&waiter, 1, 10000) != 1) return 1;
  auto socket = net::AcceptPending(listener);
  if (!socket.ok() || !socket->valid()) return 2;
  net::HandshakeConfig config;
  config.job_name = kJob;
  config.self = {"ps", 0};
  config.secret = net::JobSecret(kSecret);
  config.deadline = net::Deadline::After(10s);
  auto admit_all = [](const net::HelloMessage&) { return Status::OK(); };
  if (!net::AcceptHandshake(socket->fd(), config, admit_all).ok()) return 3;
  char buffer[4096];
  while (true) {
    pollfd readable{socket->fd(), POLLIN, 0};
    if (poll(&readable, 1, 30000) != 1) return 4;
    if (read(socket->fd(), buffer, sizeof(buffer)) <= 0) return 0;
  }
}

// Two batches at once on a connection whose server falls silent: the first waits
// request_timeout for its answer, retries for retry_timeout (no connection attempt outlasting
// that window) and fails naming the server; the second, which waited behind it, fails with the
// same verdict instead of starting a window of its own. So the caller learns of a partitioned
// server in about request_timeout + retry_timeout, not in multiples of a handshake timeout.
TEST(ServerConnection, SilentServerIsGivenUpOnceForEveryWaitingBatch) {
  auto listener = net::ListenTcp("127.0.0.1", 0, 4);
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  const std::string endpoint = "127.0.0.1:" + std::to_string(*net::LocalPort(listener->fd()));
  testing::Child server =
      testing::Child::Spawn([&listener] { return ServeThenFallSilent(*listener); });
  std::vector<std::string> log;
  std::mutex log_mutex;
  ConnectionSettings settings = WorkerSettings();
  settings.same_host_pushes = false;
  settings.request_timeout = 1s;
  settings.retry_timeout = 1s;
  settings.log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mutex);
    log.push_back(line);
  };
  const float gradient[2] = {1, 2};
  Status results[2];
  const auto started = std::chrono::steady_clock::now();
  {
    ServerConnection connection(0, endpoint, settings);
    std::thread second;
    std::thread first([&] {
      std::vector<Call> batch = {DensePush(gradient, 2)};
      results[0] = connection.Run(batch);
    });
    second = std::thread([&] {
      std::vector<Call> batch = {DensePush(gradient, 2)};
      results[1] = connection.Run(batch);
    });
    first.join();
    second.join();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  listener->Close();
  server.Kill();
  for (const Status& result : results) {
    EXPECT_EQ(result.code(), Status::Code::kUnavailable) << result.ToString();
    EXPECT_NE(result.message().find("ps:0 (" + endpoint + ") unreachable for 1 s"),
              std::string::npos)
        << result.ToString();
  }
  // 1 s for the answer and 1 s of retries, with room for a busy machine; a connection attempt
  // alone may wait 10 s (the handshake timeout) when nothing bounds it by the window.
  EXPECT_LT(seconds, 6) << results[0].ToString();
  int windows = 0;
  for (const std::string& line : log)
    windows += line.find("retrying with backoff") != std::string::npos;
  EXPECT_EQ(windows, 1) << "one retry window for both batches";
}

}  // namespace
}  // namespace cohort::ps
