// ServerConnection: a client's link to one parameter server, which survives that server's
// restarts.
//
// Requests go out in batches: every request of a batch is written, then every response is read,
// so the link stays busy (the server applies one chunk while the next is still arriving) without
// a round trip per chunk. A batch must not have large requests and large responses both (pushes
// and pulls go in separate batches): otherwise both sides could block writing to each other.
//
// When the connection fails (the server died, a deadline passed) the batch is retried on a new
// connection, with exponential backoff between attempts, until `retry_timeout` has passed since
// the first failure; then the batch fails with Unavailable naming the server, e.g.
// "ps:1 (10.0.0.7:2222) unreachable for 60 s: connection refused". A request not answered within
// `request_timeout` counts as a failed connection: a server behind a network partition neither
// answers nor closes. No connection attempt runs past the retry window, and batches that were
// waiting for the connection when a batch gave up fail with its verdict at once, so a silent
// server is named about request_timeout + retry_timeout after it went silent. Each new connection
// first replays the setup calls. The chief's are the variable creates that concern this server, so
// a server that came back without its variables gets them again, and one that restored a checkpoint
// keeps its values (creates are idempotent). A worker's are checks that the server holds the
// chief's variables (AddSetupCheck): a server that came back without them answers NotFound, and the
// worker retries as if the server were down, with the same backoff and bound, until the chief has
// created them again; after the bound the call fails naming the chief. A batch is retried whole, so
// a push may be applied twice when the server applied it but died before answering: at-least-once,
// as TensorFlow's closures are. A refusal during the handshake (wrong secret, not a task of the
// job) is not retried: waiting cannot fix it.
//
// Same host. When the handshake proves that the server runs on this host and that process memory
// is readable between the two, a dense push goes out as a reference to the caller's gradient
// (protocol.h, MemoryReference) and the server copies it straight out of this process: one copy
// instead of loopback TCP's two. The caller's buffer stays untouched until Run returns anyway. A
// server that cannot read this process after all (the kernel's ptrace rules need not be
// symmetric) refuses, and from then on this connection sends the bytes.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "cluster/cluster_spec.h"
#include "net/auth.h"
#include "net/socket.h"
#include "ps/protocol.h"

namespace cohort::ps {

// One request and, after the batch runs, its response.
struct Call {
  Operation operation = Operation::kPullDense;
  std::string fields;
  std::vector<std::string_view> bulk;  // written in order after the fields
  // Where the response's bulk goes; it must be exactly this size (or empty on an error).
  char* response_bulk = nullptr;
  size_t response_bulk_size = 0;

  // Filled by Run.
  Status status;                // the server's verdict
  std::string response_fields;  // without the status message
};

struct ConnectionSettings {
  std::string job_name;
  cluster::TaskId self;
  net::JobSecret secret;
  std::chrono::milliseconds retry_timeout{60000};
  std::chrono::milliseconds request_timeout{120000};
  std::chrono::milliseconds handshake_timeout{10000};
  std::chrono::milliseconds initial_backoff{20};
  std::chrono::milliseconds max_backoff{1000};
  // Dense pushes to a server on this host go out as memory references when the handshake proves
  // that the server can read this process. Off: always bytes over TCP, as between hosts (the
  // benchmark measures both paths).
  bool same_host_pushes = true;
  std::function<void(const std::string&)> log;  // stderr, prefixed with `self`, when unset

  // Writes `line` to `log`.
  void Log(const std::string& line) const;
};

class ServerConnection {
 public:
  ServerConnection(int ps_index, std::string endpoint, const ConnectionSettings& settings);

  // "ps:1 (10.0.0.7:2222)".
  const std::string& name() const { return name_; }

  // Calls to replay first on every new connection.
  void AddSetupCall(Call call);
  // A call to replay that only asks whether the server holds something `creator` (e.g. "chief:0")
  // creates; NotFound means wait for the creator, not fail.
  void AddSetupCheck(Call call, const std::string& creator);

  // Runs `calls` as one batch (see the header). OK means every response arrived; each call's
  // own status says what the server answered. Thread-safe: batches run one at a time.
  Status Run(std::vector<Call>& calls);

 private:
  // Connects and replays the setup calls. Requires mutex_.
  Status Connect(net::Deadline deadline);
  // Writes then reads one batch on the current socket. Requires mutex_.
  Status Exchange(std::vector<Call>& calls, net::Deadline deadline);
  // The pushes of `calls` sent from memory that the server could not read, sent again as bytes.
  // Requires mutex_.
  Status ResendRefusedFromMemory(std::vector<Call>& calls, const std::vector<bool>& from_memory,
                                 net::Deadline deadline);
  // Whether `call` goes out as a reference to the caller's memory. Requires mutex_.
  bool SendsFromMemory(const Call& call) const;

  const int ps_index_;
  const std::string endpoint_;
  const std::string name_;
  const ConnectionSettings& settings_;
  std::mutex mutex_;
  net::Socket socket_;
  std::vector<Call> setup_calls_;
  std::string setup_creator_;  // who creates what the setup checks look for; "" without checks
  bool waiting_for_creator_ = false;  // the last Connect found something the creator had to make
  uint64_t next_request_id_ = 1;
  std::vector<uint64_t> scratch_;  // response bytes that do not go to a caller's buffer
  bool push_from_memory_ = false;  // this connection's handshake proved the memory readable
  bool memory_refused_ = false;    // the server said it cannot read this process: never again
  // The last time a batch gave up on the server, and why; batches that were already waiting then
  // fail with the same verdict.
  std::chrono::steady_clock::time_point gave_up_at_;
  Status gave_up_ = Status::OK();
};

}  // namespace cohort::ps
