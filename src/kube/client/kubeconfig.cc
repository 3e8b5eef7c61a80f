#include "kube/client/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <map>

#include "base/file.h"
#include "kube/client/base64.h"

namespace cohort::kube {
namespace {

namespace fs = std::filesystem;

// One named entry of clusters, users or contexts, and where it was written.
struct Entry {
  YAML::Node body;  // the "cluster", "user" or "context" mapping
  fs::path file;
  std::string field;  // "users[gke].user"
};

struct MergedConfig {
  std::map<std::string, Entry> clusters;
  std::map<std::string, Entry> users;
  std::map<std::string, Entry> contexts;
  std::string current_context;
  std::vector<fs::path> files;
};

std::string Where(const fs::path& file, const YAML::Node& node) {
  std::string where = file.string();
  if (node.IsDefined() && !node.Mark().is_null()) {
    where +=
        ":" + std::to_string(node.Mark().line + 1) + ":" + std::to_string(node.Mark().column + 1);
  }
  return where;
}

Status FieldError(const Entry& entry, const YAML::Node& node, const std::string& key,
                  const std::string& problem) {
  const YAML::Node& at = node.IsDefined() && !node.Mark().is_null() ? node : entry.body;
  return Status::InvalidArgument(Where(entry.file, at) + ": " + entry.field + "." + key + ": " +
                                 problem);
}

// The text of `entry.body[key]`; "" when it is absent or null.
StatusOr<std::string> Text(const Entry& entry, const std::string& key) {
  YAML::Node node = entry.body[key];
  if (!node.IsDefined() || node.IsNull()) return std::string();
  if (!node.IsScalar()) return FieldError(entry, node, key, "must be a string");
  return node.Scalar();
}

StatusOr<bool> Bool(const Entry& entry, const std::string& key) {
  StatusOr<std::string> text = Text(entry, key);
  if (!text.ok()) return text.status();
  if (text->empty() || *text == "false") return false;
  if (*text == "true") return true;
  return FieldError(entry, entry.body[key], key, "must be true or false, not \"" + *text + "\"");
}

// A path as written in `entry`'s file, resolved against that file's directory.
fs::path ResolvePath(const Entry& entry, const std::string& path) {
  fs::path written(path);
  if (written.is_absolute() || path.empty()) return written;
  return (entry.file.parent_path() / written).lexically_normal();
}

// `key`-data (base64) or `key` (a file), as bytes; "" when neither is set.
StatusOr<std::string> DataOrFile(const Entry& entry, const std::string& key) {
  StatusOr<std::string> data = Text(entry, key + "-data");
  if (!data.ok()) return data.status();
  if (!data->empty()) {
    StatusOr<std::string> decoded = DecodeBase64(*data, entry.field + "." + key + "-data");
    if (!decoded.ok()) {
      return Status::InvalidArgument(Where(entry.file, entry.body[key + "-data"]) + ": " +
                                     decoded.status().message());
    }
    return decoded;
  }
  StatusOr<std::string> path = Text(entry, key);
  if (!path.ok()) return path.status();
  if (path->empty()) return std::string();
  StatusOr<std::string> contents =
      ReadWholeFile(ResolvePath(entry, *path), kMaxCredentialFileBytes);
  if (!contents.ok()) {
    return contents.status().WithContext(Where(entry.file, entry.body[key]) + ": " + entry.field +
                                         "." + key);
  }
  return contents;
}

// Adds the entries of list `key` ("clusters", "users", "contexts") of one file; an entry whose
// name an earlier file defined is ignored.
Status MergeList(const fs::path& file, const YAML::Node& root, const std::string& key,
                 const std::string& body_key, std::map<std::string, Entry>& into) {
  YAML::Node list = root[key];
  if (!list.IsDefined() || list.IsNull()) return Status::OK();
  if (!list.IsSequence()) {
    return Status::InvalidArgument(Where(file, list) + ": " + key + ": must be a list");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    YAML::Node item = list[i];
    std::string field = key + "[" + std::to_string(i) + "]";
    if (!item.IsMap()) {
      return Status::InvalidArgument(Where(file, item) + ": " + field + ": must be a mapping");
    }
    YAML::Node name = item["name"];
    if (!name.IsDefined() || !name.IsScalar() || name.Scalar().empty()) {
      return Status::InvalidArgument(Where(file, item) + ": " + field +
                                     ".name: must be a non-empty string");
    }
    YAML::Node body = item[body_key];
    if (body.IsDefined() && !body.IsNull() && !body.IsMap()) {
      return Status::InvalidArgument(Where(file, body) + ": " + field + "." + body_key +
                                     ": must be a mapping");
    }
    if (!body.IsDefined() || body.IsNull()) body = YAML::Node(YAML::NodeType::Map);
    into.emplace(name.Scalar(), Entry{body, file, key + "[" + name.Scalar() + "]." + body_key});
  }
  return Status::OK();
}

Status MergeFile(const KubeconfigFile& file, MergedConfig& merged) {
  YAML::Node root;
  try {
    root = YAML::Load(file.text);
  } catch (const YAML::Exception& error) {
    return Status::InvalidArgument(file.path.string() + ":" + std::to_string(error.mark.line + 1) +
                                   ":" + std::to_string(error.mark.column + 1) +
                                   ": not a kubeconfig: " + error.msg);
  }
  merged.files.push_back(file.path);
  if (!root.IsDefined() || root.IsNull()) return Status::OK();
  if (!root.IsMap()) {
    return Status::InvalidArgument(Where(file.path, root) +
                                   ": not a kubeconfig: the document must be a mapping");
  }
  COHORT_RETURN_IF_ERROR(MergeList(file.path, root, "clusters", "cluster", merged.clusters));
  COHORT_RETURN_IF_ERROR(MergeList(file.path, root, "users", "user", merged.users));
  COHORT_RETURN_IF_ERROR(MergeList(file.path, root, "contexts", "context", merged.contexts));
  YAML::Node current = root["current-context"];
  if (current.IsDefined() && !current.IsNull()) {
    if (!current.IsScalar()) {
      return Status::InvalidArgument(Where(file.path, current) +
                                     ": current-context: must be a string");
    }
    if (merged.current_context.empty()) merged.current_context = current.Scalar();
  }
  return Status::OK();
}

std::string FileList(const std::vector<fs::path>& files) {
  std::string list;
  for (const fs::path& file : files) list += (list.empty() ? "" : ", ") + file.string();
  return list;
}

StatusOr<ExecPluginConfig> ReadExec(const Entry& user, const std::string& user_name) {
  Entry exec{user.body["exec"], user.file, user.field + ".exec"};
  if (!exec.body.IsMap()) return FieldError(user, exec.body, "exec", "must be a mapping");
  ExecPluginConfig config;
  config.user_name = user_name;
  StatusOr<std::string> api_version = Text(exec, "apiVersion");
  if (!api_version.ok()) return api_version.status();
  if (*api_version != "client.authentication.k8s.io/v1" &&
      *api_version != "client.authentication.k8s.io/v1beta1") {
    return FieldError(
        exec, exec.body["apiVersion"], "apiVersion",
        "must be client.authentication.k8s.io/v1 or /v1beta1, not \"" + *api_version + "\"");
  }
  config.api_version = *api_version;
  StatusOr<std::string> command = Text(exec, "command");
  if (!command.ok()) return command.status();
  if (command->empty()) return FieldError(exec, exec.body["command"], "command", "must be set");
  // kubectl resolves a relative command with a directory part against the kubeconfig's
  // directory; a bare name is looked up on PATH.
  config.command =
      command->find('/') == std::string::npos ? *command : ResolvePath(exec, *command).string();
  YAML::Node args = exec.body["args"];
  if (args.IsDefined() && !args.IsNull()) {
    if (!args.IsSequence()) return FieldError(exec, args, "args", "must be a list of strings");
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i].IsScalar()) {
        return FieldError(exec, args[i], "args[" + std::to_string(i) + "]", "must be a string");
      }
      config.args.push_back(args[i].Scalar());
    }
  }
  YAML::Node env = exec.body["env"];
  if (env.IsDefined() && !env.IsNull()) {
    if (!env.IsSequence()) return FieldError(exec, env, "env", "must be a list of {name, value}");
    for (size_t i = 0; i < env.size(); ++i) {
      std::string key = "env[" + std::to_string(i) + "]";
      if (!env[i].IsMap() || !env[i]["name"].IsScalar() || env[i]["name"].Scalar().empty()) {
        return FieldError(exec, env[i], key, "must be a mapping with a non-empty name");
      }
      YAML::Node value = env[i]["value"];
      if (value.IsDefined() && !value.IsNull() && !value.IsScalar()) {
        return FieldError(exec, value, key + ".value", "must be a string");
      }
      config.env.emplace_back(env[i]["name"].Scalar(), value.IsScalar() ? value.Scalar() : "");
    }
  }
  StatusOr<std::string> hint = Text(exec, "installHint");
  if (!hint.ok()) return hint.status();
  config.install_hint = *hint;
  StatusOr<bool> cluster_info = Bool(exec, "provideClusterInfo");
  if (!cluster_info.ok()) return cluster_info.status();
  config.provide_cluster_info = *cluster_info;
  StatusOr<std::string> interactive = Text(exec, "interactiveMode");
  if (!interactive.ok()) return interactive.status();
  if (*interactive == "Always") {
    return FieldError(exec, exec.body["interactiveMode"], "interactiveMode",
                      "Always needs a terminal, and Cohort runs plugins without one");
  }
  return config;
}

