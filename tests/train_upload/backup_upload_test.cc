// BackupAndRestore's uploads to object storage run beside training (upload_queue.h). The bucket
// here is a Storage that keeps its objects in a local directory and can hold one upload back
// until the test lets it go, so that "a step is not blocked by a slow upload" is checked by the
// order of events, not by timing: training must pass later steps while the upload is held.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "base/file.h"
#include "base/storage.h"
#include "testing/scratch_directory.h"
#include "testing/wait.h"
#include "train/backup_and_restore.h"
#include "train/checkpoint_state.h"
#include "train/test_support.h"
#include "train/upload_queue.h"
#include "train/worker_dirs.h"

namespace cohort::train {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::MakeTrainer;
using testing::SmallData;
using testing::SmallRun;

// A bucket in a local directory: "s3://bucket/key" is <root>/bucket/key. Writes whose file name is
// `held_file` wait until Release(); writes whose file name is `failing_file` fail. Every write and
// removal is logged ("put ckpt-1.pt", "remove ckpt-1.manifest.json"), in order.
class HeldBucket : public Storage {
 public:
  HeldBucket(fs::path root, std::string held_file, std::string failing_file = "")
      : root_(std::move(root)),
        held_file_(std::move(held_file)),
        failing_file_(std::move(failing_file)),
        local_(MakeLocalStorage()) {}

  // Lets the held write (and any later one of that name) go on.
  void Release() {
    std::lock_guard<std::mutex> lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }
  // Whether a write of the held file is waiting for Release() now.
  bool Holding() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return holding_;
  }
  std::vector<std::string> Log() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return log_;
  }
  fs::path Local(const std::string& url) const {
    EXPECT_TRUE(url.starts_with("s3://")) << url;
    return root_ / url.substr(5);
  }

  StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) override {
    return local_->ReadFile(Local(path), max_bytes);
  }
  StatusOr<std::string> ReadFileRange(const std::string& path, uint64_t offset,
                                      size_t max_bytes) override {
    return local_->ReadFileRange(Local(path), offset, max_bytes);
  }
  Status WriteFileAtomically(const std::string& path, std::string_view contents) override {
    const std::string name = fs::path(path).filename().string();
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (name == held_file_ && !released_) {
        holding_ = true;
        // Bounded so that a broken test ends; Release() comes long before.
        changed_.wait_for(lock, 120s, [&] { return released_; });
        holding_ = false;
      }
      log_.push_back("put " + name);
      if (name == failing_file_) return Status::IOError("PutObject " + path + " failed: 500");
    }
    COHORT_RETURN_IF_ERROR(MakeDirectories(Local(path).parent_path().string()));
    return local_->WriteFileAtomically(Local(path), contents);
  }
  StatusOr<std::vector<StorageEntry>> ListDirectory(const std::string& path) override {
    if (!fs::exists(Local(path))) return std::vector<StorageEntry>();
    return local_->ListDirectory(Local(path));
  }
  Status RemoveFile(const std::string& path) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      log_.push_back("remove " + fs::path(path).filename().string());
    }
    return local_->RemoveFile(Local(path));
  }
  StatusOr<bool> FileExists(const std::string& path) override {
    return local_->FileExists(Local(path));
  }
  StatusOr<uint64_t> FileSize(const std::string& path) override {
    return local_->FileSize(Local(path));
  }

 private:
  const fs::path root_;
  const std::string held_file_;
  const std::string failing_file_;
  std::unique_ptr<Storage> local_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool released_ = false;
  bool holding_ = false;
  std::vector<std::string> log_;
};

// Records the global steps that training has finished.
class StepProbe : public Callback {
 public:
  Status OnBatchEnd(const FitPlan&, TrainingState&, const BatchLogs& logs) override {
    last_step_ = logs.global_step;
    return Status::OK();
  }
  int64_t last_step() const { return last_step_; }

 private:
  std::atomic<int64_t> last_step_{0};
};

