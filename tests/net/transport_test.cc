// TcpTransport tests with real processes on loopback: rendezvous, authentication, malformed frames
// and failure detection.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <numeric>

#include "net/handshake.h"
#include "net/tcp/tcp_exchange.h"
#include "net/tcp/tcp_transport.h"
#include "testing/files.h"
#include "testing/multi_process.h"
#include "testing/scratch_directory.h"

namespace cohort::net {
namespace {

using cohort::testing::ChildOutcome;
using cohort::testing::Describe;
using cohort::testing::LocalCluster;
using cohort::testing::MonotonicSeconds;
using cohort::testing::Report;
using cohort::testing::RunProcesses;
using cohort::testing::ScratchDirectory;
using cohort::testing::WaitForFile;
using cohort::testing::WaitForFirstReport;
using cohort::testing::WriteText;
using namespace std::chrono_literals;

constexpr char kSecret[] = "correct horse battery staple";

TransportOptions Options(LocalCluster& cluster, int rank) {
  TransportOptions options;
  options.job_name = "test-job";
  options.secret = kSecret;
  options.startup_timeout = 20s;
  options.listening_fd = cluster.TakeListener(rank);
  cluster.CloseOthers(rank);
  options.log_warning = [](const std::string& message) { Report("warning: " + message); };
  return options;
}

// Each rank sends `bytes` to every peer and checks what every peer sent back; through the seam
// (connection_set.h) alone, as the collectives use it.
Status ExchangeWithEveryone(ConnectionSet& connections, uint64_t tag, size_t bytes) {
  const int size = connections.size();
  const int rank = connections.rank();
  std::vector<int> peers;
  for (int peer = 0; peer < size; ++peer) {
    if (peer != rank) peers.push_back(peer);
  }
  std::unique_ptr<PeerExchange> opened =
      connections.OpenExchange(peers, tag, "test exchange", Deadline::After(60s));
  PeerExchange& exchange = *opened;
  COHORT_RETURN_IF_ERROR(exchange.status());
  std::vector<uint8_t> mine(bytes);
  for (size_t i = 0; i < bytes; ++i) mine[i] = static_cast<uint8_t>(rank * 31 + i);
  std::vector<std::vector<uint8_t>> theirs(size, std::vector<uint8_t>(bytes));
  for (int peer : peers) {
    exchange.Receive(peer, theirs[peer].data(), bytes);
    exchange.Send(peer, mine.data(), bytes);
  }
  COHORT_RETURN_IF_ERROR(exchange.Finish());
  for (int peer : peers) {
    for (size_t i = 0; i < bytes; ++i) {
      if (theirs[peer][i] != static_cast<uint8_t>(peer * 31 + i)) {
        return Status::Internal("wrong byte " + std::to_string(i) + " from rank " +
                                std::to_string(peer));
      }
    }
  }
  return Status::OK();
}

// Sends a ring of `bytes` messages around the ring until the transport fails or `rounds` pass.
// Returns the first error.
Status RingTraffic(TcpTransport& transport, int rounds, size_t bytes,
                   const std::function<void(int)>& after_round = nullptr) {
  const int size = transport.size();
  const int rank = transport.rank();
  const int left = (rank - 1 + size) % size, right = (rank + 1) % size;
  std::vector<uint8_t> out(bytes, 1), in(bytes);
  for (int round = 0; round < rounds; ++round) {
    TcpExchange exchange(transport, {left, right}, static_cast<uint64_t>(round + 1), "ring round",
                         Deadline::After(60s));
    COHORT_RETURN_IF_ERROR(exchange.status());
    exchange.Receive(left, in.data(), bytes);
    exchange.Send(right, out.data(), bytes);
    COHORT_RETURN_IF_ERROR(exchange.Finish());
    if (after_round) after_round(round);
  }
  return Status::OK();
}

TEST(TransportTest, TasksStartingInAnyOrderFindEachOther) {
  LocalCluster cluster(3, /*with_chief=*/true);
  // The last rank starts first, the chief last: each rank starts once the next one has left a
  // file saying it is starting.
  ScratchDirectory starts("cohort-transport-starts");
  auto started = [&](int rank) { return starts.path() / std::to_string(rank); };
  auto outcomes = RunProcesses(
      cluster.size(),
      [&](int rank) {
        if (rank + 1 < cluster.size() && !WaitForFile(started(rank + 1), 20s)) return 6;
        WriteText(started(rank), "");
        auto transport =
            TcpTransport::Connect(cluster.spec(), cluster.task(rank), Options(cluster, rank));
        if (!transport.ok()) {
          Report(transport.status().ToString());
          return 1;
        }
        if ((*transport)->rank() != rank || (*transport)->size() != cluster.size()) return 2;
        if ((*transport)->PeerName(0) != "chief:0 (" + cluster.endpoint(0) + ")") return 3;
        for (uint64_t tag = 1; tag <= 3; ++tag) {
          Status status = ExchangeWithEveryone(**transport, tag, 1000 * tag);
          if (!status.ok()) {
            Report(status.ToString());
            return 4;
          }
        }
        return (*transport)->health().ok() ? 0 : 5;
      },
      60s);
  for (const ChildOutcome& outcome : outcomes)
    ASSERT_EQ(outcome.exit_code, 0) << Describe(outcomes);
}

TEST(TransportTest, MembersListedByEndpointFindEachOther) {
  // The plain form of the rendezvous: members and a rank, no cluster spec.
  LocalCluster cluster(3);
  std::vector<GroupMember> members;
  for (int rank = 0; rank < cluster.size(); ++rank) {
    members.push_back({cluster.task(rank), cluster.endpoint(rank)});
  }
  auto outcomes = RunProcesses(
      cluster.size(),
      [&](int rank) {
        auto transport = TcpTransport::Connect(members, rank, Options(cluster, rank));
        if (!transport.ok()) {
          Report(transport.status().ToString());
          return 1;
        }
        ConnectionSet& connections = **transport;
        if (connections.rank() != rank || connections.size() != cluster.size()) return 2;
        if (connections.PeerName(2) != "worker:2 (" + cluster.endpoint(2) + ")") return 3;
        if (connections.HostIdentity(0).empty() ||
            connections.HostIdentity(0) != connections.HostIdentity(1)) {
          return 4;
        }
        Status status = ExchangeWithEveryone(connections, 1, 4096);
        if (!status.ok()) {
          Report(status.ToString());
          return 5;
        }
        return connections.DataBytesSent() == 2 * 4096 ? 0 : 6;
      },
      60s);
  for (const ChildOutcome& outcome : outcomes)
    ASSERT_EQ(outcome.exit_code, 0) << Describe(outcomes);
}

TEST(TransportTest, RankOutsideTheMembersIsRefused) {
  TransportOptions options;
  options.secret = "";
  auto transport = TcpTransport::Connect({{{"worker", 0}, "127.0.0.1:1"}}, 1, options);
  ASSERT_FALSE(transport.ok());
  EXPECT_NE(transport.status().message().find("rank 1 is not a member"), std::string::npos)
      << transport.status().ToString();
}

TEST(TransportTest, LargeMessagesFlowBothWaysAtOnce) {
  LocalCluster cluster(2);
  auto outcomes = RunProcesses(
      2,
      [&](int rank) {
        auto transport =
            TcpTransport::Connect(cluster.spec(), cluster.task(rank), Options(cluster, rank));
        if (!transport.ok()) return 1;
        // Far more than the socket buffers hold: both sides must read while they write.
        Status status = ExchangeWithEveryone(**transport, 1, 48u << 20);
        if (!status.ok()) Report(status.ToString());
        return status.ok() ? 0 : 2;
      },
      60s);
  for (const ChildOutcome& outcome : outcomes)
    ASSERT_EQ(outcome.exit_code, 0) << Describe(outcomes);
}

// No secret on any task: the job runs (open mode), and every task says loudly that anybody who
// can reach its port can join.
TEST(TransportTest, OpenModeWorksAndWarns) {
  LocalCluster cluster(2);
  auto outcomes = RunProcesses(
      2,
      [&](int rank) {
        TransportOptions options = Options(cluster, rank);
        options.secret = "";
        auto transport = TcpTransport::Connect(cluster.spec(), cluster.task(rank), options);
        if (!transport.ok()) {
          Report(transport.status().ToString());
          return 1;
        }
        Status status = ExchangeWithEveryone(**transport, 1, 1000);
        if (!status.ok()) Report(status.ToString());
        return status.ok() ? 0 : 2;
      },
      60s);
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(outcomes[rank].exit_code, 0) << Describe(outcomes);
    const std::string port = cluster.endpoint(rank).substr(cluster.endpoint(rank).rfind(':') + 1);
    EXPECT_NE(outcomes[rank].report.find("warning: COHORT_JOB_SECRET is not set: the transport "
                                         "runs in open mode, and any process that can reach port " +
                                         port + " can pass for a task of job \"test-job\""),
              std::string::npos)
        << Describe(outcomes);
  }
}

TEST(TransportTest, SingleTaskNeedsNoPeers) {
  cluster::ClusterSpec spec;
  spec.jobs["worker"] = {"127.0.0.1:1"};
  TransportOptions options;
  options.secret = "";
  options.log_warning = [](const std::string&) {};
  auto transport = TcpTransport::Connect(spec, {"worker", 0}, options);
  ASSERT_TRUE(transport.ok()) << transport.status().ToString();
  EXPECT_EQ((*transport)->size(), 1);
  EXPECT_TRUE((*transport)->health().ok());
}

TEST(TransportTest, NonParticipantsAndBadOptionsAreRefused) {
  cluster::ClusterSpec spec;
  spec.jobs["worker"] = {"127.0.0.1:1"};
  spec.jobs["ps"] = {"127.0.0.1:2"};
  TransportOptions options;
  options.secret = "";
  auto ps = TcpTransport::Connect(spec, {"ps", 0}, options);
  ASSERT_FALSE(ps.ok());
  EXPECT_NE(ps.status().message().find("ps:0 does not take part"), std::string::npos);
  options.peer_timeout = 1s;
  options.heartbeat_interval = 1s;
  EXPECT_FALSE(TcpTransport::Connect(spec, {"worker", 0}, options).ok());
}

TEST(TransportTest, StartupTimeoutNamesTheMissingPeers) {
  LocalCluster cluster(3);
  TransportOptions options;
  options.job_name = "test-job";
  options.secret = kSecret;
  options.startup_timeout = 1500ms;
  options.handshake_timeout = 500ms;
  options.log_warning = [](const std::string&) {};
  options.listening_fd = cluster.TakeListener(1);
  // worker:0 and worker:2 never run (their ports stay bound by this test, so connections hang
  // in the backlog instead of being refused: the harder case for a timeout).
  auto start = std::chrono::steady_clock::now();
  auto transport = TcpTransport::Connect(cluster.spec(), cluster.task(1), options);
  auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(transport.ok());
  EXPECT_EQ(transport.status().code(), Status::Code::kDeadlineExceeded);
  const std::string& message = transport.status().message();
  EXPECT_NE(message.find("worker:0 (" + cluster.endpoint(0) + ")"), std::string::npos) << message;
  EXPECT_NE(message.find("worker:2 (" + cluster.endpoint(2) + ") (it never connected"),
            std::string::npos)
      << message;
  EXPECT_LT(waited, 5s);
}

// While peers are missing, the rendezvous says whom it waits for, at a bounded rate.
TEST(TransportTest, WaitingTasksSayWhomTheyStillWaitFor) {
  LocalCluster cluster(3);
  TransportOptions options;
  options.job_name = "test-job";
  options.secret = kSecret;
  options.startup_timeout = 1600ms;
  options.handshake_timeout = 500ms;
  options.waiting_report_interval = 400ms;
  std::vector<std::string> warnings;
  std::mutex mutex;
  options.log_warning = [&](const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex);
    warnings.push_back(message);
  };
  options.listening_fd = cluster.TakeListener(1);
  auto transport = TcpTransport::Connect(cluster.spec(), cluster.task(1), options);
  ASSERT_FALSE(transport.ok());
  std::lock_guard<std::mutex> lock(mutex);
  int reports = 0;
  for (const std::string& warning : warnings) {
    if (warning.find("still waits") == std::string::npos) continue;
    ++reports;
    EXPECT_NE(warning.find("rendezvous: worker:1 (" + cluster.endpoint(1) + ") still waits"),
              std::string::npos)
        << warning;
    EXPECT_NE(warning.find("for 2 of 2 peers: worker:0 (" + cluster.endpoint(0) + ")"),
              std::string::npos)
        << warning;
    EXPECT_NE(warning.find("worker:2 (" + cluster.endpoint(2) + ")"), std::string::npos);
  }
  // 1.6 s at one report per 0.4 s: 3 (the last wait ends at the deadline), never more than 4.
  EXPECT_GE(reports, 2);
  EXPECT_LE(reports, 4);
}