Status ReadCluster(const Entry& cluster, ClusterConfig& config) {
  StatusOr<std::string> server = Text(cluster, "server");
  if (!server.ok()) return server.status();
  if (server->empty()) return FieldError(cluster, cluster.body["server"], "server", "must be set");
  if (server->rfind("https://", 0) != 0 && server->rfind("http://", 0) != 0) {
    return FieldError(cluster, cluster.body["server"], "server",
                      "must be an https:// (or http://) URL, not \"" + *server + "\"");
  }
  while (!server->empty() && server->back() == '/') server->pop_back();
  config.server = *server;
  StatusOr<std::string> authority = DataOrFile(cluster, "certificate-authority");
  if (!authority.ok()) return authority.status();
  config.certificate_authority_pem = *authority;
  StatusOr<bool> insecure = Bool(cluster, "insecure-skip-tls-verify");
  if (!insecure.ok()) return insecure.status();
  config.insecure_skip_tls_verify = *insecure;
  StatusOr<std::string> server_name = Text(cluster, "tls-server-name");
  if (!server_name.ok()) return server_name.status();
  config.tls_server_name = *server_name;
  return Status::OK();
}

Status ReadUser(const Entry& user, const std::string& user_name, UserConfig& config) {
  StatusOr<std::string> certificate = DataOrFile(user, "client-certificate");
  if (!certificate.ok()) return certificate.status();
  StatusOr<std::string> key = DataOrFile(user, "client-key");
  if (!key.ok()) return key.status();
  if (certificate->empty() != key->empty()) {
    return FieldError(user, user.body, certificate->empty() ? "client-certificate" : "client-key",
                      "must be set with " +
                          std::string(certificate->empty() ? "client-key" : "client-certificate"));
  }
  config.client_certificate_pem = *certificate;
  config.client_key_pem = *key;
  StatusOr<std::string> token = Text(user, "token");
  if (!token.ok()) return token.status();
  config.token = *token;
  StatusOr<std::string> token_file = Text(user, "tokenFile");
  if (!token_file.ok()) return token_file.status();
  if (!token_file->empty()) config.token_file = ResolvePath(user, *token_file);
  if (user.body["auth-provider"].IsDefined()) {
    return FieldError(user, user.body["auth-provider"], "auth-provider",
                      "auth providers are not supported; use an exec credential plugin (for GKE: "
                      "gke-gcloud-auth-plugin)");
  }
  if (user.body["username"].IsDefined() || user.body["password"].IsDefined()) {
    return FieldError(user, user.body, "username",
                      "basic authentication is not supported (Kubernetes removed it in 1.19)");
  }
  if (user.body["exec"].IsDefined() && !user.body["exec"].IsNull()) {
    StatusOr<ExecPluginConfig> exec = ReadExec(user, user_name);
    if (!exec.ok()) return exec.status();
    config.exec = std::move(*exec);
  }
  return Status::OK();
}

}  // namespace

