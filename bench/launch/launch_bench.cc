// bench/launch: how fast `cohort run` gets an 8-replica job running, and how much of a job's wall
// time is Cohort's own, beside the floor: the same 8 processes spawned directly, in the same run.
//
//   launch_bench [--replicas 8] [--rounds 20] [--work-ms 200]
//
// For each round:
//  - cohort:  time from exec of `cohort run` until the last replica has started (each replica
//             stamps CLOCK_REALTIME as its first act), and the whole wall time of `cohort run`
//             minus the longest replica's own lifetime (= Cohort's overhead);
//  - direct:  the same measurements for posix_spawn of the same 8 processes plus waitpid.
// Prints medians and the ratio, and last a one-line summary.
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern char** environ;
namespace fs = std::filesystem;

namespace {

int64_t NowNanoseconds() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

pid_t Spawn(const std::vector<std::string>& arguments) {
  std::vector<char*> argv;
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    std::perror("posix_spawn");
    std::exit(1);
  }
  return pid;
}

int WaitFor(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Stamps {
  int64_t last_start = 0;
  int64_t longest_life = 0;
};

Stamps ReadStamps(const fs::path& directory) {
  Stamps stamps;
  for (const auto& entry : fs::directory_iterator(directory)) {
    if (entry.path().extension() != ".start") continue;
    int64_t start = 0, end = 0;
    std::ifstream(entry.path()) >> start;
    fs::path end_path = entry.path();
    std::ifstream(end_path.replace_extension(".end")) >> end;
    stamps.last_start = std::max(stamps.last_start, start);
    stamps.longest_life = std::max(stamps.longest_life, end - start);
  }
  return stamps;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int replicas = 8, rounds = 20, work_ms = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--replicas")
      replicas = std::atoi(argv[i + 1]);
    else if (flag == "--rounds")
      rounds = std::atoi(argv[i + 1]);
    else if (flag == "--work-ms")
      work_ms = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  fs::path self = fs::canonical("/proc/self/exe").parent_path();
  std::string cohort = (self / ".." / ".." / "apps" / "cohort" / "cohort").lexically_normal();
  std::string replica = (self / "bench_replica").string();
  fs::path root = fs::temp_directory_path() / ("cohort-launch-bench-" + std::to_string(getpid()));
  fs::create_directories(root);
  setenv("COHORT_HOME", (root / "home").c_str(), 1);

  std::string manifest =
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: launch\n"
      "spec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: " +
      std::to_string(replicas) +
      "\n      template:\n        spec:\n          containers:\n"
      "            - name: tensorflow\n              image: bench\n"
      "              command: [\"" +
      replica + "\", \"0\", \"" + std::to_string(work_ms) + "\"]\n";
  std::ofstream(root / "job.yaml") << manifest;

  std::vector<double> cohort_launch, cohort_overhead, direct_launch, direct_overhead;
  for (int round = 0; round < rounds; ++round) {
    // Cohort.
    fs::path stamps = root / ("stamps-cohort-" + std::to_string(round));
    fs::create_directories(stamps);
    setenv("STAMP_DIR", stamps.c_str(), 1);
    WaitFor(Spawn(
        {"/bin/sh", "-c", "exec \"$0\" delete launch --ignore-not-found >/dev/null", cohort}));
    int64_t begin = NowNanoseconds();
    pid_t run = Spawn({"/bin/sh", "-c", "exec \"$0\" run \"$1\" >/dev/null 2>&1", cohort,
                       (root / "job.yaml").string()});
    int exit_code = WaitFor(run);
    int64_t end = NowNanoseconds();
    if (exit_code != 0) {
      std::fprintf(stderr, "cohort run failed with exit code %d\n", exit_code);
      return 1;
    }
    Stamps cohort_stamps = ReadStamps(stamps);
    cohort_launch.push_back((cohort_stamps.last_start - begin) / 1e6);
    cohort_overhead.push_back((end - begin - cohort_stamps.longest_life) / 1e6);

    // Direct spawning of the same processes: the floor.
    stamps = root / ("stamps-direct-" + std::to_string(round));
    fs::create_directories(stamps);
    setenv("STAMP_DIR", stamps.c_str(), 1);
    begin = NowNanoseconds();
    std::vector<pid_t> children;
    for (int i = 0; i < replicas; ++i) {
      children.push_back(Spawn({replica, std::to_string(i), std::to_string(work_ms)}));
    }
    for (pid_t child : children) WaitFor(child);
    end = NowNanoseconds();
    Stamps direct_stamps = ReadStamps(stamps);
    direct_launch.push_back((direct_stamps.last_start - begin) / 1e6);
    direct_overhead.push_back((end - begin - direct_stamps.longest_life) / 1e6);
  }
  fs::remove_all(root);

  double launch = Median(cohort_launch), floor_launch = Median(direct_launch);
  double overhead = Median(cohort_overhead), floor_overhead = Median(direct_overhead);
  double wall = overhead + work_ms;
  std::printf("launch: %d replicas, %d rounds, each replica works %d ms (medians)\n", replicas,
              rounds, work_ms);
  std::printf("%-8s %22s %22s\n", "", "start->all running ms", "overhead per job ms");
  std::printf("%-8s %22.2f %22.2f\n", "cohort", launch, overhead);
  std::printf("%-8s %22.2f %22.2f\n", "direct", floor_launch, floor_overhead);
  std::printf("cohort share of a %d ms job's wall time: %.1f%%\n", work_ms,
              100.0 * overhead / wall);
  std::printf("launch: %d replicas running in %.2f ms (goal < 50 ms); %.2f ms above direct spawn\n",
              replicas, launch, launch - floor_launch);
  return 0;
}
