#include "job/yaml_document.h"

#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "base/file.h"
#include "base/spelling.h"
#include "base/utf8.h"
#include "job/job_kind.h"

namespace cohort::job {
namespace {

using nlohmann::json;

// Thrown by DocumentBuilder to stop yaml-cpp at the first problem. ReadYamlDocuments catches it;
// it never leaves this file.
struct DocumentError {
  SourcePosition position;
  std::string message;
};

SourcePosition ToPosition(const YAML::Mark& mark, const std::string& file) {
  if (mark.is_null()) return SourcePosition{file, 0, 0};
  return SourcePosition{file, mark.line + 1, mark.column + 1};
}

// The JSON value of a scalar, given the tag yaml-cpp reports: "!" for a quoted scalar, "?" for a
// plain one, or an explicit tag such as "tag:yaml.org,2002:str" (written "!!str").
json ResolveScalar(const std::string& tag, const std::string& text) {
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return json(text);
  return ResolvePlainScalar(text);
}

// Builds JSON documents from yaml-cpp parser events. Events arrive depth first; each open
// mapping or list is a Frame on a stack, and a finished value is attached to the frame below it.
class DocumentBuilder : public YAML::EventHandler {
 public:
  explicit DocumentBuilder(std::string file_name) : file_name_(std::move(file_name)) {}

  std::vector<YamlDocument> TakeDocuments() { return std::move(documents_); }

  void OnDocumentStart(const YAML::Mark& mark) override {
    current_ = YamlDocument{};
    current_.positions[""] = ToPosition(mark, file_name_);
    stack_.clear();
    anchors_.clear();  // anchors do not carry across documents
  }

  void OnDocumentEnd() override { documents_.push_back(std::move(current_)); }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (ExpectingKey()) throw DocumentError{At(mark), "a mapping key must be text, not null"};
    Place(json(nullptr), "", SlotPosition(mark), anchor, Cost{1, 0});
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (!IsValidUtf8(value)) throw DocumentError{At(mark), "the text is not valid UTF-8"};
    if (ExpectingKey()) {
      Spend(0, value.size(), At(mark));
      StartEntry(value, /*may_be_merge=*/tag == "?", mark);
      if (anchor != YAML::NullAnchor) {
        anchors_[anchor] = AnchoredValue{json(value), 1, value.size(), value};
      }
      return;
    }
    Place(ResolveScalar(tag, value), value, ToPosition(mark, file_name_), anchor,
          Cost{1, value.size()});
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto found = anchors_.find(anchor);
    if (found == anchors_.end()) {
      throw DocumentError{At(mark),
                          "this alias refers to a node that contains it (a recursive alias)"};
    }
    const AnchoredValue& anchored = found->second;
    if (ExpectingKey()) {
      if (anchored.value.is_structured() || anchored.value.is_null()) {
        throw DocumentError{At(mark), "a mapping key must be text"};
      }
      Spend(0, anchored.text.size(), At(mark));
      StartEntry(anchored.text, /*may_be_merge=*/false, mark);
      return;
    }
    SourcePosition position = anchored.value.is_structured() || anchored.value.is_null()
                                  ? SlotPosition(mark)
                                  : ToPosition(mark, file_name_);
    // Charged where the alias is, so that the message names the alias that goes over a limit.
    Spend(anchored.node_count, anchored.text_bytes, At(mark));
    Place(anchored.value, anchored.text, position, YAML::NullAnchor,
          Cost{anchored.node_count, anchored.text_bytes}, /*spent=*/true);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value /*style*/) override {
    Open(mark, anchor, json::array());
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value /*style*/) override {
    Open(mark, anchor, json::object());
  }
  void OnMapEnd() override { Close(); }

 private:
  // A mapping or list being filled.
  struct Frame {
    json value;  // an object or an array
    std::string path;
    YAML::anchor_t anchor = YAML::NullAnchor;
    size_t node_count = 1;  // nodes in this subtree, so that an alias of it is charged in full
    size_t text_bytes = 0;  // bytes of scalar text (keys included) in this subtree, likewise
    // Mappings only: events alternate key, value. These describe the key whose value is next.
    bool expecting_key = true;
    std::string key;
    SourcePosition key_position;
    bool key_is_merge = false;  // the key is "<<"
    std::vector<json> merges;   // values of "<<", merged at the end
  };

  struct AnchoredValue {
    json value;
    size_t node_count = 1;
    size_t text_bytes = 0;
    std::string text;  // a scalar's text as written, for an alias used as a key
  };

  // What a value costs against the document's budgets.
  struct Cost {
    size_t nodes = 1;
    size_t text_bytes = 0;
  };

