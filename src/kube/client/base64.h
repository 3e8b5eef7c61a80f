// Base64 (RFC 4648, the standard alphabet with '=' padding), as kubeconfigs carry certificates and
// keys in their *-data fields.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace cohort::kube {

std::string EncodeBase64(std::string_view bytes);

// Decodes `text`; line breaks and spaces are skipped (PEM-style wrapped input is accepted).
// InvalidArgument naming `what` when a character is outside the alphabet or the length is wrong.
StatusOr<std::string> DecodeBase64(std::string_view text, const std::string& what);

}  // namespace cohort::kube
