// The supervisor lock and what a command does with a job whose supervisor is gone.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/image_map.h"
#include "exec/job_store.h"
#include "exec/local_jobs.h"
#include "exec/supervisor_lock.h"
#include "exec/supervisor_loss.h"
#include "exec_test_support.h"
#include "job/reconciler.h"

namespace cohort::exec {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(SupervisorLockTest, APreparedJobIsNeverTakenForAnAbandonedOne) {
  ScratchDirectory home;
  LocalJobs jobs(home.path());
  JobStore& store = jobs.store();
  JobKey key{"default", "starting"};
  StatusOr<CreatedJob> created = jobs.Create(ShellJob("starting", 2, "exit 0"), ImageMap());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  SupervisorLock lock = std::move(created->lock);

  // The job is visible, has no status yet and no supervisor runs it: what `cohort get` sees
  // while `cohort submit` is still starting the supervisor.
  ASSERT_TRUE(store.Exists(key));
  EXPECT_TRUE(lock.held());
  EXPECT_TRUE(SupervisorLock::IsHeld(store.JobDirectory(key)));
  EXPECT_FALSE(RecoverIfSupervisorLost(store, key));
  StatusOr<job::JobStatus> status = store.ReadStatus(key);
  ASSERT_TRUE(status.ok());
  EXPECT_FALSE(job::IsFinished(*status));

  // Once the holder is gone without a supervisor having taken over, the job is abandoned.
  lock = SupervisorLock();
  EXPECT_FALSE(SupervisorLock::IsHeld(store.JobDirectory(key)));
  EXPECT_TRUE(RecoverIfSupervisorLost(store, key));
  status = store.ReadStatus(key);
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(job::IsFailed(*status));
}

// A command that finds a job abandoned marks it Failed but stops nothing (the pids it could read
// may be other processes' by now), so its message must not say that it did.
TEST(SupervisorLossTest, RecoveryByACommandClaimsNothingAboutTheReplicas) {
  ScratchDirectory home;
  LocalJobs jobs(home.path());
  JobStore& store = jobs.store();
  JobKey key{"default", "abandoned"};
  {
    StatusOr<CreatedJob> created = jobs.Create(ShellJob("abandoned", 1, "true"), ImageMap());
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    ASSERT_TRUE(WriteFileAtomically(store.JobDirectory(key) / "supervisor.pid", "4242\n").ok());
  }
  ASSERT_TRUE(RecoverIfSupervisorLost(store, key));
  StatusOr<job::JobStatus> status = store.ReadStatus(key);
  ASSERT_TRUE(status.ok());
  ASSERT_TRUE(job::IsFailed(*status));
  EXPECT_EQ(status->conditions.back().message,
            "TFJob default/abandoned has failed because its Cohort supervisor (pid 4242) died "
            "before the job finished.");
  StatusOr<std::vector<job::Event>> events = store.ReadEvents(key);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ(events->back().reason, "SupervisorLost");
  EXPECT_THAT(events->back().message, Not(HasSubstr("stopped")));
  EXPECT_FALSE(RecoverIfSupervisorLost(store, key));  // once
}

TEST(SupervisorLockTest, AnotherProcessAdoptsTheLockWithoutAGap) {
  ScratchDirectory home;
  std::filesystem::path directory = home.path() / "job";
  std::filesystem::create_directories(directory);
  SupervisorLock lock;
  ASSERT_TRUE(lock.Acquire(directory).ok());
  int fd = lock.fd();
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    SupervisorLock adopted;
    bool ok = adopted.Adopt(fd, directory).ok() && (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0;
    ssize_t ignored = write(ready[1], ok ? "y" : "n", 1);
    (void)ignored;
    pause();  // holds the lock until killed
    _exit(0);
  }
  close(ready[1]);
  char answer = 0;
  ASSERT_EQ(read(ready[0], &answer, 1), 1);
  close(ready[0]);
  EXPECT_EQ(answer, 'y');

  // The parent lets go; the child still holds the same lock.
  lock = SupervisorLock();
  EXPECT_TRUE(SupervisorLock::IsHeld(directory));
  SupervisorLock other;
  EXPECT_FALSE(other.Acquire(directory).ok());

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(SupervisorLock::IsHeld(directory));
}

TEST(SupervisorLockTest, AdoptRefusesADescriptorOfAnotherFile) {
  ScratchDirectory home;
  std::filesystem::create_directories(home.path() / "a");
  std::filesystem::create_directories(home.path() / "b");
  SupervisorLock lock_of_a;
  ASSERT_TRUE(lock_of_a.Acquire(home.path() / "a").ok());
  SupervisorLock lock_of_b;
  ASSERT_TRUE(lock_of_b.Acquire(home.path() / "b").ok());
  SupervisorLock adopted;
  Status status = adopted.Adopt(lock_of_a.fd(), home.path() / "b");
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument) << status.ToString();
  EXPECT_FALSE(adopted.held());
  EXPECT_EQ(adopted.Adopt(-1, home.path() / "b").code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace cohort::exec
