#include "kube/client/server_status.h"

namespace cohort::kube {
namespace {

Status WithCode(int code, const std::string& reason, const std::string& message) {
  if (code == 404) return Status::NotFound(message);
  if (code == 409) {
    return reason == "AlreadyExists" ? Status::AlreadyExists(message) : Status::Aborted(message);
  }
  if (code == 410) return Status::OutOfRange(message);
  if (code == 400 || code == 422) return Status::InvalidArgument(message);
  if (code == 401 || code == 403) return Status::FailedPrecondition(message);
  if (code == 408 || code == 429 || code >= 500) return Status::Unavailable(message);
  if (code >= 400) return Status::InvalidArgument(message);
  return Status::Internal(message);
}

std::string Shortened(const std::string& text, size_t limit = 512) {
  std::string shown = text.substr(0, limit);
  while (!shown.empty() && (shown.back() == '\n' || shown.back() == ' ')) shown.pop_back();
  return text.size() > limit ? shown + "..." : shown;
}

}  // namespace

Status StatusFromServerStatus(const nlohmann::json& status, const std::string& action) {
  int code = 0;
  std::string reason, message;
  if (status.is_object()) {
    if (status.contains("code") && status["code"].is_number_integer()) code = status["code"];
    if (status.contains("reason") && status["reason"].is_string()) reason = status["reason"];
    if (status.contains("message") && status["message"].is_string()) message = status["message"];
  }
  std::string text = "cannot " + action + ": " +
                     (message.empty() ? std::string("the server gave no message") : message) +
                     " (HTTP " + std::to_string(code) + (reason.empty() ? "" : " " + reason) + ")";
  return WithCode(code, reason, text);
}

Status StatusFromAnswer(int http_code, const std::string& body, const std::string& action) {
  nlohmann::json status = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (status.is_object() && status.value("kind", "") == "Status") {
    status["code"] = http_code;  // the HTTP status is what the server did
    return StatusFromServerStatus(status, action);
  }
  std::string text = "cannot " + action + ": the server answered HTTP " +
                     std::to_string(http_code) +
                     (body.empty() ? std::string() : ": " + Shortened(body));
  return WithCode(http_code, "", text);
}

}  // namespace cohort::kube
