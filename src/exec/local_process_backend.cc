#include "exec/local_process_backend.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/file.h"
#include "cluster/peer_report.h"
#include "cluster/summary_location.h"
#include "exec/kernel_log.h"
#include "exec/process.h"
#include "exec/replica_environment.h"
#include "job/variable_references.h"

namespace cohort::exec {
namespace {

// The self-pipe that turns SIGCHLD (and Interrupt()) into poll wake-ups.
int wake_pipe[2] = {-1, -1};

void WakeUp() {
  if (wake_pipe[1] >= 0) {
    ssize_t ignored = write(wake_pipe[1], "x", 1);
    (void)ignored;
  }
}

void OnChildExit(int) { WakeUp(); }

// How much of an exited run's pipe is moved into its log at once: all that the pipe held when it
// exited (at most 1 MiB), with room to spare; bounded, since a leftover process that still
// writes (until EndLeftovers ends it) must not keep the supervisor pumping for ever.
constexpr size_t kDrainBytes = size_t{4} << 20;

// argv as a person would type it: words with spaces or quotes in single quotes.
std::string QuotedCommand(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& word : argv) {
    if (!text.empty()) text += ' ';
    const bool plain = !word.empty() && word.find_first_of(" \t'\"$\\") == std::string::npos;
    if (plain) {
      text += word;
      continue;
    }
    text += '\'';
    for (char c : word) text += c == '\'' ? std::string("'\\''") : std::string(1, c);
    text += '\'';
  }
  return text;
}

}  // namespace

std::chrono::seconds GracePeriod(const job::Job& job, const std::string& replica_type) {
  const nlohmann::json& raw = job.replica_specs.at(replica_type).template_spec.raw;
  const nlohmann::json::json_pointer pointer("/spec/terminationGracePeriodSeconds");
  if (raw.is_object() && raw.contains(pointer) && raw.at(pointer).is_number_integer()) {
    return std::chrono::seconds(std::max<int64_t>(0, raw.at(pointer).get<int64_t>()));
  }
  return std::chrono::seconds(30);  // Kubernetes' default terminationGracePeriodSeconds
}

StatusOr<std::unique_ptr<LocalProcessBackend>> LocalProcessBackend::Create(Options options) {
  if (wake_pipe[0] >= 0) {
    return Status::FailedPrecondition("this process already has a LocalProcessBackend");
  }
  if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Unavailable(std::string("pipe: ") + ErrnoMessage(errno));
  }
  struct sigaction action {};
  action.sa_handler = OnChildExit;
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &action, nullptr);
  return std::unique_ptr<LocalProcessBackend>(new LocalProcessBackend(std::move(options)));
}

LocalProcessBackend::LocalProcessBackend(Options options)
    : options_(std::move(options)), pump_buffer_(size_t{1} << 16) {}

