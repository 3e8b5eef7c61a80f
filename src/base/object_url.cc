#include "base/object_url.h"

namespace cohort {

bool IsStorageUrl(std::string_view path) {
  const size_t separator = path.find("://");
  return separator != std::string_view::npos && separator > 0 &&
         path.substr(0, separator).find('/') == std::string_view::npos;
}

StatusOr<ObjectUrl> ParseObjectUrl(std::string_view url) {
  const auto refuse = [&](std::string_view why) {
    return Status::InvalidArgument("malformed storage URL '" + std::string(url) +
                                   "': " + std::string(why));
  };
  const size_t separator = url.find("://");
  if (!IsStorageUrl(url)) return refuse("expected s3://bucket/key or gs://bucket/key");
  ObjectUrl parsed;
  parsed.scheme = std::string(url.substr(0, separator));
  if (parsed.scheme != "s3" && parsed.scheme != "gs") {
    return refuse("unsupported scheme '" + parsed.scheme +
                  "' (Cohort reads and writes local paths, s3:// and gs://)");
  }
  const std::string_view rest = url.substr(separator + 3);
  const size_t slash = rest.find('/');
  parsed.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) parsed.key = std::string(rest.substr(slash + 1));
  if (parsed.bucket.size() < 3 || parsed.bucket.size() > 63) {
    return refuse("bucket name '" + parsed.bucket + "' must have 3 to 63 characters");
  }
  const auto alphanumeric = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (char c : parsed.bucket) {
    if (!alphanumeric(c) && c != '-' && c != '.' && !(c == '_' && parsed.scheme == "gs")) {
      return refuse("bucket name '" + parsed.bucket +
                    "' may hold only lower-case letters, digits, '-' and '.'");
    }
  }
  if (!alphanumeric(parsed.bucket.front()) || !alphanumeric(parsed.bucket.back())) {
    return refuse("bucket name '" + parsed.bucket + "' must start and end with a letter or digit");
  }
  if (parsed.key.size() > 1024) return refuse("the key is longer than 1024 bytes");
  for (char c : parsed.key) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      return refuse("the key holds a control character");
    }
  }
  if (parsed.key.starts_with('/') || parsed.key.find("//") != std::string::npos) {
    return refuse("the key has an empty path segment ('//')");
  }
  return parsed;
}

}  // namespace cohort
