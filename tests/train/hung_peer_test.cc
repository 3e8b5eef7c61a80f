// A hung cohort-train worker (SIGSTOP: alive, holding its connections open, silent) is declared
// dead by its peer once --peer_timeout_s has passed: the peer exits with the retryable code 138,
// naming the silent worker, so that the supervisor restarts the job instead of waiting forever.
// Two real cohort-train processes on loopback, a MultiWorkerMirrored job of two workers.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "testing/files.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"
#include "testing/wait.h"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const fs::path kCohortTrain = fs::path(COHORT_BINARY_DIR) / "apps/cohort-train/cohort-train";
constexpr int kRetryableExit = 138;
constexpr int kPeerTimeoutSeconds = 3;  // the least cohort-train accepts

// A loopback port that nothing listens on now (the kernel's choice of a free ephemeral port).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ADD_FAILURE() << "no free loopback port";
  }
  close(fd);
  return ntohs(address.sin_port);
}

// Starts cohort-train as worker `index` of the cluster `workers`, its output in `log`, and
// `termination_message` as the file COHORT_TERMINATION_MESSAGE_PATH names.
pid_t StartWorker(const std::vector<std::string>& workers, int index,
                  const std::vector<std::string>& flags, const fs::path& log,
                  const fs::path& termination_message) {
  std::string cluster;
  for (const std::string& endpoint : workers) {
    cluster += (cluster.empty() ? "\"" : ",\"") + endpoint + "\"";
  }
  const std::string tf_config =
      "TF_CONFIG={\"cluster\":{\"worker\":[" + cluster +
      "]},\"task\":{\"type\":\"worker\",\"index\":" + std::to_string(index) + "}}";
  std::vector<std::string> arguments = {kCohortTrain.string()};
  arguments.insert(arguments.end(), flags.begin(), flags.end());
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    putenv(const_cast<char*>(tf_config.c_str()));
    setenv("COHORT_JOB_SECRET", "hung peer test", 1);
    setenv("COHORT_TERMINATION_MESSAGE_PATH", termination_message.c_str(), 1);
    std::vector<char*> argv;
    for (std::string& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

TEST(HungPeer, AStoppedWorkerIsDeclaredDeadAfterThePeerTimeout) {
  ASSERT_TRUE(fs::exists(kCohortTrain)) << kCohortTrain;
  cohort::testing::ScratchDirectory scratch("cohort-hung-peer");
  const fs::path backup = scratch.path() / "backup";
  const std::vector<std::string> workers = {"127.0.0.1:" + std::to_string(FreePort()),
                                            "127.0.0.1:" + std::to_string(FreePort())};
  // Far more steps than the test lets run; the chief's first backup, at step 5, says that
  // training is under way.
  const std::vector<std::string> flags = {"--epochs=1",
                                          "--steps_per_epoch=100000",
                                          "--per_worker_batch=8",
                                          "--threads=1",
                                          "--startup_timeout_s=60",
                                          "--peer_timeout_s=" + std::to_string(kPeerTimeoutSeconds),
                                          "--backup_every_steps=5",
                                          "--checkpoint_path=" + backup.string()};
  const fs::path log0 = scratch.path() / "worker-0.log", log1 = scratch.path() / "worker-1.log";
  const fs::path message0 = scratch.path() / "worker-0.termination-log";
  const pid_t worker0 = StartWorker(workers, 0, flags, log0, message0);
  const pid_t worker1 = StartWorker(workers, 1, flags, log1, scratch.path() / "worker-1.message");
  // Whatever happens below, neither worker outlives the test.
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reap0{worker0}, reap1{worker1};

  ASSERT_TRUE(cohort::testing::WaitForFile(backup / "chief" / "checkpoint", 180s))
      << "training did not get under way\nworker 0:\n"
      << cohort::testing::ReadText(log0) << "worker 1:\n"
      << cohort::testing::ReadText(log1);
  ASSERT_EQ(kill(worker1, SIGSTOP), 0);
  const auto stopped_at = std::chrono::steady_clock::now();

  const int exit_code = cohort::testing::WaitForChild(worker0, 60s);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count();
  const std::string log = cohort::testing::ReadText(log0);
  RecordProperty("seconds_until_declared_dead", std::to_string(waited));
  EXPECT_EQ(exit_code, kRetryableExit) << log;
  // Named, and declared dead for its silence (not for a closed connection: it is alive).
  EXPECT_NE(log.find("worker:1 (" + workers[1] + ") sent nothing, not even a heartbeat"),
            std::string::npos)
      << log;
  // Not before the peer fell silent for the timeout (less the last heartbeat's age, at most the
  // 1 s heartbeat interval), and within it plus scheduling slack on a busy machine.
  EXPECT_GT(waited, kPeerTimeoutSeconds - 1.5) << log;
  EXPECT_LT(waited, kPeerTimeoutSeconds + 10.0) << log;
  // And it told job control which peer to stop, in the form of cluster/peer_report.h.
  EXPECT_EQ(cohort::testing::ReadText(message0),
            "peer worker:1 hung (no heartbeat for " + std::to_string(kPeerTimeoutSeconds) + " s)");
}

}  // namespace
}  // namespace cohort::train
