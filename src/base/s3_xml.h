// The few XML documents S3 answers with, read without an XML library: S3's responses are flat,
// namespace-prefixed at most at the root, with no attributes Cohort needs and no nested element of
// the same name, so finding `<Name>...</Name>` pairs in order is exact for them. Text is decoded
// from XML's five named entities and numeric character references. A document that does not have
// the expected shape is an error naming what was missing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace cohort {

// The decoded text of every element `name` in `xml`, in document order (empty elements `<Name/>`
// give ""). Only the first `max_count` are returned.
std::vector<std::string> XmlElementTexts(std::string_view xml, std::string_view name,
                                         size_t max_count = SIZE_MAX);

// `text` with & < > " ' escaped, for request bodies.
std::string XmlEscape(std::string_view text);

struct S3ObjectEntry {
  std::string key;
  uint64_t size = 0;
};

// One page of a ListObjectsV2 answer.
struct S3ListPage {
  std::vector<S3ObjectEntry> objects;
  std::vector<std::string> common_prefixes;  // with a delimiter: the "directories"
  bool truncated = false;
  std::string next_continuation_token;  // set when truncated
};

// Parses a ListBucketResult. InvalidArgument for a document that is not one, a Contents without a
// Key or with a Size that is not a number, or a truncated page without a continuation token.
StatusOr<S3ListPage> ParseListObjectsV2(std::string_view xml);

// An error answer's Code and Message ("NoSuchKey", "The specified key does not exist."); both
// empty when the body is not an S3 error document (a HEAD has no body).
struct S3ErrorBody {
  std::string code;
  std::string message;
};
S3ErrorBody ParseS3Error(std::string_view xml);

// The UploadId of an InitiateMultipartUploadResult.
StatusOr<std::string> ParseInitiateMultipartUpload(std::string_view xml);

}  // namespace cohort