std::vector<fs::path> DefaultKubeconfigPaths() {
  std::vector<fs::path> paths;
  const char* list = std::getenv("KUBECONFIG");
  if (list != nullptr && *list != '\0') {
    std::string text(list);
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find(':', start);
      if (end == std::string::npos) end = text.size();
      if (end > start) paths.emplace_back(text.substr(start, end - start));
      start = end + 1;
    }
    return paths;
  }
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') paths.push_back(fs::path(home) / ".kube" / "config");
  return paths;
}

StatusOr<ConnectionConfig> LoadKubeconfig(const std::vector<fs::path>& paths,
                                          const std::string& context) {
  std::vector<KubeconfigFile> files;
  for (const fs::path& path : paths) {
    StatusOr<std::string> text = ReadWholeFile(path, kMaxCredentialFileBytes);
    if (!text.ok() && text.status().code() == Status::Code::kNotFound) continue;
    if (!text.ok()) return text.status().WithContext("kubeconfig");
    files.push_back({path, std::move(*text)});
  }
  if (files.empty()) {
    return Status::NotFound(
        "no kubeconfig: none of " +
        (paths.empty() ? std::string("($KUBECONFIG and $HOME are unset)") : FileList(paths)) +
        " exists");
  }
  return ParseKubeconfigs(files, context);
}

