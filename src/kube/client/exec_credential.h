// Exec credential plugins: the commands a kubeconfig user names under `exec` (gke-gcloud-auth-
// plugin, `aws eks get-token`, kubelogin) to obtain a token or a client certificate.
//
// A plugin is run as kubectl runs it: with its args, our environment plus its env entries, and
// KUBERNETES_EXEC_INFO holding an ExecCredential (apiVersion as configured, spec.interactive
// false, spec.cluster when provideClusterInfo is set); standard input is /dev/null. It prints an
// ExecCredential whose status carries a token and/or clientCertificateData + clientKeyData, and
// optionally an expirationTimestamp. Authenticator (authenticator.h) caches the answer until it
// expires and runs the plugin again when the server answers 401.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "base/status.h"
#include "base/time.h"
#include "kube/client/kubeconfig.h"

namespace cohort::kube {

struct ExecCredential {
  std::string token;
  std::string client_certificate_pem;
  std::string client_key_pem;
  std::optional<Time> expiration;  // none: valid until the server refuses it
};

// The most a plugin may print on each of standard output and standard error.
inline constexpr size_t kMaxPluginOutputBytes = 1 << 20;

// Runs `plugin` once, for `cluster`, and parses what it printed. The plugin is killed (with
// everything it started) when it runs past `timeout`: DeadlineExceeded. A plugin that cannot be
// started, fails or prints no valid ExecCredential: FailedPrecondition naming the plugin, the
// user and what the plugin wrote to standard error (and the install hint when it was not found).
StatusOr<ExecCredential> RunExecPlugin(const ExecPluginConfig& plugin, const ClusterConfig& cluster,
                                       std::chrono::milliseconds timeout);

// What RunExecPlugin makes of a plugin's standard output.
StatusOr<ExecCredential> ParseExecCredential(const std::string& output,
                                             const ExecPluginConfig& plugin);

}  // namespace cohort::kube