// Tasks whose TF_CONFIGs disagree on the cluster's size both fail at once with a permanent error
// naming the difference, not a retryable timeout or "connection reset".
TEST(TransportTest, ClusterSpecsThatDifferFailEveryTaskAtOnce) {
  LocalCluster cluster(3);
  std::vector<GroupMember> two = {{cluster.task(0), cluster.endpoint(0)},
                                  {cluster.task(1), cluster.endpoint(1)}};
  std::vector<GroupMember> three = two;
  three.push_back({cluster.task(2), cluster.endpoint(2)});
  auto outcomes = RunProcesses(
      2,
      [&](int rank) {
        TransportOptions options = Options(cluster, rank);
        const auto start = std::chrono::steady_clock::now();
        auto transport = TcpTransport::Connect(rank == 0 ? two : three, rank, options);
        const auto waited = std::chrono::steady_clock::now() - start;
        if (transport.ok()) return 1;
        Report(transport.status().ToString());
        const std::string& message = transport.status().message();
        if (message.find("the cluster spec differs between tasks") == std::string::npos) return 2;
        if (message.find("worker 2") == std::string::npos ||
            message.find("worker 3") == std::string::npos) {
          return 3;
        }
        if (transport.status().code() == Status::Code::kDeadlineExceeded ||
            transport.status().code() == Status::Code::kUnavailable) {
          return 4;  // retryable codes: a restart would meet the same TF_CONFIG
        }
        return waited < 10s ? 0 : 5;
      },
      60s);
  for (const ChildOutcome& outcome : outcomes)
    ASSERT_EQ(outcome.exit_code, 0) << Describe(outcomes);
}

