// Where an API server is and how to prove who we are to it: a kubeconfig context or the pod's
// service account, read into a ConnectionConfig that HttpApi (http_api.h) connects with.
//
// Kubeconfigs are read as kubectl reads them: $KUBECONFIG's ':'-separated files merged (for
// clusters, users and contexts the first file that names an entry wins, as does the first file
// that sets current-context; files that do not exist are skipped), else ~/.kube/config. Relative
// paths in a file (certificate-authority, client-certificate, client-key, tokenFile, an exec
// command with a '/') are relative to that file's directory. Certificates and keys are read when
// the config is loaded; a token file and an exec plugin are kept as such, since their answers
// change while a client runs (Authenticator, authenticator.h, asks them).
//
//   StatusOr<ConnectionConfig> config = LoadKubeconfig(DefaultKubeconfigPaths(), "");
//
// Errors name the file, the line and the field: "/home/u/.kube/config:12:7:
// users[gke].user.client-key-data: is not base64: ...".
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace cohort::kube {

// A credential plugin (users[].user.exec): a command that prints an ExecCredential, such as
// gke-gcloud-auth-plugin or `aws eks get-token`.
struct ExecPluginConfig {
  std::string api_version;  // client.authentication.k8s.io/v1 or /v1beta1
  std::string command;      // a name looked up on PATH, or a path
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // set on top of ours
  std::string install_hint;                              // shown when the command is missing
  bool provide_cluster_info = false;  // pass the cluster in KUBERNETES_EXEC_INFO's spec.cluster
  std::string user_name;              // the kubeconfig user, for messages
};

struct ClusterConfig {
  std::string server;                     // "https://10.0.0.1:6443"
  std::string certificate_authority_pem;  // empty: the system's trusted authorities
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // the name the server's certificate is checked against
};

// At most one way of proving identity is used per request: a client certificate (from the
// kubeconfig or the plugin) and a bearer token (token, tokenFile or the plugin) may be combined,
// as kubectl combines them.
struct UserConfig {
  std::string client_certificate_pem;
  std::string client_key_pem;
  std::string token;
  std::filesystem::path token_file;  // read per request when it changed (rotated tokens)
  std::optional<ExecPluginConfig> exec;
};

struct ConnectionConfig {
  // What the config came from, for messages: "context \"kind\" of /home/u/.kube/config" or "the
  // in-cluster service account".
  std::string description;
  ClusterConfig cluster;
  UserConfig user;
  std::string namespace_name = "default";  // the context's namespace
};

// The bound on a kubeconfig file, a certificate or key file, and a token file.
inline constexpr size_t kMaxCredentialFileBytes = 4 << 20;

// $KUBECONFIG's files (empty entries dropped), else $HOME/.kube/config.
std::vector<std::filesystem::path> DefaultKubeconfigPaths();

// Reads and merges `paths`, and resolves `context` (empty: current-context). NotFound when none
// of the files exists or the context is not defined; InvalidArgument for a malformed file or
// entry.
StatusOr<ConnectionConfig> LoadKubeconfig(const std::vector<std::filesystem::path>& paths,
                                          const std::string& context);

// One kubeconfig file's text and where it came from (relative paths are resolved against
// path's directory).
struct KubeconfigFile {
  std::filesystem::path path;
  std::string text;
};

// The same over texts already read, in merge order.
StatusOr<ConnectionConfig> ParseKubeconfigs(const std::vector<KubeconfigFile>& files,
                                            const std::string& context);

// Where a pod's service account credentials are mounted.
inline constexpr char kServiceAccountDirectory[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// True when this process runs in a pod: KUBERNETES_SERVICE_HOST and _PORT are set.
bool RunningInCluster();

// https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, authenticated with
// `service_account_directory`/token (re-read when it rotates), trusting its ca.crt, in the
// namespace its `namespace` file names. FailedPrecondition when not in a pod, NotFound when a
// file is missing.
StatusOr<ConnectionConfig> LoadInClusterConfig(
    const std::filesystem::path& service_account_directory = kServiceAccountDirectory);

}  // namespace cohort::kube
