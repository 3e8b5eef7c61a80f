// Cohort as a user gets it: the tree `cmake --install` writes under a prefix, and the Debian
// packages `cpack -G DEB` builds (cmake/CohortInstall.cmake, cmake/CohortPackage.cmake).
//
// InstallTreeTest installs the build into a scratch prefix once and checks what a user relies on:
// the files are where docs/architecture.md ("Install layout") says, nothing points back into the
// build tree, the installed programs say their version and run the demo's jobs with only the
// prefix's bin/ on PATH, and a project of its own (tests/install/consumer) configured with nothing
// but -DCMAKE_PREFIX_PATH=<prefix> builds and runs; so do the API's examples (custom-loop as a job
// with a worker SIGKILLed, custom-model alone, taxi as a parameter-server job).
// CustomModelJobResumesAfterAKilledWorker, the
// issue's "done when", runs apart (ctest install_custom_model_job, label long: minutes).
//
// DebianPackageTest builds the packages from the same build tree, installs them into this machine
// with apt-get, runs the same jobs from /usr/bin and builds the consumer with no path at all, then
// purges them and checks that nothing of them is left. It changes the system, so it runs only as
// root, only when the packages and their files are not there already and when apt-get would
// install nothing but them; otherwise it skips saying why (fails, in CI). Whatever happens, the
// packages it installed are purged before it ends.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "testing/files.h"
#include "testing/host.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"
#include "testing/wait.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kBuildDir = COHORT_BINARY_DIR;
const fs::path kSourceDir = COHORT_SOURCE_DIR;
const std::string kCMake = COHORT_CMAKE_COMMAND;
const std::string kCPack = COHORT_CPACK_COMMAND;
const std::string kVersion = COHORT_PROJECT_VERSION;

std::string Quoted(const std::string& text) { return ShellQuote(text); }

std::string Quoted(const fs::path& path) { return Quoted(path.string()); }

// Runs `command` with a clean environment: PATH is `path` alone, HOME and COHORT_HOME are under
// `scratch`, so that nothing of the build tree (PATH, LD_LIBRARY_PATH, CMAKE_PREFIX_PATH...) helps.
CommandResult RunClean(const std::string& path, const fs::path& scratch, const std::string& command,
                       int timeout_seconds) {
  fs::create_directories(scratch / "home");
  return RunCommand("env -i PATH=" + Quoted(path) + " HOME=" + Quoted(scratch / "home") +
                    " COHORT_HOME=" + Quoted(scratch / "cohort-home") +
                    " LANG=C.UTF-8 /usr/bin/timeout " + std::to_string(timeout_seconds) +
                    " /bin/sh -c " + Quoted(command));
}

// The lines of `text`.
std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

// kVersion as a regular expression.
std::string VersionPattern() { return std::regex_replace(kVersion, std::regex("\\."), "\\."); }

// Checks `cohort --version` and `cohort-train --version` of the programs in `bin`.
void ExpectVersions(const fs::path& bin, const fs::path& scratch) {
  CommandResult cohort = RunClean(bin.string(), scratch, "cohort --version", 30);
  EXPECT_EQ(cohort.exit_code, 0) << cohort.output;
  EXPECT_TRUE(std::regex_match(
      cohort.output, std::regex("cohort " + VersionPattern() + "\nbuilt with (GCC|Clang) .*\n")))
      << cohort.output;
  CommandResult train = RunClean(bin.string(), scratch, "cohort-train --version", 30);
  EXPECT_EQ(train.exit_code, 0) << train.output;
  EXPECT_TRUE(
      std::regex_match(train.output, std::regex("cohort-train " + VersionPattern() +
                                                "\nbuilt with .*, libtorch \\d+\\.\\d+\\.\\d+\n")))
      << train.output;
}

