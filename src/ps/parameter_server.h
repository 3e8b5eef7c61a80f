// ParameterServer: a `ps` task. It holds its shard of the variables and serves workers and the
// chief until the job ends.
//
// Unlike the all-to-all transport of chief and workers (net/tcp/tcp_transport.h), a parameter
// server is a server: workers come and go (a killed worker rejoins later), so it accepts
// authenticated connections at any time, from any task of the cluster that proves it knows the job
// secret (net/handshake.h), and serves each connection on its own thread, so one slow or silent
// client never delays another. A ps never talks to another ps, as in TensorFlow's device filters.
//
// Requests (protocol.h) create variables, pull and push dense row ranges and embedding rows, save
// the shard (checkpoint.h), advance the bounded-staleness clock (step_clock.h) and end the job.
// Pushes are applied by the server-side optimizer of each variable (optimizer.h):
//   - async mode (default): each push is applied on arrival; pushes to different variables apply
//     in parallel, pushes to the same variable one after another;
//   - sync mode: one gradient per worker per step is averaged, then applied (sync_aggregator.h
//     explains how stragglers are bounded).
//
// A malformed request (bad fields, a size that does not match its shape, rows this server does
// not hold) is answered with an error naming the problem and the connection stays usable; a
// malformed frame (bad magic, oversized length) means framing is lost, so the connection is
// closed and the log names the peer. Every read of a started request and every write has a
// deadline, so a client that stalls mid-message cannot hold a thread forever.
//
// With a checkpoint directory, a starting server restores its shard from the newest whole
// checkpoint there: this is how a killed ps comes back with its variables.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "cluster/cluster_spec.h"
#include "net/auth.h"
#include "net/deadline.h"
#include "net/handshake.h"
#include "net/socket.h"
#include "ps/shard_store.h"
#include "ps/step_clock.h"
#include "ps/sync_aggregator.h"

namespace cohort::ps {

struct ParameterServerOptions {
  std::string job_name;
  cluster::ClusterSpec cluster;
  int ps_index = 0;
  net::JobSecret secret;
  // An already-bound listening socket to serve on (tests bind ports up front); -1 means listen on
  // the port of this task's endpoint in `cluster`.
  int listening_fd = -1;
  // Synchronous training; see sync_aggregator.h.
  bool sync = false;
  std::chrono::milliseconds sync_timeout{30000};
  // The workers each sync step waits for; empty means every "worker" task of the cluster.
  std::vector<cluster::TaskId> sync_workers;
  // Where checkpoints live; empty for none. The newest whole checkpoint is restored at start.
  std::string checkpoint_dir;
  std::chrono::milliseconds handshake_timeout{10000};
  // How long one request may take to arrive once its first byte has, and a response to leave.
  std::chrono::milliseconds io_timeout{60000};
  // Where log lines go; standard error when empty.
  std::function<void(const std::string&)> log;
};

class ParameterServer {
 public:
  // Binds (or adopts) the listening socket, restores the shard and starts serving.
  static StatusOr<std::unique_ptr<ParameterServer>> Start(ParameterServerOptions options);
  ~ParameterServer();

  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  // "ps:1".
  const std::string& name() const { return name_; }
  uint16_t port() const { return port_; }
  ShardStore& store() { return store_; }
  // The global step of the checkpoint restored at start, or -1.
  int64_t restored_step() const { return restored_step_; }

  // Blocks until the chief ends the job (a shutdown request) or Stop(): OK. DeadlineExceeded when
  // `deadline` passes first.
  Status Wait(net::Deadline deadline);

  // Stops accepting, ends every connection and every wait, joins every thread. Idempotent.
  void Stop();

 private:
  explicit ParameterServer(ParameterServerOptions options);

  void AcceptLoop();
  void Serve(net::Socket socket);
  Status Admit(const cluster::TaskId& task) const;
  void Log(const std::string& line) const;

  // One request; fills the response. Returns the status to send.
  struct Response {
    std::string fields;
    const char* bulk = nullptr;
    size_t bulk_size = 0;
  };
  struct ConnectionBuffers {
    std::vector<uint64_t> payload;  // 8-aligned, so bulk values can be used in place
    std::vector<float> values;      // pulled values on their way out, gradients read from memory
  };
  // `handshake` says what the peer proved about itself, its process included (for pushes that
  // leave the gradient in the peer's memory).
  Status Handle(const net::HandshakeResult& handshake, uint8_t operation, std::string_view fields,
                const char* bulk, size_t bulk_size, ConnectionBuffers& buffers, Response* response);
  Status HandlePushDenseFromMemory(const net::HandshakeResult& handshake, std::string_view fields,
                                   ConnectionBuffers& buffers, Response* response);
  // FailedPrecondition when a push's mode (with or without a sync step) is not this server's.
  Status CheckPushMode(const cluster::TaskId& peer, bool sync_push) const;
  Status HandlePushDense(const cluster::TaskId& peer, std::string_view fields, const char* bulk,
                         size_t bulk_size, Response* response);
  Status HandlePushRows(const cluster::TaskId& peer, std::string_view fields, const char* bulk,
                        size_t bulk_size, Response* response);

  const ParameterServerOptions options_;
  const std::string name_;
  ShardStore store_;
  SyncAggregator aggregator_;
  StepClock clock_;
  net::Socket listener_;
  uint16_t port_ = 0;
  int wake_fd_ = -1;  // eventfd: wakes the accept loop and idle connections on Stop
  int64_t restored_step_ = -1;

  std::mutex mutex_;
  std::condition_variable finished_;
  bool shutdown_requested_ = false;
  bool stopping_ = false;
  std::set<int> live_fds_;
  std::list<std::thread> connection_threads_;
  std::thread accept_thread_;
};

}  // namespace cohort::ps