// A task with the wrong job secret fails at once, and the task it reached reports the failure
// at once too (it used to see only a closed connection and wait out its startup timeout); the
// accepting task's timeout names it as the missing peer's last error.
TEST(TransportTest, AWrongSecretIsReportedByBothSidesAtOnce) {
  LocalCluster cluster(2);
  auto outcomes = RunProcesses(
      2,
      [&](int rank) {
        TransportOptions options = Options(cluster, rank);
        if (rank == 1) options.secret = "a guess";
        options.startup_timeout = 6s;
        const auto start = std::chrono::steady_clock::now();
        std::atomic<double> reported_after{-1};
        options.log_warning = [&](const std::string& message) {
          Report("warning: " + message);
          if (message.find("authentication failed") != std::string::npos && reported_after < 0) {
            reported_after =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          }
        };
        auto transport = TcpTransport::Connect(cluster.spec(), cluster.task(rank), options);
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (transport.ok()) return 1;
        Report(transport.status().ToString());
        const std::string& message = transport.status().message();
        if (message.find("different job secrets") == std::string::npos) return 2;
        if (rank == 1) return waited < 3 ? 0 : 3;
        // The accepting side: reported within seconds, then the timeout names it.
        return reported_after >= 0 && reported_after < 3 ? 0 : 4;
      },
      60s);
  for (const ChildOutcome& outcome : outcomes)
    ASSERT_EQ(outcome.exit_code, 0) << Describe(outcomes);
}