// The number in "put ckpt-<n>.pt", or 0.
int64_t PutCheckpointNumber(const std::string& entry) {
  if (!entry.starts_with("put ckpt-") || !entry.ends_with(".pt")) return 0;
  return std::stoll(entry.substr(9, entry.size() - 12));
}

class BackupUploadTest : public ::testing::Test {
 protected:
  BackupOptions Options(HeldBucket* bucket) const {
    BackupOptions options{"s3://bucket/upload-" + std::to_string(::getpid()) + "/backup",
                          /*save_every_steps=*/1, true, "upload test run"};
    options.remote_storage = bucket;
    return options;
  }

  cohort::testing::ScratchDirectory scratch_{"backup-upload"};
  SmallData data_;
  SingleProcessStrategy strategy_;
  FitPlan chief_ = [] {
    FitPlan plan;
    plan.is_chief = true;
    return plan;
  }();
};

// While the first backup's upload is held, training goes on past two more backups; the waiting
// upload is superseded by the newer one; once released, the uploads land in the crash-safe order
// (checkpoint, manifest, state file; older backups removed only after a newer manifest), and the
// bucket ends with the newest backup, byte for byte the staging copy's.
TEST_F(BackupUploadTest, AStepIsNotBlockedByAHeldUpload) {
  HeldBucket bucket(scratch_.path() / "bucket", "ckpt-1.pt");
  const BackupOptions options = Options(&bucket);
  auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
  ASSERT_NE(trainer, nullptr);
  BackupAndRestore backup(options);
  StepProbe probe;
  Status fitted;
  std::thread fit([&] { fitted = trainer->Fit({&backup, &probe}); });

  // Steps 2 and 3 (each with its backup) end while ckpt-1's upload has not finished: a step that
  // waited for its upload would never get there.
  const bool passed = cohort::testing::WaitUntil(
      [&] { return probe.last_step() >= 3 && bucket.Holding(); }, 120s, 5ms);
  const bool still_held = bucket.Holding();
  const std::vector<std::string> log_while_held = bucket.Log();
  bucket.Release();
  fit.join();
  ASSERT_TRUE(passed) << "training did not reach step 3 while the upload of ckpt-1 was held "
                      << "(last step " << probe.last_step() << ")";
  EXPECT_TRUE(still_held);
  EXPECT_TRUE(log_while_held.empty()) << log_while_held.front();
  ASSERT_TRUE(fitted.ok()) << fitted.ToString();

  // The marker waits for the last upload.
  ASSERT_TRUE(backup.MarkComplete(chief_, "summary\n").ok());
  const std::vector<std::string> log = bucket.Log();
  ASSERT_FALSE(log.empty());

  // Backups 2 and 3 were committed while ckpt-1 was held: 2 waited and was superseded by 3.
  EXPECT_EQ(std::count(log.begin(), log.end(), "put ckpt-2.pt"), 0);
  EXPECT_EQ(log[0], "put ckpt-1.pt");
  // Each upload: checkpoint, manifest, state file, in increasing order of backups; removals only
  // of backups older than one whose manifest is already in the bucket.
  int64_t last_uploaded = 0, last_manifest = 0;
  for (size_t i = 0; i < log.size(); ++i) {
    if (const int64_t number = PutCheckpointNumber(log[i]); number > 0) {
      EXPECT_GT(number, last_uploaded) << log[i];
      last_uploaded = number;
      ASSERT_LT(i + 2, log.size());
      EXPECT_EQ(log[i + 1], "put ckpt-" + std::to_string(number) + ".manifest.json");
      EXPECT_EQ(log[i + 2], "put checkpoint");
      last_manifest = number;
      i += 2;
    } else if (log[i].starts_with("remove ckpt-")) {
      const int64_t removed = std::stoll(log[i].substr(12));
      EXPECT_LT(removed, last_manifest) << log[i];
    } else if (log[i] != "put training_complete") {
      ADD_FAILURE() << "unexpected " << log[i];
    }
  }
  EXPECT_EQ(log.back(), "put training_complete");

  // The bucket holds the newest backup, as committed in the staging copy.
  StatusOr<std::optional<std::string>> newest = ReadLatestCheckpoint(backup.ChiefDir());
  ASSERT_TRUE(newest.ok() && newest->has_value());
  EXPECT_EQ(last_uploaded, std::stoll(newest->value().substr(5)));
  const fs::path remote = bucket.Local(options.backup_dir + "/chief");
  for (const std::string& file : {**newest + ".pt", **newest + ".manifest.json"}) {
    StatusOr<std::string> uploaded = ReadWholeFile(remote / file);
    StatusOr<std::string> staged = ReadWholeFile(fs::path(backup.ChiefDir()) / file);
    ASSERT_TRUE(uploaded.ok() && staged.ok()) << file;
    EXPECT_TRUE(*uploaded == *staged) << file;
  }
  EXPECT_FALSE(fs::exists(remote / "ckpt-1.pt"));
  EXPECT_FALSE(fs::exists(remote / "ckpt-1.manifest.json"));

  // The job's end: the backup leaves the bucket, the marker stays.
  ASSERT_TRUE(backup.DeleteBackup(chief_).ok());
  std::vector<std::string> left;
  for (const auto& entry : fs::recursive_directory_iterator(scratch_.path() / "bucket")) {
    if (entry.is_regular_file()) left.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{"training_complete"});
}