// The demo's jobs with the programs in `bin` (and /usr/bin, /bin for the shell's tools) and the
// manifests under `share` (<prefix>/share/cohort): examples/hello as installed, and
// examples/mnist's job made short (2 workers, 8 steps), whose saved model then evaluates.
void RunDemoJobs(const fs::path& bin, const fs::path& share, const fs::path& scratch) {
  const std::string path = bin.string() + ":/usr/bin:/bin";
  const fs::path hello = share / "examples/hello";
  CommandResult hello_run = RunClean(path, scratch,
                                     "cohort run " + Quoted(hello / "tfjob.yaml") +
                                         " --image localhost/hello=" + Quoted(hello / "replica.sh"),
                                     120);
  EXPECT_EQ(hello_run.exit_code, 0) << hello_run.output;

  const fs::path data = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(data)) {
    COHORT_SKIP_OR_FAIL_IN_CI(data.string() + " is missing (Debian's dataset-fashion-mnist)");
  }
  const std::string manifest = ReadText(share / "examples/mnist/tfjob.yaml");
  ASSERT_NE(manifest.find("replicas: 3"), std::string::npos) << manifest;
  std::string short_manifest =
      std::regex_replace(manifest, std::regex("replicas: 3"), "replicas: 2");
  short_manifest = std::regex_replace(short_manifest, std::regex("--epochs=\\d+"), "--epochs=1");
  short_manifest = std::regex_replace(short_manifest, std::regex("--steps_per_epoch=\\d+"),
                                      "--steps_per_epoch=8");
  short_manifest = std::regex_replace(short_manifest, std::regex("/tmp/cohort-mnist"),
                                      (scratch / "mnist").string());
  WriteText(scratch / "mnist.yaml", short_manifest);
  CommandResult mnist_run = RunClean(path, scratch,
                                     "cohort run " + Quoted(scratch / "mnist.yaml") +
                                         " --image localhost/mnist-train=cohort-train",
                                     300);
  ASSERT_EQ(mnist_run.exit_code, 0) << mnist_run.output;
  CommandResult evaluate = RunClean(
      path, scratch,
      "cohort-train --evaluate --model_path " + Quoted(scratch / "mnist/mnist/saved_model"), 120);
  EXPECT_EQ(evaluate.exit_code, 0) << evaluate.output;
  EXPECT_NE(evaluate.output.find("accuracy"), std::string::npos) << evaluate.output;
}

// Copies tests/install/consumer to `scratch`, configures it with `cmake_arguments` alone (besides
// the source and build folders), builds and runs it.
void BuildAndRunConsumer(const fs::path& scratch, const std::string& path,
                         const std::string& cmake_arguments) {
  const fs::path source = scratch / "consumer";
  fs::create_directories(source);
  fs::copy(kSourceDir / "tests/install/consumer", source, fs::copy_options::recursive);
  CommandResult configure = RunClean(
      path, scratch,
      kCMake + " -S " + Quoted(source) + " -B " + Quoted(source / "build") + " " + cmake_arguments,
      300);
  ASSERT_EQ(configure.exit_code, 0) << configure.output;
  CommandResult build =
      RunClean(path, scratch, kCMake + " --build " + Quoted(source / "build"), 600);
  ASSERT_EQ(build.exit_code, 0) << build.output;
  CommandResult run = RunClean(path, scratch, Quoted(source / "build/consumer"), 60);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("consumer: "), std::string::npos) << run.output;
}

