// Network faults on emulated hosts (issue 18): whole TFJobs under the real `cohort` supervisor,
// each replica on an emulated host of its own (tests/testing/emulated_cluster.h, entered through
// replica_on_host), with the hosts' links cut off or made lossy while the job trains:
//   - a cut shorter than the peer timeout: training stalls, then carries on; nothing restarts;
//   - a cut longer than the peer timeout: both workers' runs end within the timeout (plus a
//     stated bound), the first to report naming the other as hung (the peer report, through
//     the termination-message file, in the job's Restarting condition), and the job restarts
//     per its policy and resumes from the chief's backup;
//   - a parameter server behind a partition: the chief and the worker fail within the ps
//     request and retry timeouts naming it, the job restarts them and they continue where the
//     servers are;
//   - 1% packet loss on every link: the same model as without loss, no false failure, and TCP
//     retransmissions to show the loss was real;
//   - the chief's host cut off while it writes a backup (the chief is paused the moment the
//     backup's temporary file appears, inotify, and cut off only if the write is still under
//     way): that backup is completed, since it is local, and the restarted job loads it.
// The MultiWorkerMirrored jobs' links are shaped to 100 Mbit/s, so that each step's all-reduce of
// the CNN's 4.8 MB of gradients takes a visible part of a second; the ps job's to 1 Gbit/s.
// Cut-off and loss are nftables drop rules on each host's link (the kernel has no netem, so no
// delay is added: a cut is total silence). Each test takes 40 to 80 s on 2 busy cores.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "testing/cohort_runner.h"
#include "testing/emulated_cluster.h"
#include "testing/host.h"
#include "testing/synthetic_data.h"
#include "testing/wait.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const fs::path kCohortTrain = fs::path(COHORT_BINARY_DIR) / "apps/cohort-train/cohort-train";
const fs::path kTaxiTrain = fs::path(COHORT_BINARY_DIR) / "examples/taxi/taxi-train";
const fs::path kReplicaOnHost = fs::path(COHORT_BINARY_DIR) / "tests/e2e/replica_on_host";

constexpr uint64_t kLinkRate = 100'000'000;

double Seconds(Clock::duration duration) { return std::chrono::duration<double>(duration).count(); }