  SourcePosition At(const YAML::Mark& mark) const { return ToPosition(mark, file_name_); }

  bool ExpectingKey() const {
    return !stack_.empty() && stack_.back().value.is_object() && stack_.back().expecting_key;
  }

  // The path of the value that comes next.
  std::string SlotPath() const {
    if (stack_.empty()) return "";
    const Frame& top = stack_.back();
    if (top.value.is_array()) return IndexPath(top.path, top.value.size());
    return ChildPath(top.path, top.key);
  }

  // Where a message about the next value should point when that value spans lines (a mapping
  // or list) or is empty: its key if it has one, else where it starts.
  SourcePosition SlotPosition(const YAML::Mark& mark) const {
    if (!stack_.empty() && stack_.back().value.is_object()) return stack_.back().key_position;
    return ToPosition(mark, file_name_);
  }

  void Spend(size_t nodes, size_t text_bytes, const SourcePosition& position) {
    node_count_ += nodes;
    if (node_count_ > kMaxYamlNodes) {
      throw DocumentError{position, "the document has more than " + std::to_string(kMaxYamlNodes) +
                                        " nodes once aliases are expanded"};
    }
    text_bytes_ += text_bytes;
    if (text_bytes_ > kMaxYamlExpandedBytes) {
      throw DocumentError{position, "the document holds more than " +
                                        std::to_string(kMaxYamlExpandedBytes / (1024 * 1024)) +
                                        " MiB of text once aliases are expanded"};
    }
    if (!stack_.empty()) stack_.back().text_bytes += text_bytes;
  }

  void StartEntry(const std::string& key, bool may_be_merge, const YAML::Mark& mark) {
    Frame& top = stack_.back();
    top.key_is_merge = may_be_merge && key == "<<";
    if (!top.key_is_merge && top.value.contains(key)) {
      std::string first;
      auto previous = current_.positions.find(ChildPath(top.path, key));
      if (previous != current_.positions.end() && previous->second.line > 0) {
        first = " (first written at line " + std::to_string(previous->second.line) + ")";
      }
      throw DocumentError{At(mark), "duplicate key \"" + key + "\"" + first};
    }
    top.key = key;
    top.key_position = ToPosition(mark, file_name_);
    top.expecting_key = false;
  }

  // `spent`: the caller has already charged `cost`.
  void Place(json value, const std::string& text, const SourcePosition& position,
             YAML::anchor_t anchor, Cost cost, bool spent = false) {
    if (!spent) Spend(cost.nodes, cost.text_bytes, position);
    current_.positions[SlotPath()] = position;
    if (anchor != YAML::NullAnchor) {
      anchors_[anchor] = AnchoredValue{value, cost.nodes, cost.text_bytes, text};
    }
    Attach(std::move(value), cost.nodes);
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, json empty) {
    if (ExpectingKey())
      throw DocumentError{At(mark), "a mapping key must be text, not a collection"};
    if (stack_.size() >= kMaxYamlNesting) {
      throw DocumentError{At(mark), "the document nests deeper than " +
                                        std::to_string(kMaxYamlNesting) + " levels"};
    }
    Spend(1, 0, At(mark));
    std::string path = SlotPath();
    current_.positions[path] = SlotPosition(mark);
    Frame frame;
    frame.value = std::move(empty);
    frame.path = std::move(path);
    frame.anchor = anchor;
    stack_.push_back(std::move(frame));
  }

  void Close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    ApplyMerges(frame);
    if (frame.anchor != YAML::NullAnchor) {
      anchors_[frame.anchor] = AnchoredValue{frame.value, frame.node_count, frame.text_bytes, ""};
    }
    const size_t text_bytes = frame.text_bytes;
    Attach(std::move(frame.value), frame.node_count);
    if (!stack_.empty()) stack_.back().text_bytes += text_bytes;
  }

  void Attach(json value, size_t node_count) {
    if (stack_.empty()) {
      current_.root = std::move(value);
      return;
    }
    Frame& top = stack_.back();
    top.node_count += node_count;
    if (top.value.is_array()) {
      top.value.push_back(std::move(value));
      return;
    }
    if (top.key_is_merge) {
      top.merges.push_back(std::move(value));
    } else {
      top.value[top.key] = std::move(value);
    }
    top.expecting_key = true;
  }