// Starts `command` as RunClean runs it, without waiting; its output goes to `log`. Returns the pid
// to wait for: WaitForChildOrSignal(pid, ..., SIGTERM) reaches `command` itself, since every
// process between execs the next.
pid_t StartClean(const std::string& path, const fs::path& scratch, const std::string& command,
                 const fs::path& log, int timeout_seconds) {
  fs::create_directories(scratch / "home");
  const std::string line =
      "exec env -i PATH=" + Quoted(path) + " HOME=" + Quoted(scratch / "home") +
      " COHORT_HOME=" + Quoted(scratch / "cohort-home") + " LANG=C.UTF-8 /usr/bin/timeout " +
      std::to_string(timeout_seconds) + " /bin/sh -c " + Quoted("exec " + command) + " >" +
      Quoted(log) + " 2>&1";
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// The pid of `program` running as replica worker-`index` of job `job`, started by a `cohort` that
// RunClean or StartClean ran with `scratch`; -1 when none runs.
pid_t FindWorker(const fs::path& scratch, const std::string& job, int index,
                 const std::string& program) {
  for (const pid_t pid :
       ProcessesWithEnvironment({{"COHORT_HOME", (scratch / "cohort-home").string()},
                                 {"COHORT_JOB_NAME", job},
                                 {"COHORT_REPLICA_TYPE", "worker"},
                                 {"COHORT_REPLICA_INDEX", std::to_string(index)}})) {
    std::error_code error;
    const fs::path exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", error);
    if (!error && exe.filename() == program) return pid;
  }
  return -1;
}

// Writes `manifest` (a job of the examples' tfjob.yaml) with each (pattern, replacement) of
// `edits` applied, each pattern required to be there, as `scratch`/<name>.yaml.
fs::path EditManifest(const fs::path& manifest, const fs::path& scratch, const std::string& name,
                      const std::vector<std::pair<std::string, std::string>>& edits) {
  std::string text = ReadText(manifest);
  for (const auto& [pattern, replacement] : edits) {
    EXPECT_NE(text.find(pattern), std::string::npos) << pattern << " is not in\n" << text;
    text = std::regex_replace(text, std::regex(pattern), replacement);
  }
  const fs::path edited = scratch / (name + ".yaml");
  WriteText(edited, text);
  return edited;
}

// The runs of replica `replica` of job `job` that `cohort logs` prints: the log split at each
// "===== cohort: restart" line.
std::vector<std::string> ReplicaRuns(const std::string& path, const fs::path& scratch,
                                     const std::string& job, const std::string& replica) {
  const CommandResult log =
      RunClean(path, scratch, "cohort logs " + job + " --replica " + replica, 60);
  EXPECT_EQ(log.exit_code, 0) << log.output;
  std::vector<std::string> runs(1);
  for (const std::string& line : Lines(log.output)) {
    if (line.rfind("===== cohort: restart ", 0) == 0) runs.emplace_back();
    runs.back() += line + "\n";
  }
  return runs;
}

// Copies examples/`name` from `share` (<prefix>/share/cohort) to `scratch`, configures it with
// `cmake_arguments` alone (besides the source and build folders) and builds it, as a user would.
// Returns the program built: `program`, or the example's name when `program` is empty.
fs::path BuildExample(const fs::path& share, const fs::path& scratch, const std::string& path,
                      const std::string& cmake_arguments, const std::string& name,
                      const std::string& program = "") {
  const std::string built = program.empty() ? name : program;
  const fs::path source = scratch / name;
  fs::create_directories(source);
  fs::copy(share / "examples" / name, source, fs::copy_options::recursive);
  CommandResult configure = RunClean(
      path, scratch,
      kCMake + " -S " + Quoted(source) + " -B " + Quoted(source / "build") + " " + cmake_arguments,
      300);
  EXPECT_EQ(configure.exit_code, 0) << name << ":\n" << configure.output;
  CommandResult build =
      RunClean(path, scratch, kCMake + " --build " + Quoted(source / "build"), 900);
  EXPECT_EQ(build.exit_code, 0) << name << ":\n" << build.output;
  EXPECT_TRUE(fs::exists(source / "build" / built)) << build.output;
  return source / "build" / built;
}

const fs::path kFashionMnist = "/usr/share/datasets/fashion-mnist";

// The API's examples as a user takes them: examples/custom-loop and examples/custom-model copied
// from `share` (<prefix>/share/cohort) to `scratch`, each configured with `cmake_arguments` alone
// and built. custom-model then trains alone (no TF_CONFIG) for a few steps and saves its model;
// its 3-worker job, killed worker included, is CustomModelJobResumesAfterAKilledWorker (long).
// custom-loop trains as a 2-worker job of the installed `cohort run`, twice: once uninterrupted,
// once with worker-1 SIGKILLed after the chief's first checkpoint, which must continue from the
// epoch after the checkpoint's and end as the uninterrupted run did.
void BuildAndRunExamples(const fs::path& share, const fs::path& scratch, const std::string& path,
                         const std::string& cmake_arguments) {
  const fs::path loop = BuildExample(share, scratch, path, cmake_arguments, "custom-loop");
  const fs::path model = BuildExample(share, scratch, path, cmake_arguments, "custom-model");
  if (::testing::Test::HasFailure()) return;

  // custom-loop, uninterrupted, then killed once.
  const fs::path manifest = share / "examples/custom-loop/tfjob.yaml";
  const auto loop_job = [&](const std::string& name) {
    return EditManifest(manifest, scratch, name,
                        {{"name: custom-loop", "name: " + name},
                         {"/tmp/cohort-custom-loop", (scratch / (name + "-work")).string()}});
  };
  const std::string image = " --image localhost/custom-loop=" + Quoted(loop);
  CommandResult reference =
      RunClean(path, scratch, "cohort run " + Quoted(loop_job("loop-reference")) + image, 300);
  ASSERT_EQ(reference.exit_code, 0) << reference.output;
  const std::vector<std::string> reference_runs =
      ReplicaRuns(path, scratch, "loop-reference", "worker-0");
  ASSERT_EQ(reference_runs.size(), 1u) << reference_runs.back();
  std::smatch last;
  ASSERT_TRUE(std::regex_search(reference_runs[0], last, std::regex("epoch 20/20: [^\n]*")))
      << reference_runs[0];
  const std::string reference_end = last[0];

  const fs::path log = scratch / "loop-killed.log";
  const pid_t run =
      StartClean(path, scratch, "cohort run " + Quoted(loop_job("loop-killed")) + image, log, 300);
  const fs::path checkpoint = scratch / "loop-killed-work/loop-killed/checkpoint.pt";
  const bool checkpointed =
      WaitUntil([&] { return fs::exists(checkpoint); }, std::chrono::minutes(4));
  const pid_t victim = FindWorker(scratch, "loop-killed", 1, "custom-loop");
  if (checkpointed && victim > 0) {
    EXPECT_EQ(kill(victim, SIGKILL), 0);
  }
  ASSERT_EQ(WaitForChildOrSignal(run, std::chrono::minutes(5), SIGTERM), 0) << ReadText(log);
  ASSERT_TRUE(checkpointed) << "the chief never wrote " << checkpoint << ":\n" << ReadText(log);
  ASSERT_GT(victim, 0) << "worker-1 was gone when the first checkpoint was there:\n"
                       << ReadText(log);
  EXPECT_NE(ReadText(log).find("loop-killed Succeeded"), std::string::npos) << ReadText(log);
  // worker-1 was restarted once, after its SIGKILL; the chief continued after the epoch its
  // checkpoint held (not from epoch 1), through the last, and ended where the reference did.
  const std::vector<std::string> victim_runs =
      ReplicaRuns(path, scratch, "loop-killed", "worker-1");
  ASSERT_EQ(victim_runs.size(), 2u) << ReadText(log);
  EXPECT_NE(victim_runs[1].find("restart 1 of worker-1"), std::string::npos) << victim_runs[1];
  EXPECT_NE(victim_runs[1].find("(previous exit code 137)"), std::string::npos) << victim_runs[1];
  const std::vector<std::string> chief_runs = ReplicaRuns(path, scratch, "loop-killed", "worker-0");
  ASSERT_EQ(chief_runs.size(), 2u) << ReadText(log);
  std::smatch resumed;
  ASSERT_TRUE(
      std::regex_search(chief_runs[1], resumed,
                        std::regex("resuming from [^\n]*checkpoint\\.pt after epoch ([0-9]+)")))
      << chief_runs[1];
  const int epochs_done = std::stoi(resumed[1]);
  EXPECT_GE(epochs_done, 1);
  std::vector<int> epochs_after_restart;
  const std::regex epoch_line("epoch ([0-9]+)/20:");
  for (auto it = std::sregex_iterator(chief_runs[1].begin(), chief_runs[1].end(), epoch_line);
       it != std::sregex_iterator(); ++it) {
    epochs_after_restart.push_back(std::stoi((*it)[1]));
  }
  ASSERT_FALSE(epochs_after_restart.empty()) << chief_runs[1];
  EXPECT_EQ(epochs_after_restart.front(), epochs_done + 1) << chief_runs[1];
  EXPECT_EQ(epochs_after_restart.back(), 20) << chief_runs[1];
  EXPECT_EQ(epochs_after_restart.size(), static_cast<size_t>(20 - epochs_done)) << chief_runs[1];
  EXPECT_NE(chief_runs[1].find(reference_end), std::string::npos)
      << "the reference ended with " << reference_end << "\n"
      << chief_runs[1];
  EXPECT_TRUE(fs::exists(scratch / "loop-killed-work/loop-killed/model.pt")) << ReadText(log);
  EXPECT_FALSE(fs::exists(checkpoint)) << "the checkpoint outlived the training it was for";

  // custom-model alone: no TF_CONFIG (RunClean's environment is empty), a few steps.
  if (!fs::exists(kFashionMnist)) {
    COHORT_SKIP_OR_FAIL_IN_CI(kFashionMnist.string() +
                              " is missing (Debian's dataset-fashion-mnist)");
  }
  const fs::path alone = scratch / "custom-model-alone";
  CommandResult trained =
      RunClean(path, scratch,
               Quoted(model) + " --epochs=1 --steps_per_epoch=20 --work_dir=" + Quoted(alone), 300);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_NE(trained.output.find("custom-model: single process"), std::string::npos)
      << trained.output;
  EXPECT_TRUE(std::regex_search(trained.output, std::regex("epoch 1/1: 20 steps")))
      << trained.output;
  EXPECT_NE(trained.output.find("test accuracy 0."), std::string::npos) << trained.output;
  EXPECT_TRUE(fs::exists(alone / "model/weights.pt")) << trained.output;
}

// The taxi example as a user takes it: examples/taxi copied from `share` (<prefix>/share/cohort) to
// `scratch`, configured with `cmake_arguments` alone and built, then its manifest (tfjob.yaml: 1
// chief, 2 ps, 3 workers, an evaluator) run by the installed `cohort run` for 1 epoch instead of
// 3, its data and outputs moved into `scratch`. The job must Succeed and the chief report the eval
// AUC, near the data set's ceiling (0.9170) already after one epoch.
void BuildAndRunTaxiExample(const fs::path& share, const fs::path& scratch, const std::string& path,
                            const std::string& cmake_arguments) {
  const fs::path program =
      BuildExample(share, scratch, path, cmake_arguments, "taxi", "taxi-train");
  if (::testing::Test::HasFailure()) return;
  const fs::path manifest = EditManifest(
      share / "examples/taxi/tfjob.yaml", scratch, "taxi",
      {{"--epochs=3", "--epochs=1"}, {"/tmp/cohort-taxi", (scratch / "taxi-work").string()}});
  CommandResult job = RunClean(
      path, scratch,
      "cohort run " + Quoted(manifest) + " --image localhost/taxi-train=" + Quoted(program), 300);
  ASSERT_EQ(job.exit_code, 0) << job.output;
  EXPECT_NE(job.output.find("taxi Succeeded"), std::string::npos) << job.output;
  std::smatch auc;
  ASSERT_TRUE(std::regex_search(job.output, auc, std::regex("\\[chief-0\\] auc ([0-9.]+)")))
      << job.output;
  EXPECT_GE(std::stod(auc[1]), 0.85) << job.output;
}

// The RUNPATH or RPATH entries of an ELF file ("" when it has none).
std::string RunPath(const fs::path& elf) {
  CommandResult dynamic = RunCommand("readelf -d " + Quoted(elf));
  std::string entries;
  for (const std::string& line : Lines(dynamic.output)) {
    if (line.find("(RUNPATH)") != std::string::npos || line.find("(RPATH)") != std::string::npos) {
      entries += line + "\n";
    }
  }
  return entries;
}

class InstallTreeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new ScratchDirectory("cohort-install-test");
    install_ = RunCommand("timeout 300 " + kCMake + " --install " + Quoted(kBuildDir) +
                          " --prefix " + Quoted(prefix()));
  }
  static void TearDownTestSuite() {
    delete scratch_;
    scratch_ = nullptr;
  }
  void SetUp() override { ASSERT_EQ(install_.exit_code, 0) << install_.output; }

  static fs::path prefix() { return scratch_->path() / "prefix"; }
  static fs::path scratch() { return scratch_->path(); }

 private:
  static ScratchDirectory* scratch_;
  static CommandResult install_;
};

