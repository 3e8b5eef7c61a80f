// cohort-train with every path in a bucket of a real S3 server (radosgw, the ctest fixture
// s3_server): --data_dir (put there by boto3), --checkpoint_path, --saved_model_path and
// --tensorboard_dir all s3://. The chief is
// SIGKILLed once its first backup is committed and restarted; it resumes from the bucket, and
// boto3, the independent client, then finds the saved model committed by its manifest (every file
// it lists there with the stated size and SHA-256) and the TensorBoard runs as closed event files
// that parse whole, the resumed run's with its SessionLog START. `--evaluate --model_path s3://`
// evaluates the model from the bucket, also a copy that boto3 wrote, and refuses one whose
// weights boto3 changed. A malformed URL in any path flag is refused before training, exit 2,
// naming the flag.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <vector>

#include "base/file.h"
#include "base/s3_client.h"
#include "base/s3_settings.h"
#include "testing/files.h"
#include "testing/host.h"
#include "testing/processes.h"
#include "testing/s3_server.h"
#include "testing/scratch_directory.h"
#include "testing/wait.h"
#include "view/training_scalars.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const fs::path kCohortTrain = fs::path(COHORT_BINARY_DIR) / "apps/cohort-train/cohort-train";
constexpr char kBucket[] = "cohort-test";

// A Python function for boto3 snippets: the records of a TFRecord file's bytes, each framed
// whole (length, its CRC, data, the data's CRC), or an assertion naming the object.
constexpr char kReadRecords[] =
    "import struct\n"
    "def records(key, data):\n"
    "    out, at = [], 0\n"
    "    while at < len(data):\n"
    "        assert at + 12 <= len(data), (key, 'cut header', at)\n"
    "        (n,) = struct.unpack('<Q', data[at:at + 8])\n"
    "        assert at + 16 + n <= len(data), (key, 'cut record', at)\n"
    "        out.append(data[at + 12:at + 12 + n])\n"
    "        at += 16 + n\n"
    "    return out\n";

class S3PathsTest : public ::testing::Test {
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
    prefix_ = "paths-" + std::to_string(::getpid());
  }

  std::string Url(const std::string& path) const {
    return "s3://" + std::string(kBucket) + "/" + prefix_ + "/" + path;
  }

  // Starts cohort-train alone with `arguments` and the server's settings in its environment,
  // output in `log`; with `summary_dir`, job control's COHORT_SUMMARY_DIR for it.
  pid_t Start(std::vector<std::string> arguments, const fs::path& log,
              const fs::path& summary_dir = {}) const {
    arguments.insert(arguments.begin(), kCohortTrain.string());
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      unsetenv("TF_CONFIG");
      unsetenv("COHORT_SUMMARY_DIR");
      if (!summary_dir.empty()) setenv("COHORT_SUMMARY_DIR", summary_dir.c_str(), 1);
      setenv("COHORT_JOB_SECRET", "s3 paths test", 1);
      for (const auto& [name, value] : server_) setenv(name.c_str(), value.c_str(), 1);
      std::vector<char*> argv;
      for (std::string& argument : arguments) argv.push_back(argument.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    return pid;
  }

  // Runs cohort-train to its end, bounded by the test's timeout; its exit status and output.
  std::pair<int, std::string> Run(const std::vector<std::string>& arguments, const fs::path& log,
                                  const fs::path& summary_dir = {}) const {
    const pid_t pid = Start(arguments, log, summary_dir);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
            testing::ReadText(log)};
  }

  std::string Boto3(const std::string& snippet) { return testing::RunBoto3(server_, snippet); }

  std::map<std::string, std::string> server_;
  std::string prefix_;
};

