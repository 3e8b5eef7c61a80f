// Where a path points: a local file, or an object in a bucket (s3://bucket/key, gs://bucket/key).
// The one parser of storage URLs, so that every path flag is refused the same way, before any work
// starts, when it is malformed.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace cohort {

// An object's address. `scheme` is "s3" or "gs"; `key` may be empty (the bucket's root, as a
// directory) and never starts with '/'.
struct ObjectUrl {
  std::string scheme;
  std::string bucket;
  std::string key;

  // "s3://bucket/key", as the user wrote it (for messages).
  std::string ToString() const { return scheme + "://" + bucket + "/" + key; }
};

// Whether `path` names object storage ("<scheme>://..."), whatever the scheme: a local path never
// holds "://" before its first '/'.
bool IsStorageUrl(std::string_view path);

// Parses "s3://bucket/key" or "gs://bucket/key". InvalidArgument, naming the URL and the rule it
// breaks, for an unknown scheme (only s3 and gs are served), a bucket name that is not 3-63
// characters of lower-case letters, digits, '-' and '.' (and '_' on gs) starting and ending with a
// letter or digit, a key longer than 1024 bytes or holding a control character, or an empty path
// segment ("s3://b/a//c").
StatusOr<ObjectUrl> ParseObjectUrl(std::string_view url);

}  // namespace cohort
