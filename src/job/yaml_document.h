// YAML text -> JSON values, remembering where each value was written.
//
// The spec layer reads manifests as nlohmann::json rather than as yaml-cpp nodes, for three
// reasons:
//  - one decoder (spec_parser.cc) then reads both a YAML manifest and the normalised JSON that
//    Cohort saves next to a job, with the same rules and the same messages;
//  - a pod template is kept verbatim, as JSON, for the Kubernetes backend (PodTemplate::raw);
//  - the document is built from yaml-cpp parser events, so nesting depth and alias expansion are
//    bounded while the text is read: hostile input (a deeply nested document, a "billion laughs"
//    alias bomb, a long string repeated through aliases) is refused with a message instead of
//    exhausting the stack or memory.
//
// Scalars follow the YAML 1.2 core schema, as the Kubernetes tools read them in practice: plain
// true/false, integers, floats and null become JSON booleans, numbers and null; anything quoted
// stays text. Anchors, aliases and merge keys ("<<: *base") are expanded. A duplicate key is an
// error, as it is for kubectl.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "job/common_types.h"

namespace cohort::job {

// Field path -> where its value was written. A scalar maps to the value itself; a mapping or
// list that is the value of a key maps to that key, so that a message about a replica points at
// the line "Worker:"; a list item maps to its "-".
using PositionMap = std::map<std::string, SourcePosition>;

struct YamlDocument {
  nlohmann::json root;  // null for an empty document
  PositionMap positions;
};

// Limits on what ReadYamlDocuments accepts. A TFJob manifest is a few kilobytes and about ten
// levels deep; these leave room for generated manifests while keeping a hostile one cheap.
inline constexpr size_t kMaxYamlBytes = 4 * 1024 * 1024;
inline constexpr size_t kMaxYamlNesting = 64;
inline constexpr size_t kMaxYamlNodes = 100 * 1000;  // counted after aliases are expanded
// Bytes of scalar text (keys and values), counted after aliases are expanded: a few aliases of a
// long string stay under the node limit yet would expand to gigabytes.
inline constexpr size_t kMaxYamlExpandedBytes = 32 * 1024 * 1024;

// Reads every document of a (possibly multi-document) YAML stream. On error: InvalidArgument
// "<file_name>:<line>:<column>: <problem>" for the first problem found. Never throws.
StatusOr<std::vector<YamlDocument>> ReadYamlDocuments(const std::string& text,
                                                      const std::string& file_name);

// The contents of the job file at `path`: NotFound when there is none, InvalidArgument for a
// directory or a file over kMaxYamlBytes, IOError when it cannot be read.
StatusOr<std::string> ReadYamlFile(const std::string& path);

// The same for an open descriptor such as standard input (`kubectl -f -`), read to its end
// under the same bound; `name` ("<stdin>") names it in messages.
StatusOr<std::string> ReadYamlDescriptor(int fd, const std::string& name);

// ---- Field paths: "spec.tfReplicaSpecs.Worker.template.spec.containers[0].image" ----

// `parent` + `key`: ".key" when the key is a plain name (letters, digits, '-', '_'), otherwise
// "[key]", as Kubernetes prints "metadata.annotations[sidecar.istio.io/inject]".
std::string ChildPath(const std::string& parent, const std::string& key);

// The field of `known` that `key`, an unknown key of `object`, most likely misspells ("replica"
// for "replicas"), among those `object` lacks; "" when none is near (base/spelling.h). A parser
// makes such a key an error with a "did you mean": as written, the job would run without the
// field.
std::string MisspeltField(const std::string& key, const nlohmann::json& object,
                          const std::set<std::string>& known);

// `parent` + "[index]".
std::string IndexPath(const std::string& parent, size_t index);

// The path without its last step; "" for a top-level field and for "".
std::string ParentPath(const std::string& path);

// The position recorded for `path` or, failing that, for the nearest enclosing path that has
// one; a default SourcePosition (line 0) when none has.
SourcePosition NearestPosition(const PositionMap& positions, const std::string& path);

// "<file>:<line>:<column>: <path>: <message>", dropping whichever parts are unknown: a position
// with line 0 leaves just "<file>: ", an empty path leaves just the message.
std::string LocatedMessage(const std::string& file, const SourcePosition& position,
                           const std::string& path, const std::string& message);

// A value as messages show it: text in double quotes (cut after 60 characters), a number or
// boolean as written, "a mapping", "a list".
std::string DescribeValue(const nlohmann::json& value);

// A message and the position it names, so that messages can be put in document order.
struct Diagnostic {
  SourcePosition position;
  std::string text;
};

// The texts ordered by line, then column, as a reader goes through the file; messages without a
// position keep their relative order, after the others.
std::vector<std::string> InDocumentOrder(std::vector<Diagnostic> diagnostics);

// Messages one per line, at most kMaxReportedMessages of them and then "... and N more": the
// first errors are the useful ones, and a broken generated manifest can have thousands.
inline constexpr size_t kMaxReportedMessages = 20;
std::string JoinMessages(const std::vector<std::string>& messages);

// ---- Scalars ----

// The JSON value an unquoted YAML scalar stands for under the core schema: null, true/false,
// an integer (decimal, 0o octal, 0x hex), a float, or else the text itself. Infinities and NaN
// stay text because JSON cannot hold them.
nlohmann::json ResolvePlainScalar(const std::string& text);

}  // namespace cohort::job
