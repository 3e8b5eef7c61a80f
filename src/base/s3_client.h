// An S3 client over libcurl with Signature V4 (sigv4.h): the handful of operations object storage
// needs to stand in for a file system, against AWS, Cloud Storage's XML API or any S3-compatible
// server (Ceph's radosgw in the tests).
//
// - Whole objects only: PutObject writes an object whole or not at all (S3 makes an object visible
//   only once its upload completed). Above `multipart_threshold` it uploads in parts of
//   `part_size`, `parallel_parts` at a time, and aborts the upload if any part fails, so that no
//   half-uploaded parts are left behind.
// - Every request carries x-amz-content-sha256 (the body's SHA-256, which the server checks) and
//   x-amz-date; a session token goes in x-amz-security-token. With an OAuth token instead of keys
//   (gs:// with Application Default Credentials, google_credentials.h) a request carries
//   "Authorization: Bearer <token>" and, with a body, its Content-MD5, which the server checks.
// - Faults: a connection failure, a timeout, a 5xx, 429 or SlowDown is retried with exponential
//   back-off and jitter, at most `max_attempts` times and `max_total` in all, then reported as
//   Unavailable with the last error. Any other 4xx fails at once: NotFound for 404, otherwise
//   IOError (the training programs exit 3 on it: a restart would get the same answer). Every
//   message names the operation, the URL, the endpoint and the source of the credentials, never the
//   secret.
// - Every answer is bounded: a body larger than the caller's bound (1 MiB for XML answers) or
//   headers over 64 KiB stop the transfer with an error.
//
// Thread-safe: each request uses its own curl handle.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/object_url.h"
#include "base/s3_settings.h"
#include "base/s3_xml.h"
#include "base/status.h"

namespace cohort {

struct S3RetryPolicy {
  int max_attempts = 6;
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{5000};
  std::chrono::milliseconds max_total{60000};
  std::chrono::milliseconds connect_timeout{10000};
  // A transfer slower than 1 byte/s for this long counts as timed out.
  std::chrono::milliseconds stall_timeout{30000};
};

struct S3ClientOptions {
  S3RetryPolicy retry;
  size_t multipart_threshold = size_t{64} << 20;
  size_t part_size = size_t{16} << 20;  // S3's minimum is 5 MiB for every part but the last
  int parallel_parts = 4;
  // Reads of more than `read_part_size` come in ranged GETs of that size, `parallel_reads` at a
  // time (a GET costs the server less than a part upload, so more of them run at once).
  size_t read_part_size = size_t{8} << 20;
  int parallel_reads = 8;
};

// What the XML answers (listings, errors, upload ids) may weigh at most.
inline constexpr size_t kMaxS3XmlAnswerBytes = size_t{1} << 20;

class S3Client {
 public:
  explicit S3Client(S3Settings settings, S3ClientOptions options = {});

  const S3Settings& settings() const { return settings_; }

  // Writes `contents` as the object at `url`, whole (multipart above the threshold).
  Status PutObject(const ObjectUrl& url, std::string_view contents) const;

  // The whole object; InvalidArgument when it holds more than `max_bytes`, NotFound when absent.
  // An object larger than `read_part_size` is read in ranged parts, `parallel_reads` at a time, all
  // of the version (ETag) the first part read: one replaced meanwhile fails the read (412), never
  // mixes versions.
  StatusOr<std::string> GetObject(const ObjectUrl& url, size_t max_bytes) const;

  // At most `length` bytes from `offset` (a ranged GET); empty when the object is not longer than
  // `offset`. NotFound when absent.
  StatusOr<std::string> GetObjectRange(const ObjectUrl& url, uint64_t offset, size_t length) const;

  // The object's size, or nullopt when there is no such object.
  StatusOr<std::optional<uint64_t>> HeadObject(const ObjectUrl& url) const;

  // Every object under `prefix` (all pages, following continuation tokens) and, with a
  // `delimiter`, the common prefixes. InvalidArgument beyond `max_entries` entries.
  struct Listing {
    std::vector<S3ObjectEntry> objects;
    std::vector<std::string> common_prefixes;
  };
  StatusOr<Listing> ListObjects(std::string_view bucket, std::string_view prefix,
                                std::string_view delimiter, size_t max_entries = 1000000,
                                int page_size = 1000) const;

  // Deletes the object; deleting an absent object succeeds (S3's rule).
  Status DeleteObject(const ObjectUrl& url) const;

 private:
  struct Request;
  struct Response;
  static Request MakeRequest(std::string operation, std::string method, std::string bucket,
                             std::string key,
                             std::vector<std::pair<std::string, std::string>> query = {});
  StatusOr<Response> Send(const Request& request) const;
  StatusOr<Response> SendOnce(const Request& request, std::string& transport_error) const;
  // gs:// with an OAuth token (settings_.oauth): the request with "Authorization: Bearer" and the
  // body's Content-MD5 instead of a signature.
  StatusOr<Response> SendWithBearerToken(const Request& request, const std::string& url,
                                         const std::string& host,
                                         std::string& transport_error) const;
  // One transfer of `request` to `url` with `headers`, its answer bounded.
  StatusOr<Response> Perform(const Request& request, const std::string& url,
                             const std::vector<std::pair<std::string, std::string>>& headers,
                             std::string& transport_error) const;
  Status MultipartUpload(const ObjectUrl& url, std::string_view contents) const;
  std::string Describe(const Request& request) const;

  S3Settings settings_;
  S3ClientOptions options_;
};

}  // namespace cohort
