#include "testing/cohort_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace cohort::testing {
namespace fs = std::filesystem;

namespace {

fs::path CohortBinary() { return fs::path(COHORT_BINARY_DIR) / "apps" / "cohort" / "cohort"; }
fs::path ReplicaScript() { return fs::path(COHORT_SOURCE_DIR) / "tests" / "e2e" / "replica.sh"; }

pid_t Spawn(const fs::path& home, const fs::path& working_directory,
            const std::vector<std::string>& arguments, const fs::path& output_file) {
  std::vector<std::string> argv = {CohortBinary().string()};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  pid_t pid = fork();
  if (pid == 0) {
    setenv("COHORT_HOME", home.c_str(), 1);
    if (chdir(working_directory.c_str()) != 0) _exit(126);
    int fd = open(output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    std::vector<char*> raw;
    for (std::string& argument : argv) raw.push_back(argument.data());
    raw.push_back(nullptr);
    execv(raw[0], raw.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

CohortSandbox::CohortSandbox() {
  fs::create_directories(home());
  fs::create_directories(root() / "pids");
}

CohortSandbox::~CohortSandbox() = default;

CommandResult CohortSandbox::Cohort(const std::vector<std::string>& arguments,
                                    std::chrono::seconds timeout) const {
  static int counter = 0;
  fs::path output_file = root() / ("output-" + std::to_string(++counter) + ".txt");
  pid_t pid = Spawn(home(), root(), arguments, output_file);
  CommandResult result;
  result.exit_code = WaitForChild(pid, timeout);
  if (result.exit_code == -1) {
    result.timed_out = true;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  result.output = ReadText(output_file);
  return result;
}

pid_t CohortSandbox::StartCohort(const std::vector<std::string>& arguments,
                                 const fs::path& output_file) const {
  return Spawn(home(), root(), arguments, output_file);
}

fs::path CohortSandbox::WriteFile(const std::string& name, const std::string& contents) const {
  fs::path path = root() / name;
  std::ofstream(path) << contents;
  return path;
}

std::map<std::string, pid_t> CohortSandbox::ReplicaPids() const { return PidFiles(".pid"); }

std::map<std::string, pid_t> CohortSandbox::BackgroundChildPids() const {
  return PidFiles(".child");
}

std::map<std::string, pid_t> CohortSandbox::SetsidChildPids() const { return PidFiles(".setsid"); }

std::map<std::string, pid_t> CohortSandbox::PidFiles(const std::string& extension) const {
  std::map<std::string, pid_t> pids;
  for (const auto& entry : fs::directory_iterator(root() / "pids")) {
    if (entry.path().extension() != extension) continue;
    pids[entry.path().stem().string()] =
        static_cast<pid_t>(std::atoi(ReadText(entry.path()).c_str()));
  }
  return pids;
}

int WaitForChildOrStop(pid_t pid, std::chrono::seconds timeout) {
  return WaitForChildOrSignal(pid, timeout, SIGTERM);
}

pid_t FindTrainerProcess(const std::string& job, const std::string& type, int index) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code error;
    const fs::path program = fs::read_symlink(entry.path() / "exe", error).filename();
    if (program != "cohort-train" && program != "taxi-train") continue;
    std::string environment = ReadText(entry.path() / "environ");
    std::replace(environment.begin(), environment.end(), '\0', '\n');
    environment = "\n" + environment;
    if (environment.find("\nCOHORT_JOB_NAME=" + job + "\n") != std::string::npos &&
        environment.find("\nCOHORT_REPLICA_TYPE=" + type + "\n") != std::string::npos &&
        environment.find("\nCOHORT_REPLICA_INDEX=" + std::to_string(index) + "\n") !=
            std::string::npos) {
      return std::stoi(name);
    }
  }
  return -1;
}

std::string Manifest(const std::string& name, const std::string& replicas,
                     const std::string& run_policy, const std::string& spec_fields) {
  std::string text =
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: " + name + "\nspec:\n";
  if (!run_policy.empty()) text += "  runPolicy:\n" + run_policy;
  text += spec_fields;
  return text + "  tfReplicaSpecs:\n" + replicas;
}

std::string ReplicaSpec(const std::string& type, int replicas, const std::string& restart_policy,
                        const std::map<std::string, std::string>& environment) {
  std::ostringstream yaml;
  yaml << "    " << type << ":\n"
       << "      replicas: " << replicas << "\n"
       << "      restartPolicy: " << restart_policy << "\n"
       << "      template:\n"
       << "        spec:\n"
       << "          terminationGracePeriodSeconds: 5\n"
       << "          containers:\n"
       << "            - name: tensorflow\n"
       << "              image: cohort/test-replica\n"
       << "              command: [\"" << ReplicaScript().string() << "\"]\n"
       << "              env:\n"
       << "                - {name: PID_DIR, value: pids}\n";
  for (const auto& [name, value] : environment) {
    yaml << "                - {name: " << name << ", value: \"" << value << "\"}\n";
  }
  return yaml.str();
}

}  // namespace cohort::testing