  // "<<: *base" or "<<: [*a, *b]": keys written in the mapping itself win, then earlier
  // sources win over later ones (YAML merge key semantics).
  void ApplyMerges(Frame& frame) {
    for (const json& source : frame.merges) {
      if (source.is_object()) {
        MergeInto(frame.value, source);
        continue;
      }
      bool all_mappings = source.is_array();
      if (all_mappings) {
        for (const json& item : source) all_mappings = all_mappings && item.is_object();
      }
      if (!all_mappings) {
        throw DocumentError{
            NearestPosition(current_.positions, ChildPath(frame.path, "<<")),
            "the value of a merge key (<<) must be a mapping or a list of mappings"};
      }
      for (const json& item : source) MergeInto(frame.value, item);
    }
    ErasePositionsUnder(ChildPath(frame.path, "<<"));
  }

  // The "<<" entry is not a field of the result; neither is anything written inside it.
  void ErasePositionsUnder(const std::string& path) {
    for (auto it = current_.positions.lower_bound(path); it != current_.positions.end();) {
      if (it->first.compare(0, path.size(), path) != 0) break;
      it = current_.positions.erase(it);
    }
  }

  static void MergeInto(json& target, const json& source) {
    for (const auto& [key, value] : source.items()) {
      if (!target.contains(key)) target[key] = value;
    }
  }

  std::string file_name_;
  std::vector<YamlDocument> documents_;
  YamlDocument current_;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, AnchoredValue> anchors_;
  size_t node_count_ = 0;  // across all documents: the budgets are per input
  size_t text_bytes_ = 0;
};

bool IsPlainNameCharacter(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

bool AllOf(const std::string& text, size_t begin, int (*predicate)(int)) {
  if (begin >= text.size()) return false;
  for (size_t i = begin; i < text.size(); ++i) {
    if (!predicate(static_cast<unsigned char>(text[i]))) return false;
  }
  return true;
}

int IsOctalDigit(int c) { return c >= '0' && c <= '7'; }

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, the core schema's float.
bool LooksLikeFloat(const std::string& text) {
  size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  size_t integer_digits = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
    ++i, ++integer_digits;
  size_t fraction_digits = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      ++i, ++fraction_digits;
    }
  }
  if (integer_digits == 0 && fraction_digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    size_t exponent_digits = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      ++i, ++exponent_digits;
    }
    if (exponent_digits == 0) return false;
  }
  return i == text.size();
}

// An integer in `base` from text[begin...], or nullopt when it does not fit in int64.
std::optional<int64_t> ParseInteger(const std::string& text, size_t begin, int base) {
  int64_t value = 0;
  const char* first = text.data() + begin;
  const char* last = text.data() + text.size();
  auto [end, error] = std::from_chars(first, last, value, base);
  if (error != std::errc() || end != last) return std::nullopt;
  return value;
}

}  // namespace

StatusOr<std::vector<YamlDocument>> ReadYamlDocuments(const std::string& text,
                                                      const std::string& file_name) {
  if (text.size() > kMaxYamlBytes) {
    return Status::InvalidArgument(
        file_name + ": the file is larger than " + std::to_string(kMaxYamlBytes / (1024 * 1024)) +
        " MiB; a " + KindRegistry::Default().Names(" or ") + " manifest is a few kilobytes");
  }
  std::istringstream stream(text);
  DocumentBuilder builder(file_name);
  try {
    YAML::Parser parser(stream);
    while (parser.HandleNextDocument(builder)) {
    }
  } catch (const DocumentError& error) {
    return Status::InvalidArgument(LocatedMessage(file_name, error.position, "", error.message));
  } catch (const YAML::Exception& error) {
    return Status::InvalidArgument(LocatedMessage(file_name, ToPosition(error.mark, file_name), "",
                                                  "invalid YAML: " + error.msg));
  } catch (const std::exception& error) {
    return Status::InvalidArgument(file_name + ": cannot read YAML: " + error.what());
  }
  return builder.TakeDocuments();
}

std::string ChildPath(const std::string& parent, const std::string& key) {
  bool plain = !key.empty();
  for (char c : key) plain = plain && IsPlainNameCharacter(c);
  if (!plain) return parent + "[" + key + "]";
  return parent.empty() ? key : parent + "." + key;
}

std::string MisspeltField(const std::string& key, const nlohmann::json& object,
                          const std::set<std::string>& known) {
  std::vector<std::string> absent;
  for (const std::string& field : known) {
    if (!object.contains(field)) absent.push_back(field);
  }
  return ClosestWord(key, absent);
}

