// ps_bench: parameter-server throughput on loopback over TCP, beside the ring ceiling measured in
// turn with it.
//
// For each number of parameter servers P and workers W, the benchmark forks P servers and W
// workers (all authenticated with a job secret, as in a real job). Each worker creates the same
// dense variable of --dense-bytes (split over the servers by MinSizePartitioner) and an embedding
// table of width --row-width, then, all workers together from a common start time, for
// --seconds each:
//   dense push   whole-variable gradients, applied by the servers' SGD       (MB/s, all workers)
//   dense pull   whole-variable values                                       (MB/s, all workers)
//   sparse push  --rows random ids from a 1M-id vocabulary per push           (rows/s)
//   sparse pull  the same                                                    (rows/s)
//
// Everything goes over TCP, as between hosts: pushes too (same_host_pushes off). On one host a
// worker can instead hand its server the address of its gradient, which the server copies out of
// the worker's memory (server_connection.h); --same-host-pushes measures the table that way, and
// the summary then adds that figure, labelled: it has no like-for-like peer here and is not
// compared with any TCP figure.
//
// The ceiling (bench/common/tcp_loop.h) is what the same two processes' links allow when
// both directions are busy: a worker and a server each send --dense-bytes to the other at once,
// over TCP on loopback; its figure is the bytes each side sent per second. The summary measures
// 1 ps x 1 worker dense push and pull and that ceiling in turn, --rounds times (10 by default),
// and prints min / median / max of each and the fractions: the medians over rounds of each
// round's figure over that round's ceiling.
//
//   ps_bench [--ps=1,2,4] [--workers=1,2,4] [--dense-bytes=16777216] [--rows=4096]
//            [--row-width=32] [--seconds=1] [--chunk-bytes=4194304] [--rounds=10]
//            [--same-host-pushes]
//
// The last line is the summary: ps: tcp dense push fraction of ring ceiling = X.XX
//
// Between hosts (bench/ps/run_cross_host.sh), one process per host: --role=ps runs one server on
// --ps-endpoint, --role=worker one worker on --worker-endpoint, and the two measure, round after
// round, the same two-way exchange between them (on each endpoint's port + 1; there it is the
// single-connection TCP loop, a reference, not a limit), then the worker's dense push and dense
// pull to that server, each over the same links. The limit there is the link: a push or a pull
// moves the variable one way, so its bound is the link rate (--link-bits-per-second, required
// with --role=worker). The worker prints the summary, whose last line is
//   ps cross-host: dense push fraction of the link = X.XX; dense pull = Y.YY
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "net/socket.h"
#include "ps/parameter_server.h"
#include "ps/parameter_server_client.h"
#include "spread.h"
#include "tcp_loop.h"

namespace cohort::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kSecret[] = "ps bench secret";
constexpr char kJob[] = "ps-bench";

struct Options {
  std::vector<int> ps = {1, 2, 4};
  std::vector<int> workers = {1, 2, 4};
  size_t dense_bytes = 16u << 20;
  size_t rows = 4096;
  int row_width = 32;
  double seconds = 1.0;
  size_t chunk_bytes = 4u << 20;
  int rounds = 10;
  bool same_host_pushes = false;
  // Between hosts: "ps" or "worker" (empty: everything forked on loopback).
  std::string role;
  std::string ps_endpoint;
  std::string worker_endpoint;
  // Between hosts: the shaping rate of each host's link, each way (--link-bits-per-second), the
  // limit the worker's figures are fractions of.
  double link_bits_per_second = 0;
};

std::vector<int> ParseList(const std::string& text) {
  std::vector<int> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) values.push_back(std::atoi(item.c_str()));
  return values;
}

Options ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string argument = argv[i];
    auto value = [&](const char* flag) -> const char* {
      size_t length = std::strlen(flag);
      return argument.compare(0, length, flag) == 0 ? argv[i] + length : nullptr;
    };
    if (const char* v = value("--ps=")) {
      options.ps = ParseList(v);
    } else if (const char* v = value("--workers=")) {
      options.workers = ParseList(v);
    } else if (const char* v = value("--dense-bytes=")) {
      options.dense_bytes = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--rows=")) {
      options.rows = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--row-width=")) {
      options.row_width = std::atoi(v);
    } else if (const char* v = value("--chunk-bytes=")) {
      options.chunk_bytes = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--seconds=")) {
      options.seconds = std::atof(v);
    } else if (const char* v = value("--rounds=")) {
      options.rounds = std::max(1, std::atoi(v));
    } else if (argument == "--same-host-pushes") {
      options.same_host_pushes = true;
    } else if (const char* v = value("--role=")) {
      options.role = v;
    } else if (const char* v = value("--ps-endpoint=")) {
      options.ps_endpoint = v;
    } else if (const char* v = value("--worker-endpoint=")) {
      options.worker_endpoint = v;
    } else if (const char* v = value("--link-bits-per-second=")) {
      options.link_bits_per_second = std::atof(v);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      std::exit(2);
    }
  }
  if (!options.role.empty()) {
    if (options.role != "ps" && options.role != "worker") {
      std::fprintf(stderr, "--role: %s is neither ps nor worker\n", options.role.c_str());
      std::exit(2);
    }
    if (options.ps_endpoint.empty() || options.worker_endpoint.empty()) {
      std::fprintf(stderr, "--role needs --ps-endpoint and --worker-endpoint (HOST:PORT)\n");
      std::exit(2);
    }
  }
  return options;
}

