// The one check of the names that become file names: a namespace or job name from a flag, a
// command's argument, a file, the dashboard's URL or a Kubernetes object.
//
// A local job lives in $COHORT_HOME/jobs/<namespace>/<name>/, so a name such as "../../x" would
// put a job (its secret included) outside $COHORT_HOME, and one such as "." or "a/b" would name
// another job's directory. Kubernetes allows only DNS-1123 labels for namespaces and, within
// that, DNS-1035 labels for job names; Cohort checks every name that reaches a path against the
// DNS-1123 label rule (lower-case letters, digits and '-', starting and ending with a letter or
// digit, at most 63 characters), which no path trick passes.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"

namespace cohort {

// At most this many characters, as Kubernetes allows in a label.
inline constexpr size_t kMaxNameLength = 63;

// What is wrong with `name` as a DNS-1123 label, in Kubernetes' words; nullopt when nothing is.
std::optional<std::string> Dns1123LabelProblem(const std::string& name);

// OK for a valid label. Otherwise InvalidArgument naming what the name is and where it came from,
// e.g. CheckName("../../x", "namespace", "-n/--namespace"):
//   invalid namespace "../../x" (from -n/--namespace): a lowercase RFC 1123 label must ...
// The value is quoted (control bytes escaped) and cut to 80 characters.
Status CheckName(const std::string& name, const std::string& what, const std::string& where);

}  // namespace cohort