// Every test's job: replicas on hosts, run by `cohort run` in the test's sandbox.
class NetworkFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string missing = MissingForEmulatedHosts(); !missing.empty()) {
      COHORT_SKIP_OR_FAIL_IN_CI("emulated hosts need what this machine lacks: " + missing);
    }
  }

  // Emulated hosts, one per replica of `replicas` ("worker-0", ...), each also called by the
  // replica's name, links at `rate` bit/s; writes the hosts file replica_on_host reads.
  void MakeHosts(const std::vector<std::string>& replicas, uint64_t rate = kLinkRate) {
    EmulatedClusterOptions options;
    options.hosts = static_cast<int>(replicas.size());
    options.rate_bits_per_second = rate;
    for (int i = 0; i < options.hosts; ++i) options.aliases[i] = {replicas[i]};
    auto cluster = EmulatedCluster::Create(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    cluster_ = std::move(cluster).value();
    std::string lines;
    for (int i = 0; i < options.hosts; ++i) {
      lines += replicas[i] + " " + std::to_string(cluster_->HostPid(i)) + "\n";
      host_of_[replicas[i]] = i;
    }
    hosts_file_ = sandbox_.WriteFile("hosts.txt", lines);
  }

  // Small synthetic image data (4 classes) for cohort-train, in the sandbox.
  fs::path ImageData() {
    const fs::path data = sandbox_.root() / "data";
    fs::create_directories(data);
    train::testing::WriteDatasetFiles(train::testing::MakeSyntheticDataset(512, 1, 28),
                                      data.string(), "train", /*gzip=*/false);
    train::testing::WriteDatasetFiles(train::testing::MakeSyntheticDataset(128, 2, 28),
                                      data.string(), "t10k", /*gzip=*/false);
    return data;
  }

  // The manifest of a job of cohort-train workers (OnFailure, backoffLimit 3) writing under the
  // sandbox's <name>/, with `flags` after the common ones.
  fs::path TrainingJob(const std::string& name, int steps, double peer_timeout_s,
                       const std::vector<std::string>& flags = {}) {
    const fs::path out = sandbox_.root() / name;
    std::vector<std::string> all = {"--data_dir=" + data_.string(),
                                    "--epochs=1",
                                    "--steps_per_epoch=" + std::to_string(steps),
                                    "--per_worker_batch=8",
                                    "--seed=7",
                                    "--threads=1",
                                    "--startup_timeout_s=120",
                                    "--peer_timeout_s=" + std::to_string(peer_timeout_s),
                                    "--checkpoint_path=" + (out / "backup").string(),
                                    "--saved_model_path=" + (out / "model").string()};
    all.insert(all.end(), flags.begin(), flags.end());
    return Manifest(name, {{"Worker", 2, "OnFailure"}}, all);
  }

  struct Replicas {
    std::string type;
    int count;
    std::string restart_policy;
  };

  fs::path Manifest(const std::string& name, const std::vector<Replicas>& replicas,
                    const std::vector<std::string>& flags) {
    std::string args;
    for (const std::string& flag : flags) args += "                - \"" + flag + "\"\n";
    std::string manifest = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: " + name +
                           "\nspec:\n  runPolicy:\n    backoffLimit: 3\n  tfReplicaSpecs:\n";
    for (const Replicas& spec : replicas) {
      manifest += "    " + spec.type + ":\n      replicas: " + std::to_string(spec.count) +
                  "\n      restartPolicy: " + spec.restart_policy +
                  "\n      template:\n        spec:\n          containers:\n"
                  "            - name: tensorflow\n              image: cohort/trainer\n"
                  "              args:\n" +
                  args;
    }
    return sandbox_.WriteFile(name + ".yaml", manifest);
  }

  // Starts `cohort run` of `manifest` with every replica of `trainer` on its host.
  void StartJob(const fs::path& manifest, const fs::path& trainer) {
    log_ = manifest;
    log_.replace_extension(".log");
    job_name_ = manifest.stem().string();
    started_ = Clock::now();
    cohort_ = sandbox_.StartCohort({"run", manifest.string(), "--image",
                                    "cohort/trainer=" + kReplicaOnHost.string() + " " +
                                        hosts_file_.string() + " " + trainer.string()},
                                   log_);
  }

  // Waits at most `timeout` for `cohort run` to end; its exit code (-1: it did not end, and was
  // stopped).
  int WaitForJob(std::chrono::seconds timeout) {
    const int code = WaitForChildOrStop(cohort_, timeout);
    cohort_ = -1;
    finished_ = Clock::now();
    if (code == -1) {
      ADD_FAILURE() << "`cohort run` of job " << job_name_ << " did not end within "
                    << timeout.count() << " s; it was stopped";
    }
    return code;
  }

  std::string Output() const { return ReadText(log_); }

  // The chief's backup state file names ckpt-<n> or a later backup.
  bool BackedUp(const std::string& job, int n) const {
    const std::string state = ReadText(sandbox_.root() / job / "backup" / "chief" / "checkpoint");
    std::smatch match;
    return std::regex_search(state, match, std::regex("ckpt-([0-9]+)")) && std::stoi(match[1]) >= n;
  }
  int LatestBackup(const std::string& job) const {
    const std::string state = ReadText(sandbox_.root() / job / "backup" / "chief" / "checkpoint");
    std::smatch match;
    return std::regex_search(state, match, std::regex("ckpt-([0-9]+)")) ? std::stoi(match[1]) : 0;
  }

  // Cuts `replica`'s host off; a failure is fatal to the test.
  void CutOff(const std::string& replica) {
    const Status cut = cluster_->CutOff(host_of_.at(replica));
    ASSERT_TRUE(cut.ok()) << cut.ToString();
  }
  void Restore(const std::string& replica) {
    const Status restored = cluster_->Restore(host_of_.at(replica));
    ASSERT_TRUE(restored.ok()) << restored.ToString();
  }

  // When a replica's run ended, seen in the supervisor's output: seconds after the cut, and its
  // exit code.
  struct RunEnd {
    double seconds = -1;
    int exit_code = -1;
  };

  // Waits at most `timeout` until the supervisor has seen each of `replicas` of `job` exit.
  bool WaitForRunsToEnd(const std::string& job, const std::vector<std::string>& replicas,
                        Clock::time_point since, std::chrono::milliseconds timeout,
                        std::map<std::string, RunEnd>* ends) {
    const std::regex exited(job + "-([a-z]+-[0-9]+) exited with code ([0-9]+)");
    return WaitUntil(
        [&] {
          const std::string output = Output();
          for (std::sregex_iterator it(output.begin(), output.end(), exited), end; it != end;
               ++it) {
            RunEnd& run = (*ends)[(*it)[1]];
            if (run.seconds >= 0) continue;
            run.seconds = Seconds(Clock::now() - since);
            run.exit_code = std::stoi((*it)[2]);
          }
          for (const std::string& replica : replicas) {
            if ((*ends)[replica].seconds < 0) return false;
          }
          return true;
        },
        timeout, std::chrono::milliseconds(50));
  }

  // TCP segments retransmitted on `host` so far (/proc/net/snmp of its network namespace).
  long TcpRetransmissions(int host) {
    const CommandResult snmp = cluster_->Run(host, "cat /proc/net/snmp", std::chrono::seconds(20));
    std::istringstream lines(snmp.output);
    std::vector<std::string> names;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("Tcp: ", 0) != 0) continue;
      std::istringstream words(line.substr(5));
      std::vector<std::string> fields{std::istream_iterator<std::string>(words), {}};
      if (names.empty()) {
        names = fields;
        continue;
      }
      for (size_t i = 0; i < names.size() && i < fields.size(); ++i) {
        if (names[i] == "RetransSegs") return std::stol(fields[i]);
      }
    }
    ADD_FAILURE() << "no Tcp RetransSegs in /proc/net/snmp of host " << host << ": " << snmp.output;
    return -1;
  }

  void TearDown() override {
    if (cohort_ > 0) WaitForChildOrStop(cohort_, 1s);
  }

  CohortSandbox sandbox_;
  std::unique_ptr<EmulatedCluster> cluster_;
  std::map<std::string, int> host_of_;
  fs::path hosts_file_, data_, log_;
  std::string job_name_;
  pid_t cohort_ = -1;
  Clock::time_point started_, finished_;
};

