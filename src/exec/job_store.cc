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

// The state files are small; anything larger than this is not one Cohort wrote.
constexpr size_t kMaxStateFileBytes = size_t{64} << 20;

StatusOr<nlohmann::json> ReadJsonFile(const fs::path& path) {
  StatusOr<std::string> text = ReadWholeFile(path, kMaxStateFileBytes);
  if (!text.ok()) return text.status();
  nlohmann::json parsed = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Status::InvalidArgument(path.string() + ": not valid JSON");
  return parsed;
}

// IOError "job NS/NAME is broken: FILE: WHAT", the one form of every corruption a reader finds.
Status Broken(const JobKey& key, const std::string& file, const Status& problem) {
  std::string message = problem.message();
  // ReadJsonFile and ReadWholeFile name the whole path; the job and file name say it shorter.
  const size_t named = message.find(file + ": ");
  if (named != std::string::npos) message.erase(0, named + file.size() + 2);
  return Status::IOError("job " + key.ToString() + " is broken: " + file + ": " + message);
}

// A JSON value's field, only when it is there with the type `is` checks.
const nlohmann::json* Field(const nlohmann::json& object, const char* name,
                            bool (nlohmann::json::*is)() const noexcept) {
  if (!object.is_object()) return nullptr;
  auto found = object.find(name);
  if (found == object.end() || !((*found).*is)()) return nullptr;
  return &*found;
}

// Whether `spec` has what the readers of a saved spec take from it without looking: metadata
// (an object) with a creationTimestamp string, apiVersion and kind strings, labels and
// annotations objects when present.
Status CheckSpecShape(const nlohmann::json& spec) {
  if (!spec.is_object()) return Status::InvalidArgument("must be a JSON object");
  for (const char* name : {"apiVersion", "kind"}) {
    if (Field(spec, name, &nlohmann::json::is_string) == nullptr) {
      return Status::InvalidArgument(std::string(name) + ": must be a string");
    }
  }
  const nlohmann::json* metadata = Field(spec, "metadata", &nlohmann::json::is_object);
  if (metadata == nullptr) return Status::InvalidArgument("metadata: must be an object");
  const nlohmann::json* created = Field(*metadata, "creationTimestamp", &nlohmann::json::is_string);
  if (created == nullptr || !ParseTime(created->get<std::string>())) {
    return Status::InvalidArgument("metadata.creationTimestamp: must be an RFC 3339 time");
  }
  for (const char* name : {"labels", "annotations"}) {
    if (metadata->contains(name) && !(*metadata)[name].is_object()) {
      return Status::InvalidArgument("metadata." + std::string(name) + ": must be an object");
    }
  }
  if (metadata->contains("generation") && !(*metadata)["generation"].is_number_integer()) {
    return Status::InvalidArgument("metadata.generation: must be an integer");
  }
  if (Field(spec, "spec", &nlohmann::json::is_object) == nullptr) {
    return Status::InvalidArgument("spec: must be an object");
  }
  return Status::OK();
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
  if (!CheckJobKey(key).ok()) return false;
  const fs::path directory = JobDirectory(key);
  // The spec is written first; the others only once it was. A directory with none of them is a
  // job still being created (or not one).
  for (const char* file : {"spec.json", "status.json", "endpoints.json", "secret"}) {
    std::error_code error;
    if (fs::exists(directory / file, error)) return true;
  }
  return false;
}

Status JobStore::CreateJob(const job::Job& job, SupervisorLock* lock) {
  JobKey key{job.metadata.namespace_name, job.metadata.name};
  COHORT_RETURN_IF_ERROR(CheckJobKey(key));
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
  COHORT_RETURN_IF_ERROR(CheckJobKey(key));
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
  StatusOr<nlohmann::json> spec = ReadSpecObject(key);
  if (!spec.ok()) return spec.status();
  try {
    StatusOr<job::Job> job = job::JobFromJson(*spec, nullptr, *kinds_);
    if (!job.ok()) return Broken(key, "spec.json", job.status());
    return job;
  } catch (const nlohmann::json::exception& error) {
    return Broken(key, "spec.json", Status::InvalidArgument(error.what()));
  }
}

StatusOr<nlohmann::json> JobStore::ReadSpecObject(const JobKey& key) const {
  if (!Exists(key)) return Status::NotFound("job " + key.ToString() + " not found");
  StatusOr<nlohmann::json> object = ReadJsonFile(JobDirectory(key) / "spec.json");
  if (object.status().code() == Status::Code::kNotFound) {
    return Broken(key, "spec.json",
                  Status::NotFound(
                      "missing (delete the job with `cohort delete " + key.name +
                      (key.namespace_name == "default" ? "" : " -n " + key.namespace_name) + "`)"));
  }
  if (!object.ok()) return Broken(key, "spec.json", object.status());
  if (Status shape = CheckSpecShape(*object); !shape.ok()) return Broken(key, "spec.json", shape);
  return object;
}

