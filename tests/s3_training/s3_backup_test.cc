// cohort-train with --checkpoint_path on a real S3 server (radosgw, the ctest fixture s3_server):
// the chief is SIGKILLed once its first backup is committed in the bucket; at that moment an
// independent client (boto3) sees every listed checkpoint whole, with the size its manifest
// states; the restarted task restores from the bucket and finishes; and the bucket is left with
// the completion marker and no backup objects.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>

#include "base/file.h"
#include "base/s3_client.h"
#include "base/s3_settings.h"
#include "testing/files.h"
#include "testing/host.h"
#include "testing/processes.h"
#include "testing/s3_server.h"
#include "testing/scratch_directory.h"
#include "testing/wait.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const fs::path kCohortTrain = fs::path(COHORT_BINARY_DIR) / "apps/cohort-train/cohort-train";
constexpr char kBucket[] = "cohort-test";

class S3BackupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<std::map<std::string, std::string>> server = testing::S3ServerEnvironment();
    if (!server) {
      COHORT_SKIP_OR_FAIL_IN_CI(
          "COHORT_S3_SERVER_DIR names no running S3 server: run this test through ctest, whose "
          "fixture s3_server starts one (scripts/s3-server.sh)");
    }
    server_ = *server;
    ASSERT_TRUE(fs::exists(kCohortTrain)) << kCohortTrain;
    prefix_ = "train-" + std::to_string(::getpid()) + "/backup";
  }

  // Starts cohort-train alone with the server's settings in its environment, output in `log`.
  pid_t Start(const fs::path& log) const {
    std::vector<std::string> arguments = {
        kCohortTrain.string(),
        "--epochs=2",
        "--steps_per_epoch=4",
        "--per_worker_batch=16",
        "--threads=1",
        "--backup_every_steps=1",
        "--checkpoint_path=s3://" + std::string(kBucket) + "/" + prefix_};
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      unsetenv("TF_CONFIG");
      setenv("COHORT_JOB_SECRET", "s3 backup test", 1);
      for (const auto& [name, value] : server_) setenv(name.c_str(), value.c_str(), 1);
      std::vector<char*> argv;
      for (std::string& argument : arguments) argv.push_back(argument.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    return pid;
  }

  // boto3, the independent client, on the fixture's server; its standard output.
  std::string Boto3(const std::string& snippet) { return testing::RunBoto3(server_, snippet); }

  std::map<std::string, std::string> server_;
  std::string prefix_;
};

TEST_F(S3BackupTest, AKilledChiefResumesFromTheBucketAndLeavesNothingPartial) {
  StatusOr<S3Settings> settings =
      ResolveS3Settings("s3", [this](const std::string& name) -> std::optional<std::string> {
        const auto found = server_.find(name);
        if (found == server_.end()) return std::nullopt;
        return found->second;
      });
  ASSERT_TRUE(settings.ok()) << settings.status().message();
  const S3Client client(*settings);
  testing::ScratchDirectory scratch("s3-backup");

  const pid_t first = Start(scratch.path() / "first.log");
  const ObjectUrl manifest{"s3", kBucket, prefix_ + "/chief/ckpt-1.manifest.json"};
  const bool committed = testing::WaitUntil(
      [&] {
        StatusOr<std::optional<uint64_t>> size = client.HeadObject(manifest);
        return size.ok() && size->has_value();
      },
      120s, 50ms);
  ::kill(first, SIGKILL);
  int status = 0;
  ::waitpid(first, &status, 0);
  ASSERT_TRUE(committed) << "no ckpt-1 manifest in the bucket within 120 s; log:\n"
                         << testing::ReadText(scratch.path() / "first.log");

  // Whatever instant the kill hit, every manifest in the bucket lists files that are there whole.
  const std::string whole =
      Boto3("prefix = '" + prefix_ +
            "/chief/'\n"
            "keys = {o['Key']: o['Size'] for o in s3.list_objects_v2(Bucket='" +
            kBucket +
            "', Prefix=prefix).get('Contents', [])}\n"
            "manifests = [k for k in keys if k.endswith('.manifest.json')]\n"
            "assert manifests, keys\n"
            "for k in manifests:\n"
            "    m = json.loads(s3.get_object(Bucket='" +
            kBucket +
            "', Key=k)['Body'].read())\n"
            "    for f in m['files']:\n"
            "        assert keys.get(prefix + f['file']) == f['size'], (k, f, keys)\n"
            "print('whole', len(manifests))\n");
  EXPECT_EQ(whole.rfind("whole ", 0), 0u) << whole;

  const pid_t second = Start(scratch.path() / "second.log");
  ::waitpid(second, &status, 0);
  const std::string log = testing::ReadText(scratch.path() / "second.log");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log;
  EXPECT_NE(log.find("BackupAndRestore: fetched"), std::string::npos) << log;
  EXPECT_NE(log.find("BackupAndRestore: restored"), std::string::npos) << log;
  EXPECT_NE(log.find("test accuracy"), std::string::npos) << log;

  EXPECT_EQ(
      Boto3("keys = sorted(o['Key'] for o in s3.list_objects_v2(Bucket='" + std::string(kBucket) +
            "', Prefix='" + prefix_ + "/').get('Contents', []))\nprint(keys)\n"),
      "['" + prefix_ + "/training_complete']\n");
}

}  // namespace
}  // namespace cohort