// The number of steps the chief reports for epoch 1 (-1 when it reports none).
int EpochSteps(const std::string& output) {
  std::smatch match;
  if (!std::regex_search(output, match, std::regex("\\[worker-0\\] epoch 1/1: ([0-9]+) steps"))) {
    return -1;
  }
  return std::stoi(match[1]);
}

nlohmann::json ModelMetrics(const fs::path& model) {
  return nlohmann::json::parse(ReadText(model / "manifest.json"), nullptr, false)
      .value("metrics", nlohmann::json::object());
}

TEST_F(NetworkFaultTest, CutShorterThanThePeerTimeoutStallsTrainingWithoutARestart) {
  MakeHosts({"worker-0", "worker-1"});
  data_ = ImageData();
  StartJob(TrainingJob("brief-cut", 40, 10, {"--backup_every_steps=2"}), kCohortTrain);
  ASSERT_TRUE(WaitUntil([&] { return BackedUp("brief-cut", 2); }, 180s))
      << "no second backup (step 4) within 180 s:\n"
      << Output();

  const int before = LatestBackup("brief-cut");
  CutOff("worker-1");
  // The fault itself lasts 3 s, against a peer timeout of 10 s.
  std::this_thread::sleep_for(3s);
  const int during = LatestBackup("brief-cut");
  Restore("worker-1");
  // Every step all-reduces across the cut link: at most the step in flight finishes (one
  // backup every 2 steps), where an uncut link makes several steps in 3 s.
  EXPECT_LE(during, before + 1) << "training went on across the cut:\n" << Output();

  ASSERT_EQ(WaitForJob(300s), 0) << Output();
  const std::string output = Output();
  std::printf("brief cut: the job took %.1f s\n", Seconds(finished_ - started_));
  EXPECT_NE(output.find("job default/brief-cut Succeeded"), std::string::npos) << output;
  EXPECT_EQ(output.find("exiting with 138"), std::string::npos) << output;
  EXPECT_EQ(output.find("resuming from"), std::string::npos) << output;
  EXPECT_EQ(output.find("Restarting"), std::string::npos) << output;
  EXPECT_EQ(EpochSteps(output), 40) << output;
  EXPECT_TRUE(fs::exists(sandbox_.root() / "brief-cut" / "model" / "manifest.json")) << output;
}