std::string IndexPath(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::string ParentPath(const std::string& path) {
  if (!path.empty() && path.back() == ']') {
    size_t open = path.rfind('[');
    return open == std::string::npos ? "" : path.substr(0, open);
  }
  size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

SourcePosition NearestPosition(const PositionMap& positions, const std::string& path) {
  std::string current = path;
  while (true) {
    auto found = positions.find(current);
    if (found != positions.end() && found->second.line > 0) return found->second;
    if (current.empty()) return SourcePosition{};
    current = ParentPath(current);
  }
}

namespace {

Status TooLarge(const std::string& name) {
  return Status::InvalidArgument(name + ": the file is larger than " +
                                 std::to_string(kMaxYamlBytes / (1024 * 1024)) +
                                 " MiB; a job spec is a few kilobytes");
}

}  // namespace

StatusOr<std::string> ReadYamlFile(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::exists(path, error)) return Status::NotFound(path + ": no such file");
  if (fs::is_directory(path, error)) {
    return Status::InvalidArgument(path + ": is a directory, not a job spec");
  }
  // The bound holds for pipes and devices too: the read stops there.
  StatusOr<std::string> contents = ReadWholeFile(path, kMaxYamlBytes);
  if (contents.status().code() == Status::Code::kInvalidArgument) return TooLarge(path);
  return contents;
}

StatusOr<std::string> ReadYamlDescriptor(int fd, const std::string& name) {
  StatusOr<std::string> contents = ReadWholeDescriptor(fd, name, kMaxYamlBytes);
  if (contents.status().code() == Status::Code::kInvalidArgument) return TooLarge(name);
  return contents;
}

std::string DescribeValue(const nlohmann::json& value) {
  if (value.is_object()) return "a mapping";
  if (value.is_array()) return "a list";
  if (value.is_string()) {
    std::string text = value.get<std::string>();
    if (text.size() > 60) text = text.substr(0, 60) + "...";
    return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string LocatedMessage(const std::string& file, const SourcePosition& position,
                           const std::string& path, const std::string& message) {
  std::string where = position.file.empty() ? file : position.file;
  std::string text;
  if (!where.empty()) {
    text = where;
    if (position.line > 0) {
      text += ":" + std::to_string(position.line) + ":" + std::to_string(position.column);
    }
    text += ": ";
  }
  if (!path.empty()) text += path + ": ";
  return text + message;
}

std::vector<std::string> InDocumentOrder(std::vector<Diagnostic> diagnostics) {
  auto sort_key = [](const Diagnostic& diagnostic) {
    int line = diagnostic.position.line > 0 ? diagnostic.position.line : INT32_MAX;
    return std::make_pair(line, diagnostic.position.column);
  };
  std::stable_sort(
      diagnostics.begin(), diagnostics.end(),
      [&](const Diagnostic& a, const Diagnostic& b) { return sort_key(a) < sort_key(b); });
  std::vector<std::string> texts;
  texts.reserve(diagnostics.size());
  for (Diagnostic& diagnostic : diagnostics) texts.push_back(std::move(diagnostic.text));
  return texts;
}

std::string JoinMessages(const std::vector<std::string>& messages) {
  std::string text;
  size_t shown = std::min(messages.size(), kMaxReportedMessages);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) text += "\n";
    text += messages[i];
  }
  if (messages.size() > shown) {
    text += "\n... and " + std::to_string(messages.size() - shown) + " more";
  }
  return text;
}

json ResolvePlainScalar(const std::string& text) {
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return json(nullptr);
  }
  if (text == "true" || text == "True" || text == "TRUE") return json(true);
  if (text == "false" || text == "False" || text == "FALSE") return json(false);

  size_t digits_begin = (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (AllOf(text, digits_begin, [](int c) -> int { return std::isdigit(c); })) {
    // from_chars takes '-' but not '+'.
    std::optional<int64_t> value = ParseInteger(text, text[0] == '+' ? 1 : 0, 10);
    if (value) return json(*value);
  }
  if (text.size() > 2 && text[0] == '0' && text[1] == 'o' && AllOf(text, 2, IsOctalDigit)) {
    if (std::optional<int64_t> value = ParseInteger(text, 2, 8)) return json(*value);
    return json(text);
  }
  if (text.size() > 2 && text[0] == '0' && text[1] == 'x' &&
      AllOf(text, 2, [](int c) -> int { return std::isxdigit(c); })) {
    if (std::optional<int64_t> value = ParseInteger(text, 2, 16)) return json(*value);
    return json(text);
  }
  if (LooksLikeFloat(text)) {
    double value = 0;
    const char* first = text.data() + (text[0] == '+' ? 1 : 0);
    auto [end, error] = std::from_chars(first, text.data() + text.size(), value);
    if (error == std::errc() && end == text.data() + text.size()) return json(value);
  }
  return json(text);
}

}  // namespace cohort::job
