#include "view/jsonpath.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

namespace cohort::view {
namespace {

using nlohmann::json;

const char kSupported[] =
    "cohort's jsonpath takes .field, ['field'], [N], [START:END], [*], {range ...}{end} and "
    "quoted text";

Status Unsupported(const std::string& what, const std::string& expression) {
  return Status::InvalidArgument("jsonpath: " + what + " in {" + expression +
                                 "} is not supported; " + kSupported);
}

// One step of a path: a field name, an index, a slice [START:END] (either may be left out; a
// negative one counts from the end, as kubectl's `{.status.conditions[-1:].type}`), or every
// element/value.
struct Step {
  enum class Kind { kField, kIndex, kSlice, kAll } kind = Kind::kField;
  std::string field;
  long index = 0;           // kIndex, and kSlice's start
  std::optional<long> end;  // kSlice's end, when given

  static Step Field(std::string name) { return {Kind::kField, std::move(name), 0, std::nullopt}; }
  static Step Index(long index) { return {Kind::kIndex, "", index, std::nullopt}; }
  static Step Slice(long start, std::optional<long> end) { return {Kind::kSlice, "", start, end}; }
  static Step All() { return {Kind::kAll, "", 0, std::nullopt}; }
};

// "-1" as a number; nullopt when it is not one whole number.
std::optional<long> WholeNumber(const std::string& text) {
  try {
    size_t used = 0;
    long number = std::stol(text, &used);
    if (used == text.size()) return number;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

struct Path {
  bool from_root = false;  // $ rather than the current item
  std::vector<Step> steps;
};

StatusOr<Path> ParsePath(const std::string& expression) {
  Path path;
  size_t i = 0;
  const std::string& e = expression;
  if (i < e.size() && e[i] == '$') {
    path.from_root = true;
    ++i;
  } else if (i < e.size() && e[i] == '@') {
    ++i;
  }
  while (i < e.size()) {
    if (e.compare(i, 2, "..") == 0) return Unsupported("recursive descent (..)", expression);
    if (e[i] == '.') {
      ++i;
      size_t start = i;
      while (i < e.size() && e[i] != '.' && e[i] != '[') ++i;
      std::string name = e.substr(start, i - start);
      if (name.empty()) continue;  // "{.}" is the current item
      if (name == "*") {
        path.steps.push_back(Step::All());
      } else {
        path.steps.push_back(Step::Field(name));
      }
      continue;
    }
    if (e[i] == '[') {
      size_t close = e.find(']', i);
      if (close == std::string::npos) {
        return Status::InvalidArgument("jsonpath: unclosed [ in {" + expression + "}");
      }
      std::string inside = e.substr(i + 1, close - i - 1);
      i = close + 1;
      if (inside == "*") {
        path.steps.push_back(Step::All());
      } else if (!inside.empty() && inside[0] == '?') {
        return Unsupported("a filter [" + inside + "]", expression);
      } else if (size_t colon = inside.find(':'); colon != std::string::npos) {
        const std::string start = inside.substr(0, colon), end = inside.substr(colon + 1);
        if (end.find(':') != std::string::npos) {
          return Unsupported("a slice with a step [" + inside + "]", expression);
        }
        std::optional<long> start_number = start.empty() ? 0 : WholeNumber(start);
        std::optional<long> end_number = end.empty() ? std::nullopt : WholeNumber(end);
        if (!start_number || (!end.empty() && !end_number)) {
          return Status::InvalidArgument("jsonpath: [" + inside + "] in {" + expression +
                                         "} is not a slice of whole numbers");
        }
        path.steps.push_back(Step::Slice(*start_number, end_number));
      } else if (inside.find(',') != std::string::npos) {
        return Unsupported("a union [" + inside + "]", expression);
      } else if (inside.size() >= 2 && (inside[0] == '\'' || inside[0] == '"') &&
                 inside.back() == inside[0]) {
        path.steps.push_back(Step::Field(inside.substr(1, inside.size() - 2)));
      } else if (std::optional<long> index = WholeNumber(inside)) {
        path.steps.push_back(Step::Index(*index));
      } else {
        return Status::InvalidArgument("jsonpath: [" + inside + "] in {" + expression +
                                       "} is neither an index, a slice, * nor a quoted name");
      }
      continue;
    }
    return Status::InvalidArgument("jsonpath: unexpected '" + std::string(1, e[i]) + "' in {" +
                                   expression + "}; " + kSupported);
  }
  return path;
}

std::vector<const json*> Select(const Path& path, const json& root, const json& current) {
  std::vector<const json*> nodes = {path.from_root ? &root : &current};
  for (const Step& step : path.steps) {
    std::vector<const json*> next;
    for (const json* node : nodes) {
      switch (step.kind) {
        case Step::Kind::kField:
          if (node->is_object() && node->contains(step.field)) next.push_back(&(*node)[step.field]);
          break;
        case Step::Kind::kIndex:
          if (node->is_array()) {
            long size = static_cast<long>(node->size());
            long index = step.index < 0 ? size + step.index : step.index;
            if (index >= 0 && index < size) next.push_back(&(*node)[static_cast<size_t>(index)]);
          }
          break;
        case Step::Kind::kSlice:
          if (node->is_array()) {
            const long size = static_cast<long>(node->size());
            auto clamp = [&](long at) { return std::clamp(at < 0 ? size + at : at, 0L, size); };
            const long begin = clamp(step.index);
            const long end = step.end ? clamp(*step.end) : size;
            for (long i = begin; i < end; ++i) next.push_back(&(*node)[static_cast<size_t>(i)]);
          }
          break;
        case Step::Kind::kAll:
          if (node->is_array() || node->is_object()) {
            for (const json& element : *node) next.push_back(&element);
          }
          break;
      }
    }
    nodes = std::move(next);
  }
  return nodes;
}

std::string Print(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// A parsed template: text, a path to print, a quoted literal, or a range over a path.
struct Node {
  enum class Kind { kText, kPath, kRange } kind = Kind::kText;
  std::string text;
  Path path;
  std::vector<Node> body;
};

StatusOr<std::string> Unquote(const std::string& quoted) {
  std::string text;
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    if (quoted[i] == '\\' && i + 2 < quoted.size()) {
      char c = quoted[++i];
      text += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
    } else {
      text += quoted[i];
    }
  }
  return text;
}

// Parses nodes until the end of the template or, inside a range, its {end}.
Status ParseNodes(const std::string& text, size_t& i, bool in_range, std::vector<Node>& nodes) {
  while (i < text.size()) {
    size_t open = text.find('{', i);
    if (open != i) {
      size_t end = open == std::string::npos ? text.size() : open;
      nodes.push_back({Node::Kind::kText, text.substr(i, end - i), {}, {}});
      i = end;
      continue;
    }
    size_t close = text.find('}', open);
    if (close == std::string::npos) {
      return Status::InvalidArgument("jsonpath: unclosed { in " + text);
    }
    std::string expression = text.substr(open + 1, close - open - 1);
    while (!expression.empty() && expression.front() == ' ') expression.erase(0, 1);
    while (!expression.empty() && expression.back() == ' ') expression.pop_back();
    i = close + 1;
    if (expression == "end") {
      if (!in_range) return Status::InvalidArgument("jsonpath: {end} without {range}");
      return Status::OK();
    }
    if (expression.rfind("range ", 0) == 0) {
      Node range{Node::Kind::kRange, "", {}, {}};
      StatusOr<Path> path = ParsePath(expression.substr(6));
      if (!path.ok()) return path.status();
      range.path = *path;
      if (Status body = ParseNodes(text, i, true, range.body); !body.ok()) return body;
      nodes.push_back(std::move(range));
      continue;
    }
    if (expression.size() >= 2 && (expression[0] == '"' || expression[0] == '\'') &&
        expression.back() == expression[0]) {
      StatusOr<std::string> literal = Unquote(expression);
      nodes.push_back({Node::Kind::kText, *literal, {}, {}});
      continue;
    }
    StatusOr<Path> path = ParsePath(expression);
    if (!path.ok()) return path.status();
    nodes.push_back({Node::Kind::kPath, "", *path, {}});
  }
  if (in_range) return Status::InvalidArgument("jsonpath: {range} without {end}");
  return Status::OK();
}

void Evaluate(const std::vector<Node>& nodes, const json& root, const json& current,
              std::string& out) {
  for (const Node& node : nodes) {
    switch (node.kind) {
      case Node::Kind::kText:
        out += node.text;
        break;
      case Node::Kind::kPath: {
        std::string joined;
        for (const json* value : Select(node.path, root, current)) {
          joined += (joined.empty() ? "" : " ") + Print(*value);
        }
        out += joined;
        break;
      }
      case Node::Kind::kRange:
        for (const json* item : Select(node.path, root, current)) {
          Evaluate(node.body, root, *item, out);
        }
        break;
    }
  }
}

}  // namespace

StatusOr<std::string> EvaluateJsonPath(const std::string& template_text,
                                       const nlohmann::json& root) {
  std::vector<Node> nodes;
  size_t i = 0;
  if (Status parsed = ParseNodes(template_text, i, false, nodes); !parsed.ok()) return parsed;
  std::string out;
  Evaluate(nodes, root, root, out);
  return out;
}

}  // namespace cohort::view