double MonotonicSeconds() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

struct WorkerResult {
  double push_bytes_per_second = 0;
  double pull_bytes_per_second = 0;
  double push_rows_per_second = 0;
  double pull_rows_per_second = 0;
};

void Fail(const Status& status) {
  std::fprintf(stderr, "ps_bench: %s\n", status.ToString().c_str());
  _exit(1);
}

// Runs `operation` repeatedly for `seconds`; returns operations per second.
template <typename Operation>
double Repeat(double seconds, Operation operation) {
  const double start = MonotonicSeconds();
  int count = 0;
  double elapsed = 0;
  do {
    Status status = operation();
    if (!status.ok()) Fail(status);
    ++count;
    elapsed = MonotonicSeconds() - start;
  } while (elapsed < seconds);
  return count / elapsed;
}

// The dense variable every worker pushes and pulls: --dense-bytes as rows of 256 floats.
constexpr int64_t kDenseWidth = 256;
int64_t DenseRows(const Options& options) {
  return static_cast<int64_t>(options.dense_bytes / (kDenseWidth * sizeof(float)));
}

// Worker `index`'s client, connected to every server of `spec`, with the dense variable created
// (and the embedding table, unless `dense_only`).
std::unique_ptr<ps::ParameterServerClient> ConnectWorker(const Options& options,
                                                         const cluster::ClusterSpec& spec,
                                                         int index, bool same_host_pushes,
                                                         bool dense_only) {
  ps::ParameterServerClientOptions client_options;
  client_options.connection.same_host_pushes = same_host_pushes;
  client_options.cluster = spec;
  client_options.connection.job_name = kJob;
  client_options.connection.self = {"worker", index};
  client_options.connection.secret = net::JobSecret(kSecret);
  client_options.chunk_bytes = options.chunk_bytes;
  auto client = ps::ParameterServerClient::Connect(client_options);
  if (!client.ok()) Fail(client.status());
  ps::OptimizerConfig sgd{.kind = ps::OptimizerKind::kSgd, .learning_rate = 1e-6f};
  Status created =
      (*client)->CreateVariables({{{"dense", DenseRows(options), kDenseWidth}, sgd, {}}});
  if (created.ok() && !dense_only) {
    created = (*client)->CreateTable({"emb", options.row_width, 1, 0.05f, sgd});
  }
  if (!created.ok()) Fail(created);
  return std::move(*client);
}

WorkerResult RunWorker(const Options& options, const cluster::ClusterSpec& spec, int index,
                       double start_time, bool same_host_pushes, bool dense_only) {
  std::unique_ptr<ps::ParameterServerClient> client =
      ConnectWorker(options, spec, index, same_host_pushes, /*dense_only=*/false);
  const int64_t rows = DenseRows(options), width = kDenseWidth;
  std::vector<float> values(rows * width, 0.001f);
  std::vector<int64_t> ids(options.rows);
  std::mt19937_64 random(index);
  for (int64_t& id : ids) id = static_cast<int64_t>(random() % 1000000);
  std::vector<float> row_values(options.rows * options.row_width, 0.001f);
  // Touch the rows once, so the sparse numbers do not include first-touch creation.
  if (Status warm = client->PullRows("emb", ids.data(), ids.size(), row_values.data());
      !warm.ok()) {
    Fail(warm);
  }
  while (MonotonicSeconds() < start_time) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const double bytes = static_cast<double>(rows * width * sizeof(float));
  WorkerResult result;
  result.push_bytes_per_second = bytes * Repeat(options.seconds, [&] {
                                   return client->Push({{"dense", values.data()}});
                                 });
  result.pull_bytes_per_second = bytes * Repeat(options.seconds, [&] {
                                   return client->Pull({{"dense", values.data()}});
                                 });
  if (dense_only) return result;
  result.push_rows_per_second =
      options.rows * Repeat(options.seconds, [&] {
        return client->PushRows("emb", ids.data(), ids.size(), row_values.data());
      });
  result.pull_rows_per_second =
      options.rows * Repeat(options.seconds, [&] {
        return client->PullRows("emb", ids.data(), ids.size(), row_values.data());
      });
  return result;
}