TEST_F(NetworkFaultTest, CutLongerThanThePeerTimeoutRestartsTheJobFromItsBackup) {
  MakeHosts({"worker-0", "worker-1"});
  data_ = ImageData();
  constexpr double kPeerTimeout = 5;
  // How much later than the peer timeout a worker's run may end: the monitor notices silence
  // within a heartbeat interval (1 s), the supervisor stops an accused worker with SIGTERM, and
  // two busy cores may delay each by a few seconds more.
  constexpr double kDetectionBound = 10;
  StartJob(TrainingJob("long-cut", 20, kPeerTimeout, {"--backup_every_steps=2"}), kCohortTrain);
  ASSERT_TRUE(WaitUntil([&] { return BackedUp("long-cut", 2); }, 180s))
      << "no second backup (step 4) within 180 s:\n"
      << Output();

  const int backup_at_cut = LatestBackup("long-cut");
  CutOff("worker-1");
  const Clock::time_point cut_at = Clock::now();
  // Across a partition of two, each side sees the other go silent: the first to report it
  // exits 138 naming the other, and the supervisor stops the one it names (SIGTERM, 143) unless
  // it has given up by itself by then. Either way both runs end, and the job restarts both.
  std::map<std::string, RunEnd> ends;
  const bool both = WaitForRunsToEnd(
      "long-cut", {"worker-0", "worker-1"}, cut_at,
      std::chrono::seconds(static_cast<int>(kPeerTimeout + kDetectionBound)), &ends);
  Restore("worker-1");
  ASSERT_TRUE(both) << "the workers' runs did not both end within "
                    << kPeerTimeout + kDetectionBound << " s of the cut:\n"
                    << Output();
  for (const auto& [worker, end] : ends) {
    std::printf("long cut: %s ended (exit %d) %.1f s after the cut\n", worker.c_str(),
                end.exit_code, end.seconds);
    // Silence is counted from the last frame heard, up to a heartbeat interval (1 s) before the
    // cut, and the first report ends both runs.
    EXPECT_GE(end.seconds, kPeerTimeout - 2) << worker << " ended before the peer timeout:\n"
                                             << Output();
    EXPECT_TRUE(end.exit_code == 138 || end.exit_code == 143)
        << worker << " exited " << end.exit_code << ":\n"
        << Output();
  }
  // The reporter named the other side, as hung, and the job's restart says so.
  const std::string after_cut = Output();
  std::smatch report;
  ASSERT_TRUE(std::regex_search(
      after_cut, report,
      std::regex("restarting because worker-([01]) hung \\(no heartbeat for 5 s\\), as "
                 "worker-([01]) reported")))
      << Output();
  EXPECT_NE(report[1], report[2]) << Output();
  EXPECT_NE(Output().find("sent nothing, not even a heartbeat, for 5 s"), std::string::npos)
      << Output();

  ASSERT_EQ(WaitForJob(300s), 0) << Output();
  const std::string output = Output();
  std::printf("long cut: the job took %.1f s\n", Seconds(finished_ - started_));
  EXPECT_NE(output.find("job default/long-cut Succeeded"), std::string::npos) << output;
  EXPECT_NE(output.find("exiting with 138"), std::string::npos) << output;
  // Both restarted and resumed from the chief's backup at or after the one taken before the cut
  // (every 2 steps).
  std::smatch match;
  ASSERT_TRUE(
      std::regex_search(output, match, std::regex("resuming from epoch ([0-9]+) step ([0-9]+)")))
      << output;
  EXPECT_GE(std::stoi(match[2]), 2 * backup_at_cut) << output;
  EXPECT_TRUE(fs::exists(sandbox_.root() / "long-cut" / "model" / "manifest.json")) << output;
}