// An impostor that speaks the protocol by hand: a valid hello, then a proof of random bytes
// whatever the server's reply said (ConnectHandshake would stop at the server's proof, which it
// cannot verify without the secret). OK when the server answers with a reject frame.
Status SendForgedProof(int fd, const cluster::TaskId& self, const cluster::TaskId& server) {
  auto exchange_frame = [fd](FrameType type, const std::string& payload) -> StatusOr<FrameType> {
    std::string frame = EncodeFrame(type, 0, payload);
    COHORT_RETURN_IF_ERROR(
        WriteFully(fd, frame.data(), frame.size(), Deadline::After(5s), "forger"));
    uint8_t header[kFrameHeaderSize];
    COHORT_RETURN_IF_ERROR(ReadFully(fd, header, sizeof(header), Deadline::After(5s), "forger"));
    auto decoded = DecodeFrameHeader(header);
    if (!decoded.ok()) return decoded.status();
    std::string reply(decoded->payload_size, '\0');
    COHORT_RETURN_IF_ERROR(
        ReadFully(fd, reply.data(), reply.size(), Deadline::After(5s), "forger"));
    return decoded->type;
  };
  HelloMessage hello;
  hello.job_name = "test-job";
  hello.task = self;
  hello.addressee = server;
  hello.nonce = *RandomBytes(kNonceSize);
  hello.authenticated = true;
  auto reply = exchange_frame(FrameType::kHello, EncodeHello(hello));
  if (!reply.ok()) return reply.status();
  if (*reply != FrameType::kHelloReply) return Status::Internal("no hello reply");
  auto verdict = exchange_frame(FrameType::kProof, *RandomBytes(kProofSize));
  if (!verdict.ok()) return verdict.status();
  if (*verdict != FrameType::kReject) return Status::Internal("the forged proof was not rejected");
  return Status::OK();
}

// Legitimate workers with the secret; impostors try to pass for worker:1 before it starts.
TEST(TransportTest, ImpostorsAreRefusedAndTheJobGoesOn) {
  LocalCluster cluster(2);
  const int kImpostors = 5;
  // Each impostor leaves a file here when it is done; worker:1 starts only then, because the
  // rendezvous closes worker:0's port once the real worker:1 is in.
  ScratchDirectory scratch("cohort-impostors");
  const std::string directory = scratch.path().string();
  auto finished = [&](int process) {
    std::string path = directory + "/" + std::to_string(process);
    close(open(path.c_str(), O_CREAT | O_WRONLY, 0600));
  };
  auto outcomes = RunProcesses(
      2 + kImpostors,
      [&](int process) {
        if (process < 2) {
          for (int impostor = 2; process == 1 && impostor < 2 + kImpostors; ++impostor) {
            WaitForFile(directory + "/" + std::to_string(impostor), 30s);
          }
          auto transport = TcpTransport::Connect(cluster.spec(), cluster.task(process),
                                                 Options(cluster, process));
          if (!transport.ok()) {
            Report(transport.status().ToString());
            return 1;
          }
          Status status = ExchangeWithEveryone(**transport, 1, 4096);
          if (!status.ok()) Report(status.ToString());
          return status.ok() ? 0 : 2;
        }
        cluster.CloseOthers(-1);
        auto endpoint = ParseEndpoint(cluster.endpoint(0));
        if (process == 2 || process == 3) {
          // A process with the wrong secret, then one with none, claiming to be worker:1.
          auto listener = ListenTcp("127.0.0.1", 0, 1);
          TransportOptions options;
          options.job_name = "test-job";
          options.secret = process == 2 ? "wrong secret" : "";
          options.startup_timeout = 3s;
          options.listening_fd = listener->Release();
          options.log_warning = [](const std::string&) {};
          auto transport = TcpTransport::Connect(cluster.spec(), cluster.task(1), options);
          Report("impostor: " + transport.status().ToString());
          finished(process);
          return transport.ok() ? 1 : 0;
        }
        // Raw connections: an HTTP request, a hello cut short, and a valid hello followed by a
        // forged proof.
        auto socket = ConnectTcp(*endpoint, Deadline::After(5s));
        if (!socket.ok()) {
          finished(process);
          return 3;
        }
        if (process == 6) {
          Status forged = SendForgedProof(socket->fd(), cluster.task(1), cluster.task(0));
          Report("forger: " + forged.ToString());
          finished(process);
          return forged.ok() ? 0 : 6;
        }
        std::string bytes = process == 4
                                ? std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                                : EncodeFrame(FrameType::kHello, 0, "truncated").substr(0, 30);
        int code = 0;
        if (!WriteFully(socket->fd(), bytes.data(), bytes.size(), Deadline::After(5s), "raw")
                 .ok()) {
          code = 4;
        } else {
          // Truncation: the piece, then the end of the stream (our side only, so that the
          // server's hang-up can still be read).
          if (process == 5) shutdown(socket->fd(), SHUT_WR);
          // The server must hang up on garbage and on a cut hello; its hang-up also says that it
          // has read what was sent before worker:1 (and the rendezvous's end) comes.
          char reply[256];
          Status closed = ReadFully(socket->fd(), reply, sizeof(reply), Deadline::After(5s), "x");
          if (closed.code() != Status::Code::kUnavailable) code = 5;
        }
        finished(process);
        return code;
      },
      60s);
  ASSERT_EQ(outcomes[0].exit_code, 0) << Describe(outcomes);
  ASSERT_EQ(outcomes[1].exit_code, 0) << Describe(outcomes);
  for (int impostor = 2; impostor < 2 + kImpostors; ++impostor) {
    EXPECT_EQ(outcomes[impostor].exit_code, 0) << Describe(outcomes);
  }
  const std::string& log = outcomes[0].report;
  EXPECT_NE(log.find("refused a connection"), std::string::npos) << log;
  EXPECT_NE(log.find("open mode"), std::string::npos) << log;
  EXPECT_NE(log.find("bad frame magic"), std::string::npos) << log;
  EXPECT_NE(log.find("authentication failed: the task claiming to be worker:1"), std::string::npos)
      << log;
  EXPECT_NE(outcomes[2].report.find("hold different job secrets"), std::string::npos)
      << Describe(outcomes);
}

