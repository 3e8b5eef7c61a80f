// End-to-end tests of the bounds on what `cohort validate` reads and accepts (issue 17's probes):
// input streams that never end, a replica count whose TF_CONFIG no process could start with, and
// storage URLs that a local run cannot reach.
#include <errno.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "testing/cohort_runner.h"

namespace cohort::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr const char* kTooLarge = ": the file is larger than 4 MiB; a job spec is a few kilobytes";

TEST(InputBounds, ValidateStopsReadingADeviceThatNeverEnds) {
  CohortSandbox sandbox;
  const auto started = std::chrono::steady_clock::now();
  CommandResult result = sandbox.Cohort({"validate", "/dev/zero"}, 60s);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr(std::string("/dev/zero") + kTooLarge));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s);
}

// `cohort validate <(yes "a: b")`: a pipe that never ends.
TEST(InputBounds, ValidateStopsReadingAPipeThatNeverEnds) {
  CohortSandbox sandbox;
  const std::string fifo = (sandbox.root() / "endless.yaml").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << fifo;
  signal(SIGPIPE, SIG_IGN);  // the writer learns that the reader left from EPIPE
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    // Opening for writing blocks until a reader opens, so poll with O_NONBLOCK instead, giving
    // up if cohort never opens the FIFO.
    int fd = -1;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (fd < 0 && !stop && std::chrono::steady_clock::now() < deadline) {
      fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) std::this_thread::sleep_for(10ms);
    }
    if (fd < 0) return;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    std::string lines;
    for (int i = 0; i < 4096; ++i) lines += "a: b\n";
    while (!stop) {
      ssize_t written = write(fd, lines.data(), lines.size());
      if (written < 0 && errno != EINTR) break;
    }
    close(fd);
  });
  CommandResult result = sandbox.Cohort({"validate", fifo}, 60s);
  stop = true;
  writer.join();
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr(fifo + kTooLarge));
}

// `yes "a: b" | cohort validate -`: standard input that never ends.
TEST(InputBounds, ValidateStopsReadingStandardInputThatNeverEnds) {
  CohortSandbox sandbox;
  const std::string command =
      "cd " + sandbox.root().string() +
      " && yes 'a: b' 2>/dev/null | COHORT_HOME=" + sandbox.home().string() + " timeout 60 " +
      COHORT_BINARY_DIR + "/apps/cohort/cohort validate -";
  CommandResult result = RunCommand(command);
  EXPECT_EQ(result.exit_code, 2) << result.output;  // 124 would be timeout's
  EXPECT_THAT(result.output, HasSubstr(std::string("<stdin>") + kTooLarge));
}

TEST(InputBounds, ValidateRefusesMoreReplicasThanTfConfigCanList) {
  CohortSandbox sandbox;
  const std::string path =
      sandbox.WriteFile("wide.yaml", Manifest("wide", ReplicaSpec("Worker", 10000, "Never")))
          .string();
  CommandResult result = sandbox.Cohort({"validate", path});
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("wide.yaml:8:17: spec.tfReplicaSpecs.Worker.replicas: 10000 replicas make "
                        "TF_CONFIG too long to start a process"));
  EXPECT_THAT(result.output, HasSubstr("over the 131072 bytes Linux allows one environment string "
                                       "(MAX_ARG_STRLEN); at most "));
}

TEST(InputBounds, ValidateWarnsAboutStorageUrlsInArgs) {
  CohortSandbox sandbox;
  std::string replica = ReplicaSpec("Worker", 2, "Never");
  const std::string command_line = "              command: [";
  replica.replace(replica.find(command_line), command_line.size(),
                  "              args: [--saved_model_path=gs://bucket/saved_model_dir,"
                  " --checkpoint_path=gs://bucket/checkpoints]\n" +
                      command_line);
  const std::string path = sandbox.WriteFile("lab.yaml", Manifest("lab", replica)).string();
  CommandResult result = sandbox.Cohort({"validate", path});
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("cohort: warning: " + path +
                        ":16:22: spec.tfReplicaSpecs.Worker.template.spec.containers[0].args[0]: "
                        "a URL: a local run has no gs:// storage; the program gets the text as it "
                        "is, and one that takes it for a file name writes under ./gs:/ in its "
                        "working directory; use a path mounted on this machine instead (also in "
                        "1 other place)"));
}

}  // namespace
}  // namespace cohort::testing