TEST_F(NetworkFaultTest, OnePercentLossOnEveryLinkTrainsTheSameModel) {
  MakeHosts({"worker-0", "worker-1"});
  data_ = ImageData();
  constexpr int kSteps = 20;
  StartJob(TrainingJob("clean", kSteps, 10), kCohortTrain);
  ASSERT_EQ(WaitForJob(300s), 0) << Output();
  const std::string clean_output = Output();
  const double clean_seconds = Seconds(finished_ - started_);

  const long clean_retransmissions = TcpRetransmissions(0) + TcpRetransmissions(1);
  for (int host = 0; host < cluster_->size(); ++host) {
    const Status lossy = cluster_->SetLoss(host, 0.01);
    ASSERT_TRUE(lossy.ok()) << lossy.ToString();
  }
  StartJob(TrainingJob("lossy", kSteps, 10), kCohortTrain);
  ASSERT_EQ(WaitForJob(600s), 0) << Output();
  const std::string lossy_output = Output();
  const double lossy_seconds = Seconds(finished_ - started_);
  const long lossy_retransmissions =
      TcpRetransmissions(0) + TcpRetransmissions(1) - clean_retransmissions;
  std::printf(
      "1%% loss: the job took %.1f s (%ld TCP segments retransmitted), %.1f s without loss "
      "(%ld)\n",
      lossy_seconds, lossy_retransmissions, clean_seconds, clean_retransmissions);
  // The loss was real: TCP had to resend what the links dropped.
  EXPECT_GT(lossy_retransmissions, 0);

  for (const std::string* output : {&clean_output, &lossy_output}) {
    EXPECT_EQ(EpochSteps(*output), kSteps) << *output;
    EXPECT_EQ(output->find("exiting with 138"), std::string::npos) << *output;
    EXPECT_EQ(output->find("Restarting"), std::string::npos) << *output;
  }
  const nlohmann::json clean = ModelMetrics(sandbox_.root() / "clean" / "model");
  const nlohmann::json lossy = ModelMetrics(sandbox_.root() / "lossy" / "model");
  ASSERT_TRUE(clean.contains("test_loss") && lossy.contains("test_loss"))
      << clean.dump() << " " << lossy.dump();
  const double loss = lossy["test_loss"].get<double>();
  EXPECT_TRUE(std::isfinite(loss)) << lossy.dump();
  // Lost packets are retransmitted by TCP: the same seed gives the same arithmetic in the same
  // order, so the models agree to float rounding (the bound leaves room for nothing more).
  EXPECT_NEAR(loss, clean["test_loss"].get<double>(), 1e-4) << clean.dump() << " " << lossy.dump();
  EXPECT_NEAR(lossy["test_accuracy"].get<double>(), clean["test_accuracy"].get<double>(), 1e-4)
      << clean.dump() << " " << lossy.dump();
}

