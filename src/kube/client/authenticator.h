// Authenticator: the credentials each request to the API server carries, kept fresh.
//
// It holds a kubeconfig user (or the in-cluster service account) and answers, per request, with
// a bearer token and/or a client certificate:
//   - a static token or certificate as configured;
//   - a token file re-read whenever it changed (rotated service-account tokens), checked on every
//     request by its inode, size and modification time;
//   - an exec plugin's credential, cached until its expirationTimestamp and fetched again (one
//     run at a time) when it has expired.
// When the server answers 401, the caller reports the credentials it used to Refresh, which
// forgets them and says whether a second attempt could carry different ones. Thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

#include "base/status.h"
#include "kube/client/exec_credential.h"
#include "kube/client/kubeconfig.h"

namespace cohort::kube {

struct RequestCredentials {
  std::string bearer_token;  // empty: no Authorization header
  std::string client_certificate_pem;
  std::string client_key_pem;
};

class Authenticator {
 public:
  Authenticator(UserConfig user, ClusterConfig cluster, std::chrono::milliseconds plugin_timeout);

  StatusOr<RequestCredentials> Credentials();

  // The server refused `used` (401): forget cached credentials. True when another attempt may
  // carry different ones (a token file or a plugin is configured).
  bool Refresh(const RequestCredentials& used);

 private:
  struct FileStamp {
    ino_t inode = 0;
    off_t size = -1;
    long long modified_ns = -1;
    bool operator==(const FileStamp&) const = default;
  };

  Status ReadTokenFileLocked();  // when it changed since it was last read
  Status RunPluginLocked();

  const UserConfig user_;
  const ClusterConfig cluster_;
  const std::chrono::milliseconds plugin_timeout_;
  std::mutex mutex_;
  std::string file_token_;
  std::optional<FileStamp> file_stamp_;
  std::optional<ExecCredential> plugin_credential_;
};

}  // namespace cohort::kube
