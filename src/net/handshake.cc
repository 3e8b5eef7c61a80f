#include "net/handshake.h"

#include <map>

#include "base/checksum.h"
#include "net/frame.h"
#include "net/socket.h"

namespace cohort::net {
namespace {

constexpr char kServerProofLabel[] = "cohort/v1 server proof";
constexpr char kClientProofLabel[] = "cohort/v1 client proof";

void WriteTask(WireWriter& writer, const cluster::TaskId& task) {
  writer.String(task.type);
  writer.U32(static_cast<uint32_t>(task.index));
}

cluster::TaskId ReadTask(WireReader& reader) {
  cluster::TaskId task;
  task.type = reader.String();
  task.index = static_cast<int>(reader.U32());
  return task;
}

// The message each proof signs: a label, then both hellos, each with its length so that no two
// different pairs of hellos can produce the same bytes.
std::string ProofMessage(const char* label, const std::string& client_hello,
                         const std::string& server_hello) {
  WireWriter writer;
  writer.Bytes(label);
  writer.U32(static_cast<uint32_t>(client_hello.size()));
  writer.Bytes(client_hello);
  writer.U32(static_cast<uint32_t>(server_hello.size()));
  writer.Bytes(server_hello);
  return writer.bytes();
}

Status SendFrame(int fd, FrameType type, std::string_view payload, Deadline deadline,
                 const std::string& what) {
  std::string frame = EncodeFrame(type, 0, payload);
  return WriteFully(fd, frame.data(), frame.size(), deadline, what);
}

// Reads one handshake frame. A peer that speaks something else (bad magic, absurd length) fails
// here, before anything it sent is interpreted.
StatusOr<Frame> ReceiveFrame(int fd, Deadline deadline, const std::string& what) {
  uint8_t header_bytes[kFrameHeaderSize];
  COHORT_RETURN_IF_ERROR(ReadFully(fd, header_bytes, sizeof(header_bytes), deadline, what));
  auto header = DecodeFrameHeader(header_bytes);
  if (!header.ok()) return header.status().WithContext(what);
  Frame frame;
  frame.header = *header;
  frame.payload.resize(header->payload_size);
  COHORT_RETURN_IF_ERROR(ReadFully(fd, frame.payload.data(), frame.payload.size(), deadline, what));
  return frame;
}

StatusOr<HelloMessage> MakeHello(const HandshakeConfig& config, const cluster::TaskId& addressee) {
  auto nonce = RandomBytes(kNonceSize);
  if (!nonce.ok()) return nonce.status();
  HelloMessage hello;
  hello.job_name = config.job_name;
  hello.task = config.self;
  hello.addressee = addressee;
  hello.nonce = *nonce;
  hello.authenticated = config.secret.authenticated();
  hello.process = ThisProcess();
  hello.cluster_digest = config.cluster.digest;
  hello.cluster_summary = config.cluster.summary;
  return hello;
}

// Whether both sides describe their cluster and the descriptions differ.
bool ClustersDiffer(const HandshakeConfig& config, const HelloMessage& peer) {
  return !config.cluster.digest.empty() && !peer.cluster_digest.empty() &&
         config.cluster.digest != peer.cluster_digest;
}

// The reason both sides give when their clusters differ, naming both views.
std::string ClusterDifference(const HandshakeConfig& config, const HelloMessage& peer,
                              const std::string& peer_name) {
  auto view = [](const std::string& summary, const std::string& digest) {
    return summary + " (cluster digest " + digest.substr(0, 12) + ")";
  };
  std::string difference = config.cluster.summary == peer.cluster_summary
                               ? "the same task counts, but other endpoints or another order"
                               : "other task counts";
  return "the cluster spec differs between tasks (TF_CONFIG's \"cluster\" must be the same for "
         "every task of job \"" +
         config.job_name + "\"): " + config.self.ToString() + " has " +
         view(config.cluster.summary, config.cluster.digest) + ", " + peer_name + " has " +
         view(peer.cluster_summary, peer.cluster_digest) + ": " + difference;
}

// Checks that a peer's hello fits this side: same job, aimed at this task, same security mode.
Status CheckPeerHello(const HandshakeConfig& config, const HelloMessage& peer) {
  if (peer.job_name != config.job_name) {
    return Status::FailedPrecondition("it belongs to job \"" + peer.job_name + "\", not \"" +
                                      config.job_name + "\"");
  }
  // With another cluster, the peer may well be aiming at another task: the clusters' difference
  // is what the handshake reports then, once both sides are proven.
  if (peer.addressee != config.self && !ClustersDiffer(config, peer)) {
    return Status::FailedPrecondition("it meant to reach " + peer.addressee.ToString() + ", not " +
                                      config.self.ToString());
  }
  if (peer.nonce.size() != kNonceSize) {
    return Status::FailedPrecondition("its nonce is " + std::to_string(peer.nonce.size()) +
                                      " bytes, not " + std::to_string(kNonceSize));
  }
  if (config.secret.authenticated() && !peer.authenticated) {
    return Status::FailedPrecondition(
        "it runs in open mode (no COHORT_JOB_SECRET) but this task requires the job secret");
  }
  if (!config.secret.authenticated() && peer.authenticated) {
    return Status::FailedPrecondition(
        "it requires the job secret but this task runs in open mode (no COHORT_JOB_SECRET)");
  }
  return Status::OK();
}

}  // namespace

ClusterView ViewOfCluster(const std::string& job_name, const std::vector<cluster::TaskId>& tasks,
                          const std::vector<std::string>& endpoints) {
  WireWriter canonical;
  canonical.String(job_name);
  canonical.U32(static_cast<uint32_t>(tasks.size()));
  std::map<std::string, int> counts;  // by type, in name order: the summary ignores rank order
  for (size_t rank = 0; rank < tasks.size(); ++rank) {
    WriteTask(canonical, tasks[rank]);
    canonical.String(rank < endpoints.size() ? endpoints[rank] : "");
    ++counts[tasks[rank].type];
  }
  ClusterView view;
  view.digest = Sha256Hex(canonical.bytes());
  for (const auto& [type, count] : counts) {
    std::string part = type.substr(0, 32) + " " + std::to_string(count);
    if (view.summary.size() + part.size() + 2 > 200) {
      view.summary += ", ...";
      break;
    }
    view.summary += (view.summary.empty() ? "" : ", ") + part;
  }
  return view;
}

bool HelloMessage::operator==(const HelloMessage& other) const {
  return job_name == other.job_name && task == other.task && addressee == other.addressee &&
         nonce == other.nonce && authenticated == other.authenticated &&
         process.host_identity == other.process.host_identity &&
         process.process_id == other.process.process_id &&
         process.probe_address == other.process.probe_address &&
         process.probe_value == other.process.probe_value &&
         cluster_digest == other.cluster_digest && cluster_summary == other.cluster_summary;
}

std::string EncodeHello(const HelloMessage& hello) {
  WireWriter writer;
  writer.String(hello.job_name);
  WriteTask(writer, hello.task);
  WriteTask(writer, hello.addressee);
  writer.String(hello.nonce);
  writer.U8(hello.authenticated ? 1 : 0);
  writer.String(hello.process.host_identity);
  writer.U32(hello.process.process_id);
  writer.U64(hello.process.probe_address);
  writer.U64(hello.process.probe_value);
  writer.String(hello.cluster_digest);
  writer.String(hello.cluster_summary);
  return writer.bytes();
}

StatusOr<HelloMessage> DecodeHello(std::string_view payload) {
  WireReader reader(payload);
  HelloMessage hello;
  hello.job_name = reader.String();
  hello.task = ReadTask(reader);
  hello.addressee = ReadTask(reader);
  hello.nonce = reader.String();
  uint8_t authenticated = reader.U8();
  hello.process.host_identity = reader.String();
  hello.process.process_id = reader.U32();
  hello.process.probe_address = reader.U64();
  hello.process.probe_value = reader.U64();
  hello.cluster_digest = reader.String();
  hello.cluster_summary = reader.String();
  COHORT_RETURN_IF_ERROR(reader.Finish("hello"));
  if (!hello.cluster_digest.empty() && !IsSha256Hex(hello.cluster_digest)) {
    return Status::InvalidArgument("hello has a malformed cluster digest");
  }
  if (hello.cluster_summary.size() > 256) {
    return Status::InvalidArgument("hello has a cluster summary of " +
                                   std::to_string(hello.cluster_summary.size()) +
                                   " bytes, more than 256");
  }
  if (authenticated > 1) return Status::InvalidArgument("hello has a bad authentication flag");
  hello.authenticated = authenticated == 1;
  if (hello.task.index < 0 || hello.addressee.index < 0) {
    return Status::InvalidArgument("hello names a negative task index");
  }
  return hello;
}

StatusOr<HandshakeResult> ConnectHandshake(int fd, const HandshakeConfig& config,
                                           const cluster::TaskId& server,
                                           const std::string& server_name) {
  const std::string what = "handshake with " + server_name;
  auto hello = MakeHello(config, server);
  if (!hello.ok()) return hello.status();
  const std::string client_hello = EncodeHello(*hello);
  COHORT_RETURN_IF_ERROR(SendFrame(fd, FrameType::kHello, client_hello, config.deadline, what));

  auto reply = ReceiveFrame(fd, config.deadline, what);
  if (!reply.ok()) return reply.status();
  if (reply->header.type == FrameType::kReject) {
    return Status::FailedPrecondition(server_name + " refused this task: " + reply->payload);
  }
  if (reply->header.type != FrameType::kHelloReply) {
    return Status::FailedPrecondition(what + ": expected a hello reply, got a " +
                                      FrameTypeName(static_cast<uint8_t>(reply->header.type)) +
                                      " frame");
  }
  WireReader reader(reply->payload);
  std::string server_hello = reader.String();
  std::string server_proof = reader.String();
  COHORT_RETURN_IF_ERROR(reader.Finish("hello reply from " + server_name));
  auto peer = DecodeHello(server_hello);
  if (!peer.ok()) return Status::FailedPrecondition(what + ": " + peer.status().message());
  if (peer->task != server && !ClustersDiffer(config, *peer)) {
    return Status::FailedPrecondition(what + ": the task listening there is " +
                                      peer->task.ToString());
  }
  Status fits = CheckPeerHello(config, *peer);
  if (!fits.ok()) return Status::FailedPrecondition(server_name + ": " + fits.message());

  std::string client_proof;
  if (config.secret.authenticated()) {
    std::string expected = HmacSha256(config.secret.key(),
                                      ProofMessage(kServerProofLabel, client_hello, server_hello));
    if (!ConstantTimeEquals(server_proof, expected)) {
      // Told to the other side too, so that it reports the failure now rather than a connection
      // closed, and does not wait out its startup timeout in silence.
      const std::string reason = "authentication failed: " + config.self.ToString() +
                                 " could not verify the proof of " + peer->task.ToString() +
                                 ": the two tasks hold different job secrets (COHORT_JOB_SECRET)";
      IgnoreError(SendFrame(fd, FrameType::kReject, reason, config.deadline, what),
                  "the peer may be gone already; the failure is reported here either way");
      return Status::FailedPrecondition(server_name + ": " + reason);
    }
    client_proof = HmacSha256(config.secret.key(),
                              ProofMessage(kClientProofLabel, client_hello, server_hello));
  }
  COHORT_RETURN_IF_ERROR(SendFrame(fd, FrameType::kProof, client_proof, config.deadline, what));

  auto verdict = ReceiveFrame(fd, config.deadline, what);
  if (!verdict.ok()) return verdict.status();
  if (verdict->header.type == FrameType::kReject) {
    return Status::FailedPrecondition(server_name + " refused this task: " + verdict->payload);
  }
  if (verdict->header.type != FrameType::kAccept) {
    return Status::FailedPrecondition(what + ": expected accept, got a " +
                                      FrameTypeName(static_cast<uint8_t>(verdict->header.type)) +
                                      " frame");
  }
  HandshakeResult result;
  result.peer = std::move(*peer);
  result.can_read_peer_memory = CanReadMemoryOf(result.peer.process);
  return result;
}

StatusOr<HandshakeResult> AcceptHandshake(int fd, const HandshakeConfig& config,
                                          const std::function<Status(const HelloMessage&)>& admit) {
  const std::string what = "handshake with a connecting task";
  // Refuses with a reason the other side can print, then reports the same reason here.
  auto refuse = [&](const Status& reason) -> Status {
    IgnoreError(SendFrame(fd, FrameType::kReject, reason.message(), config.deadline, what),
                "the peer may be gone already; the refusal is reported here either way");
    return Status::FailedPrecondition(reason.message());
  };

  auto first = ReceiveFrame(fd, config.deadline, what);
  if (!first.ok()) return first.status();
  if (first->header.type != FrameType::kHello) {
    return refuse(Status::FailedPrecondition(
        "expected a hello, got a " + FrameTypeName(static_cast<uint8_t>(first->header.type)) +
        " frame"));
  }
  const std::string client_hello = first->payload;
  auto peer = DecodeHello(client_hello);
  if (!peer.ok()) return refuse(peer.status());
  const std::string claimed = "the task claiming to be " + peer->task.ToString();
  Status fits = CheckPeerHello(config, *peer);
  if (!fits.ok()) return refuse(Status::FailedPrecondition(claimed + ": " + fits.message()));
  // With another cluster, whether this task admits the peer is beside the point; the difference is
  // refused below, once the peer has proven that it belongs to the job.
  const bool clusters_differ = ClustersDiffer(config, *peer);
  if (!clusters_differ) {
    Status admitted = admit(*peer);
    if (!admitted.ok()) return refuse(admitted);
  }

  auto hello = MakeHello(config, peer->task);
  if (!hello.ok()) return refuse(hello.status());
  const std::string server_hello = EncodeHello(*hello);
  std::string server_proof;
  if (config.secret.authenticated()) {
    server_proof = HmacSha256(config.secret.key(),
                              ProofMessage(kServerProofLabel, client_hello, server_hello));
  }
  WireWriter reply;
  reply.String(server_hello);
  reply.String(server_proof);
  COHORT_RETURN_IF_ERROR(
      SendFrame(fd, FrameType::kHelloReply, reply.bytes(), config.deadline, what));

  auto proof = ReceiveFrame(fd, config.deadline, claimed + ": handshake");
  if (!proof.ok()) return proof.status();
  if (proof->header.type == FrameType::kReject) {
    return Status::FailedPrecondition(claimed + " refused this task: " + proof->payload);
  }
  if (proof->header.type != FrameType::kProof) {
    return refuse(Status::FailedPrecondition(
        claimed + " sent a " + FrameTypeName(static_cast<uint8_t>(proof->header.type)) +
        " frame instead of its proof"));
  }
  if (config.secret.authenticated()) {
    std::string expected = HmacSha256(config.secret.key(),
                                      ProofMessage(kClientProofLabel, client_hello, server_hello));
    if (!ConstantTimeEquals(proof->payload, expected)) {
      return refuse(Status::FailedPrecondition("authentication failed: " + claimed +
                                               " does not know the job secret"));
    }
  } else if (!proof->payload.empty()) {
    return refuse(Status::FailedPrecondition(claimed + " sent a proof in open mode"));
  }
  if (clusters_differ) {
    const std::string reason = ClusterDifference(config, *peer, peer->task.ToString());
    IgnoreError(refuse(Status::FailedPrecondition(reason)), "reported as Aborted just below");
    return Status::Aborted(reason);
  }
  COHORT_RETURN_IF_ERROR(SendFrame(fd, FrameType::kAccept, "", config.deadline, what));
  HandshakeResult result;
  result.peer = std::move(*peer);
  result.can_read_peer_memory = CanReadMemoryOf(result.peer.process);
  return result;
}

}  // namespace cohort::net
