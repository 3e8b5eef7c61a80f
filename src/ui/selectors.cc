#include "ui/selectors.h"

namespace cohort::ui {
namespace {

std::string Trim(const std::string& text) {
  size_t first = text.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  size_t last = text.find_last_not_of(' ');
  return text.substr(first, last - first + 1);
}

}  // namespace

bool Selector::Matches(const std::map<std::string, std::string>& fields) const {
  for (const Requirement& requirement : requirements_) {
    auto it = fields.find(requirement.key);
    switch (requirement.op) {
      case Requirement::Operator::kEquals:
        if (it == fields.end() || it->second != requirement.value) return false;
        break;
      case Requirement::Operator::kNotEquals:
        if (it != fields.end() && it->second == requirement.value) return false;
        break;
      case Requirement::Operator::kExists:
        if (it == fields.end()) return false;
        break;
      case Requirement::Operator::kNotExists:
        if (it != fields.end()) return false;
        break;
    }
  }
  return true;
}

std::optional<std::string> Selector::RequiredValue(const std::string& key) const {
  for (const Requirement& requirement : requirements_) {
    if (requirement.key == key && requirement.op == Requirement::Operator::kEquals) {
      return requirement.value;
    }
  }
  return std::nullopt;
}

StatusOr<Selector> ParseSelector(const std::string& text, const std::string& parameter) {
  if (text.size() > kMaxSelectorBytes) {
    return Status::InvalidArgument(parameter + " is longer than " +
                                   std::to_string(kMaxSelectorBytes) + " characters");
  }
  std::vector<Requirement> requirements;
  size_t position = 0;
  while (position <= text.size() && !text.empty()) {
    size_t comma = text.find(',', position);
    if (comma == std::string::npos) comma = text.size();
    std::string part = Trim(text.substr(position, comma - position));
    position = comma + 1;
    if (part.empty()) {
      return Status::InvalidArgument(parameter + " \"" + text + "\" has an empty requirement");
    }
    if (part.find('(') != std::string::npos) {
      return Status::InvalidArgument(parameter + " \"" + text +
                                     "\": set requirements (in, notin) are not supported; use "
                                     "key=value, key!=value, key or !key");
    }
    Requirement requirement;
    size_t op;
    if ((op = part.find("!=")) != std::string::npos) {
      requirement.op = Requirement::Operator::kNotEquals;
      requirement.key = Trim(part.substr(0, op));
      requirement.value = Trim(part.substr(op + 2));
    } else if ((op = part.find("==")) != std::string::npos) {
      requirement.key = Trim(part.substr(0, op));
      requirement.value = Trim(part.substr(op + 2));
    } else if ((op = part.find('=')) != std::string::npos) {
      requirement.key = Trim(part.substr(0, op));
      requirement.value = Trim(part.substr(op + 1));
    } else if (part[0] == '!') {
      requirement.op = Requirement::Operator::kNotExists;
      requirement.key = Trim(part.substr(1));
    } else {
      requirement.op = Requirement::Operator::kExists;
      requirement.key = part;
    }
    if (requirement.key.empty()) {
      return Status::InvalidArgument(parameter + " \"" + text + "\": a requirement has no key");
    }
    requirements.push_back(std::move(requirement));
    if (comma == text.size()) break;
  }
  return Selector(std::move(requirements));
}

}  // namespace cohort::ui