// An authenticated peer that then sends garbage is cut off, and named, without a crash.
TEST(TransportTest, MalformedFramesFailTheConnectionNamingThePeer) {
  struct Case {
    const char* name;
    std::string bytes;
    const char* expected;
  };
  std::string bad_magic = EncodeFrame(FrameType::kData, 1, "12345678");
  bad_magic[0] = 'X';
  std::string absurd(kFrameHeaderSize, '\0');
  EncodeFrameHeader({FrameType::kData, 1, 0xFFFFFFF0u}, reinterpret_cast<uint8_t*>(absurd.data()));
  std::string truncated = EncodeFrame(FrameType::kData, 1, "12345678").substr(0, 28);
  std::vector<Case> cases = {{"bad magic", bad_magic, "malformed frame"},
                             {"absurd length", absurd, "malformed frame"},
                             {"truncated", truncated, "closed the connection"}};
  for (const Case& test_case : cases) {
    LocalCluster cluster(2);
    // worker:0 leaves this file once it has judged the connection; until then the impostor keeps
    // its socket open (closing a socket with unread heartbeats in it would reset the connection
    // and could throw away the garbage before worker:0 reads it). Truncation needs the close.
    ScratchDirectory scratch("cohort-malformed");
    const std::filesystem::path judged = scratch.path() / "judged";
    const bool needs_close = std::string(test_case.expected) == "closed the connection";
    auto outcomes = RunProcesses(
        2,
        [&](int rank) {
          if (rank == 0) {
            auto transport =
                TcpTransport::Connect(cluster.spec(), cluster.task(0), Options(cluster, 0));
            if (!transport.ok()) return 1;
            TcpExchange exchange(**transport, {1}, 1, "receive", Deadline::After(20s));
            uint8_t buffer[8];
            exchange.Receive(1, buffer, sizeof(buffer));
            Status status = exchange.Finish();
            Report(status.ToString());
            WriteText(judged, "");
            return status.ok() ? 2 : 0;
          }
          cluster.CloseOthers(-1);
          auto socket = ConnectTcp(*ParseEndpoint(cluster.endpoint(0)), Deadline::After(10s));
          if (!socket.ok()) return 3;
          HandshakeConfig config;
          config.job_name = "test-job";
          config.self = cluster.task(1);
          config.secret = JobSecret(kSecret);
          config.deadline = Deadline::After(10s);
          auto shaken = ConnectHandshake(socket->fd(), config, cluster.task(0), "worker:0");
          if (!shaken.ok()) {
            Report(shaken.status().ToString());
            return 4;
          }
          IgnoreError(WriteFully(socket->fd(), test_case.bytes.data(), test_case.bytes.size(),
                                 Deadline::After(5s), "garbage"),
                      "the task under test may close once it has judged the first bytes; its "
                      "verdict is what the test checks");
          if (!needs_close && !WaitForFile(judged, 20s)) return 5;
          return 0;  // exiting closes the socket
        },
        60s);
    ASSERT_EQ(outcomes[0].exit_code, 0) << test_case.name << "\n" << Describe(outcomes);
    EXPECT_EQ(outcomes[1].exit_code, 0) << test_case.name << "\n" << Describe(outcomes);
    EXPECT_NE(outcomes[0].report.find("worker:1 (" + cluster.endpoint(1) + ")"), std::string::npos)
        << outcomes[0].report;
    EXPECT_NE(outcomes[0].report.find(test_case.expected), std::string::npos)
        << test_case.name << ": " << outcomes[0].report;
  }
}