TEST_F(S3PathsTest, TheFlagshipTrainsWithEveryPathInTheBucketSurvivesAKillAndEvaluatesFromIt) {
  StatusOr<S3Settings> settings =
      ResolveS3Settings("s3", [this](const std::string& name) -> std::optional<std::string> {
        const auto found = server_.find(name);
        if (found == server_.end()) return std::nullopt;
        return found->second;
      });
  ASSERT_TRUE(settings.ok()) << settings.status().message();
  const S3Client client(*settings);
  testing::ScratchDirectory scratch("s3-paths");
  // The data set too, put in the bucket by boto3.
  const std::string data = "/usr/share/datasets/fashion-mnist";
  ASSERT_TRUE(fs::exists(data)) << data << " (apt-get install dataset-fashion-mnist)";
  Boto3("import os\nfor name in os.listdir('" + data + "'):\n    s3.upload_file('" + data +
        "/' + name, '" + kBucket + "', '" + prefix_ + "/data/fashion-mnist/' + name)\n");
  const std::vector<std::string> arguments = {"--data_dir=" + Url("data/fashion-mnist"),
                                              "--epochs=2",
                                              "--steps_per_epoch=4",
                                              "--per_worker_batch=16",
                                              "--threads=1",
                                              "--backup_every_steps=1",
                                              "--tensorboard_update_steps=1",
                                              "--tensorboard_upload_s=1",
                                              "--checkpoint_path=" + Url("backup"),
                                              "--saved_model_path=" + Url("saved_model"),
                                              "--tensorboard_dir=" + Url("logs")};

  // The first run dies, SIGKILLed, once its first backup is committed in the bucket.
  // As job control runs a replica: its summaries directory, where the dashboard looks.
  const fs::path summaries = scratch.path() / "summaries";
  const fs::path replica_summaries = summaries / "worker-0";
  const pid_t first = Start(arguments, scratch.path() / "first.log", replica_summaries);
  const ObjectUrl manifest{"s3", kBucket, prefix_ + "/backup/chief/ckpt-1.manifest.json"};
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

  const auto [code, log] = Run(arguments, scratch.path() / "second.log", replica_summaries);
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("BackupAndRestore: restored"), std::string::npos) << log;
  EXPECT_NE(log.find("saved model: " + Url("saved_model")), std::string::npos) << log;

  // The saved model: its manifest lists every file, each there whole with its SHA-256.
  EXPECT_EQ(Boto3("prefix = '" + prefix_ + "/saved_model/'\n" +
                  "m = json.loads(s3.get_object(Bucket='" + kBucket +
                  "', Key=prefix + 'manifest.json')['Body'].read())\n"
                  "assert m['files'], m\n"
                  "for f in m['files']:\n"
                  "    body = s3.get_object(Bucket='" +
                  kBucket +
                  "', Key=prefix + f['file'])['Body'].read()\n"
                  "    assert len(body) == f['size'], f\n"
                  "    assert hashlib.sha256(body).hexdigest() == f['sha256'], f\n"
                  "print('model', m['model'], len(m['files']))\n"),
            "model cnn 1\n");

  // TensorBoard: closed event files that parse whole, in both runs; the restarted chief's
  // marks its resume with SessionLog START (Event field 7 holding status 1).
  const std::string runs =
      Boto3(std::string(kReadRecords) + "for run in ['train', 'validation']:\n" +
            "    keys = sorted(o['Key'] for o in s3.list_objects_v2(Bucket='" + kBucket +
            "', Prefix='" + prefix_ +
            "/logs/' + run + '/').get('Contents', []))\n"
            "    assert keys and all('tfevents' in k for k in keys), keys\n"
            "    recs = []\n"
            "    for k in keys:\n"
            "        r = records(k, s3.get_object(Bucket='" +
            kBucket +
            "', Key=k)['Body'].read())\n"
            "        assert b'brain.Event:2' in r[0], k\n"
            "        recs += r\n"
            "    starts = sum(1 for r in recs if b'\\x3a\\x02\\x08\\x01' in r)\n"
            "    losses = sum(1 for r in recs if b'epoch_loss' in r)\n"
            "    print(run, starts >= 1, losses >= 1)\n");
  EXPECT_EQ(runs, "train True True\nvalidation True True\n");

  // The dashboard's read of the job's curves (what `cohort ui` serves) finds the runs in the
  // bucket through the replica's <run>.url files, and reads their closed event files.
  for (const auto& [name, value] : server_) ::setenv(name.c_str(), value.c_str(), 1);
  EXPECT_EQ(testing::ReadText(replica_summaries / "train.url"), Url("logs") + "/train\n");
  std::vector<std::string> notes;
  view::ScalarQuery epoch_loss;
  epoch_loss.tag = "epoch_loss";
  StatusOr<std::vector<view::ScalarSeries>> curves =
      view::ReadScalarsIn(summaries, epoch_loss, nullptr, &notes);
  ASSERT_TRUE(curves.ok()) << curves.status().message();
  std::map<std::string, size_t> points;
  for (const view::ScalarSeries& series : *curves) {
    points[series.replica + "/" + series.run] = series.points.size();
  }
  EXPECT_EQ(points.size(), 2u) << ::testing::PrintToString(notes);
  // Two epochs; the second run resumed within the first, so both epoch ends are its.
  EXPECT_EQ(points["worker-0/train"], 2u) << ::testing::PrintToString(notes);
  EXPECT_EQ(points["worker-0/validation"], 2u) << ::testing::PrintToString(notes);

  // The backup is gone, leaving the completion marker.
  EXPECT_EQ(
      Boto3("keys = sorted(o['Key'] for o in s3.list_objects_v2(Bucket='" + std::string(kBucket) +
            "', Prefix='" + prefix_ + "/backup/').get('Contents', []))\nprint(keys)\n"),
      "['" + prefix_ + "/backup/training_complete']\n");

  // --evaluate from the bucket.
  const auto [evaluated, evaluation] =
      Run({"--evaluate", "--threads=1", "--model_path=" + Url("saved_model")},
          scratch.path() / "evaluate.log");
  EXPECT_EQ(evaluated, 0) << evaluation;
  EXPECT_NE(evaluation.find("test accuracy"), std::string::npos) << evaluation;

  // A copy boto3 wrote (weights first, manifest last) evaluates the same; one whose weights
  // boto3 changed is refused, naming the object.
  Boto3("src = '" + prefix_ + "/saved_model/'\n" + "for dst, flip in [('" + prefix_ +
        "/copy/', False), ('" + prefix_ +
        "/flipped/', True)]:\n"
        "    for name in ['weights.pt', 'manifest.json']:\n"
        "        body = s3.get_object(Bucket='" +
        kBucket +
        "', Key=src + name)['Body'].read()\n"
        "        if flip and name == 'weights.pt':\n"
        "            body = body[:-1] + bytes([body[-1] ^ 1])\n"
        "        s3.put_object(Bucket='" +
        kBucket + "', Key=dst + name, Body=body)\n");
  const auto [copied, copy_log] = Run({"--evaluate", "--threads=1", "--model_path=" + Url("copy")},
                                      scratch.path() / "copy.log");
  EXPECT_EQ(copied, 0) << copy_log;
  const size_t accuracy_at = evaluation.find("test accuracy");
  ASSERT_NE(accuracy_at, std::string::npos);
  EXPECT_NE(copy_log.find(evaluation.substr(accuracy_at)), std::string::npos) << evaluation << "\n"
                                                                              << copy_log;
  const auto [flipped, flipped_log] = Run(
      {"--evaluate", "--threads=1", "--model_path=" + Url("flipped")}, scratch.path() / "flip.log");
  EXPECT_NE(flipped, 0) << flipped_log;
  EXPECT_NE(flipped_log.find(Url("flipped") + "/weights.pt: checksum mismatch"), std::string::npos)
      << flipped_log;
}

TEST_F(S3PathsTest, AMalformedUrlInAnyPathFlagIsRefusedBeforeTrainingNamingTheFlag) {
  testing::ScratchDirectory scratch("s3-paths-bad");
  for (const std::string flag :
       {"--checkpoint_path", "--saved_model_path", "--tensorboard_dir", "--model_path"}) {
    std::vector<std::string> arguments = {flag + "=s3://Bad_Bucket/x", "--epochs=1"};
    if (flag == "--model_path") arguments = {"--evaluate", flag + "=s3://Bad_Bucket/x"};
    const auto [code, log] = Run(arguments, scratch.path() / "bad.log");
    EXPECT_EQ(code, 2) << flag << "\n" << log;
    EXPECT_NE(log.find(flag), std::string::npos) << log;
    EXPECT_NE(log.find("Bad_Bucket"), std::string::npos) << log;
    EXPECT_EQ(log.find("epoch"), std::string::npos) << "trained before refusing " << flag << log;
  }
}

}  // namespace
}  // namespace cohort
