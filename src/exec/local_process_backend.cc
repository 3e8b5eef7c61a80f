#include "exec/local_process_backend.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
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

LocalProcessBackend::LocalProcessBackend(Options options) : options_(std::move(options)) {}

LocalProcessBackend::~LocalProcessBackend() {
  signal(SIGCHLD, SIG_DFL);
  for (int& fd : wake_pipe) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

StatusOr<ReplicaState> LocalProcessBackend::Start(const ReplicaStart& request) {
  const job::Job& job = *request.job;
  const ReplicaId& id = request.id;
  Time now = Clock::now();
  std::string name = ShortReplicaName(id.type, id.index);
  std::filesystem::path log_path = options_.logs_directory / (name + ".log");
  if (request.restart_count > 0) {
    std::ofstream log(log_path, std::ios::app);
    log << "===== cohort: restart " << request.restart_count << " of " << name << " at "
        << FormatTime(now) << " (previous exit code " << request.previous_exit_code << ") =====\n";
  }
  processes_.erase(id);  // an exited run is replaced
  StatusOr<const job::Container*> container = ReplicaContainer(job, id.type);
  if (!container.ok()) return container.status();
  StatusOr<std::vector<std::string>> argv = options_.images.CommandFor(**container, name);
  if (!argv.ok()) return argv.status();
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
  std::error_code size_error;
  const std::uintmax_t log_size = std::filesystem::file_size(log_path, size_error);
  StatusOr<pid_t> pid = StartProcess(spec);
  if (!pid.ok()) return pid.status();
  if (options_.on_process_started) options_.on_process_started(*pid);
  Process& process = processes_[id];
  process.pid = *pid;
  process.started_at = now;
  process.started_monotonic_microseconds = std::chrono::duration_cast<std::chrono::microseconds>(
                                               std::chrono::steady_clock::now().time_since_epoch())
                                               .count();
  process.grace_period = GracePeriod(job, id.type);
  process.log_path = log_path;
  process.log_offset = size_error ? 0 : static_cast<size_t>(log_size);
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

void LocalProcessBackend::ReapExited(Time now) {
  for (auto it = processes_.begin(); it != processes_.end();) {
    Process& process = it->second;
    int exit_code = 0;
    int signal = 0;
    if (process.pid > 0 && TryReap(process.pid, &exit_code, &signal)) {
      // The process is gone; stop its group too, so nothing it forked keeps running.
      SignalProcessGroup(process.pid, SIGKILL);
      const pid_t pid = process.pid;
      process.pid = -1;
      process.signal = signal;
      if (process.kill_at && !process.keep_exit) {  // stopped: like a deleted pod, absent now
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
}

void LocalProcessBackend::ExplainExit(Process& process, pid_t pid) {
  // Only the kernel may say it was the OOM killer: a SIGKILL alone may come from anyone.
  process.oom_killed = process.signal == SIGKILL &&
                       KernelLogRecordsOomKill(pid, process.started_monotonic_microseconds);
  process.output_tail.clear();
  if (StatusOr<std::string> tail =
          ReadFileTail(process.log_path, process.log_offset, kOutputTailBytes);
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
  auto until = std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - Clock::now());
  auto timeout = std::max(until + std::chrono::milliseconds(1), std::chrono::milliseconds(0));
  pollfd descriptor{wake_pipe[0], POLLIN, 0};
  poll(&descriptor, 1, static_cast<int>(std::min<int64_t>(timeout.count(), 1 << 30)));
  char drain[64];
  while (read(wake_pipe[0], drain, sizeof drain) > 0) {
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