// A peer that stops (SIGSTOP: alive, silent) is detected by missing heartbeats within the peer
// timeout, by every other task, and named.
TEST(TransportTest, HungPeerIsDetectedWithinThePeerTimeout) {
  LocalCluster cluster(3);
  // Each live rank leaves a file here once it has given up on the stopped one.
  ScratchDirectory scratch("cohort-hung-peer");
  auto gave_up = [&](int rank) { return scratch.path() / ("gave-up-" + std::to_string(rank)); };
  const auto peer_timeout = 3s;
  double stopped_at = 0;
  auto outcomes = RunProcesses(
      3,
      [&](int rank) {
        TransportOptions options = Options(cluster, rank);
        options.peer_timeout = peer_timeout;
        options.heartbeat_interval = 250ms;
        std::string told;  // what on_peer_failure was told, for job control
        options.on_peer_failure = [&](const std::string& report) { told = report; };
        auto transport = TcpTransport::Connect(cluster.spec(), cluster.task(rank), options);
        if (!transport.ok()) return 1;
        Status status = RingTraffic(**transport, 1000000, 1 << 20, [&](int round) {
          if (round == 2 && rank == 2) Report("ready");
        });
        Report("failed at " + std::to_string(MonotonicSeconds()) + ": " + status.ToString());
        Report("told [" + told + "] recorded [" + (*transport)->FailurePeerReport() + "]");
        WriteText(gave_up(rank), "");
        return status.ok() ? 2 : 0;
      },
      60s,
      [&](const std::vector<pid_t>& pids, const std::vector<int>& report_fds) {
        // Waits for rank 2 to be in the middle of the traffic, then freezes it until the others
        // have given up on it.
        WaitForFirstReport(report_fds[2]);
        kill(pids[2], SIGSTOP);
        stopped_at = MonotonicSeconds();
        WaitForFile(gave_up(0), 30s);
        WaitForFile(gave_up(1), 30s);
        kill(pids[2], SIGKILL);
      });
  for (int rank = 0; rank < 2; ++rank) {
    const std::string& report = outcomes[rank].report;
    ASSERT_EQ(outcomes[rank].exit_code, 0) << Describe(outcomes);
    EXPECT_NE(report.find("worker:2 (" + cluster.endpoint(2) + ")"), std::string::npos) << report;
    size_t at = report.find("failed at ");
    ASSERT_NE(at, std::string::npos);
    double failed_at = std::stod(report.substr(at + 10));
    EXPECT_LT(failed_at - stopped_at, 3.0 + 4.0) << report;  // the timeout, plus scheduling slack
    EXPECT_GT(failed_at - stopped_at, 2.0) << report;        // not before the peer fell silent
    // Whether it found the silence itself or heard it from the other live rank, each names the
    // same culprit to job control, in the form of cluster/peer_report.h.
    const std::string expected = "peer worker:2 hung (no heartbeat for 3 s)";
    EXPECT_NE(report.find("told [" + expected + "] recorded [" + expected + "]"), std::string::npos)
        << report;
  }
}