Status JobStore::WriteStatus(const JobKey& key, const job::JobStatus& status) {
  return WriteFileAtomically(JobDirectory(key) / "status.json",
                             job::JobStatusToJson(status).dump(2) + "\n");
}

StatusOr<job::JobStatus> JobStore::ReadStatus(const JobKey& key) const {
  fs::path path = JobDirectory(key) / "status.json";
  StatusOr<nlohmann::json> status = ReadJsonFile(path);
  if (status.status().code() == Status::Code::kNotFound) return job::JobStatus{};
  if (!status.ok()) return Broken(key, "status.json", status.status());
  try {
    StatusOr<job::JobStatus> decoded = job::JobStatusFromJson(*status);
    if (!decoded.ok()) return Broken(key, "status.json", decoded.status());
    return decoded;
  } catch (const nlohmann::json::exception& error) {
    return Broken(key, "status.json", Status::InvalidArgument(error.what()));
  }
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
  StatusOr<std::string> text =
      ReadWholeFile(JobDirectory(key) / "events.jsonl", kMaxStateFileBytes);
  if (text.status().code() == Status::Code::kNotFound) return events;
  if (!text.ok()) return Broken(key, "events.jsonl", text.status());
  size_t begin = 0;
  while (begin < text->size()) {
    size_t end = text->find('\n', begin);
    if (end == std::string::npos) end = text->size();
    const std::string_view line(text->data() + begin, end - begin);
    begin = end + 1;
    // A line that does not read back as an event is one a crash tore while appending (the next
    // append then follows it on the same line): it is left out, as the lost tail of a log is.
    nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) continue;
    try {
      StatusOr<job::Event> event = job::EventFromJson(parsed);
      if (event.ok()) events.push_back(*event);
    } catch (const nlohmann::json::exception&) {
      continue;  // the same: a line that is not an event
    }
  }
  return events;
}

Status JobStore::WriteEndpoints(const JobKey& key, const std::map<std::string, int>& ports) {
  nlohmann::json json = ports;
  return WriteFileAtomically(JobDirectory(key) / "endpoints.json", json.dump(2) + "\n");
}

StatusOr<std::map<std::string, int>> JobStore::ReadEndpoints(const JobKey& key) const {
  StatusOr<nlohmann::json> json = ReadJsonFile(JobDirectory(key) / "endpoints.json");
  if (json.status().code() == Status::Code::kNotFound) return json.status();
  if (!json.ok()) return Broken(key, "endpoints.json", json.status());
  if (!json->is_object()) {
    return Broken(key, "endpoints.json", Status::InvalidArgument("must be a JSON object"));
  }
  std::map<std::string, int> ports;
  for (const auto& [replica, port] : json->items()) {
    if (!port.is_number_integer() || port.get<int64_t>() < 1 || port.get<int64_t>() > 65535) {
      return Broken(key, "endpoints.json",
                    Status::InvalidArgument(replica + ": must be a port number (1 to 65535)"));
    }
    if (!CheckName(replica, "replica", "").ok()) {
      return Broken(
          key, "endpoints.json",
          Status::InvalidArgument("\"" + replica.substr(0, 80) + "\" is not a replica name"));
    }
    ports[replica] = static_cast<int>(port.get<int64_t>());
  }
  return ports;
}

Time JobStore::CreationTime(const JobKey& key) const {
  StatusOr<nlohmann::json> spec = ReadSpecObject(key);
  if (spec.ok()) {  // checked: metadata.creationTimestamp is a time
    std::optional<Time> created =
        ParseTime((*spec)["metadata"]["creationTimestamp"].get<std::string>());
    if (created) return *created;
  }
  // A broken job's age is its directory's.
  struct stat info {};
  if (stat(JobDirectory(key).c_str(), &info) == 0) return Clock::from_time_t(info.st_mtime);
  return Clock::now();
}

Status JobStore::SetSuspended(const JobKey& key, bool suspended) {
  if (!Exists(key)) return Status::NotFound("job " + key.ToString() + " not found");
  StatusOr<SpecWriteLock> lock = SpecWriteLock::Take(JobDirectory(key));
  if (!lock.ok()) return lock.status();
  fs::path path = JobDirectory(key) / "spec.json";
  // Read and checked under the lock: only a spec that reads back is changed.
  if (StatusOr<job::Job> job = ReadSpec(key); !job.ok()) return job.status();
  StatusOr<nlohmann::json> spec = ReadSpecObject(key);
  if (!spec.ok()) return spec.status();
  nlohmann::json& run_policy = (*spec)["spec"]["runPolicy"];
  if (!run_policy.is_object()) run_policy = nlohmann::json::object();
  run_policy["suspend"] = suspended;
  (*spec)["metadata"]["generation"] = GenerationOf(*spec) + 1;
  return WriteFileAtomically(path, spec->dump(2) + "\n");
}