StatusOr<ConnectionConfig> ParseKubeconfigs(const std::vector<KubeconfigFile>& files,
                                            const std::string& context) {
  MergedConfig merged;
  for (const KubeconfigFile& file : files) COHORT_RETURN_IF_ERROR(MergeFile(file, merged));
  std::string context_name = context.empty() ? merged.current_context : context;
  if (context_name.empty()) {
    return Status::NotFound("kubeconfig " + FileList(merged.files) +
                            " sets no current-context, and no context was chosen (--context)");
  }
  auto found = merged.contexts.find(context_name);
  if (found == merged.contexts.end()) {
    return Status::NotFound("context \"" + context_name + "\" is not defined in kubeconfig " +
                            FileList(merged.files));
  }
  const Entry& context_entry = found->second;
  ConnectionConfig config;
  config.description =
      "context \"" + context_name + "\" of kubeconfig " + context_entry.file.string();

  StatusOr<std::string> cluster_name = Text(context_entry, "cluster");
  if (!cluster_name.ok()) return cluster_name.status();
  auto cluster = merged.clusters.find(*cluster_name);
  if (cluster_name->empty() || cluster == merged.clusters.end()) {
    return FieldError(context_entry, context_entry.body["cluster"], "cluster",
                      cluster_name->empty() ? "must be set"
                                            : "names cluster \"" + *cluster_name +
                                                  "\", which no kubeconfig file defines");
  }
  COHORT_RETURN_IF_ERROR(ReadCluster(cluster->second, config.cluster));

  StatusOr<std::string> user_name = Text(context_entry, "user");
  if (!user_name.ok()) return user_name.status();
  if (!user_name->empty()) {
    auto user = merged.users.find(*user_name);
    if (user == merged.users.end()) {
      return FieldError(context_entry, context_entry.body["user"], "user",
                        "names user \"" + *user_name + "\", which no kubeconfig file defines");
    }
    COHORT_RETURN_IF_ERROR(ReadUser(user->second, *user_name, config.user));
  }
  StatusOr<std::string> namespace_name = Text(context_entry, "namespace");
  if (!namespace_name.ok()) return namespace_name.status();
  if (!namespace_name->empty()) config.namespace_name = *namespace_name;
  return config;
}

bool RunningInCluster() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  return host != nullptr && *host != '\0' && port != nullptr && *port != '\0';
}

StatusOr<ConnectionConfig> LoadInClusterConfig(const fs::path& service_account_directory) {
  if (!RunningInCluster()) {
    return Status::FailedPrecondition(
        "not running in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
        "are not set");
  }
  std::string host = std::getenv("KUBERNETES_SERVICE_HOST");
  std::string port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host.find(':') != std::string::npos) host = "[" + host + "]";  // an IPv6 address
  ConnectionConfig config;
  config.description =
      "the in-cluster service account (" + service_account_directory.string() + ")";
  config.cluster.server = "https://" + host + ":" + port;
  StatusOr<std::string> authority =
      ReadWholeFile(service_account_directory / "ca.crt", kMaxCredentialFileBytes);
  if (!authority.ok()) return authority.status().WithContext("in-cluster configuration");
  config.cluster.certificate_authority_pem = *authority;
  config.user.token_file = service_account_directory / "token";
  StatusOr<std::string> token = ReadWholeFile(config.user.token_file, kMaxCredentialFileBytes);
  if (!token.ok()) return token.status().WithContext("in-cluster configuration");
  StatusOr<std::string> namespace_name =
      ReadWholeFile(service_account_directory / "namespace", kMaxCredentialFileBytes);
  if (namespace_name.ok()) {
    std::string name = *namespace_name;
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
    if (!name.empty()) config.namespace_name = name;
  } else if (namespace_name.status().code() != Status::Code::kNotFound) {
    return namespace_name.status().WithContext("in-cluster configuration");
  }
  return config;
}

}  // namespace cohort::kube
