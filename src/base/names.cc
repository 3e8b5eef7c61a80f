#include "base/names.h"

#include <cstdio>

namespace cohort {
namespace {

bool IsLowerAlphanumeric(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// `text` in double quotes, with quotes, backslashes and control bytes escaped, so that whatever a
// name holds prints on one line.
std::string Quoted(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
      quoted += escaped;
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

}  // namespace

std::optional<std::string> Dns1123LabelProblem(const std::string& name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > kMaxNameLength) return "must be no more than 63 characters";
  bool valid = IsLowerAlphanumeric(name.front()) && IsLowerAlphanumeric(name.back());
  for (char c : name) valid = valid && (IsLowerAlphanumeric(c) || c == '-');
  if (valid) return std::nullopt;
  return "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
         "and must start and end with an alphanumeric character (e.g. 'my-name', or '123-abc')";
}

Status CheckName(const std::string& name, const std::string& what, const std::string& where) {
  std::optional<std::string> problem = Dns1123LabelProblem(name);
  if (!problem) return Status::OK();
  const std::string shown = Quoted(name.substr(0, 80));
  return Status::InvalidArgument("invalid " + what + " " + shown +
                                 (where.empty() ? "" : " (from " + where + ")") + ": " + *problem);
}

}  // namespace cohort