// A task that has not reached the operation a peer already sent data for stops reading that
// peer, and with it the peer's heartbeats (see Connection::CheckLiveness). It must not blame the
// peer for that silence, however long it lasts; and once it claims the data, a peer that has
// fallen silent since is found within the peer timeout.
TEST(TransportTest, PeerAheadIsJudgedOnceItsDataIsClaimed) {
  LocalCluster cluster(2);
  // "ahead": worker:1 has sent operation 1's data; "stopped": the parent has frozen worker:1;
  // "judged": worker:0 has given up on it.
  ScratchDirectory scratch("cohort-peer-ahead");
  const std::filesystem::path ahead = scratch.path() / "ahead";
  const std::filesystem::path stopped = scratch.path() / "stopped";
  const std::filesystem::path judged = scratch.path() / "judged";
  const auto peer_timeout = 1s;
  const auto idle = 1500ms;  // longer than the peer timeout
  auto exchange = [](TcpTransport& transport, uint64_t tag, int receives, bool send) {
    TcpExchange exchange(transport, {1 - transport.rank()}, tag, "op " + std::to_string(tag),
                         Deadline::After(20s));
    COHORT_RETURN_IF_ERROR(exchange.status());
    uint8_t out[8] = {}, in[2][8];
    for (int i = 0; i < receives; ++i) exchange.Receive(1 - transport.rank(), in[i], 8);
    if (send) exchange.Send(1 - transport.rank(), out, sizeof(out));
    return exchange.Finish();
  };
  auto outcomes = RunProcesses(
      2,
      [&](int rank) {
        TransportOptions options = Options(cluster, rank);
        options.peer_timeout = peer_timeout;
        options.heartbeat_interval = 250ms;
        options.shutdown_timeout = 1s;
        auto transport = TcpTransport::Connect(cluster.spec(), cluster.task(rank), options);
        if (!transport.ok()) return 1;
        TcpTransport& net = **transport;
        if (rank == 1) {
          // Alive and ahead: operation 1's data is sent, then it waits in operation 2.
          if (!exchange(net, 1, 0, true).ok()) return 2;
          WriteText(ahead, "");
          if (!exchange(net, 2, 1, false).ok()) return 2;
          // Ahead again, and then stopped by the parent.
          if (!exchange(net, 3, 0, true).ok()) return 3;
          Report("ready");
          std::this_thread::sleep_for(30s);
          return 4;
        }
        // Silence from the peer, longer than the peer timeout, while its data waits unclaimed.
        if (!WaitForFile(ahead, 20s)) return 8;
        std::this_thread::sleep_for(idle);
        if (!net.health().ok()) {
          Report("blamed a live peer: " + net.health().ToString());
          return 5;
        }
        if (!exchange(net, 1, 1, false).ok() || !exchange(net, 2, 0, true).ok()) return 6;
        // Operation 3: the peer's one message waits here unread while the peer is stopped, for
        // longer than the peer timeout.
        if (!WaitForFile(stopped, 20s)) return 9;
        std::this_thread::sleep_for(idle);
        double claimed_at = MonotonicSeconds();
        Status status = exchange(net, 3, 2, false);
        Report("claimed at " + std::to_string(claimed_at));
        Report("failed at " + std::to_string(MonotonicSeconds()) + ": " + status.ToString());
        WriteText(judged, "");
        return status.ok() ? 7 : 0;
      },
      60s,
      [&](const std::vector<pid_t>& pids, const std::vector<int>& report_fds) {
        WaitForFirstReport(report_fds[1]);
        kill(pids[1], SIGSTOP);
        WriteText(stopped, "");
        WaitForFile(judged, 30s);
        kill(pids[1], SIGKILL);
      });
  ASSERT_EQ(outcomes[0].exit_code, 0) << Describe(outcomes);
  const std::string& report = outcomes[0].report;
  EXPECT_NE(
      report.find("worker:1 (" + cluster.endpoint(1) + ") sent nothing, not even a heartbeat"),
      std::string::npos)
      << report;
  size_t claimed = report.find("claimed at "), failed = report.find("failed at ");
  ASSERT_NE(claimed, std::string::npos) << report;
  ASSERT_NE(failed, std::string::npos) << report;
  double waited = std::stod(report.substr(failed + 10)) - std::stod(report.substr(claimed + 11));
  EXPECT_GT(waited, 0.9) << report;        // the peer timeout, counted from the claim
  EXPECT_LT(waited, 1.0 + 2.0) << report;  // plus scheduling slack
}

// A peer that dies is detected at once (its sockets close) even by tasks that never talk to it
// directly: the failure is spread to everyone, naming the dead task.
TEST(TransportTest, DeadPeerIsReportedToEveryTask) {
  LocalCluster cluster(3);
  // worker:0 leaves this file once it and worker:1 are talking; worker:2 dies only then.
  ScratchDirectory scratch("cohort-dead-peer");
  const std::filesystem::path talking = scratch.path() / "talking";
  auto outcomes = RunProcesses(
      3,
      [&](int rank) {
        auto transport =
            TcpTransport::Connect(cluster.spec(), cluster.task(rank), Options(cluster, rank));
        if (!transport.ok()) return 1;
        if (rank == 2) {
          if (!WaitForFile(talking, 20s)) return 3;
          kill(getpid(), SIGKILL);
        }
        // Ranks 0 and 1 talk only to each other; they learn about rank 2 from the monitor.
        double start = MonotonicSeconds();
        for (uint64_t round = 1; MonotonicSeconds() - start < 20; ++round) {
          TcpExchange exchange(**transport, {1 - rank}, round, "pair round", Deadline::After(20s));
          uint8_t in = 0, out = 1;
          Status status = exchange.status();
          if (status.ok()) {
            exchange.Receive(1 - rank, &in, 1);
            exchange.Send(1 - rank, &out, 1);
            status = exchange.Finish();
          }
          if (!status.ok()) {
            Report(status.ToString() + "\nrecorded [" + (*transport)->FailurePeerReport() + "]");
            return 0;
          }
          if (rank == 0 && round == 1) WriteText(talking, "");
        }
        return 2;
      },
      60s);
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(outcomes[rank].exit_code, 0) << Describe(outcomes);
    EXPECT_NE(outcomes[rank].report.find("worker:2 (" + cluster.endpoint(2) +
                                         ") closed the connection without saying goodbye"),
              std::string::npos)
        << outcomes[rank].report;
    EXPECT_NE(outcomes[rank].report.find(
                  "recorded [peer worker:2 died (closed the connection without saying goodbye"),
              std::string::npos)
        << outcomes[rank].report;
  }
}