ScratchDirectory* InstallTreeTest::scratch_ = nullptr;
CommandResult InstallTreeTest::install_;

TEST_F(InstallTreeTest, FilesAreWhereTheLayoutSays) {
  const std::string soname = "libcohort.so." + kVersion.substr(0, kVersion.rfind('.'));
  for (const char* file :
       {"bin/cohort", "bin/cohort-train", "bin/cohort-serve", "bin/taxi-train", "lib/libcohort.so",
        "lib/cmake/Cohort/CohortConfig.cmake", "lib/cmake/Cohort/CohortConfigVersion.cmake",
        "lib/cmake/Cohort/CohortTargets.cmake", "include/cohort/cluster.h", "include/cohort/fit.h",
        "include/cohort/parameter_server.h", "share/cohort/examples/hello/tfjob.yaml",
        "share/cohort/examples/hello/replica.sh", "share/cohort/examples/mnist/tfjob.yaml",
        "share/cohort/examples/taxi/tfjob.yaml",
        "share/cohort/deploy/kubernetes/kustomization.yaml", "share/doc/cohort/README.md",
        "share/doc/cohort/architecture.md", COHORT_TORCH_MODULE}) {
    EXPECT_TRUE(fs::exists(prefix() / file)) << file;
  }
  EXPECT_TRUE(fs::exists(prefix() / "lib" / soname)) << soname;
  EXPECT_EQ(fs::read_symlink(prefix() / "lib/libcohort.so"), soname);
  for (const char* program : {"bin/cohort", "bin/cohort-train", "bin/cohort-serve",
                              "bin/taxi-train", "share/cohort/examples/hello/replica.sh"}) {
    EXPECT_NE(fs::status(prefix() / program).permissions() & fs::perms::others_exec,
              fs::perms::none)
        << program;
  }
}

