#include "net/handshake.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <thread>

#include "net/frame.h"
#include "net/socket.h"

namespace cohort::net {
namespace {

using namespace std::chrono_literals;

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
  EXPECT_TRUE(SetNonBlocking(fds[0]).ok());
  EXPECT_TRUE(SetNonBlocking(fds[1]).ok());
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
  hello.cluster_digest = std::string(64, 'a');
  hello.cluster_summary = "chief 1, worker 2";
  auto decoded = DecodeHello(EncodeHello(hello));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(*decoded == hello);
  hello.cluster_digest = "not hex";
  EXPECT_FALSE(DecodeHello(EncodeHello(hello)).ok());
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
  // The client cannot verify the server's proof, so it gives up first, and tells the server why:
  // both sides report the authentication failure at once.
  ASSERT_FALSE(outcome.client.ok());
  EXPECT_EQ(outcome.client.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(outcome.client.message().find("authentication failed: worker:1 could not verify the "
                                          "proof of chief:0: the two tasks hold different job "
                                          "secrets"),
            std::string::npos)
      << outcome.client.ToString();
  ASSERT_FALSE(outcome.server.ok());
  EXPECT_EQ(outcome.server.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(outcome.server.message().find("the task claiming to be worker:1 refused this task: "
                                          "authentication failed"),
            std::string::npos)
      << outcome.server.ToString();
}

HandshakeConfig WithCluster(HandshakeConfig config, int workers) {
  std::vector<cluster::TaskId> tasks = {kChief};
  std::vector<std::string> endpoints = {"host:1"};
  for (int i = 0; i < workers; ++i) {
    tasks.push_back({"worker", i});
    endpoints.push_back("host:" + std::to_string(2 + i));
  }
  config.cluster = ViewOfCluster(config.job_name, tasks, endpoints);
  return config;
}

// Tasks whose TF_CONFIGs disagree: both sides fail permanently, naming both views, once the
// peer has proven it knows the job secret; the accepting side's Aborted ends its rendezvous.
TEST(HandshakeTest, ClustersThatDifferAreRefusedOnBothSidesNamingTheDifference) {
  Outcome outcome = Shake(WithCluster(Config("job", kWorker, "s"), 2),
                          WithCluster(Config("job", kChief, "s"), 3), kChief);
  ASSERT_EQ(outcome.server.code(), Status::Code::kAborted) << outcome.server.ToString();
  EXPECT_NE(outcome.server.message().find("the cluster spec differs between tasks"),
            std::string::npos);
  EXPECT_NE(outcome.server.message().find("chief:0 has chief 1, worker 3"), std::string::npos)
      << outcome.server.message();
  EXPECT_NE(outcome.server.message().find("worker:1 has chief 1, worker 2"), std::string::npos)
      << outcome.server.message();
  ASSERT_EQ(outcome.client.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(outcome.client.message().find("the cluster spec differs between tasks"),
            std::string::npos)
      << outcome.client.message();

  // The same counts in another order: said so, even when the client aimed at another task.
  HandshakeConfig reordered = Config("job", kWorker, "s");
  reordered.cluster =
      ViewOfCluster("job", {{"worker", 1}, kChief, {"worker", 0}}, {"host:3", "host:1", "host:2"});
  outcome = Shake(reordered, WithCluster(Config("job", kChief, "s"), 2), {"worker", 0});
  ASSERT_EQ(outcome.server.code(), Status::Code::kAborted) << outcome.server.ToString();
  EXPECT_NE(outcome.server.message().find("the same task counts, but other endpoints or another "
                                          "order"),
            std::string::npos)
      << outcome.server.message();

  // Without the job secret, a claimed difference is an authentication failure, not a verdict on
  // the cluster: nobody outside the job can end a rendezvous.
  outcome = Shake(WithCluster(Config("job", kWorker, "guess"), 2),
                  WithCluster(Config("job", kChief, "s"), 3), kChief);
  EXPECT_EQ(outcome.server.code(), Status::Code::kFailedPrecondition) << outcome.server.ToString();
  // Equal views pass.
  outcome = Shake(WithCluster(Config("job", kWorker, "s"), 2),
                  WithCluster(Config("job", kChief, "s"), 2), kChief);
  EXPECT_TRUE(outcome.server.ok()) << outcome.server.ToString();
  EXPECT_TRUE(outcome.client.ok()) << outcome.client.ToString();
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

// ---- Clients written by hand ----
//
// The honest ConnectHandshake gives up as soon as it cannot verify the server's proof, before it
// sends its own, so an impostor built on it never reaches the server's check of the client proof.
// These helpers speak the protocol frame by frame and send whatever proof the test chooses.

Status SendRawFrame(int fd, FrameType type, const std::string& payload) {
  std::string frame = EncodeFrame(type, 0, payload);
  return WriteFully(fd, frame.data(), frame.size(), Deadline::After(10s), "raw frame");
}

StatusOr<Frame> ReceiveRawFrame(int fd) {
  uint8_t header[kFrameHeaderSize];
  COHORT_RETURN_IF_ERROR(ReadFully(fd, header, sizeof(header), Deadline::After(10s), "raw frame"));
  auto decoded = DecodeFrameHeader(header);
  if (!decoded.ok()) return decoded.status();
  Frame frame;
  frame.header = *decoded;
  frame.payload.resize(decoded->payload_size);
  COHORT_RETURN_IF_ERROR(
      ReadFully(fd, frame.payload.data(), frame.payload.size(), Deadline::After(10s), "raw frame"));
  return frame;
}

// A hello from `self` to `addressee` with a fresh nonce, as ConnectHandshake would send it.
std::string FreshHello(const cluster::TaskId& self, const cluster::TaskId& addressee,
                       bool authenticated) {
  HelloMessage hello;
  hello.job_name = "job";
  hello.task = self;
  hello.addressee = addressee;
  hello.nonce = *RandomBytes(kNonceSize);
  hello.authenticated = authenticated;
  return EncodeHello(hello);
}

struct RawOutcome {
  Status server;      // what AcceptHandshake returned
  Status client;      // an I/O error of the raw client, if any
  Frame verdict;      // the server's answer to the proof
  std::string reply;  // the payload of the server's hello reply
};

// Sends `hello`, reads the hello reply, then sends `proof` (which must not depend on the reply:
// a forger does not know the secret) and reads the server's verdict.
RawOutcome SendProofByHand(const HandshakeConfig& server, const std::string& hello,
                           const std::string& proof) {
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Socket client_socket(fds[0]), server_socket(fds[1]);
  EXPECT_TRUE(SetNonBlocking(fds[0]).ok());
  EXPECT_TRUE(SetNonBlocking(fds[1]).ok());
  RawOutcome outcome;
  std::thread server_thread([&] {
    auto result = AcceptHandshake(server_socket.fd(), server,
                                  [](const HelloMessage&) { return Status::OK(); });
    outcome.server = result.status();
    if (!result.ok()) server_socket.Close();
  });
  outcome.client = [&]() -> Status {
    COHORT_RETURN_IF_ERROR(SendRawFrame(client_socket.fd(), FrameType::kHello, hello));
    auto reply = ReceiveRawFrame(client_socket.fd());
    if (!reply.ok()) return reply.status();
    if (reply->header.type != FrameType::kHelloReply) {
      return Status::Internal("expected a hello reply, got " +
                              FrameTypeName(static_cast<uint8_t>(reply->header.type)));
    }
    outcome.reply = reply->payload;
    COHORT_RETURN_IF_ERROR(SendRawFrame(client_socket.fd(), FrameType::kProof, proof));
    auto verdict = ReceiveRawFrame(client_socket.fd());
    if (!verdict.ok()) return verdict.status();
    outcome.verdict = *verdict;
    return Status::OK();
  }();
  server_thread.join();
  return outcome;
}

// Checks that the server refused the proof, told the client why, and reported it.
void ExpectRefused(const RawOutcome& outcome, const std::string& reason) {
  ASSERT_TRUE(outcome.client.ok()) << outcome.client.ToString();
  ASSERT_FALSE(outcome.server.ok());
  EXPECT_EQ(outcome.server.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(outcome.server.message().find(reason), std::string::npos) << outcome.server.ToString();
  EXPECT_NE(outcome.server.message().find("worker:1"), std::string::npos)
      << outcome.server.ToString();
  EXPECT_EQ(outcome.verdict.header.type, FrameType::kReject);
  EXPECT_NE(outcome.verdict.payload.find(reason), std::string::npos) << outcome.verdict.payload;
}

// Runs an honest handshake through a relay that records what the client sent: the hello and
// proof frames' payloads, as an eavesdropper on the network would see them.
struct Recording {
  std::string hello;
  std::string proof;
};

Recording RecordHonestHandshake(const HandshakeConfig& client, const HandshakeConfig& server) {
  int client_fds[2], server_fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, client_fds), 0);
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, server_fds), 0);
  Socket client_end(client_fds[0]), relay_client_end(client_fds[1]);
  Socket relay_server_end(server_fds[0]), server_end(server_fds[1]);
  for (int fd : {client_fds[0], client_fds[1], server_fds[0], server_fds[1]}) {
    EXPECT_TRUE(SetNonBlocking(fd).ok());
  }
  Status server_status, client_status;
  std::thread server_thread([&] {
    server_status = AcceptHandshake(server_end.fd(), server, [](const HelloMessage&) {
                      return Status::OK();
                    }).status();
  });
  std::thread client_thread([&] {
    client_status = ConnectHandshake(client_end.fd(), client, kChief, "server (relayed)").status();
  });
  Recording recording;
  // The protocol's four frames, in order: hello, hello reply, proof, accept.
  auto forward = [](int from, int to, std::string* payload) {
    auto frame = ReceiveRawFrame(from);
    ASSERT_TRUE(frame.ok()) << frame.status().ToString();
    if (payload != nullptr) *payload = frame->payload;
    ASSERT_TRUE(SendRawFrame(to, frame->header.type, frame->payload).ok());
  };
  forward(relay_client_end.fd(), relay_server_end.fd(), &recording.hello);
  forward(relay_server_end.fd(), relay_client_end.fd(), nullptr);
  forward(relay_client_end.fd(), relay_server_end.fd(), &recording.proof);
  forward(relay_server_end.fd(), relay_client_end.fd(), nullptr);
  client_thread.join();
  server_thread.join();
  EXPECT_TRUE(server_status.ok()) << server_status.ToString();
  EXPECT_TRUE(client_status.ok()) << client_status.ToString();
  EXPECT_EQ(recording.proof.size(), kProofSize);
  return recording;
}

TEST(HandshakeTest, ServerRefusesAForgedClientProof) {
  const HandshakeConfig server = Config("job", kChief, "s3cret");
  const std::string random_proof = *RandomBytes(kProofSize);
  for (const std::string& proof :
       {random_proof, std::string(), std::string(kProofSize, '\0'), random_proof + random_proof}) {
    SCOPED_TRACE("proof of " + std::to_string(proof.size()) + " bytes");
    RawOutcome outcome = SendProofByHand(server, FreshHello(kWorker, kChief, true), proof);
    ExpectRefused(outcome, "authentication failed");
    EXPECT_NE(outcome.server.message().find("does not know the job secret"), std::string::npos);
  }
  // Nothing of the forgeries lingers: an honest client is admitted.
  Outcome honest = Shake(Config("job", kWorker, "s3cret"), server, kChief);
  EXPECT_TRUE(honest.client.ok()) << honest.client.ToString();
  EXPECT_TRUE(honest.server.ok()) << honest.server.ToString();
}

TEST(HandshakeTest, ServerRefusesAProofReplayedFromAnEarlierSession) {
  const HandshakeConfig server = Config("job", kChief, "s3cret");
  Recording recorded = RecordHonestHandshake(Config("job", kWorker, "s3cret"), server);
  // The recorded hello and proof together, and the proof under a fresh hello: either way the
  // server's new nonce is part of what the proof must sign.
  RawOutcome whole = SendProofByHand(server, recorded.hello, recorded.proof);
  ExpectRefused(whole, "authentication failed");
  RawOutcome proof_only =
      SendProofByHand(server, FreshHello(kWorker, kChief, true), recorded.proof);
  ExpectRefused(proof_only, "authentication failed");
  Outcome honest = Shake(Config("job", kWorker, "s3cret"), server, kChief);
  EXPECT_TRUE(honest.client.ok()) << honest.client.ToString();
  EXPECT_TRUE(honest.server.ok()) << honest.server.ToString();
}

TEST(HandshakeTest, OpenModeServerRefusesAClientThatSendsAProof) {
  const HandshakeConfig server = Config("job", kChief, "");
  RawOutcome outcome =
      SendProofByHand(server, FreshHello(kWorker, kChief, false), *RandomBytes(kProofSize));
  ExpectRefused(outcome, "sent a proof in open mode");
  // The same hand-written client with an empty proof is what open mode expects.
  RawOutcome empty = SendProofByHand(server, FreshHello(kWorker, kChief, false), "");
  ASSERT_TRUE(empty.client.ok()) << empty.client.ToString();
  EXPECT_TRUE(empty.server.ok()) << empty.server.ToString();
  EXPECT_EQ(empty.verdict.header.type, FrameType::kAccept);
}

TEST(HandshakeTest, GarbageInsteadOfAHelloIsRejected) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Socket client(fds[0]), server(fds[1]);
  ASSERT_TRUE(SetNonBlocking(fds[1]).ok());
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
  ASSERT_TRUE(SetNonBlocking(fds[1]).ok());
  HandshakeConfig config = Config("job", kChief, "s");
  config.deadline = Deadline::After(std::chrono::milliseconds(100));
  auto result =
      AcceptHandshake(server.fd(), config, [](const HelloMessage&) { return Status::OK(); });
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Status::Code::kDeadlineExceeded);
}

}  // namespace
}  // namespace cohort::net