TEST(TransportTest, GoodbyeIsNotAFailureUntilSomeoneNeedsThePeer) {
  LocalCluster cluster(2);
  // worker:1 leaves this file once its transport is gone (its goodbye sent).
  ScratchDirectory scratch("cohort-goodbye");
  const std::filesystem::path gone = scratch.path() / "gone";
  auto outcomes = RunProcesses(
      2,
      [&](int rank) {
        auto transport =
            TcpTransport::Connect(cluster.spec(), cluster.task(rank), Options(cluster, rank));
        if (!transport.ok()) return 1;
        if (!ExchangeWithEveryone(**transport, 1, 100).ok()) return 2;
        if (rank == 1) {
          transport->reset();  // goodbye
          WriteText(gone, "");
          return 0;
        }
        if (!WaitForFile(gone, 20s)) return 5;
        if (!(*transport)->health().ok()) {
          Report("unhealthy after goodbye: " + (*transport)->health().ToString());
          return 3;
        }
        Status status = ExchangeWithEveryone(**transport, 2, 100);
        Report(status.ToString());
        return status.ok() ? 4 : 0;
      },
      60s);
  ASSERT_EQ(outcomes[0].exit_code, 0) << Describe(outcomes);
  ASSERT_EQ(outcomes[1].exit_code, 0) << Describe(outcomes);
  EXPECT_NE(outcomes[0].report.find("shut down"), std::string::npos) << outcomes[0].report;
}

TEST(TransportTest, TasksOutOfStepGetAnErrorInsteadOfMixedData) {
  LocalCluster cluster(2);
  auto outcomes = RunProcesses(
      2,
      [&](int rank) {
        auto transport =
            TcpTransport::Connect(cluster.spec(), cluster.task(rank), Options(cluster, rank));
        if (!transport.ok()) return 1;
        // Rank 0 runs operation 1 with 64 bytes, rank 1 runs operation 2.
        Status status = ExchangeWithEveryone(**transport, 1 + rank, 64);
        Report(status.ToString());
        return status.ok() ? 2 : 0;
      },
      60s);
  ASSERT_EQ(outcomes[0].exit_code, 0) << Describe(outcomes);
  ASSERT_EQ(outcomes[1].exit_code, 0) << Describe(outcomes);
  EXPECT_NE(outcomes[0].report.find("did not call the same collectives"), std::string::npos)
      << Describe(outcomes);
}

// ReceiveAtMost: a message shorter than the buffer arrives with its size (the ring's zero-skipping
// encodings); a longer one fails the receiver, saying how many bytes came and how many fit, and
// data and sizes stay in order across posted receives and DataBytesSent counts what was sent.
TEST(TransportTest, ReceiveAtMostTakesShorterMessagesAndRefusesLongerOnes) {
  LocalCluster cluster(2);
  auto outcomes = RunProcesses(
      2,
      [&](int rank) {
        auto transport =
            TcpTransport::Connect(cluster.spec(), cluster.task(rank), Options(cluster, rank));
        if (!transport.ok()) return 1;
        const int peer = 1 - rank;
        TcpExchange exchange(**transport, {peer}, 1, "sizes", Deadline::After(30s));
        if (rank == 0) {
          std::vector<uint8_t> short_message(100, 7), full(256, 8), too_long(300, 9);
          exchange.Send(peer, short_message.data(), short_message.size());
          exchange.Send(peer, full.data(), full.size());
          exchange.Send(peer, too_long.data(), too_long.size());
          // The receiver fails at the third, perhaps before this side has looked: either way all
          // three were handed to the kernel first.
          (void)exchange.WaitForSends(peer, 3);
          Report("sent " + std::to_string((*transport)->DataBytesSent()));
          return 0;
        }
        std::vector<std::vector<uint8_t>> buffers(3, std::vector<uint8_t>(256));
        uint32_t sizes[3] = {0, 0, 0};
        // The third message is left in the socket until its receive is posted.
        for (int i = 0; i < 2; ++i) exchange.ReceiveAtMost(peer, buffers[i].data(), 256, &sizes[i]);
        Status status = exchange.WaitForReceives(peer, 2);
        if (!status.ok() || sizes[0] != 100 || sizes[1] != 256 || buffers[0][99] != 7 ||
            buffers[1][255] != 8) {
          Report("first two: " + status.ToString() + " sizes " + std::to_string(sizes[0]) + " " +
                 std::to_string(sizes[1]));
          return 3;
        }
        exchange.ReceiveAtMost(peer, buffers[2].data(), 256, &sizes[2]);
        Report(exchange.WaitForReceives(peer, 3).ToString());
        return 0;
      },
      60s);
  ASSERT_EQ(outcomes[0].exit_code, 0) << Describe(outcomes);
  ASSERT_EQ(outcomes[1].exit_code, 0) << Describe(outcomes);
  EXPECT_NE(outcomes[0].report.find("sent 656"), std::string::npos) << Describe(outcomes);
  EXPECT_NE(outcomes[1].report.find("sent 300 bytes where at most 256 were expected"),
            std::string::npos)
      << Describe(outcomes);
}

}  // namespace
}  // namespace cohort::net
