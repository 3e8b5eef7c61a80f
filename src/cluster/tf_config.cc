#include "cluster/tf_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/utf8.h"

namespace cohort::cluster {
namespace {

using Json = nlohmann::json;

// TF_CONFIG is an environment variable, which Linux caps at 128 KiB; a bigger input is not a
// TF_CONFIG. The depth bound keeps hostile input from recursing through the JSON library, and is
// far above the 3 levels TF_CONFIG uses (extras such as AI Platform's task.job nest a few more).
constexpr size_t kMaxInputBytes = 1 << 20;
constexpr int kMaxDepth = 64;
constexpr int kMaxPort = 65535;
constexpr size_t kMaxDescribedChars = 40;

// ---- Writing, as Go's encoding/json writes ----

void AppendUnicodeEscape(unsigned code, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->append("\\u");
  for (int shift = 12; shift >= 0; shift -= 4) out->push_back(kHex[(code >> shift) & 0xF]);
}

// Appends `text` as a JSON string the way Go's json.Marshal does (Go 1.22 and later): the
// operator's bytes, HTML escaping of <, > and & included, and invalid UTF-8 as \ufffd.
void AppendJsonString(std::string_view text, std::string* out) {
  out->push_back('"');
  size_t position = 0;
  while (position < text.size()) {
    const unsigned char byte = static_cast<unsigned char>(text[position]);
    if (byte < 0x80) {
      switch (byte) {
        case '"':
          out->append("\\\"");
          break;
        case '\\':
          out->append("\\\\");
          break;
        case '\b':
          out->append("\\b");
          break;
        case '\f':
          out->append("\\f");
          break;
        case '\n':
          out->append("\\n");
          break;
        case '\r':
          out->append("\\r");
          break;
        case '\t':
          out->append("\\t");
          break;
        case '<':
        case '>':
        case '&':
          AppendUnicodeEscape(byte, out);
          break;
        default:
          if (byte < 0x20) {
            AppendUnicodeEscape(byte, out);
          } else {
            out->push_back(static_cast<char>(byte));
          }
      }
      ++position;
      continue;
    }
    const size_t length = Utf8SequenceLength(text, position);
    if (length == 0) {
      AppendUnicodeEscape(0xFFFD, out);
      ++position;
      continue;
    }
    // U+2028 and U+2029 (E2 80 A8/A9) end lines in JavaScript; Go escapes them.
    if (length == 3 && byte == 0xE2 && static_cast<unsigned char>(text[position + 1]) == 0x80 &&
        (static_cast<unsigned char>(text[position + 2]) & 0xFE) == 0xA8) {
      AppendUnicodeEscape(0x2028 + (static_cast<unsigned char>(text[position + 2]) - 0xA8), out);
    } else {
      out->append(text.substr(position, length));
    }
    position += length;
  }
  out->push_back('"');
}

void AppendStringList(const std::vector<std::string>& items, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendJsonString(items[i], out);
  }
  out->push_back(']');
}

void AppendDenseCluster(const ClusterSpec& cluster, std::string* out) {
  out->append("\"cluster\":{");
  bool first = true;
  for (const auto& [type, endpoints] : cluster.jobs) {
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(type, out);
    out->push_back(':');
    AppendStringList(endpoints, out);
  }
  out->push_back('}');
}

void AppendSparseCluster(const TfConfig& config, std::string* out) {
  out->append("\"sparseCluster\":{\"worker\":{");
  // Go writes map keys in the sorted order of their text, so worker 10 comes before worker 2.
  std::vector<std::pair<std::string, const std::string*>> workers;
  for (const auto& [index, endpoint] : config.sparse_workers) {
    workers.emplace_back(std::to_string(index), &endpoint);
  }
  std::sort(workers.begin(), workers.end());
  for (size_t i = 0; i < workers.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendJsonString(workers[i].first, out);
    out->push_back(':');
    AppendJsonString(*workers[i].second, out);
  }
  out->append("},\"ps\":");
  if (config.sparse_ps.empty() && config.task.type == "worker") {
    out->append("null");
  } else {
    AppendStringList(config.sparse_ps, out);
  }
  out->push_back('}');
}

void AppendTask(const TaskId& task, std::string* out) {
  out->append("\"task\":{\"type\":");
  AppendJsonString(task.type, out);
  out->append(",\"index\":");
  out->append(std::to_string(task.index));
  out->push_back('}');
}

void AppendStringMember(const char* key, const std::string& value, std::string* out) {
  out->push_back(',');
  AppendJsonString(key, out);
  out->push_back(':');
  AppendJsonString(value, out);
}

// ---- Reading ----

Status Invalid(const std::string& problem) {
  return Status::InvalidArgument("TF_CONFIG: " + problem);
}

Status InvalidAt(const std::string& path, const std::string& problem) {
  return Invalid(path + ": " + problem);
}

std::string Quoted(std::string_view text) {
  std::string quoted;
  AppendJsonString(text, &quoted);
  return quoted;
}

// The path of member `key` of the value at `parent`: cluster.worker, or cluster["my job"] when
// the key is not a plain name.
std::string MemberPath(const std::string& parent, const std::string& key) {
  bool plain = !key.empty() && !std::isdigit(static_cast<unsigned char>(key[0]));
  for (char c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') plain = false;
  }
  if (plain) return parent + "." + key;
  return parent + "[" + Quoted(key) + "]";
}

std::string ElementPath(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

// A short rendering of a value for "got ..." in messages.
std::string Describe(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() <= kMaxDescribedChars) return text;
  // Cut at a character boundary, so the message stays valid UTF-8.
  size_t cut = kMaxDescribedChars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

std::string CountOf(size_t count, const char* noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

bool AllDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

// Decimal digits to a value no larger than `limit`, or nullopt.
std::optional<int64_t> DigitsValue(std::string_view digits, int64_t limit) {
  if (!AllDigits(digits)) return std::nullopt;
  int64_t value = 0;
  for (char c : digits) {
    value = value * 10 + (c - '0');
    if (value > limit) return std::nullopt;
  }
  return value;
}

// Refuses input too big or too deeply nested for the JSON library to be handed safely. Brackets
// inside strings do not count; malformed input is left for the parser to report.
Status CheckSizeAndDepth(const std::string& text) {
  if (text.size() > kMaxInputBytes) {
    return Invalid(std::to_string(text.size()) + " bytes is more than the " +
                   std::to_string(kMaxInputBytes) + " a TF_CONFIG may have");
  }
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) {
        return Invalid("JSON nested deeper than " + std::to_string(kMaxDepth) + " levels at byte " +
                       std::to_string(i));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return Status::OK();
}

// The library's message without its "[json.exception.parse_error.101] " tag.
std::string LibraryMessage(const Json::exception& error) {
  std::string message = error.what();
  const size_t tag_end = message.find("] ");
  if (tag_end != std::string::npos) message = message.substr(tag_end + 2);
  return message;
}

StatusOr<Json> ParseJson(const std::string& text) {
  COHORT_RETURN_IF_ERROR(CheckSizeAndDepth(text));
  if (std::all_of(text.begin(), text.end(),
                  [](char c) { return std::isspace(static_cast<unsigned char>(c)); })) {
    return Status::InvalidArgument(
        "TF_CONFIG is set but empty; leave it unset for a single process");
  }
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& error) {
    return Invalid("invalid JSON at byte " + std::to_string(error.byte) + ": " +
                   LibraryMessage(error));
  } catch (const Json::exception& error) {
    return Invalid("invalid JSON: " + LibraryMessage(error));  // e.g. a number too large
  }
}

StatusOr<std::string> ParseEndpoint(const Json& value, const std::string& path) {
  if (!value.is_string()) {
    return InvalidAt(path, "expected a string \"host:port\", got " + Describe(value));
  }
  std::string endpoint = value.get<std::string>();
  if (std::optional<std::string> problem = EndpointProblem(endpoint)) {
    return InvalidAt(path, Quoted(endpoint) + " is not \"host:port\": " + *problem);
  }
  return endpoint;
}

// A task index written as an object key, as in tf.train.ClusterSpec's {index: address} form.
StatusOr<int> ParseIndexKey(const std::string& key, const std::string& path) {
  std::optional<int64_t> value = DigitsValue(key, std::numeric_limits<int>::max());
  if (!value) {
    return InvalidAt(path, "expected a task index (decimal digits) as key, got " + Quoted(key));
  }
  return static_cast<int>(*value);
}

// The {index: address} form of a job, which must cover every index from 0 up.
StatusOr<std::vector<std::string>> ParseIndexedTasks(const Json& tasks, const std::string& path) {
  std::map<int, std::string> by_index;
  for (const auto& [key, value] : tasks.items()) {
    const std::string task_path = MemberPath(path, key);
    StatusOr<int> index = ParseIndexKey(key, task_path);
    if (!index.ok()) return index.status();
    StatusOr<std::string> endpoint = ParseEndpoint(value, task_path);
    if (!endpoint.ok()) return endpoint.status();
    if (!by_index.emplace(*index, std::move(*endpoint)).second) {
      return InvalidAt(path, "task index " + std::to_string(*index) + " is written twice");
    }
  }
  std::vector<std::string> endpoints;
  for (auto& [index, endpoint] : by_index) {
    if (index != static_cast<int>(endpoints.size())) {
      return InvalidAt(path, "task " + std::to_string(endpoints.size()) +
                                 " is missing; Cohort needs every index from 0 up (a sparse "
                                 "cluster belongs in \"sparseCluster\")");
    }
    endpoints.push_back(std::move(endpoint));
  }
  return endpoints;
}

StatusOr<std::vector<std::string>> ParseJobTasks(const Json& tasks, const std::string& path) {
  if (tasks.is_object()) return ParseIndexedTasks(tasks, path);
  if (!tasks.is_array()) {
    return InvalidAt(path, "expected a list of \"host:port\", got " + Describe(tasks));
  }
  std::vector<std::string> endpoints;
  for (size_t i = 0; i < tasks.size(); ++i) {
    StatusOr<std::string> endpoint = ParseEndpoint(tasks[i], ElementPath(path, i));
    if (!endpoint.ok()) return endpoint.status();
    endpoints.push_back(std::move(*endpoint));
  }
  return endpoints;
}

// The roles TensorFlow allows only once: multi_worker_util refuses a second chief or evaluator,
// Estimator a second master or a chief beside a master.
Status CheckSingleRoles(const ClusterSpec& cluster) {
  for (const char* type : {"chief", "master", "evaluator"}) {
    const int count = cluster.NumTasks(type);
    if (count > 1) {
      return InvalidAt(std::string("cluster.") + type,
                       CountOf(count, "task") + "; there can be at most one " + type);
    }
  }
  if (cluster.jobs.count("chief") > 0 && cluster.jobs.count("master") > 0) {
    return Invalid("cluster has both chief and master; they are two names for one role");
  }
  return Status::OK();
}

StatusOr<ClusterSpec> ParseCluster(const Json& value) {
  if (!value.is_object()) {
    return InvalidAt("cluster", "expected an object mapping task type to \"host:port\" list, got " +
                                    Describe(value));
  }
  ClusterSpec cluster;
  for (const auto& [type, tasks] : value.items()) {
    if (type.empty()) return InvalidAt("cluster", "a task type is the empty string");
    StatusOr<std::vector<std::string>> endpoints =
        ParseJobTasks(tasks, MemberPath("cluster", type));
    if (!endpoints.ok()) return endpoints.status();
    cluster.jobs.emplace(type, std::move(*endpoints));
  }
  COHORT_RETURN_IF_ERROR(CheckSingleRoles(cluster));
  return cluster;
}

StatusOr<int> ParseTaskIndex(const Json& value) {
  const std::string path = "task.index";
  const int64_t limit = std::numeric_limits<int>::max();
  auto in_range = [&](int64_t index) -> StatusOr<int> {
    if (index < 0) return Invalid(path + " " + std::to_string(index) + " is negative");
    if (index > limit) return Invalid(path + " " + std::to_string(index) + " is too large");
    return static_cast<int>(index);
  };
  if (value.is_number_unsigned()) {
    const uint64_t index = value.get<uint64_t>();
    if (index > static_cast<uint64_t>(limit))
      return Invalid(path + " " + Describe(value) + " is too large");
    return static_cast<int>(index);
  }
  if (value.is_number_integer()) return in_range(value.get<int64_t>());
  if (value.is_number_float()) {
    const double index = value.get<double>();
    // int() would truncate 1.5 to 1; a fraction here is a mistake, not an index.
    if (std::trunc(index) != index) {
      return InvalidAt(path, "expected an integer, got " + Describe(value));
    }
    if (std::fabs(index) > static_cast<double>(limit)) {
      return Invalid(path + " " + Describe(value) + " is out of range");
    }
    return in_range(static_cast<int64_t>(index));
  }
  if (value.is_string()) {
    // TF calls int() on the index, so "1" is as good as 1.
    std::string_view text = value.get_ref<const std::string&>();
    const bool negative = !text.empty() && text[0] == '-';
    if (negative) text.remove_prefix(1);
    if (!AllDigits(text)) return InvalidAt(path, "expected an integer, got " + Describe(value));
    std::optional<int64_t> index = DigitsValue(text, limit);
    if (!index) return Invalid(path + " " + Describe(value) + " is too large");
    return in_range(negative ? -*index : *index);
  }
  return InvalidAt(path, "expected an integer, got " + Describe(value));
}

// Reads "task". `cluster_is_empty` relaxes the rules as TensorFlow does for a single process:
// the index may then be left out.
Status ParseTask(const Json& value, bool cluster_is_empty, TaskId* task) {
  if (!value.is_object()) {
    return InvalidAt("task",
                     "expected an object {\"type\": ..., \"index\": ...}, got " + Describe(value));
  }
  const auto type = value.find("type");
  const auto index = value.find("index");
  if (type == value.end()) {
    if (index != value.end()) return Invalid("task.type is missing");
    return Status::OK();  // {} names no task, as TF's resolver reads it.
  }
  if (!type->is_string())
    return InvalidAt("task.type", "expected a string, got " + Describe(*type));
  task->type = type->get<std::string>();
  if (task->type.empty()) return Invalid("task.type is empty");
  if (index == value.end()) {
    if (!cluster_is_empty) return Invalid("task.index is missing");
    task->index = 0;
    return Status::OK();
  }
  StatusOr<int> parsed_index = ParseTaskIndex(*index);
  if (!parsed_index.ok()) return parsed_index.status();
  task->index = *parsed_index;
  return Status::OK();
}

std::string JobNames(const ClusterSpec& cluster) {
  std::string names;
  for (const auto& [type, endpoints] : cluster.jobs) {
    if (!names.empty()) names += ", ";
    names += type;
  }
  return names;
}

// The task must be one of the cluster's, except an evaluator, which TF1 keeps outside it.
Status CheckTaskInCluster(const TfConfig& config) {
  const TaskId& task = config.task;
  if (task.type.empty() || config.cluster.jobs.empty()) return Status::OK();
  const auto job = config.cluster.jobs.find(task.type);
  if (job == config.cluster.jobs.end()) {
    if (task.type == "evaluator") return Status::OK();
    return Invalid("task.type " + Quoted(task.type) + " is not in cluster (" +
                   JobNames(config.cluster) + ")");
  }
  if (task.index >= static_cast<int>(job->second.size())) {
    return Invalid("task.index " + std::to_string(task.index) +
                   " is out of range: " + MemberPath("cluster", task.type) + " has " +
                   CountOf(job->second.size(), "task"));
  }
  return Status::OK();
}

Status ParseSparseWorkers(const Json& value, TfConfig* config) {
  const std::string path = "sparseCluster.worker";
  if (value.is_null()) return Status::OK();  // a nil Go map
  if (!value.is_object()) {
    return InvalidAt(
        path, "expected an object mapping task index to \"host:port\", got " + Describe(value));
  }
  for (const auto& [key, endpoint_value] : value.items()) {
    const std::string task_path = MemberPath(path, key);
    StatusOr<int> index = ParseIndexKey(key, task_path);
    if (!index.ok()) return index.status();
    StatusOr<std::string> endpoint = ParseEndpoint(endpoint_value, task_path);
    if (!endpoint.ok()) return endpoint.status();
    if (!config->sparse_workers.emplace(*index, std::move(*endpoint)).second) {
      return InvalidAt(path, "task index " + std::to_string(*index) + " is written twice");
    }
  }
  return Status::OK();
}

Status ParseSparsePs(const Json& value, TfConfig* config) {
  const std::string path = "sparseCluster.ps";
  if (value.is_null()) return Status::OK();  // a nil Go slice: a worker of a job with no ps
  if (!value.is_array()) {
    return InvalidAt(path, "expected a list of \"host:port\", got " + Describe(value));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    StatusOr<std::string> endpoint = ParseEndpoint(value[i], ElementPath(path, i));
    if (!endpoint.ok()) return endpoint.status();
    config->sparse_ps.push_back(std::move(*endpoint));
  }
  return Status::OK();
}

Status ParseSparseCluster(const Json& value, TfConfig* config) {
  if (!value.is_object()) {
    return InvalidAt(
        "sparseCluster",
        "expected an object {\"worker\": {...}, \"ps\": [...]}, got " + Describe(value));
  }
  config->sparse = true;
  for (const auto& [key, member] : value.items()) {
    if (key == "worker") {
      COHORT_RETURN_IF_ERROR(ParseSparseWorkers(member, config));
    } else if (key == "ps") {
      COHORT_RETURN_IF_ERROR(ParseSparsePs(member, config));
    } else {
      return InvalidAt(MemberPath("sparseCluster", key),
                       "a sparse cluster lists only \"worker\" and \"ps\"");
    }
  }
  return Status::OK();
}

// A worker of a sparse cluster knows at least itself.
Status CheckTaskInSparseCluster(const TfConfig& config) {
  if (config.task.type != "worker" || config.sparse_workers.count(config.task.index) > 0) {
    return Status::OK();
  }
  return Invalid("task " + config.task.ToString() + " is not in sparseCluster.worker");
}

// A string member that TensorFlow reads as "absent" when it is missing or null.
Status ParseOptionalString(const Json& root, const char* key, std::string* out) {
  const auto member = root.find(key);
  if (member == root.end() || member->is_null()) return Status::OK();
  if (!member->is_string()) return InvalidAt(key, "expected a string, got " + Describe(*member));
  *out = member->get<std::string>();
  return Status::OK();
}

StatusOr<TfConfig> ParseTfConfigObject(const Json& root) {
  if (!root.is_object()) return Invalid("expected a JSON object, got " + Describe(root));
  TfConfig config;
  const auto cluster = root.find("cluster");
  const auto sparse_cluster = root.find("sparseCluster");
  if (cluster != root.end() && sparse_cluster != root.end()) {
    return Invalid("has both \"cluster\" and \"sparseCluster\"; write one");
  }
  if (cluster != root.end()) {
    StatusOr<ClusterSpec> parsed = ParseCluster(*cluster);
    if (!parsed.ok()) return parsed.status();
    config.cluster = std::move(*parsed);
  } else if (sparse_cluster != root.end()) {
    COHORT_RETURN_IF_ERROR(ParseSparseCluster(*sparse_cluster, &config));
  }
  const auto task = root.find("task");
  if (task != root.end()) {
    const bool cluster_is_empty = config.cluster.jobs.empty() && !config.sparse;
    COHORT_RETURN_IF_ERROR(ParseTask(*task, cluster_is_empty, &config.task));
  }
  COHORT_RETURN_IF_ERROR(config.sparse ? CheckTaskInSparseCluster(config)
                                       : CheckTaskInCluster(config));
  COHORT_RETURN_IF_ERROR(ParseOptionalString(root, "rpc_layer", &config.rpc_layer));
  COHORT_RETURN_IF_ERROR(ParseOptionalString(root, "environment", &config.environment));
  return config;
}

// Parses the port of an endpoint: decimal digits, 1-65535.
std::optional<std::string> PortProblem(std::string_view port) {
  if (port.empty()) return "the port is missing";
  if (!AllDigits(port)) return "port " + Quoted(port) + " is not a number";
  std::optional<int64_t> value = DigitsValue(port, kMaxPort);
  if (!value || *value == 0) return "port " + std::string(port) + " is out of range 1-65535";
  return std::nullopt;
}

bool IsHostNameCharacter(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

bool IsIpv6Character(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
}

}  // namespace

std::string FormatTfConfig(const TfConfig& config) {
  std::string out = "{";
  if (config.sparse) {
    AppendSparseCluster(config, &out);
  } else {
    AppendDenseCluster(config.cluster, &out);
  }
  if (!config.task.type.empty()) {
    out.push_back(',');
    AppendTask(config.task, &out);
  }
  if (!config.rpc_layer.empty()) AppendStringMember("rpc_layer", config.rpc_layer, &out);
  if (!config.environment.empty()) AppendStringMember("environment", config.environment, &out);
  out.push_back('}');
  return out;
}

StatusOr<TfConfig> ParseTfConfig(const std::string& json) {
  StatusOr<Json> root = ParseJson(json);
  if (!root.ok()) return root.status();
  try {
    return ParseTfConfigObject(*root);
  } catch (const Json::exception& error) {
    // Every access above checks the type first; this only keeps a library surprise from crossing
    // the module boundary as an exception.
    return Invalid("unreadable: " + LibraryMessage(error));
  }
}

StatusOr<TfConfig> TfConfigFromEnvironment() {
  const char* text = std::getenv("TF_CONFIG");
  if (text == nullptr) return TfConfig{};
  return ParseTfConfig(text);
}

std::optional<std::string> EndpointProblem(const std::string& endpoint) {
  if (endpoint.empty()) return std::string("it is empty");
  if (endpoint[0] == '[') {
    const size_t close = endpoint.find(']');
    if (close == std::string::npos) return std::string("the IPv6 host has no closing ']'");
    const std::string_view host = std::string_view(endpoint).substr(1, close - 1);
    if (host.find(':') == std::string_view::npos ||
        !std::all_of(host.begin(), host.end(), IsIpv6Character)) {
      return "[" + std::string(host) + "] is not an IPv6 address";
    }
    if (close + 1 >= endpoint.size() || endpoint[close + 1] != ':') {
      return std::string("the port is missing");
    }
    return PortProblem(std::string_view(endpoint).substr(close + 2));
  }
  const size_t scheme = endpoint.find("://");
  if (scheme != std::string::npos) {
    return "write it without the \"" + endpoint.substr(0, scheme + 3) + "\" scheme";
  }
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos) return std::string("the port is missing");
  const std::string_view host = std::string_view(endpoint).substr(0, colon);
  if (host.empty()) return std::string("the host is missing");
  if (host.find(':') != std::string_view::npos) {
    return std::string("an IPv6 host needs brackets, as in [::1]:2222");
  }
  const auto bad = std::find_if_not(host.begin(), host.end(), IsHostNameCharacter);
  if (bad != host.end()) {
    return "the host has " + Quoted(std::string_view(&*bad, 1)) + ", which no host name has";
  }
  return PortProblem(std::string_view(endpoint).substr(colon + 1));
}

TaskId ChiefTask(const ClusterSpec& cluster) {
  for (const char* type : {"chief", "master", "worker"}) {
    if (cluster.NumTasks(type) > 0) return TaskId{type, 0};
  }
  return TaskId{};
}

bool IsChief(const TfConfig& config) {
  const TaskId& task = config.task;
  if (task.type == "evaluator") return true;
  if (config.sparse) return (task.type == "chief" || task.type == "master") && task.index == 0;
  if (config.cluster.jobs.empty()) return true;
  const TaskId chief = ChiefTask(config.cluster);
  return !chief.type.empty() && task == chief;
}

std::vector<TaskId> WorkerTasks(const ClusterSpec& cluster) {
  std::vector<TaskId> tasks;
  for (const char* type : {"chief", "master", "worker"}) {
    for (int index = 0; index < cluster.NumTasks(type); ++index) tasks.push_back({type, index});
  }
  return tasks;
}

int NumWorkers(const ClusterSpec& cluster) {
  return cluster.NumTasks("chief") + cluster.NumTasks("master") + cluster.NumTasks("worker");
}

std::optional<int> WorkerRank(const ClusterSpec& cluster, const TaskId& task) {
  const std::vector<TaskId> tasks = WorkerTasks(cluster);
  const auto found = std::find(tasks.begin(), tasks.end(), task);
  if (found == tasks.end()) return std::nullopt;
  return static_cast<int>(found - tasks.begin());
}

}  // namespace cohort::cluster
