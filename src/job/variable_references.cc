#include "job/variable_references.h"

namespace cohort::job {

std::string ExpandVariableReferences(const std::string& text,
                                     const std::map<std::string, std::string>& variables) {
  std::string expanded;
  expanded.reserve(text.size());
  size_t cursor = 0;
  while (cursor < text.size()) {
    // A `$` that ends the text is itself.
    if (text[cursor] != '$' || cursor + 1 == text.size()) {
      expanded += text[cursor++];
      continue;
    }
    const char next = text[cursor + 1];
    if (next == '$') {  // escaped: one literal `$`
      expanded += '$';
      cursor += 2;
      continue;
    }
    if (next != '(') {  // not a reference: the `$` and what follows stay
      expanded += '$';
      ++cursor;
      continue;
    }
    const size_t closer = text.find(')', cursor + 2);
    if (closer == std::string::npos) {  // an unfinished reference stays as written
      expanded += "$(";
      cursor += 2;
      continue;
    }
    const std::string name = text.substr(cursor + 2, closer - cursor - 2);
    auto found = variables.find(name);
    expanded += found != variables.end() ? found->second : "$(" + name + ")";
    cursor = closer + 1;
  }
  return expanded;
}

std::vector<std::string> ExpandVariableReferences(
    const std::vector<std::string>& arguments,
    const std::map<std::string, std::string>& variables) {
  std::vector<std::string> expanded;
  expanded.reserve(arguments.size());
  for (const std::string& argument : arguments) {
    expanded.push_back(ExpandVariableReferences(argument, variables));
  }
  return expanded;
}

}  // namespace cohort::job
