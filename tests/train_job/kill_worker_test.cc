// The fault-tolerance scenario end to end: a 3-worker TFJob of cohort-train under the real `cohort`
// supervisor; one worker is SIGKILLed mid-epoch; the survivors notice through the collectives and
// exit with the retryable code; OnFailure restarts them; all resume from the chief's backup; the
// job Succeeds with the accuracy of an uninterrupted run of the same seed. About 80 s on 2 cores;
// ./run-tests.sh runs it every time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

const fs::path kCohort = fs::path(COHORT_BINARY_DIR) / "apps/cohort/cohort";
const fs::path kCohortTrain = fs::path(COHORT_BINARY_DIR) / "apps/cohort-train/cohort-train";

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class KillWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("cohort-kill-worker-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "home");
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root_);
  }

  // A 3-worker job of cohort-train writing under root_/<name>/.
  fs::path WriteManifest(const std::string& name) {
    const fs::path out = root_ / name;
    std::string args;
    for (const std::string& flag :
         std::vector<std::string>{"--epochs=3", "--steps_per_epoch=100", "--per_worker_batch=64",
                                  "--seed=7", "--threads=1", "--backup_every_steps=25",
                                  "--checkpoint_path=" + (out / "backup").string(),
                                  "--saved_model_path=" + (out / "model").string()}) {
      args += "                - \"" + flag + "\"\n";
    }
    const std::string manifest =
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: " + name +
        "\nspec:\n  runPolicy:\n    backoffLimit: 6\n  tfReplicaSpecs:\n    Worker:\n"
        "      replicas: 3\n      restartPolicy: OnFailure\n      template:\n        spec:\n"
        "          containers:\n            - name: tensorflow\n              image: cohort/train\n"
        "              args:\n" +
        args;
    const fs::path path = root_ / (name + ".yaml");
    std::ofstream(path) << manifest;
    return path;
  }

  // Starts `cohort ARGS` with output to `log`.
  pid_t StartCohort(const std::vector<std::string>& arguments, const fs::path& log) {
    std::vector<std::string> argv_storage = {kCohort.string()};
    argv_storage.insert(argv_storage.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (auto& argument : argv_storage) argv.push_back(argument.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_storage = {"COHORT_HOME=" + (root_ / "home").string()};
    for (char** entry = environ; *entry != nullptr; ++entry) {
      if (std::string(*entry).rfind("COHORT_HOME=", 0) != 0) env_storage.push_back(*entry);
    }
    std::vector<char*> envp;
    for (auto& variable : env_storage) envp.push_back(variable.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid = -1;
    EXPECT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    return pid;
  }

  int Wait(pid_t pid, seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    return -1;
  }

  int RunJob(const std::string& name, const fs::path& log) {
    pid_t pid = StartCohort(
        {"run", WriteManifest(name).string(), "--image", "cohort/train=" + kCohortTrain.string()},
        log);
    return Wait(pid, seconds(600));
  }

  double TestAccuracy(const std::string& name) {
    const std::string text = ReadText(root_ / name / "model" / "manifest.json");
    return nlohmann::json::parse(text).at("metrics").at("test_accuracy").get<double>();
  }

  fs::path root_;
};

// The pid of the cohort-train process of `job`'s worker `index`, found by the environment the
// supervisor gave it; -1 if none runs.
pid_t FindWorker(const std::string& job, int index) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code error;
    if (fs::read_symlink(entry.path() / "exe", error).filename() != "cohort-train") continue;
    std::string environment = ReadText(entry.path() / "environ");
    std::replace(environment.begin(), environment.end(), '\0', '\n');
    environment = "\n" + environment;
    if (environment.find("\nCOHORT_JOB_NAME=" + job + "\n") != std::string::npos &&
        environment.find("\nCOHORT_REPLICA_INDEX=" + std::to_string(index) + "\n") !=
            std::string::npos) {
      return std::stoi(name);
    }
  }
  return -1;
}

TEST_F(KillWorkerTest, JobSurvivesAKilledWorkerAndMatchesAnUninterruptedRun) {
  ASSERT_TRUE(fs::exists(kCohortTrain)) << kCohortTrain;
  ASSERT_EQ(RunJob("reference", root_ / "reference.log"), 0) << ReadText(root_ / "reference.log");
  const double reference = TestAccuracy("reference");

  const fs::path log = root_ / "killed.log";
  pid_t cohort = StartCohort(
      {"run", WriteManifest("killed").string(), "--image", "cohort/train=" + kCohortTrain.string()},
      log);
  // Wait for the chief's second step backup (global step 50 of 100 in epoch 1), then strike.
  const fs::path state = root_ / "killed" / "backup" / "chief" / "checkpoint";
  const auto deadline = std::chrono::steady_clock::now() + seconds(300);
  while (ReadText(state).find("ckpt-2") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(ReadText(state).find("ckpt-2"), std::string::npos) << ReadText(log);
  const pid_t victim = FindWorker("killed", 1);
  ASSERT_GT(victim, 0) << ReadText(log);
  ASSERT_EQ(::kill(victim, SIGKILL), 0);

  ASSERT_EQ(Wait(cohort, seconds(600)), 0) << ReadText(log);
  const std::string output = ReadText(log);
  EXPECT_NE(output.find("Succeeded"), std::string::npos) << output;
  // The survivors named the dead worker and asked to be restarted.
  EXPECT_NE(output.find("worker:1"), std::string::npos) << output;
  EXPECT_NE(output.find("exiting with 138"), std::string::npos) << output;
  // Everyone resumed from the backup, and said where.
  std::smatch match;
  ASSERT_TRUE(
      std::regex_search(output, match, std::regex("resuming from epoch ([0-9]+) step ([0-9]+)")))
      << output;
  EXPECT_EQ(match[1], "1") << "killed during the first epoch";
  EXPECT_GE(std::stoi(match[2]), 50);
  EXPECT_NEAR(TestAccuracy("killed"), reference, 0.01);
}

}  // namespace