// An upload that fails (here every state file's write) stops training, at a later backup or at
// the marker, naming the backup, instead of passing unnoticed; no marker is written.
TEST_F(BackupUploadTest, AFailedUploadFailsTheJob) {
  HeldBucket bucket(scratch_.path() / "bucket", "", "checkpoint");
  auto trainer = MakeTrainer(SmallRun(), data_, &strategy_);
  ASSERT_NE(trainer, nullptr);
  BackupAndRestore backup(Options(&bucket));
  Status status = trainer->Fit({&backup});
  if (status.ok()) status = backup.MarkComplete(chief_, "summary\n");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), Status::Code::kIOError) << status.ToString();
  EXPECT_NE(status.message().find("not uploaded"), std::string::npos) << status.ToString();
  const std::vector<std::string> log = bucket.Log();
  EXPECT_EQ(std::count(log.begin(), log.end(), "put training_complete"), 0);
  std::error_code error;
  fs::remove_all(fs::path(backup.ChiefDir()).parent_path(), error);  // the staging copy
}

// Drain's bound: an upload that does not finish in time is named, with the one waiting behind
// it; once it finishes, Drain reports OK and the queue is idle.
TEST(UploadQueueTest, DrainNamesWhatItWaitedFor) {
  std::mutex mutex;
  std::condition_variable changed;
  bool started = false, release = false;
  UploadQueue queue("test", 60s);
  queue.Submit({"first", [&] {
                  std::unique_lock<std::mutex> lock(mutex);
                  started = true;
                  changed.notify_all();
                  changed.wait_for(lock, 60s, [&] { return release; });
                  return Status::OK();
                }});
  {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(changed.wait_for(lock, 60s, [&] { return started; }));
  }
  EXPECT_EQ(queue.Submit({"second", [] { return Status::OK(); }}), "");
  EXPECT_EQ(queue.Submit({"third", [] { return Status::IOError("third failed"); }}), "second");
  const Status timed_out = queue.Drain(1ms);  // the first is held: it cannot finish in time
  EXPECT_EQ(timed_out.code(), Status::Code::kDeadlineExceeded);
  EXPECT_NE(timed_out.message().find("first (uploading), third (waiting)"), std::string::npos)
      << timed_out.message();
  {
    std::lock_guard<std::mutex> lock(mutex);
    release = true;
    changed.notify_all();
  }
  const Status drained = queue.Drain(60s);
  EXPECT_EQ(drained.code(), Status::Code::kIOError) << drained.ToString();
  EXPECT_FALSE(queue.Busy());
  EXPECT_TRUE(queue.TakeError().ok());
}

}  // namespace
}  // namespace cohort::train