TEST_F(NetworkFaultTest, ChiefCutOffWhileWritingABackupResumesFromThatBackup) {
  MakeHosts({"worker-0", "worker-1"});
  data_ = ImageData();
  StartJob(TrainingJob("backup-cut", 20, 5, {"--backup_every_steps=2"}), kCohortTrain);
  const fs::path chief_dir = sandbox_.root() / "backup-cut" / "backup" / "chief";
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(chief_dir); }, 180s))
      << "no backup directory " << chief_dir << " within 180 s:\n"
      << Output();
  const int watch = inotify_init1(IN_CLOEXEC);
  ASSERT_GE(watch, 0);
  ASSERT_GE(inotify_add_watch(watch, chief_dir.c_str(), IN_CREATE), 0);
  const pid_t chief = FindTrainerProcess("backup-cut", "worker", 0);
  ASSERT_GT(chief, 0) << Output();

  // A backup is written to a temporary file, then renamed (base/file.h). The moment one appears,
  // the chief is paused, and if the file is still there (the write is under way) its host is cut
  // off before the chief goes on: the rest of the write happens with the network down. Otherwise
  // the next backup is tried.
  std::string cut_while_writing;
  Clock::time_point cut_at;
  for (int attempt = 0; attempt < 8 && cut_while_writing.empty(); ++attempt) {
    std::string created;
    const bool seen = WaitUntil(
        [&] {
          alignas(inotify_event) char buffer[4096];
          pollfd ready{watch, POLLIN, 0};
          if (poll(&ready, 1, 0) <= 0) return false;
          const ssize_t got = read(watch, buffer, sizeof(buffer));
          for (ssize_t at = 0; at < got;) {
            const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
            const std::string name = event->len > 0 ? event->name : "";
            if (name.find(".tmp") != std::string::npos) created = name;
            at += sizeof(inotify_event) + event->len;
          }
          return !created.empty();
        },
        60s, 1ms);
    ASSERT_TRUE(seen) << "no backup started within 60 s (attempt " << attempt << "):\n" << Output();
    ASSERT_EQ(kill(chief, SIGSTOP), 0);
    if (fs::exists(chief_dir / created)) {
      CutOff("worker-0");
      cut_at = Clock::now();
      cut_while_writing = created;
    }
    ASSERT_EQ(kill(chief, SIGCONT), 0);
  }
  close(watch);
  ASSERT_FALSE(cut_while_writing.empty()) << "8 backups were written before the test could "
                                             "pause the chief:\n"
                                          << Output();
  std::smatch match;
  ASSERT_TRUE(std::regex_search(cut_while_writing, match, std::regex("ckpt-([0-9]+)")))
      << cut_while_writing;
  const std::string written = "ckpt-" + match[1].str() + ".pt";

  // The peer timeout is 5 s; both runs end within 15 s more (as in the test above).
  std::map<std::string, RunEnd> ends;
  const bool both = WaitForRunsToEnd("backup-cut", {"worker-0", "worker-1"}, cut_at, 20s, &ends);
  Restore("worker-0");
  ASSERT_TRUE(both) << "the workers' runs did not both end within 20 s of the cut:\n" << Output();
  // worker-1 noticed the silent chief and named it.
  EXPECT_NE(Output().find("restarting because worker-0 hung (no heartbeat for 5 s), as worker-1 "
                          "reported"),
            std::string::npos)
      << Output();

  ASSERT_EQ(WaitForJob(300s), 0) << Output();
  const std::string output = Output();
  std::printf("cut while writing %s: the job took %.1f s\n", cut_while_writing.c_str(),
              Seconds(finished_ - started_));
  EXPECT_NE(output.find("job default/backup-cut Succeeded"), std::string::npos) << output;
  // The backup being written at the cut was completed (the write is local) and is the one the
  // restarted chief loaded with BackupAndRestore's own loader.
  EXPECT_NE(output.find("BackupAndRestore: restored " + (chief_dir / written).string()),
            std::string::npos)
      << "expected a resume from " << written << ":\n"
      << output;
  EXPECT_TRUE(fs::exists(sandbox_.root() / "backup-cut" / "model" / "manifest.json")) << output;
}

