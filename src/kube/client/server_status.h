// What an API server's answer means for the caller: an HTTP status and the metav1.Status the
// server sends with every error, mapped to the Status codes kube::Api promises (api.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace cohort::kube {

// The Status for an answer with `http_code` (not 2xx) whose body is `body` (a metav1.Status when
// the server sent one; any other text is quoted, shortened). `action` is what was asked, e.g.
// "update TFJob default/mnist"; the message reads "cannot <action>: <server message> (HTTP 409
// Conflict)". 409 is kAlreadyExists when the Status's reason is AlreadyExists, else kAborted.
Status StatusFromAnswer(int http_code, const std::string& body, const std::string& action);

// The same for a metav1.Status object (a watch's ERROR event carries one): its code, reason
// and message.
Status StatusFromServerStatus(const nlohmann::json& status, const std::string& action);

}  // namespace cohort::kube
