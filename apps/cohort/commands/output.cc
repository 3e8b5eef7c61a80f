#include "apps/cohort/commands/output.h"

#include <iostream>

#include "apps/cohort/commands/command.h"
#include "view/jsonpath.h"

namespace cohort::cli {

int PrintObject(const view::OutputFormat& format, const nlohmann::json& object) {
  StatusOr<std::string> text = view::RenderObject(format, object);
  if (!text.ok()) return Fail(kExitInvalidInput, text.status().message());
  std::cout << *text;
  return kExitSucceeded;
}

nlohmann::json ObjectOrList(const std::vector<nlohmann::json>& objects, bool single) {
  if (single) return objects.empty() ? nlohmann::json::object() : objects[0];
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", objects}};
}

bool IsObjectFormat(const view::OutputFormat& format) {
  using Kind = view::OutputFormat::Kind;
  return format.kind == Kind::kJson || format.kind == Kind::kYaml || format.kind == Kind::kJsonPath;
}

void PrintNoResourcesFound(const std::string& namespace_name, bool all_namespaces) {
  std::cerr << "No resources found"
            << (all_namespaces ? "" : " in " + namespace_name + " namespace") << ".\n";
}

std::string WithoutHeader(const std::string& table) {
  size_t newline = table.find('\n');
  return newline == std::string::npos ? "" : table.substr(newline + 1);
}

}  // namespace cohort::cli
