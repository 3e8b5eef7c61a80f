// The subset of kubectl's JSONPath templates (`-o jsonpath=...`) that scripts use on a TFJob:
//
//   {.metadata.name}                       a field
//   {.status.conditions[0].type}           an element (negative indexes count from the end)
//   {.status.conditions[-1:].type}         a slice [START:END] (either may be left out)
//   {.items[*].metadata.name}              every element, printed space-separated
//   {.metadata.labels['app']}              a field by quoted name
//   {range .items[*]}{.metadata.name}{"\n"}{end}   a loop; paths inside are relative to the item
//   {$.kind}  {@}                          the root, the current item
//
// Text outside braces is printed as written; a string prints bare, anything else as JSON.
// Filters ([?()]), slices with a step ([a:b:c]), unions ([a,b]) and recursive descent (..) are
// refused with InvalidArgument saying so, as is any other syntax error; a missing field prints
// nothing.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace cohort::view {

StatusOr<std::string> EvaluateJsonPath(const std::string& template_text,
                                       const nlohmann::json& root);

}  // namespace cohort::view
