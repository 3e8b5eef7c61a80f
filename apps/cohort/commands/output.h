// How the read commands print what a JobClient returns: the one place each shape is written, so
// that a job prints the same whichever client read it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "view/command_line.h"

namespace cohort::cli {

// `object` (a job or pod, or a List) as -o json, yaml or jsonpath asks; exit status 2 for a
// template that does not apply.
int PrintObject(const view::OutputFormat& format, const nlohmann::json& object);

// One object when one was named (`single`), else a v1 List of them.
nlohmann::json ObjectOrList(const std::vector<nlohmann::json>& objects, bool single);

// Whether -o asks for an object format (json, yaml, jsonpath).
bool IsObjectFormat(const view::OutputFormat& format);

// kubectl's "No resources found in NAMESPACE namespace." (without the namespace with -A), on
// standard error.
void PrintNoResourcesFound(const std::string& namespace_name, bool all_namespaces);

// A table without its header line, for the rows `get -w` prints on a change.
std::string WithoutHeader(const std::string& table);

}  // namespace cohort::cli