int64_t JobStore::SpecVersion(const JobKey& key) const {
  StatusOr<nlohmann::json> spec = ReadSpecObject(key);
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

StatusOr<std::vector<ReplicaRow>> ReplicaTableFromJson(const nlohmann::json& table) {
  if (!table.is_array()) return Status::InvalidArgument("must be a JSON array");
  std::vector<ReplicaRow> rows;
  for (size_t i = 0; i < table.size(); ++i) {
    const nlohmann::json& entry = table[i];
    const std::string at = "[" + std::to_string(i) + "]";
    if (!entry.is_object()) return Status::InvalidArgument(at + ": must be an object");
    ReplicaRow row;
    // Each field, if there, must have its type; name and phase must be there.
    auto text = [&](const char* name, std::string* out, bool required) -> Status {
      auto found = entry.find(name);
      if (found == entry.end()) {
        return required ? Status::InvalidArgument(at + "." + name + ": is required") : Status::OK();
      }
      if (!found->is_string())
        return Status::InvalidArgument(at + "." + name + ": must be a string");
      *out = found->get<std::string>();
      return Status::OK();
    };
    auto number = [&](const char* name, int* out, int64_t most) -> Status {
      auto found = entry.find(name);
      if (found == entry.end()) return Status::OK();
      if (!found->is_number_integer() || found->get<int64_t>() < -most ||
          found->get<int64_t>() > most) {
        return Status::InvalidArgument(at + "." + name + ": must be an integer of at most " +
                                       std::to_string(most));
      }
      *out = static_cast<int>(found->get<int64_t>());
      return Status::OK();
    };
    auto time = [&](const char* name, std::optional<Time>* out) -> Status {
      std::string value;
      COHORT_RETURN_IF_ERROR(text(name, &value, false));
      if (value.empty()) return Status::OK();
      *out = ParseTime(value);
      if (!*out) return Status::InvalidArgument(at + "." + name + ": must be an RFC 3339 time");
      return Status::OK();
    };
    COHORT_RETURN_IF_ERROR(text("name", &row.name, true));
    COHORT_RETURN_IF_ERROR(text("phase", &row.phase, true));
    COHORT_RETURN_IF_ERROR(number("restarts", &row.restarts, 1000000000));
    COHORT_RETURN_IF_ERROR(number("port", &row.port, 65535));
    COHORT_RETURN_IF_ERROR(number("pid", &row.pid, 1 << 30));
    if (entry.contains("exitCode")) {
      int exit_code = 0;
      COHORT_RETURN_IF_ERROR(number("exitCode", &exit_code, 1 << 30));
      row.exit_code = exit_code;
    }
    COHORT_RETURN_IF_ERROR(time("startedAt", &row.started_at));
    COHORT_RETURN_IF_ERROR(time("finishedAt", &row.finished_at));
    if (auto removed = entry.find("removed"); removed != entry.end()) {
      if (!removed->is_boolean())
        return Status::InvalidArgument(at + ".removed: must be a boolean");
      row.removed = removed->get<bool>();
    }
    if (auto lines = entry.find("lastLogLines"); lines != entry.end()) {
      if (!lines->is_array()) {
        return Status::InvalidArgument(at + ".lastLogLines: must be an array of strings");
      }
      for (const nlohmann::json& line : *lines) {
        if (!line.is_string()) {
          return Status::InvalidArgument(at + ".lastLogLines: must be an array of strings");
        }
        if (row.last_log_lines.size() < kKeptLogLines) {
          row.last_log_lines.push_back(line.get<std::string>());
        }
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

StatusOr<std::vector<ReplicaRow>> JobStore::ReadReplicaTable(const JobKey& key) const {
  StatusOr<nlohmann::json> table = ReadJsonFile(JobDirectory(key) / "replicas.json");
  if (table.status().code() == Status::Code::kNotFound) return std::vector<ReplicaRow>{};
  if (!table.ok()) return Broken(key, "replicas.json", table.status());
  StatusOr<std::vector<ReplicaRow>> rows = ReplicaTableFromJson(*table);
  if (!rows.ok()) return Broken(key, "replicas.json", rows.status());
  return rows;
}

std::vector<ReplicaRow> JobStore::ReadReplicas(const JobKey& key) const {
  StatusOr<std::vector<ReplicaRow>> rows = ReadReplicaTable(key);
  return rows.ok() ? std::move(*rows) : std::vector<ReplicaRow>{};
}

Status JobStore::Health(const JobKey& key) const {
  if (!Exists(key)) return Status::NotFound("job " + key.ToString() + " not found");
  COHORT_RETURN_IF_ERROR(ReadSpec(key).status());
  COHORT_RETURN_IF_ERROR(ReadStatus(key).status());
  COHORT_RETURN_IF_ERROR(ReadReplicaTable(key).status());
  if (StatusOr<std::map<std::string, int>> ports = ReadEndpoints(key);
      !ports.ok() && ports.status().code() != Status::Code::kNotFound) {
    return ports.status();
  }
  return Status::OK();
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