LocalProcessBackend::~LocalProcessBackend() {
  for (auto& [id, process] : processes_) Retire(process);
  signal(SIGCHLD, SIG_DFL);
  for (int& fd : wake_pipe) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

StatusOr<ReplicaLog*> LocalProcessBackend::LogFor(const std::string& name) {
  auto found = logs_.find(name);
  if (found != logs_.end()) return &found->second;
  StatusOr<ReplicaLog> opened =
      ReplicaLog::Open(options_.logs_directory / (name + ".log"), options_.log_rotation);
  if (!opened.ok()) return opened.status();
  return &logs_.emplace(name, std::move(*opened)).first->second;
}

void LocalProcessBackend::Pump(Process& process, size_t budget) {
  size_t moved = 0;
  while (process.output_fd >= 0 && moved < budget) {
    const ssize_t n = read(process.output_fd, pump_buffer_.data(), pump_buffer_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {  // every writer has closed it (or it failed): nothing more will come
      close(process.output_fd);
      process.output_fd = -1;
      return;
    }
    moved += static_cast<size_t>(n);
    StatusOr<ReplicaLog*> log = LogFor(process.name);
    if (log.ok()) {
      IgnoreError((*log)->Append(std::string_view(pump_buffer_.data(), static_cast<size_t>(n))),
                  "a log that cannot be written (a full disk) loses output; the replica runs on");
    }
  }
}

void LocalProcessBackend::Retire(Process& process) {
  Pump(process, kDrainBytes);
  if (process.output_fd >= 0) close(process.output_fd);
  process.output_fd = -1;
}

StatusOr<ReplicaState> LocalProcessBackend::Start(const ReplicaStart& request) {
  const job::Job& job = *request.job;
  const ReplicaId& id = request.id;
  Time now = Clock::now();
  std::string name = ShortReplicaName(id.type, id.index);
  std::filesystem::path log_path = options_.logs_directory / (name + ".log");
  StatusOr<ReplicaLog*> log = LogFor(name);
  if (!log.ok()) return log.status();
  // An exited run is replaced; what it wrote goes into the log before the next run's banner.
  if (auto previous = processes_.find(id); previous != processes_.end()) {
    Retire(previous->second);
    processes_.erase(previous);
  }
  if (request.restart_count > 0) {
    const std::string banner = "===== cohort: restart " + std::to_string(request.restart_count) +
                               " of " + name + " at " + FormatTime(now) + " (previous exit code " +
                               std::to_string(request.previous_exit_code) + ") =====\n";
    COHORT_RETURN_IF_ERROR((*log)->Append(banner));
  }
  StatusOr<const job::Container*> container = ReplicaContainer(job, id.type);
  if (!container.ok()) return container.status();
  StatusOr<std::vector<std::string>> argv = options_.images.CommandFor(**container, name);
  if (!argv.ok()) return argv.status();
  // $(COHORT_JOB_NAME) and the container's other variables, as the kubelet expands them.
  *argv = job::ExpandVariableReferences(*argv,
                                        ArgumentVariables(job, id.type, id.index, options_.ports));
  ProcessSpec spec{*argv,
                   ReplicaEnvironment(job, id.type, id.index, options_.ports, options_.secret),
                   (*container)->working_dir, log_path.string()};
  if (!options_.termination_messages_directory.empty()) {
    // Every run starts with an empty file, as a container's terminationMessagePath does.
    const std::filesystem::path message_path = TerminationMessagePath(id);
    std::error_code error;
    std::filesystem::create_directories(options_.termination_messages_directory, error);
    if (Status emptied = WriteFileInPlace(message_path, ""); !emptied.ok()) return emptied;
    spec.environment[cluster::kTerminationMessagePathVariable] = message_path.string();
  }
  if (!options_.summaries_directory.empty()) {
    // Created by the runtime when it writes; kept across restarts, so that a resumed run's files
    // follow the interrupted run's.
    spec.environment[cluster::kSummaryDirectoryVariable] =
        (options_.summaries_directory / name).string();
  }
  int output[2];
  if (pipe2(output, O_CLOEXEC) != 0) {
    return Status::Unavailable("cannot make the output pipe of " + name + ": " +
                               ErrnoMessage(errno));
  }
  spec.output_fd = output[1];
  (*log)->BeginRun();
  StatusOr<pid_t> pid = StartProcess(spec);
  close(output[1]);
  if (!pid.ok()) {
    close(output[0]);
    return pid.status();
  }
  fcntl(output[0], F_SETFL, O_NONBLOCK);
  // Room for a second of a chatty replica's output while the supervisor is busy elsewhere (the
  // kernel may allow less; the default 64 KiB then holds).
  fcntl(output[0], F_SETPIPE_SZ, 1 << 20);
  if (options_.on_process_started) options_.on_process_started(*pid);
  Process& process = processes_[id];
  process.pid = *pid;
  process.name = name;
  process.output_fd = output[0];
  process.started_at = now;
  process.started_monotonic_microseconds = std::chrono::duration_cast<std::chrono::microseconds>(
                                               std::chrono::steady_clock::now().time_since_epoch())
                                               .count();
  process.grace_period = GracePeriod(job, id.type);
  process.log_path = log_path;
  process.command = QuotedCommand(*argv);
  const std::string mapping = options_.images.DescribeMapping(**container);
  if (!mapping.empty()) process.command += " (" + mapping + ")";
  ReplicaState state;
  state.id = id;
  state.started_at = now;
  state.pid = *pid;
  return state;
}

void LocalProcessBackend::Stop(const ReplicaId& id, StopMode mode) {
  auto it = processes_.find(id);
  if (it == processes_.end()) return;
  Process& process = it->second;
  if (process.pid < 0) {  // exited: like a deleted pod, it just goes away
    Retire(process);
    processes_.erase(it);
    return;
  }
  Time now = Clock::now();
  // A later plain stop (the job is being stopped) makes it absent after all.
  process.keep_exit = mode == StopMode::kAsFailed;
  if (mode == StopMode::kNow) {
    process.kill_at = now;
  } else if (!process.kill_at) {
    SignalProcessGroup(process.pid, SIGTERM);
    process.kill_at = now + process.grace_period;
  }
  EscalateStops(now);
}

int LocalProcessBackend::EndLeftovers() {
  if (!options_.end_leftovers) return 0;
  return EndLeftoverChildren(
      [this](pid_t child) {
        for (const auto& [id, process] : processes_) {
          if (process.pid == child) return true;
        }
        return options_.is_helper && options_.is_helper(child);
      },
      std::chrono::seconds(5));
}

void LocalProcessBackend::ReapExited(Time now) {
  bool any_exited = false;
  for (auto it = processes_.begin(); it != processes_.end();) {
    Process& process = it->second;
    int exit_code = 0;
    int signal = 0;
    if (process.pid > 0 && TryReap(process.pid, &exit_code, &signal)) {
      // The process is gone; stop its group too, so nothing it forked keeps running.
      SignalProcessGroup(process.pid, SIGKILL);
      any_exited = true;
      const pid_t pid = process.pid;
      process.pid = -1;
      process.signal = signal;
      // What it wrote before it exited is in the pipe: into the log before its tail is read.
      Pump(process, kDrainBytes);
      if (process.kill_at && !process.keep_exit) {  // stopped: like a deleted pod, absent now
        Retire(process);
        it = processes_.erase(it);
        continue;
      }
      process.kill_at.reset();
      process.phase = exit_code == 0 ? job::ReplicaPhase::kSucceeded : job::ReplicaPhase::kFailed;
      process.exit_code = exit_code;
      process.finished_at = now;
      ExplainExit(process, pid);
      process.termination_message = ReadTerminationMessage(it->first);
    }
    ++it;
  }
  // What the exited replicas left outside their groups is this process's child by now.
  if (any_exited) EndLeftovers();
}

void LocalProcessBackend::ExplainExit(Process& process, pid_t pid) {
  // Only the kernel may say it was the OOM killer: a SIGKILL alone may come from anyone.
  process.oom_killed = process.signal == SIGKILL &&
                       KernelLogRecordsOomKill(pid, process.started_monotonic_microseconds);
  process.output_tail.clear();
  StatusOr<ReplicaLog*> log = LogFor(process.name);
  const uint64_t run_start = log.ok() ? (*log)->run_start() : 0;
  if (StatusOr<std::string> tail =
          ReadFileTail(process.log_path, static_cast<size_t>(run_start), kOutputTailBytes);
      tail.ok()) {
    std::istringstream lines(*tail);
    std::string line;
    while (std::getline(lines, line)) process.output_tail.push_back(line);
  }
  // 126: found but not executable; 127: not found. Within the first second it is the command
  // itself that could not run, not something it ran later.
  const bool cannot_run = process.exit_code == 126 || process.exit_code == 127;
  if (cannot_run && process.started_at && process.finished_at &&
      *process.finished_at - *process.started_at < std::chrono::seconds(1)) {
    process.exit_hint = "exit code " + std::to_string(process.exit_code) +
                        " within its first second: its command could not be run (" +
                        (process.exit_code == 127 ? "not found" : "not executable") + "); it ran " +
                        process.command;
  } else {
    process.exit_hint.clear();
  }
}

void LocalProcessBackend::EscalateStops(Time now) {
  for (auto& [id, process] : processes_) {
    if (process.pid > 0 && process.kill_at && *process.kill_at <= now) {
      SignalProcessGroup(process.pid, SIGKILL);
    }
  }
}

std::vector<ReplicaState> LocalProcessBackend::Observe() {
  Time now = Clock::now();
  for (auto& [id, process] : processes_) Pump(process, size_t{1} << 20);
  ReapExited(now);
  EscalateStops(now);
  std::vector<ReplicaState> states;
  for (const auto& [id, process] : processes_) {
    ReplicaState state;
    state.id = id;
    state.phase = process.phase;
    state.exit_code = process.exit_code;
    state.started_at = process.started_at;
    state.finished_at = process.finished_at;
    state.stopping = process.kill_at.has_value();
    state.pid = process.pid > 0 ? process.pid : 0;
    state.output_tail = process.output_tail;
    state.exit_hint = process.exit_hint;
    state.signal = process.signal;
    state.oom_killed = process.oom_killed;
    state.termination_message = process.termination_message;
    states.push_back(state);
  }
  return states;
}

void LocalProcessBackend::WaitForChange(Time deadline) {
  Time wake_at = deadline;
  for (const auto& [id, process] : processes_) {
    if (process.pid > 0 && process.kill_at) wake_at = std::min(wake_at, *process.kill_at);
  }
  // Output is moved into the logs while waiting; only an exit (SIGCHLD), Interrupt or the time
  // ends the wait.
  while (true) {
    std::vector<pollfd> descriptors = {pollfd{wake_pipe[0], POLLIN, 0}};
    std::vector<Process*> pumped;
    for (auto& [id, process] : processes_) {
      if (process.output_fd < 0) continue;
      descriptors.push_back(pollfd{process.output_fd, POLLIN, 0});
      pumped.push_back(&process);
    }
    auto until = std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - Clock::now());
    auto timeout = std::max(until + std::chrono::milliseconds(1), std::chrono::milliseconds(0));
    const int ready = poll(descriptors.data(), descriptors.size(),
                           static_cast<int>(std::min<int64_t>(timeout.count(), 1 << 30)));
    if (ready < 0 && errno != EINTR) return;
    for (size_t i = 1; i < descriptors.size(); ++i) {
      if (descriptors[i].revents != 0) Pump(*pumped[i - 1], size_t{1} << 20);
    }
    if (ready > 0 && descriptors[0].revents != 0) {
      char drain[64];
      while (read(wake_pipe[0], drain, sizeof drain) > 0) {
      }
      return;
    }
    if (ready == 0 || Clock::now() >= wake_at) return;
  }
}

void LocalProcessBackend::Interrupt() { WakeUp(); }

std::filesystem::path LocalProcessBackend::TerminationMessagePath(const ReplicaId& id) const {
  return options_.termination_messages_directory /
         (ShortReplicaName(id.type, id.index) + ".termination-log");
}

// What the replica left, cut to Kubernetes' 4096 bytes; a file that is missing, unreadable or
// absurdly large counts as no message, as the replica's exit code still says what happened.
std::string LocalProcessBackend::ReadTerminationMessage(const ReplicaId& id) const {
  if (options_.termination_messages_directory.empty()) return "";
  constexpr size_t kMostRead = 64 * 1024;
  StatusOr<std::string> message = ReadWholeFile(TerminationMessagePath(id), kMostRead);
  if (!message.ok()) return "";
  return message->substr(0, cluster::kMaxTerminationMessageBytes);
}

}  // namespace cohort::exec