TEST_F(InstallTreeTest, NothingPointsIntoTheBuildOrSourceTree) {
  for (const char* elf : {"bin/cohort", "bin/cohort-train", "bin/cohort-serve", "bin/taxi-train",
                          "lib/libcohort.so", COHORT_TORCH_MODULE}) {
    EXPECT_EQ(RunPath(prefix() / elf), "") << elf;
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(prefix() / "lib/cmake/Cohort")) {
    const std::string text = ReadText(entry.path());
    EXPECT_EQ(text.find(kBuildDir.string()), std::string::npos) << entry.path();
    EXPECT_EQ(text.find(kSourceDir.string()), std::string::npos) << entry.path();
  }
}

// The torch.distributed backend's module, as installed, loads into Debian's Python (its libraries
// found by the loader alone) and registers the backend.
TEST_F(InstallTreeTest, TorchBackendImportsFromTheTree) {
  const fs::path module = prefix() / COHORT_TORCH_MODULE;
  CommandResult import =
      RunCommand("PYTHONPATH=" + module.parent_path().string() + " " + COHORT_PYTHON +
                 " -c 'import cohort_torch, torch.distributed as d; "
                 "print(cohort_torch.__file__, hasattr(d.Backend, \"COHORT\"))' 2>&1");
  EXPECT_EQ(import.exit_code, 0) << import.output;
  EXPECT_NE(import.output.find(module.string() + " True"), std::string::npos) << import.output;
}

TEST_F(InstallTreeTest, ProgramsSayTheirVersion) { ExpectVersions(prefix() / "bin", scratch()); }

TEST_F(InstallTreeTest, InstalledProgramsRunTheDemoJobs) {
  RunDemoJobs(prefix() / "bin", prefix() / "share/cohort", scratch() / "jobs");
}