// A parameter-server job of the taxi example (taxi-train): chief, one ps and one worker, each on
// its own host; the ps's host is cut off from the others once training is under way.
TEST_F(NetworkFaultTest, ParameterServerBehindAPartitionFailsItsClientsAndTheJobResumes) {
  MakeHosts({"chief-0", "ps-0", "worker-0"}, 1'000'000'000);
  const fs::path out = sandbox_.root() / "ps-cut";
  // A ps behind a partition answers nothing: a request waits --ps_request_timeout_s, then the
  // client retries for --ps_retry_timeout_s and fails naming the ps (src/ps/server_connection.h).
  constexpr int kRequestTimeout = 5, kRetryTimeout = 5;
  constexpr int kDetectionBound = 15;  // two busy cores, the supervisor noticing the exits
  const std::vector<std::string> flags = {
      "--data_dir=" + (sandbox_.root() / "taxi-data").string(),
      "--epochs=1",
      "--per_worker_batch=256",
      "--checkpoint_every_steps=100",
      "--ps_request_timeout_s=" + std::to_string(kRequestTimeout),
      "--ps_retry_timeout_s=" + std::to_string(kRetryTimeout),
      "--threads=1",
      "--checkpoint_path=" + (out / "checkpoints").string(),
      "--saved_model_path=" + (out / "model").string()};
  StartJob(Manifest("ps-cut",
                    {{"Chief", 1, "OnFailure"}, {"PS", 1, "OnFailure"}, {"Worker", 1, "OnFailure"}},
                    flags),
           kTaxiTrain);
  // BackupAndRestore(--checkpoint_path) keeps the servers' checkpoints in <dir>/ps.
  const fs::path checkpoints = out / "checkpoints" / "ps";
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::error_code error;
        for (const auto& entry : fs::directory_iterator(checkpoints, error)) {
          if (entry.path().extension() == ".manifest") return true;
        }
        return false;
      },
      300s, 50ms))
      << "no checkpoint in " << checkpoints << " within 300 s:\n"
      << Output();

  CutOff("ps-0");
  const Clock::time_point cut_at = Clock::now();
  std::map<std::string, RunEnd> ends;
  const bool ended = WaitForRunsToEnd(
      "ps-cut", {"chief-0", "worker-0"}, cut_at,
      std::chrono::seconds(kRequestTimeout + kRetryTimeout + kDetectionBound), &ends);
  Restore("ps-0");
  ASSERT_TRUE(ended) << "the chief's and the worker's runs did not both end within "
                     << kRequestTimeout + kRetryTimeout + kDetectionBound << " s of the cut:\n"
                     << Output();
  for (const std::string replica : {"chief-0", "worker-0"}) {
    const RunEnd& end = ends[replica];
    std::printf("ps cut: %s ended (exit %d) %.1f s after the cut\n", replica.c_str(), end.exit_code,
                end.seconds);
    EXPECT_EQ(end.exit_code, 138) << replica << ":\n" << Output();
    EXPECT_GE(end.seconds, kRequestTimeout - 1) << replica << ":\n" << Output();
    // It named the ps that went silent.
    EXPECT_TRUE(std::regex_search(
        Output(), std::regex("\\[" + replica + "\\] .*ps:0 \\(ps-0:[0-9]+\\) unreachable for 5 s")))
        << replica << ":\n"
        << Output();
  }
  EXPECT_EQ(ends.count("ps-0"), 0u) << "the ps itself is not at fault:\n" << Output();

  ASSERT_EQ(WaitForJob(600s), 0) << Output();
  const std::string output = Output();
  std::printf("ps cut: the job took %.1f s\n", Seconds(finished_ - started_));
  EXPECT_NE(output.find("job default/ps-cut Succeeded"), std::string::npos) << output;
  // The restarted tasks went on from where the servers were, not from the start.
  EXPECT_TRUE(std::regex_search(output, std::regex("worker:0 starts at global step [1-9]")))
      << output;
  std::smatch auc;
  ASSERT_TRUE(std::regex_search(output, auc, std::regex("\\[chief-0\\] auc ([0-9.]+)"))) << output;
  // One epoch reaches about 0.90 (the ceiling is 0.917), as in tests/e2e/ps_job_fault_test.cc.
  EXPECT_GE(std::stod(auc[1]), 0.88) << output;
}

}  // namespace
}  // namespace cohort::testing