// One configuration: P servers, W workers; the sum over workers of each throughput.
bool RunConfiguration(const Options& options, int num_ps, int num_workers, WorkerResult* total,
                      bool same_host_pushes, bool dense_only = false) {
  cluster::ClusterSpec spec;
  std::vector<int> listeners;
  for (int i = 0; i < num_ps; ++i) {
    auto listener = net::ListenTcp("127.0.0.1", 0, 128);
    if (!listener.ok()) return false;
    spec.jobs["ps"].push_back("127.0.0.1:" + std::to_string(*net::LocalPort(listener->fd())));
    listeners.push_back(listener->Release());
  }
  for (int i = 0; i < num_workers; ++i) spec.jobs["worker"].push_back("127.0.0.1:1");
  std::fflush(stdout);
  std::vector<pid_t> servers;
  for (int i = 0; i < num_ps; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      for (int j = 0; j < num_ps; ++j) {
        if (j != i) close(listeners[j]);
      }
      ps::ParameterServerOptions server_options;
      server_options.job_name = kJob;
      server_options.cluster = spec;
      server_options.ps_index = i;
      server_options.secret = net::JobSecret(kSecret);
      server_options.listening_fd = listeners[i];
      auto server = ps::ParameterServer::Start(server_options);
      if (!server.ok()) _exit(1);
      IgnoreError((*server)->Wait(net::Deadline::After(std::chrono::minutes(10))),
                  "the benchmark's server is stopped by the client, whatever it says");
      _exit(0);
    }
    servers.push_back(pid);
  }
  for (int fd : listeners) close(fd);
  const double start_time = MonotonicSeconds() + 1.0 + 0.2 * num_workers;
  std::vector<pid_t> workers;
  std::vector<int> pipes;
  for (int i = 0; i < num_workers; ++i) {
    int fds[2];
    if (pipe(fds) != 0) return false;
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      WorkerResult result = RunWorker(options, spec, i, start_time, same_host_pushes, dense_only);
      [[maybe_unused]] ssize_t written = write(fds[1], &result, sizeof(result));
      _exit(0);
    }
    close(fds[1]);
    workers.push_back(pid);
    pipes.push_back(fds[0]);
  }
  bool ok = true;
  for (int i = 0; i < num_workers; ++i) {
    WorkerResult result;
    if (read(pipes[i], &result, sizeof(result)) != sizeof(result)) ok = false;
    close(pipes[i]);
    int status = 0;
    waitpid(workers[i], &status, 0);
    total->push_bytes_per_second += result.push_bytes_per_second;
    total->pull_bytes_per_second += result.pull_bytes_per_second;
    total->push_rows_per_second += result.push_rows_per_second;
    total->pull_rows_per_second += result.pull_rows_per_second;
  }
  for (pid_t pid : servers) {
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
  }
  return ok;
}

// ---- Between hosts: one ps and one worker, each on its own host ----

constexpr auto kCrossHostTimeout = std::chrono::minutes(10);

cluster::ClusterSpec CrossHostSpec(const Options& options) {
  cluster::ClusterSpec spec;
  spec.jobs["ps"] = {options.ps_endpoint};
  spec.jobs["worker"] = {options.worker_endpoint};
  return spec;
}

// The ring ceiling's two ranks, ps first, each on its endpoint's port + 1, connected.
std::unique_ptr<RingExchange> ConnectCeiling(const Options& options, int rank) {
  std::vector<net::Endpoint> endpoints;
  for (const std::string& text : {options.ps_endpoint, options.worker_endpoint}) {
    auto endpoint = net::ParseEndpoint(text);
    if (!endpoint.ok()) Fail(endpoint.status());
    endpoint->port = static_cast<uint16_t>(endpoint->port + 1);
    endpoints.push_back(*endpoint);
  }
  auto listener = net::ListenTcp("", endpoints[rank].port, 4);
  if (!listener.ok()) Fail(listener.status());
  auto ring = RingExchange::Connect(rank, endpoints, std::move(*listener),
                                    net::Deadline::After(kCrossHostTimeout));
  if (!ring.ok()) Fail(ring.status());
  return std::move(*ring);
}

// The bytes one ceiling measurement moves each way: four variables' worth, at least 64 MiB.
size_t CeilingBytes(const Options& options) {
  return std::max<size_t>(4 * options.dense_bytes, 64u << 20);
}

