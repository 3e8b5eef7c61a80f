#include "exec/job_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "job/reconciler.h"
#include "job/spec_writer.h"
#include "job/status_json.h"

namespace cohort::exec {
namespace fs = std::filesystem;

fs::path DefaultCohortHome() {
  if (const char* home = std::getenv("COHORT_HOME"); home != nullptr && *home != '\0') return home;
  if (const char* user_home = std::getenv("HOME"); user_home != nullptr && *user_home != '\0') {
    return fs::path(user_home) / ".cohort";
  }
  return ".cohort";
}

namespace {

StatusOr<nlohmann::json> ReadJsonFile(const fs::path& path) {
  StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  nlohmann::json parsed = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Status::InvalidArgument(path.string() + ": not valid JSON");
  return parsed;
}

// A spec written before generations were kept counts as the first.
int64_t GenerationOf(const nlohmann::json& spec) {
  const nlohmann::json* generation = nullptr;
  if (spec.is_object() && spec.contains("metadata") && spec["metadata"].is_object()) {
    auto found = spec["metadata"].find("generation");
    if (found != spec["metadata"].end()) generation = &*found;
  }
  return generation != nullptr && generation->is_number_integer() ? generation->get<int64_t>() : 1;
}

// An exclusive flock on <job>/spec.lock, held while the spec is read, changed and replaced, so that
// two commands changing one job's spec at once both count a generation. (spec.json itself is
// replaced by rename, so a lock on it would lock the old file.)
class SpecWriteLock {
 public:
  static StatusOr<SpecWriteLock> Take(const fs::path& directory) {
    fs::path path = directory / "spec.lock";
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return Status::IOError("cannot open " + path.string() + ": " + ErrnoMessage(errno));
    // Another writer holds it only for one read and one atomic write: wait for it.
    while (flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      Status failed = Status::IOError("cannot lock " + path.string() + ": " + ErrnoMessage(errno));
      close(fd);
      return failed;
    }
    return SpecWriteLock(fd);
  }
  SpecWriteLock(SpecWriteLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  SpecWriteLock& operator=(SpecWriteLock&&) = delete;
  ~SpecWriteLock() {
    if (fd_ >= 0) close(fd_);  // closing the last descriptor releases the flock
  }

 private:
  explicit SpecWriteLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace

fs::path JobStore::JobDirectory(const JobKey& key) const {
  return home_ / "jobs" / key.namespace_name / key.name;
}

fs::path JobStore::LogPath(const JobKey& key, const std::string& replica) const {
  return JobDirectory(key) / "logs" / (replica + ".log");
}

bool JobStore::Exists(const JobKey& key) const {
  return fs::exists(JobDirectory(key) / "spec.json");
}

Status JobStore::CreateJob(const job::Job& job, SupervisorLock* lock) {
  JobKey key{job.metadata.namespace_name, job.metadata.name};
  fs::path directory = JobDirectory(key);
  std::error_code error;
  fs::create_directories(directory.parent_path(), error);
  if (error)
    return Status::IOError("cannot create " + directory.parent_path().string() + ": " +
                           error.message());
  // mkdir is atomic: of two concurrent submissions of the same name, exactly one wins.
  if (mkdir(directory.c_str(), 0755) != 0) {
    if (errno != EEXIST)
      return Status::IOError("cannot create " + directory.string() + ": " + ErrnoMessage(errno));
    StatusOr<job::JobStatus> status = ReadStatus(key);
    std::string state = status.ok() ? job::JobState(*status) : "";
    return Status::AlreadyExists(
        "job " + key.ToString() + " already exists" + (state.empty() ? "" : " (" + state + ")") +
        "; delete it first with `cohort delete " + key.name +
        (key.namespace_name == "default" ? "" : " -n " + key.namespace_name) + "`");
  }
  // From here on a failure removes the directory again, so that it does not hold the name of a
  // job that never became visible.
  Status created = [&]() -> Status {
    COHORT_RETURN_IF_ERROR(lock->Acquire(directory));
    fs::create_directories(directory / "logs", error);
    if (error) {
      return Status::IOError("cannot create " + (directory / "logs").string() + ": " +
                             error.message());
    }
    nlohmann::json spec = job::ToJson(job);
    spec["metadata"]["creationTimestamp"] = FormatTime(Clock::now());
    spec["metadata"]["generation"] = 1;
    return WriteFileAtomically(directory / "spec.json", spec.dump(2) + "\n");
  }();
  if (!created.ok()) {
    *lock = SupervisorLock();
    fs::remove_all(directory, error);
  }
  return created;
}

Status JobStore::DeleteJob(const JobKey& key) {
  fs::path directory = JobDirectory(key);
  if (!fs::exists(directory)) return Status::NotFound("job " + key.ToString() + " not found");
  // Rename first so that readers never see a half-deleted job.
  fs::path doomed = directory;
  doomed += ".deleting." + std::to_string(getpid());
  std::error_code error;
  fs::rename(directory, doomed, error);
  if (error) return Status::IOError("cannot delete " + directory.string() + ": " + error.message());
  fs::remove_all(doomed, error);
  if (error) return Status::IOError("cannot delete " + doomed.string() + ": " + error.message());
  return Status::OK();
}

std::vector<JobKey> JobStore::ListJobs(const std::string& namespace_name) const {
  std::vector<JobKey> keys;
  std::error_code error;
  fs::path jobs = home_ / "jobs";
  for (const auto& namespace_entry : fs::directory_iterator(jobs, error)) {
    std::string current_namespace = namespace_entry.path().filename().string();
    if (!namespace_name.empty() && current_namespace != namespace_name) continue;
    std::error_code inner_error;
    for (const auto& job_entry : fs::directory_iterator(namespace_entry.path(), inner_error)) {
      JobKey key{current_namespace, job_entry.path().filename().string()};
      if (Exists(key)) keys.push_back(key);
    }
  }
  std::sort(keys.begin(), keys.end(), [](const JobKey& a, const JobKey& b) {
    return std::tie(a.namespace_name, a.name) < std::tie(b.namespace_name, b.name);
  });
  return keys;
}

StatusOr<job::Job> JobStore::ReadSpec(const JobKey& key) const {
  if (!Exists(key)) return Status::NotFound("job " + key.ToString() + " not found");
  StatusOr<nlohmann::json> spec = ReadJsonFile(JobDirectory(key) / "spec.json");
  if (!spec.ok()) return spec.status();
  return job::JobFromJson(*spec, nullptr, *kinds_);
}

StatusOr<nlohmann::json> JobStore::ReadSpecObject(const JobKey& key) const {
  StatusOr<std::string> text = ReadWholeFile(JobDirectory(key) / "spec.json");
  if (!text.ok()) return Status::NotFound("job " + key.ToString() + " not found");
  nlohmann::json object = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) {
    return Status::IOError(key.ToString() + ": spec.json is not valid JSON");
  }
  return object;
}

Status JobStore::WriteStatus(const JobKey& key, const job::JobStatus& status) {
  return WriteFileAtomically(JobDirectory(key) / "status.json",
                             job::JobStatusToJson(status).dump(2) + "\n");
}

StatusOr<job::JobStatus> JobStore::ReadStatus(const JobKey& key) const {
  fs::path path = JobDirectory(key) / "status.json";
  if (!fs::exists(path)) return job::JobStatus{};
  StatusOr<nlohmann::json> status = ReadJsonFile(path);
  if (!status.ok()) return status.status();
  return job::JobStatusFromJson(*status);
}

Status JobStore::AppendEvents(const JobKey& key, const std::vector<job::Event>& events) {
  if (events.empty()) return Status::OK();
  std::string lines;
  for (const job::Event& event : events) lines += job::EventToJson(event).dump() + "\n";
  fs::path path = JobDirectory(key) / "events.jsonl";
  // One write of whole lines with O_APPEND: a crash can lose the tail, never tear a line
  // that a reader has already seen.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::IOError("cannot append to " + path.string() + ": " + ErrnoMessage(errno));
  ssize_t written = write(fd, lines.data(), lines.size());
  close(fd);
  if (written != static_cast<ssize_t>(lines.size())) {
    return Status::IOError("short write to " + path.string());
  }
  return Status::OK();
}

StatusOr<std::vector<job::Event>> JobStore::ReadEvents(const JobKey& key) const {
  std::vector<job::Event> events;
  StatusOr<std::string> text = ReadWholeFile(JobDirectory(key) / "events.jsonl");
  if (text.status().code() == Status::Code::kNotFound) return events;
  if (!text.ok()) return text.status();
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json parsed = nlohmann::json::parse(line, nullptr, false);
    if (parsed.is_discarded()) continue;  // a torn last line after a crash
    StatusOr<job::Event> event = job::EventFromJson(parsed);
    if (event.ok()) events.push_back(*event);
  }
  return events;
}

Status JobStore::WriteEndpoints(const JobKey& key, const std::map<std::string, int>& ports) {
  nlohmann::json json = ports;
  return WriteFileAtomically(JobDirectory(key) / "endpoints.json", json.dump(2) + "\n");
}

StatusOr<std::map<std::string, int>> JobStore::ReadEndpoints(const JobKey& key) const {
  StatusOr<nlohmann::json> json = ReadJsonFile(JobDirectory(key) / "endpoints.json");
  if (!json.ok()) return json.status();
  std::map<std::string, int> ports;
  for (const auto& [replica, port] : json->items()) {
    if (!port.is_number_integer())
      return Status::InvalidArgument("endpoints.json: bad port for " + replica);
    ports[replica] = port.get<int>();
  }
  return ports;
}

Time JobStore::CreationTime(const JobKey& key) const {
  StatusOr<nlohmann::json> spec = ReadJsonFile(JobDirectory(key) / "spec.json");
  if (spec.ok()) {
    std::optional<Time> created =
        ParseTime(spec->value("/metadata/creationTimestamp"_json_pointer, std::string()));
    if (created) return *created;
  }
  return Clock::now();
}

Status JobStore::SetSuspended(const JobKey& key, bool suspended) {
  if (!Exists(key)) return Status::NotFound("job " + key.ToString() + " not found");
  StatusOr<SpecWriteLock> lock = SpecWriteLock::Take(JobDirectory(key));
  if (!lock.ok()) return lock.status();
  fs::path path = JobDirectory(key) / "spec.json";
  StatusOr<nlohmann::json> spec = ReadJsonFile(path);
  if (!spec.ok()) return spec.status();
  (*spec)["spec"]["runPolicy"]["suspend"] = suspended;
  (*spec)["metadata"]["generation"] = GenerationOf(*spec) + 1;
  return WriteFileAtomically(path, spec->dump(2) + "\n");
}

int64_t JobStore::SpecVersion(const JobKey& key) const {
  StatusOr<nlohmann::json> spec = ReadJsonFile(JobDirectory(key) / "spec.json");
  return spec.ok() ? GenerationOf(*spec) : 0;
}

Status JobStore::WriteReplicas(const JobKey& key, const std::vector<ReplicaRow>& rows) {
  nlohmann::json table = nlohmann::json::array();
  for (const ReplicaRow& row : rows) {
    nlohmann::json entry = {
        {"name", row.name}, {"phase", row.phase}, {"restarts", row.restarts}, {"port", row.port}};
    if (row.pid > 0) entry["pid"] = row.pid;
    if (row.exit_code) entry["exitCode"] = *row.exit_code;
    if (row.started_at) entry["startedAt"] = FormatTime(*row.started_at);
    if (row.finished_at) entry["finishedAt"] = FormatTime(*row.finished_at);
    if (row.removed) entry["removed"] = true;
    if (!row.last_log_lines.empty()) entry["lastLogLines"] = row.last_log_lines;
    table.push_back(entry);
  }
  std::string text = table.dump(2) + "\n";
  fs::path path = JobDirectory(key) / "replicas.json";
  StatusOr<std::string> current = ReadWholeFile(path);
  if (current.ok() && *current == text) return Status::OK();
  return WriteFileAtomically(path, text);
}

std::vector<ReplicaRow> JobStore::ReadReplicas(const JobKey& key) const {
  std::vector<ReplicaRow> rows;
  StatusOr<nlohmann::json> table = ReadJsonFile(JobDirectory(key) / "replicas.json");
  if (!table.ok() || !table->is_array()) return rows;
  for (const nlohmann::json& entry : *table) {
    if (!entry.is_object()) continue;
    ReplicaRow row;
    row.name = entry.value("name", "");
    row.phase = entry.value("phase", "");
    row.restarts = entry.value("restarts", 0);
    row.port = entry.value("port", 0);
    row.pid = entry.value("pid", 0);
    if (entry.contains("exitCode") && entry["exitCode"].is_number_integer()) {
      row.exit_code = entry["exitCode"].get<int>();
    }
    row.started_at = ParseTime(entry.value("startedAt", ""));
    row.finished_at = ParseTime(entry.value("finishedAt", ""));
    row.removed = entry.value("removed", false);
    if (entry.contains("lastLogLines") && entry["lastLogLines"].is_array()) {
      for (const nlohmann::json& line : entry["lastLogLines"]) {
        if (line.is_string() && row.last_log_lines.size() < kKeptLogLines) {
          row.last_log_lines.push_back(line.get<std::string>());
        }
      }
    }
    rows.push_back(row);
  }
  return rows;
}

std::string JobStore::LogLocation(const JobKey& key, const std::string& replica) const {
  return LogPath(key, replica).string();
}

Status JobStore::WriteSecret(const JobKey& key, const std::string& secret) {
  return WriteFileAtomically(JobDirectory(key) / "secret", secret, 0600);
}

StatusOr<std::string> JobStore::ReadSecret(const JobKey& key) const {
  return ReadWholeFile(JobDirectory(key) / "secret");
}

}  // namespace cohort::exec