TEST_F(InstallTreeTest, ProjectConfiguredWithOnlyThePrefixBuildsAndRuns) {
  BuildAndRunConsumer(scratch(), "/usr/bin:/bin", "-DCMAKE_PREFIX_PATH=" + Quoted(prefix()));
}

TEST_F(InstallTreeTest, TheApiExamplesBuildOutOfTreeAndTrainAsAJob) {
  BuildAndRunExamples(prefix() / "share/cohort", scratch() / "examples",
                      (prefix() / "bin").string() + ":/usr/bin:/bin",
                      "-DCMAKE_PREFIX_PATH=" + Quoted(prefix()));
}

TEST_F(InstallTreeTest, TheTaxiExampleBuildsOutOfTreeAndTrainsAsAJob) {
  BuildAndRunTaxiExample(prefix() / "share/cohort", scratch() / "taxi-example",
                         (prefix() / "bin").string() + ":/usr/bin:/bin",
                         "-DCMAKE_PREFIX_PATH=" + Quoted(prefix()));
}

// The "done when" from the install tree, as a user would do it: examples/custom-model
// copied and built against the prefix, its manifest run by the installed `cohort run` with its 3
// workers for 2 epochs (the manifest's 6 reach 0.91: examples/custom-model/README.md), worker-1
// SIGKILLed mid-epoch once the chief's first backup (step 100 of 312) is written. The job must
// Succeed with worker-1 restarted once, every worker resuming from the backup (not step 0) and the
// chief saving the model at 0.88 test accuracy or better (0.8938 to 0.8958 measured). Label long: 2
// to 3 minutes on 2 loaded cores (120 to 160 s measured, building included).
TEST_F(InstallTreeTest, CustomModelJobResumesAfterAKilledWorker) {
  if (!fs::exists(kFashionMnist)) {
    COHORT_SKIP_OR_FAIL_IN_CI(kFashionMnist.string() +
                              " is missing (Debian's dataset-fashion-mnist)");
  }
  const fs::path work = scratch() / "custom-model-job";
  const std::string path = (prefix() / "bin").string() + ":/usr/bin:/bin";
  const fs::path program = BuildExample(prefix() / "share/cohort", work, path,
                                        "-DCMAKE_PREFIX_PATH=" + Quoted(prefix()), "custom-model");
  ASSERT_FALSE(HasFailure());
  const fs::path outputs = work / "out";
  const fs::path out = outputs / "custom-model";  // the job's own: $(COHORT_JOB_NAME)
  const fs::path manifest =
      EditManifest(prefix() / "share/cohort/examples/custom-model/tfjob.yaml", work, "custom-model",
                   {{"--epochs=6", "--epochs=2"}, {"/tmp/cohort-custom-model", outputs.string()}});
  ASSERT_FALSE(HasFailure());

  const fs::path log = work / "custom-model.log";
  const pid_t run = StartClean(
      path, work,
      "cohort run " + Quoted(manifest) + " --image localhost/custom-model=" + Quoted(program), log,
      900);
  const fs::path backup_state = out / "backup/chief/checkpoint";
  const bool backed_up =
      WaitUntil([&] { return ReadText(backup_state).find("ckpt-") != std::string::npos; },
                std::chrono::minutes(8), std::chrono::milliseconds(20));
  const pid_t victim = FindWorker(work, "custom-model", 1, "custom-model");
  if (backed_up && victim > 0) {
    EXPECT_EQ(kill(victim, SIGKILL), 0);
  }
  ASSERT_EQ(WaitForChildOrSignal(run, std::chrono::minutes(14), SIGTERM), 0) << ReadText(log);
  const std::string output = ReadText(log);
  ASSERT_TRUE(backed_up) << "the chief never wrote a backup in " << backup_state << ":\n" << output;
  ASSERT_GT(victim, 0) << "worker-1 was gone when the first backup was there:\n" << output;
  EXPECT_NE(output.find("custom-model Succeeded"), std::string::npos) << output;

  // worker-1 was restarted once, after its SIGKILL (the others exited with 138 to be restarted).
  const std::vector<std::string> victim_runs = ReplicaRuns(path, work, "custom-model", "worker-1");
  ASSERT_EQ(victim_runs.size(), 2u) << output;
  EXPECT_NE(victim_runs[1].find("restart 1 of worker-1"), std::string::npos) << victim_runs[1];
  EXPECT_NE(victim_runs[1].find("(previous exit code 137)"), std::string::npos) << victim_runs[1];
  // Every worker resumed in the first epoch from a backup of step 100 or later, none from 0.
  std::string resumed_at;
  for (const std::string replica : {"worker-0", "worker-1", "worker-2"}) {
    const std::vector<std::string> runs = ReplicaRuns(path, work, "custom-model", replica);
    ASSERT_EQ(runs.size(), 2u) << replica << ":\n" << output;
    std::smatch resumed;
    ASSERT_TRUE(std::regex_search(runs[1], resumed,
                                  std::regex("resuming from epoch ([0-9]+) step ([0-9]+)")))
        << replica << ":\n"
        << runs[1];
    EXPECT_EQ(resumed[1], "1") << runs[1];
    EXPECT_GE(std::stoi(resumed[2]), 100) << runs[1];
    EXPECT_LT(std::stoi(resumed[2]), 312) << runs[1];
    resumed_at = resumed[0];
  }
  // The chief restored the backup, saved the model and reached the accuracy stated above.
  const std::vector<std::string> chief_runs = ReplicaRuns(path, work, "custom-model", "worker-0");
  ASSERT_EQ(chief_runs.size(), 2u);
  EXPECT_NE(chief_runs[1].find("BackupAndRestore: restored"), std::string::npos) << chief_runs[1];
  EXPECT_NE(chief_runs[1].find("saved model: " + (out / "model").string()), std::string::npos)
      << chief_runs[1];
  std::smatch accuracy;
  ASSERT_TRUE(
      std::regex_search(chief_runs[1], accuracy, std::regex("test accuracy ([0-9]+\\.[0-9]+)")))
      << chief_runs[1];
  EXPECT_GE(std::stod(accuracy[1]), 0.88) << chief_runs[1];
  EXPECT_TRUE(fs::exists(out / "model/weights.pt")) << output;
  EXPECT_NE(ReadText(out / "model/manifest.json").find("\"val_accuracy\": " + accuracy[1].str()),
            std::string::npos)
      << ReadText(out / "model/manifest.json");
  EXPECT_FALSE(fs::exists(out / "backup/chief")) << "the backup outlived the training";
  std::printf("custom-model's job, worker-1 SIGKILLed: %s, test accuracy %s\n", resumed_at.c_str(),
              accuracy[1].str().c_str());
}