// One ceiling exchange with the other host (also the rounds' barrier); returns bytes per second.
double ExchangeCeiling(RingExchange& ring, const Options& options, std::vector<char>& send,
                       std::vector<char>& receive) {
  const double start = MonotonicSeconds();
  Status exchanged = ring.Exchange(send.data(), send.size(), receive.data(), receive.size(),
                                   CeilingBytes(options), net::Deadline::After(kCrossHostTimeout));
  if (!exchanged.ok()) Fail(exchanged);
  return static_cast<double>(CeilingBytes(options)) / (MonotonicSeconds() - start);
}

// The ps host: serves while the worker measures, and takes part in every ceiling exchange (two to
// warm up, one per round, one to end).
int RunCrossHostServer(const Options& options) {
  ps::ParameterServerOptions server_options;
  server_options.job_name = kJob;
  server_options.cluster = CrossHostSpec(options);
  server_options.secret = net::JobSecret(kSecret);
  auto server = ps::ParameterServer::Start(server_options);
  if (!server.ok()) Fail(server.status());
  std::unique_ptr<RingExchange> ring = ConnectCeiling(options, 0);
  std::vector<char> send(options.dense_bytes), receive(options.dense_bytes);
  for (int exchange = 0; exchange < options.rounds + 3; ++exchange) {
    ExchangeCeiling(*ring, options, send, receive);
  }
  (*server)->Stop();
  return 0;
}

// The worker host: per round, the ceiling, then dense push and dense pull for --seconds each.
int RunCrossHostWorker(const Options& options) {
  std::unique_ptr<ps::ParameterServerClient> client = ConnectWorker(
      options, CrossHostSpec(options), 0, /*same_host_pushes=*/false, /*dense_only=*/true);
  const int64_t rows = DenseRows(options), width = kDenseWidth;
  std::vector<float> values(rows * width, 0.001f);
  const double bytes = static_cast<double>(rows * width * sizeof(float));
  std::unique_ptr<RingExchange> ring = ConnectCeiling(options, 1);
  std::vector<char> send(options.dense_bytes), receive(options.dense_bytes);
  for (int warm_up = 0; warm_up < 2; ++warm_up) ExchangeCeiling(*ring, options, send, receive);
  std::vector<double> ceiling, push, pull;
  for (int round = 0; round < options.rounds; ++round) {
    ceiling.push_back(ExchangeCeiling(*ring, options, send, receive));
    push.push_back(bytes * Repeat(options.seconds, [&] {
                     return client->Push({{"dense", values.data()}});
                   }));
    pull.push_back(bytes * Repeat(options.seconds, [&] {
                     return client->Pull({{"dense", values.data()}});
                   }));
  }
  ExchangeCeiling(*ring, options, send, receive);  // tells the server it may stop
  auto line = [](const char* what, const std::vector<double>& figures) {
    const Spread spread = SpreadOf(figures);
    std::printf("# %-44s %9.1f %9.1f %9.1f MB/s\n", what, spread.min / 1e6, spread.median / 1e6,
                spread.max / 1e6);
  };
  std::printf(
      "# ps_bench between hosts: ps:0 at %s, worker:0 at %s; dense variable %.1f MiB (SGD on the "
      "server), everything over TCP; %d rounds, min / median / max%s\n",
      options.ps_endpoint.c_str(), options.worker_endpoint.c_str(), options.dense_bytes / 1048576.0,
      options.rounds, options.rounds < 10 ? " (fewer than 10 rounds: not for reporting)" : "");
  line("single-connection tcp loop (both ways at once)", ceiling);
  line("dense push over tcp", push);
  line("dense pull over tcp", pull);
  const double link_bytes_per_second = options.link_bits_per_second / 8;
  std::printf("# the link: %.1f MB/s each way; the loop's median is %.2f of it\n",
              link_bytes_per_second / 1e6, SpreadOf(ceiling).median / link_bytes_per_second);
  std::printf("ps cross-host: dense push fraction of the link = %.2f; dense pull = %.2f\n",
              SpreadOf(push).median / link_bytes_per_second,
              SpreadOf(pull).median / link_bytes_per_second);
  return 0;
}

