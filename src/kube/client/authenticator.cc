#include "kube/client/authenticator.h"

#include <sys/stat.h>

#include "base/file.h"

namespace cohort::kube {

Authenticator::Authenticator(UserConfig user, ClusterConfig cluster,
                             std::chrono::milliseconds plugin_timeout)
    : user_(std::move(user)), cluster_(std::move(cluster)), plugin_timeout_(plugin_timeout) {}

Status Authenticator::ReadTokenFileLocked() {
  struct stat info {};
  if (stat(user_.token_file.c_str(), &info) != 0) {
    return Status::NotFound("token file " + user_.token_file.string() + ": " + ErrnoMessage(errno));
  }
  FileStamp stamp{
      info.st_ino, info.st_size,
      static_cast<long long>(info.st_mtim.tv_sec) * 1000000000LL + info.st_mtim.tv_nsec};
  if (file_stamp_ && *file_stamp_ == stamp) return Status::OK();
  StatusOr<std::string> token = ReadWholeFile(user_.token_file, kMaxCredentialFileBytes);
  if (!token.ok()) return token.status().WithContext("token file");
  std::string text = std::move(*token);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  if (text.empty()) {
    return Status::FailedPrecondition("token file " + user_.token_file.string() + " is empty");
  }
  file_token_ = std::move(text);
  file_stamp_ = stamp;
  return Status::OK();
}

Status Authenticator::RunPluginLocked() {
  if (plugin_credential_ &&
      (!plugin_credential_->expiration || Clock::now() < *plugin_credential_->expiration)) {
    return Status::OK();
  }
  plugin_credential_.reset();
  StatusOr<ExecCredential> credential = RunExecPlugin(*user_.exec, cluster_, plugin_timeout_);
  if (!credential.ok()) return credential.status();
  plugin_credential_ = std::move(*credential);
  return Status::OK();
}

StatusOr<RequestCredentials> Authenticator::Credentials() {
  std::lock_guard<std::mutex> lock(mutex_);
  RequestCredentials credentials{user_.token, user_.client_certificate_pem, user_.client_key_pem};
  if (!user_.token_file.empty()) {
    COHORT_RETURN_IF_ERROR(ReadTokenFileLocked());
    credentials.bearer_token = file_token_;
  }
  if (user_.exec) {
    COHORT_RETURN_IF_ERROR(RunPluginLocked());
    if (!plugin_credential_->token.empty()) credentials.bearer_token = plugin_credential_->token;
    if (!plugin_credential_->client_certificate_pem.empty()) {
      credentials.client_certificate_pem = plugin_credential_->client_certificate_pem;
      credentials.client_key_pem = plugin_credential_->client_key_pem;
    }
  }
  return credentials;
}

bool Authenticator::Refresh(const RequestCredentials& used) {
  std::lock_guard<std::mutex> lock(mutex_);
  bool may_differ = false;
  if (user_.exec) {
    // Forget it only if it is still the one refused: another thread may have refreshed already.
    if (plugin_credential_ && plugin_credential_->token == used.bearer_token &&
        plugin_credential_->client_certificate_pem == used.client_certificate_pem) {
      plugin_credential_.reset();
    }
    may_differ = true;
  }
  if (!user_.token_file.empty()) {
    file_stamp_.reset();
    may_differ = true;
  }
  return may_differ;
}

}  // namespace cohort::kube