// A package name and what dpkg-query says of it ("" when dpkg knows nothing of it).
std::string PackageStatus(const std::string& package) {
  CommandResult query =
      RunCommand("dpkg-query -W -f='${Status}' " + Quoted(package) + " 2>/dev/null");
  return query.exit_code == 0 ? query.output : "";
}

bool PackageInstalled(const std::string& package) {
  return PackageStatus(package).find("installed") != std::string::npos &&
         PackageStatus(package).find("not-installed") == std::string::npos;
}

class DebianPackageTest : public ::testing::Test {
 protected:
  void TearDown() override {
    // Whatever happened, what this test installed goes.
    if (installed_) {
      CommandResult purge = RunCommand("dpkg --purge cohort-dev cohort 2>&1");
      EXPECT_EQ(purge.exit_code, 0) << purge.output;
    }
  }

  ScratchDirectory scratch_{"cohort-deb-test"};
  bool installed_ = false;
};

TEST_F(DebianPackageTest, InstallsRunsTheDemoAndRemovesCleanly) {
  if (geteuid() != 0) COHORT_SKIP_OR_FAIL_IN_CI("installing a .deb needs root");
  for (const char* tool : {"dpkg-deb", "dpkg-shlibdeps", "file", "apt-get", "readelf"}) {
    if (RunCommand(std::string("command -v ") + tool).exit_code != 0) {
      COHORT_SKIP_OR_FAIL_IN_CI(
          std::string(tool) +
          " is missing (scripts/setup.sh installs it: dpkg-dev, file, binutils)");
    }
  }
  for (const char* package : {"cohort", "cohort-dev"}) {
    if (PackageInstalled(package)) {
      COHORT_SKIP_OR_FAIL_IN_CI(std::string("a package named ") + package +
                                " is installed already; this test installs and purges its own");
    }
  }

  // Build the packages from the build tree as it is.
  const fs::path packages = scratch_.path() / "packages";
  CommandResult cpack = RunCommand("cd " + Quoted(kBuildDir) + " && timeout 600 " + kCPack +
                                   " -G DEB -B " + Quoted(packages) + " 2>&1");
  ASSERT_EQ(cpack.exit_code, 0) << cpack.output;
  const std::string architecture = RunCommand("dpkg --print-architecture").output;
  const std::string suffix =
      "_" + kVersion + "_" + architecture.substr(0, architecture.find('\n')) + ".deb";
  const fs::path runtime_deb = packages / ("cohort" + suffix);
  const fs::path development_deb = packages / ("cohort-dev" + suffix);
  ASSERT_TRUE(fs::exists(runtime_deb)) << cpack.output;
  ASSERT_TRUE(fs::exists(development_deb)) << cpack.output;

  const std::string runtime_depends =
      RunCommand("dpkg-deb -f " + Quoted(runtime_deb) + " Depends").output;
  for (const char* library : {"libtorch", "libyaml-cpp", "libprotobuf", "libcurl", "libssl"}) {
    EXPECT_NE(runtime_depends.find(library), std::string::npos) << runtime_depends;
  }
  const std::string development_depends =
      RunCommand("dpkg-deb -f " + Quoted(development_deb) + " Depends").output;
  EXPECT_NE(development_depends.find("cohort (= " + kVersion + ")"), std::string::npos)
      << development_depends;
  EXPECT_NE(development_depends.find("libtorch-dev"), std::string::npos) << development_depends;

  // Refuse to overwrite files that something else put there: purging would remove them.
  std::vector<fs::path> package_files;
  for (const fs::path& deb : {runtime_deb, development_deb}) {
    for (const std::string& line : Lines(RunCommand("dpkg-deb -c " + Quoted(deb)).output)) {
      const size_t dot = line.find(" ./");
      if (dot == std::string::npos || line[0] == 'd') continue;
      fs::path file = line.substr(dot + 2);
      const size_t arrow = file.string().find(" -> ");
      if (arrow != std::string::npos) file = file.string().substr(0, arrow);
      package_files.push_back(file);
      if (fs::exists(fs::symlink_status(file))) {
        COHORT_SKIP_OR_FAIL_IN_CI(file.string() + " exists already (installed by hand?)");
      }
    }
  }
  ASSERT_FALSE(package_files.empty());

  // apt-get must install these two and nothing else, and remove nothing.
  const std::string debs = Quoted(runtime_deb) + " " + Quoted(development_deb);
  CommandResult simulation = RunCommand(
      "DEBIAN_FRONTEND=noninteractive timeout 120 apt-get install -s --no-install-recommends " +
      debs + " 2>&1");
  ASSERT_EQ(simulation.exit_code, 0) << simulation.output;
  std::vector<std::string> others;
  for (const std::string& line : Lines(simulation.output)) {
    if (line.rfind("Remv ", 0) == 0) others.push_back(line);
    if (line.rfind("Inst ", 0) == 0 && line.rfind("Inst cohort ", 0) != 0 &&
        line.rfind("Inst cohort-dev ", 0) != 0) {
      others.push_back(line);
    }
  }
  if (!others.empty()) {
    std::string why = "apt-get would change other packages (scripts/setup.sh installs them):";
    for (const std::string& line : others) why += "\n  " + line;
    COHORT_SKIP_OR_FAIL_IN_CI(why);
  }

  installed_ = true;
  CommandResult install = RunCommand(
      "DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -q --no-install-recommends " +
      debs + " 2>&1");
  ASSERT_EQ(install.exit_code, 0) << install.output;
  ASSERT_TRUE(PackageInstalled("cohort"));
  ASSERT_TRUE(PackageInstalled("cohort-dev"));
  std::vector<std::string> listed;
  for (const char* package : {"cohort", "cohort-dev"}) {
    for (const std::string& line : Lines(RunCommand(std::string("dpkg -L ") + package).output)) {
      if (!line.empty() && line != "/.") listed.push_back(line);
    }
  }
  EXPECT_NE(std::find(listed.begin(), listed.end(), "/usr/bin/cohort-train"), listed.end());
  // Debian's Python imports the torch.distributed backend with no PYTHONPATH, and it registers.
  CommandResult import = RunCommand(std::string("env -u PYTHONPATH ") + COHORT_PYTHON +
                                    " -c 'import cohort_torch, torch.distributed as d; "
                                    "print(cohort_torch.__file__, d.Backend.COHORT)' 2>&1");
  EXPECT_EQ(import.exit_code, 0) << import.output;
  EXPECT_NE(import.output.find("/usr/lib/python3/dist-packages/cohort_torch"), std::string::npos)
      << import.output;

  ExpectVersions("/usr/bin", scratch_.path());
  RunDemoJobs("/usr/bin", "/usr/share/cohort", scratch_.path() / "jobs");
  BuildAndRunConsumer(scratch_.path(), "/usr/bin:/bin", "");
  BuildAndRunExamples("/usr/share/cohort", scratch_.path() / "examples", "/usr/bin:/bin", "");

  CommandResult purge = RunCommand("timeout 300 dpkg --purge cohort-dev cohort 2>&1");
  ASSERT_EQ(purge.exit_code, 0) << purge.output;
  installed_ = false;
  EXPECT_FALSE(PackageInstalled("cohort"));
  EXPECT_FALSE(PackageInstalled("cohort-dev"));
  EXPECT_EQ(PackageStatus("cohort").find("config-files"), std::string::npos);
  // Every file is gone, and every folder that holds Cohort's name: the shared ones (/usr/bin...)
  // stay, as they should.
  for (const std::string& path : listed) {
    const bool folder_of_its_own = path.find("ohort") != std::string::npos;
    if (!fs::is_directory(fs::symlink_status(path)) || folder_of_its_own) {
      EXPECT_FALSE(fs::exists(fs::symlink_status(path))) << path << " is left after the purge";
    }
  }
  EXPECT_EQ(RunCommand("ldconfig -p | grep libcohort").output, "");
}

}  // namespace
}  // namespace cohort::testing