int Main(int argc, char** argv) {
  Options options = ParseOptions(argc, argv);
  if (options.role == "ps") return RunCrossHostServer(options);
  if (options.role == "worker") {
    if (options.link_bits_per_second <= 0) {
      std::fprintf(stderr, "ps_bench: --role=worker needs --link-bits-per-second (the limit)\n");
      return 2;
    }
    return RunCrossHostWorker(options);
  }
  const char* path = options.same_host_pushes
                         ? "pushes by the same-host path (process_vm_readv), pulls over TCP"
                         : "everything over TCP (same-host pushes off, as between hosts)";
  std::printf(
      "# ps_bench on loopback, %u cores; dense variable %.1f MiB (SGD on the servers), "
      "sparse batches of %zu rows x %d floats; %s\n",
      std::thread::hardware_concurrency(), options.dense_bytes / 1048576.0, options.rows,
      options.row_width, path);
  std::printf("%4s %8s %16s %16s %16s %16s\n", "ps", "workers", "push MB/s", "pull MB/s",
              "push rows/s", "pull rows/s");
  for (int num_ps : options.ps) {
    for (int num_workers : options.workers) {
      WorkerResult total;
      if (!RunConfiguration(options, num_ps, num_workers, &total, options.same_host_pushes)) {
        std::printf("%4d %8d   failed (see the worker's error above)\n", num_ps, num_workers);
        continue;
      }
      std::printf("%4d %8d %16.1f %16.1f %16.0f %16.0f\n", num_ps, num_workers,
                  total.push_bytes_per_second / 1e6, total.pull_bytes_per_second / 1e6,
                  total.push_rows_per_second, total.pull_rows_per_second);
      std::fflush(stdout);
    }
  }
  // The summary: 1 ps x 1 worker over TCP and the ring ceiling between two processes, in turn,
  // round after round, so that both see the same machine.
  std::vector<double> ceiling, push, pull, same_host_push;
  for (int round = 0; round < options.rounds; ++round) {
    // About as long as one push measurement on a fast machine: 256 MiB each way per second.
    const size_t ceiling_bytes = std::max<size_t>(
        4 * options.dense_bytes, static_cast<size_t>(options.seconds * (256u << 20)));
    const double exchanged =
        bench::MeasureTcpLoop(2, options.dense_bytes, options.dense_bytes, ceiling_bytes);
    if (exchanged <= 0) {
      std::fprintf(stderr, "ps_bench: the ring ceiling could not be measured (see above)\n");
      return 1;
    }
    ceiling.push_back(exchanged);
    WorkerResult tcp;
    if (!RunConfiguration(options, 1, 1, &tcp, /*same_host_pushes=*/false, /*dense_only=*/true)) {
      std::fprintf(stderr, "ps_bench: the 1 ps x 1 worker run failed (see above)\n");
      return 1;
    }
    push.push_back(tcp.push_bytes_per_second);
    pull.push_back(tcp.pull_bytes_per_second);
    WorkerResult same_host;
    if (options.same_host_pushes &&
        RunConfiguration(options, 1, 1, &same_host, /*same_host_pushes=*/true, true)) {
      same_host_push.push_back(same_host.push_bytes_per_second);
    }
  }
  const Spread ceiling_spread = SpreadOf(ceiling), push_spread = SpreadOf(push),
               pull_spread = SpreadOf(pull);
  auto line = [](const char* what, const Spread& spread) {
    std::printf("# %-44s %9.1f %9.1f %9.1f MB/s\n", what, spread.min / 1e6, spread.median / 1e6,
                spread.max / 1e6);
  };
  std::printf(
      "# summary, 1 ps x 1 worker, %d rounds in turn with the ceiling; min / median / max%s\n",
      options.rounds, options.rounds < 10 ? " (fewer than 10 rounds: not for reporting)" : "");
  line("ring ceiling (both directions at once, tcp)", ceiling_spread);
  line("dense push over tcp", push_spread);
  line("dense pull over tcp", pull_spread);
  if (!same_host_push.empty()) {
    line("dense push, same-host path (not tcp; no peer)", SpreadOf(same_host_push));
  }
  // Each round's figure over the same round's ceiling, then the median: load that comes and goes
  // between rounds stays out of the fraction.
  auto paired_fraction = [&](const std::vector<double>& figures) {
    std::vector<double> fractions;
    for (size_t round = 0; round < figures.size() && round < ceiling.size(); ++round) {
      fractions.push_back(figures[round] / ceiling[round]);
    }
    return SpreadOf(fractions).median;
  };
  const double push_fraction = paired_fraction(push);
  const double pull_fraction = paired_fraction(pull);
  std::printf("# tcp dense pull fraction of ring ceiling = %.2f\n", pull_fraction);
  std::printf("ps: tcp dense push fraction of ring ceiling = %.2f\n", push_fraction);
  return 0;
}

}  // namespace
}  // namespace cohort::bench

int main(int argc, char** argv) { return cohort::bench::Main(argc, argv); }
