// Network faults on emulated hosts (issue 18): whole TFJobs under the real `cohort` supervisor,
// each replica on an emulated host of its own (tests/testing/emulated_cluster.h, entered through
// replica_on_host), with the hosts' links cut off or made lossy while the job trains:
//   - a cut shorter than the peer timeout: training stalls, then carries on; nothing restarts;
//   - a cut longer than the peer timeout: both workers give up within the timeout (plus a stated
//     bound) naming the silent one, the job restarts per its policy and resumes from the backup;
//   - a parameter server behind a partition: the training tasks fail naming it, the job
//     restarts them and continues where the servers are;
//   - 1% packet loss on every link: the same model as without loss, no false failure;
//   - the chief's host cut off while it writes a backup: that backup is whole and the job
//     resumes from it.
// The links are shaped to 100 Mbit/s, so that each step's all-reduce of the CNN's 4.8 MB of
// gradients takes a visible part of a second; cut-off and loss are nftables drop rules on each
// host's link (the kernel has no netem, so no delay is added: a cut is total silence).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
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
      if (RunningInCi()) FAIL() << "emulated hosts need what this machine lacks: " << missing;
      GTEST_SKIP() << "emulated hosts need what this machine lacks: " << missing;
    }
  }

  // Emulated hosts, one per replica of `replicas` ("worker-0", ...), each also called by the
  // replica's name; writes the hosts file replica_on_host reads.
  void MakeHosts(const std::vector<std::string>& replicas) {
    EmulatedClusterOptions options;
    options.hosts = static_cast<int>(replicas.size());
    options.rate_bits_per_second = kLinkRate;
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

  // What the supervisor's termination-message file of `replica` holds now.
  std::string TerminationMessage(const std::string& replica) const {
    return ReadText(sandbox_.home() / "jobs" / "default" / job_name_ / "termination" /
                    (replica + ".termination-log"));
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

}  // namespace
}  // namespace cohort::testing
