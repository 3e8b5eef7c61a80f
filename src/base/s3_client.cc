#include "base/s3_client.h"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "base/checksum.h"
#include "base/google_credentials.h"
#include "base/sigv4.h"

namespace cohort {
namespace {

constexpr size_t kMaxHeaderBytes = size_t{64} << 10;
constexpr size_t kMaxQuotedMessage = 300;

void InitializeCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string AmzDateNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &utc);
  return text;
}

std::string Lower(std::string text) {
  for (char& c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return text;
}

// What one transfer received: the status of the latest status line, headers and body, each
// bounded. The body's bound is the caller's for a success and kMaxS3XmlAnswerBytes for an error
// document, so that a small bound on an object never hides the error that explains a failure.
struct Received {
  std::string* body;
  std::map<std::string, std::string>* headers;
  size_t max_body_bytes;
  long status = 0;
  size_t header_bytes = 0;
  bool overflowed = false;
};

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* received = static_cast<Received*>(user);
  const size_t bytes = size * count;
  const size_t bound = received->status >= 300 ? kMaxS3XmlAnswerBytes : received->max_body_bytes;
  if (received->body->size() + bytes > bound) {
    received->overflowed = true;
    return 0;  // stops the transfer
  }
  received->body->append(data, bytes);
  return bytes;
}

size_t WriteHeader(char* data, size_t size, size_t count, void* user) {
  auto* received = static_cast<Received*>(user);
  const size_t bytes = size * count;
  received->header_bytes += bytes;
  if (received->header_bytes > kMaxHeaderBytes) return 0;
  const std::string_view line(data, bytes);
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    if (line.starts_with("HTTP/")) {  // a new response (after a 100 Continue)
      received->headers->clear();
      const size_t space = line.find(' ');
      if (space != std::string_view::npos) {
        received->status = std::strtol(std::string(line.substr(space + 1, 3)).c_str(), nullptr, 10);
      }
    }
    return bytes;
  }
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
    value.remove_suffix(1);
  }
  (*received->headers)[Lower(std::string(line.substr(0, colon)))] = std::string(value);
  return bytes;
}

struct BodySource {
  std::string_view data;
  size_t offset = 0;
};

size_t ReadBody(char* buffer, size_t size, size_t count, void* user) {
  auto* source = static_cast<BodySource*>(user);
  const size_t bytes = std::min(size * count, source->data.size() - source->offset);
  std::copy_n(source->data.data() + source->offset, bytes, buffer);
  source->offset += bytes;
  return bytes;
}

bool RetryableCurlError(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

bool RetryableAnswer(long status, const std::string& code) {
  return status >= 500 || status == 429 || code == "SlowDown" || code == "RequestTimeout" ||
         code == "InternalError";
}

}  // namespace

struct S3Client::Request {
  std::string operation;  // "PutObject"
  std::string method;     // "PUT"
  std::string bucket;
  std::string key;
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string_view body;
  size_t max_response_bytes = kMaxS3XmlAnswerBytes;
  // Statuses that are an answer, not an error (404 for HeadObject, 416 for a range past the end).
  std::vector<long> accepted_statuses;
};

// A request with no headers or body yet.
S3Client::Request S3Client::MakeRequest(std::string operation, std::string method,
                                        std::string bucket, std::string key,
                                        std::vector<std::pair<std::string, std::string>> query) {
  S3Client::Request request;
  request.operation = std::move(operation);
  request.method = std::move(method);
  request.bucket = std::move(bucket);
  request.key = std::move(key);
  request.query = std::move(query);
  return request;
}

struct S3Client::Response {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
};

S3Client::S3Client(S3Settings settings, S3ClientOptions options)
    : settings_(std::move(settings)), options_(options) {
  InitializeCurlOnce();
}

std::string S3Client::Describe(const Request& request) const {
  return request.operation + " " + settings_.scheme + "://" + request.bucket + "/" + request.key;
}

StatusOr<S3Client::Response> S3Client::SendOnce(const Request& request,
                                                std::string& transport_error) const {
  const size_t scheme_end = settings_.endpoint.find("://") + 3;
  const std::string scheme = settings_.endpoint.substr(0, scheme_end);
  const std::string endpoint_host = settings_.endpoint.substr(scheme_end);
  const bool virtual_host = !settings_.path_style && request.bucket.find('.') == std::string::npos;
  // Path-style "/bucket/key" ("/bucket" for the bucket itself), or "bucket.host" and "/key".
  const std::string host = virtual_host ? request.bucket + "." + endpoint_host : endpoint_host;
  std::string path = virtual_host ? "" : "/" + request.bucket;
  if (virtual_host || !request.key.empty()) path += "/" + UriEncode(request.key, false);
  const std::string query = CanonicalQueryString(request.query);
  const std::string url = scheme + host + path + (query.empty() ? "" : "?" + query);

  if (settings_.oauth) return SendWithBearerToken(request, url, host, transport_error);

  SigV4Request to_sign;
  to_sign.method = request.method;
  to_sign.canonical_uri = path;
  to_sign.query = request.query;
  to_sign.payload_sha256 = Sha256Hex(request.body);
  const std::string amz_date = AmzDateNow();
  to_sign.headers = request.headers;
  to_sign.headers.emplace_back("host", host);
  to_sign.headers.emplace_back("x-amz-content-sha256", to_sign.payload_sha256);
  to_sign.headers.emplace_back("x-amz-date", amz_date);
  if (!settings_.credentials.session_token.empty()) {
    to_sign.headers.emplace_back("x-amz-security-token", settings_.credentials.session_token);
  }
  const SigV4Signature signature =
      SignV4(to_sign, {amz_date, settings_.region, "s3"}, settings_.credentials.access_key_id,
             settings_.credentials.secret_access_key);

  std::vector<std::pair<std::string, std::string>> headers = to_sign.headers;
  headers.emplace_back("Authorization", signature.authorization);
  return Perform(request, url, headers, transport_error);
}

StatusOr<S3Client::Response> S3Client::SendWithBearerToken(const Request& request,
                                                           const std::string& url,
                                                           const std::string& host,
                                                           std::string& transport_error) const {
  StatusOr<std::string> token = settings_.oauth->AccessToken();
  if (!token.ok()) {
    return token.status().WithContext(Describe(request) + ": no OAuth token from " +
                                      settings_.credentials.source);
  }
  std::vector<std::pair<std::string, std::string>> headers = request.headers;
  headers.emplace_back("host", host);
  // The server checks the body against its MD5, as it checks x-amz-content-sha256 when signed.
  if (request.method == "PUT" || request.method == "POST") {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_Digest(request.body.data(), request.body.size(), digest, &length, EVP_md5(), nullptr);
    unsigned char encoded[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
    const int encoded_length = EVP_EncodeBlock(encoded, digest, static_cast<int>(length));
    headers.emplace_back("Content-MD5",
                         std::string(reinterpret_cast<char*>(encoded), encoded_length));
  }
  headers.emplace_back("Authorization", "Bearer " + *token);
  return Perform(request, url, headers, transport_error);
}

StatusOr<S3Client::Response> S3Client::Perform(
    const Request& request, const std::string& url,
    const std::vector<std::pair<std::string, std::string>>& headers,
    std::string& transport_error) const {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Status::Internal(Describe(request) + ": curl_easy_init failed");
  curl_slist* header_list = nullptr;
  for (const auto& [name, value] : headers) {
    header_list = curl_slist_append(header_list, (name + ": " + value).c_str());
  }
  header_list = curl_slist_append(header_list, "Expect:");        // no 100-continue round trip
  header_list = curl_slist_append(header_list, "Content-Type:");  // none of curl's own

  Response response;
  Received received{&response.body, &response.headers, request.max_response_bytes};
  BodySource source{request.body};
  char error_buffer[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, header_list);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &received);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, WriteHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &received);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.retry.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                   std::max(1L, static_cast<long>(options_.retry.stall_timeout.count() / 1000)));
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  if (request.method == "PUT") {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, ReadBody);
    curl_easy_setopt(curl, CURLOPT_READDATA, &source);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  } else if (request.method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  } else if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (request.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  const CURLcode result = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  curl_easy_cleanup(curl);
  curl_slist_free_all(header_list);
  if (received.overflowed) {
    return Status::InvalidArgument(Describe(request) + ": the answer is larger than " +
                                   std::to_string(request.max_response_bytes) + " bytes");
  }
  if (received.header_bytes > kMaxHeaderBytes) {
    return Status::InvalidArgument(Describe(request) + ": the answer's headers exceed " +
                                   std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (result != CURLE_OK) {
    transport_error = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(result);
    if (RetryableCurlError(result)) return Status::Unavailable(transport_error);
    return Status::IOError(Describe(request) + ": " + transport_error + " (endpoint " +
                           settings_.endpoint + ")");
  }
  transport_error.clear();
  return response;
}

StatusOr<S3Client::Response> S3Client::Send(const Request& request) const {
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 random(std::random_device{}());
  const std::string where = " (endpoint " + settings_.endpoint + " from " +
                            settings_.endpoint_source + ", credentials from " +
                            settings_.credentials.source + ")";
  std::string last_error;
  int attempt = 0;
  for (;;) {
    ++attempt;
    std::string transport_error;
    StatusOr<Response> response = SendOnce(request, transport_error);
    if (!response.ok()) {
      if (transport_error.empty() || response.status().code() != Status::Code::kUnavailable) {
        return response.status();
      }
      last_error = transport_error;
    } else {
      const bool accepted =
          std::find(request.accepted_statuses.begin(), request.accepted_statuses.end(),
                    response->status) != request.accepted_statuses.end();
      if ((response->status >= 200 && response->status < 300) || accepted) return response;
      const S3ErrorBody error = ParseS3Error(response->body);
      std::string detail = std::to_string(response->status);
      if (!error.code.empty()) detail += " " + error.code;
      if (!error.message.empty()) detail += ": " + error.message.substr(0, kMaxQuotedMessage);
      if (!RetryableAnswer(response->status, error.code)) {
        const std::string message = Describe(request) + " failed: " + detail + where;
        if (response->status == 404) return Status::NotFound(message);
        return Status::IOError(message);  // a retry, or a restart, would get the same answer
      }
      last_error = detail;
    }
    // Exponential back-off with jitter: half the doubled delay fixed, half random.
    const auto elapsed = std::chrono::steady_clock::now() - start;
    const int64_t doubled = options_.retry.initial_backoff.count() << std::min(attempt - 1, 20);
    const int64_t ceiling = std::min<int64_t>(doubled, options_.retry.max_backoff.count());
    const auto delay = std::chrono::milliseconds(
        ceiling / 2 + static_cast<int64_t>(random() % static_cast<uint64_t>(ceiling / 2 + 1)));
    if (attempt >= options_.retry.max_attempts || elapsed + delay > options_.retry.max_total) {
      const double seconds = std::chrono::duration<double>(elapsed).count();
      char took[32];
      std::snprintf(took, sizeof took, "%.1f", seconds);
      return Status::Unavailable(Describe(request) + " failed after " + std::to_string(attempt) +
                                 " attempts in " + took + " s: " + last_error + where);
    }
    std::this_thread::sleep_for(delay);
  }
}

Status S3Client::PutObject(const ObjectUrl& url, std::string_view contents) const {
  if (contents.size() > options_.multipart_threshold) return MultipartUpload(url, contents);
  Request request = MakeRequest("PutObject", "PUT", url.bucket, url.key);
  request.body = contents;
  return Send(request).status();
}

Status S3Client::MultipartUpload(const ObjectUrl& url, std::string_view contents) const {
  Request create =
      MakeRequest("CreateMultipartUpload", "POST", url.bucket, url.key, {{"uploads", ""}});
  StatusOr<Response> created = Send(create);
  if (!created.ok()) return created.status();
  StatusOr<std::string> upload_id = ParseInitiateMultipartUpload(created->body);
  if (!upload_id.ok()) return upload_id.status();

  const size_t part_size = std::max<size_t>(options_.part_size, 5 << 20);
  const size_t part_count = (contents.size() + part_size - 1) / part_size;
  if (part_count > 10000) {
    return Status::InvalidArgument(Describe(create) + ": " + std::to_string(contents.size()) +
                                   " bytes need more than S3's 10000 parts");
  }
  std::vector<std::string> etags(part_count);
  std::atomic<size_t> next_part{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  Status first_error;
  const auto upload_parts = [&] {
    for (;;) {
      const size_t index = next_part.fetch_add(1);
      if (index >= part_count || failed.load()) return;
      Request part =
          MakeRequest("UploadPart", "PUT", url.bucket, url.key,
                      {{"partNumber", std::to_string(index + 1)}, {"uploadId", *upload_id}});
      part.body = contents.substr(index * part_size, part_size);
      StatusOr<Response> uploaded = Send(part);
      Status status = uploaded.status();
      if (uploaded.ok()) {
        const auto etag = uploaded->headers.find("etag");
        if (etag == uploaded->headers.end() || etag->second.empty()) {
          status = Status::IOError(Describe(part) + ": the answer has no ETag");
        } else {
          etags[index] = etag->second;
        }
      }
      if (!status.ok()) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (first_error.ok()) first_error = status;
        failed = true;
        return;
      }
    }
  };
  const int thread_count =
      static_cast<int>(std::min<size_t>(std::max(1, options_.parallel_parts), part_count));
  std::vector<std::thread> threads;
  for (int i = 0; i < thread_count; ++i) threads.emplace_back(upload_parts);
  for (std::thread& thread : threads) thread.join();

  Status completed = first_error;
  if (completed.ok()) {
    std::string body = "<CompleteMultipartUpload>";
    for (size_t i = 0; i < part_count; ++i) {
      body += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" +
              XmlEscape(etags[i]) + "</ETag></Part>";
    }
    body += "</CompleteMultipartUpload>";
    Request complete = MakeRequest("CompleteMultipartUpload", "POST", url.bucket, url.key,
                                   {{"uploadId", *upload_id}});
    complete.body = body;
    StatusOr<Response> answer = Send(complete);
    completed = answer.status();
    // S3 may answer 200 and still report an error in the body.
    if (answer.ok()) {
      const S3ErrorBody error = ParseS3Error(answer->body);
      if (!error.code.empty()) {
        completed = Status::IOError(Describe(complete) + " failed: " + error.code + ": " +
                                    error.message.substr(0, kMaxQuotedMessage));
      }
    }
  }
  if (!completed.ok()) {
    Request abort = MakeRequest("AbortMultipartUpload", "DELETE", url.bucket, url.key,
                                {{"uploadId", *upload_id}});
    abort.accepted_statuses = {404};
    Status aborted = Send(abort).status();
    if (!aborted.ok()) {
      return Status::IOError(completed.message() +
                             "; aborting the upload failed too: " + aborted.message());
    }
  }
  return completed;
}

StatusOr<std::string> S3Client::GetObject(const ObjectUrl& url, size_t max_bytes) const {
  // The first part, a ranged GET, also tells the object's size (Content-Range) and version (ETag);
  // a larger object's other parts then come `parallel_reads` at a time, each bound to that ETag
  // (If-Match), so that an object replaced meanwhile is never read half old, half new.
  const size_t part_size = std::max<size_t>(options_.read_part_size, 1 << 20);
  Request request = MakeRequest("GetObject", "GET", url.bucket, url.key);
  request.headers.emplace_back("range", "bytes=0-" + std::to_string(part_size - 1));
  request.max_response_bytes = max_bytes;
  request.accepted_statuses = {416};  // an empty object has no byte 0
  StatusOr<Response> response = Send(request);
  if (!response.ok()) {
    if (response.status().code() == Status::Code::kInvalidArgument &&
        response.status().message().find("larger than") != std::string::npos) {
      return Status::InvalidArgument(url.ToString() + " holds more than " +
                                     std::to_string(max_bytes) + " bytes");
    }
    return response.status();
  }
  if (response->status == 416) return std::string();
  if (response->status != 206) return std::move(response->body);  // the server sent it whole
  const auto range = response->headers.find("content-range");
  const size_t slash =
      range == response->headers.end() ? std::string::npos : range->second.rfind('/');
  if (slash == std::string::npos) {
    return Status::IOError(Describe(request) + ": a partial answer without Content-Range");
  }
  uint64_t total = 0;
  try {
    total = std::stoull(range->second.substr(slash + 1));
  } catch (...) {
    return Status::IOError(Describe(request) + ": Content-Range '" + range->second +
                           "' has no size");
  }
  if (total > max_bytes) {
    return Status::InvalidArgument(url.ToString() + " holds more than " +
                                   std::to_string(max_bytes) + " bytes");
  }
  if (total <= response->body.size()) return std::move(response->body);
  const auto etag = response->headers.find("etag");
  if (etag == response->headers.end() || etag->second.empty()) {
    return Status::IOError(Describe(request) + ": the answer has no ETag");
  }
  std::string contents(total, '\0');
  std::copy(response->body.begin(), response->body.end(), contents.begin());
  const size_t first = response->body.size();
  const size_t part_count = (total - first + part_size - 1) / part_size;
  std::atomic<size_t> next_part{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  Status first_error;
  const auto fetch_parts = [&] {
    for (;;) {
      const size_t index = next_part.fetch_add(1);
      if (index >= part_count || failed.load()) return;
      const size_t offset = first + index * part_size;
      const size_t length = std::min<size_t>(part_size, total - offset);
      Request part = MakeRequest("GetObject", "GET", url.bucket, url.key);
      part.headers.emplace_back(
          "range", "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1));
      part.headers.emplace_back("if-match", etag->second);
      part.max_response_bytes = length;
      StatusOr<Response> answer = Send(part);
      Status status = answer.status();
      if (answer.ok() && (answer->status != 206 || answer->body.size() != length)) {
        status = Status::IOError(Describe(part) + ": asked for " + std::to_string(length) +
                                 " bytes at " + std::to_string(offset) + ", got " +
                                 std::to_string(answer->body.size()) + " (HTTP " +
                                 std::to_string(answer->status) + ")");
      }
      if (status.ok()) {
        std::copy(answer->body.begin(), answer->body.end(), contents.begin() + offset);
        continue;
      }
      std::lock_guard<std::mutex> lock(error_mutex);
      if (first_error.ok()) first_error = status;
      failed = true;
      return;
    }
  };
  const int thread_count =
      static_cast<int>(std::min<size_t>(std::max(1, options_.parallel_reads), part_count));
  std::vector<std::thread> threads;
  for (int i = 0; i < thread_count; ++i) threads.emplace_back(fetch_parts);
  for (std::thread& thread : threads) thread.join();
  if (!first_error.ok()) return first_error;
  return contents;
}

StatusOr<std::string> S3Client::GetObjectRange(const ObjectUrl& url, uint64_t offset,
                                               size_t length) const {
  if (length == 0) return std::string();
  Request request = MakeRequest("GetObject", "GET", url.bucket, url.key);
  request.headers.emplace_back(
      "range", "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1));
  request.max_response_bytes = length;
  request.accepted_statuses = {416};  // the range starts at or past the end
  StatusOr<Response> response = Send(request);
  if (!response.ok()) return response.status();
  if (response->status == 416) return std::string();
  if (response->status == 200 && offset > 0) {
    return Status::IOError(Describe(request) + ": the server ignored the Range header");
  }
  return std::move(response->body);
}

StatusOr<std::optional<uint64_t>> S3Client::HeadObject(const ObjectUrl& url) const {
  Request request = MakeRequest("HeadObject", "HEAD", url.bucket, url.key);
  request.accepted_statuses = {404};
  StatusOr<Response> response = Send(request);
  if (!response.ok()) return response.status();
  if (response->status == 404) return std::optional<uint64_t>();
  const auto length = response->headers.find("content-length");
  if (length == response->headers.end()) {
    return Status::IOError(Describe(request) + ": the answer has no Content-Length");
  }
  uint64_t size = 0;
  try {
    size = std::stoull(length->second);
  } catch (...) {
    return Status::IOError(Describe(request) + ": Content-Length '" + length->second +
                           "' is not a number");
  }
  return std::optional<uint64_t>(size);
}

StatusOr<S3Client::Listing> S3Client::ListObjects(std::string_view bucket, std::string_view prefix,
                                                  std::string_view delimiter, size_t max_entries,
                                                  int page_size) const {
  Listing listing;
  std::string token;
  for (;;) {
    Request request = MakeRequest("ListObjectsV2", "GET", std::string(bucket), "");
    request.query = {{"list-type", "2"},
                     {"prefix", std::string(prefix)},
                     {"max-keys", std::to_string(page_size)}};
    if (!delimiter.empty()) request.query.emplace_back("delimiter", std::string(delimiter));
    if (!token.empty()) request.query.emplace_back("continuation-token", token);
    StatusOr<Response> response = Send(request);
    if (!response.ok()) return response.status();
    StatusOr<S3ListPage> page = ParseListObjectsV2(response->body);
    if (!page.ok()) {
      return Status::IOError(Describe(request) + std::string(prefix) + ": " +
                             page.status().message());
    }
    for (S3ObjectEntry& object : page->objects) listing.objects.push_back(std::move(object));
    for (std::string& common : page->common_prefixes) {
      listing.common_prefixes.push_back(std::move(common));
    }
    if (listing.objects.size() + listing.common_prefixes.size() > max_entries) {
      return Status::InvalidArgument(settings_.scheme + "://" + std::string(bucket) + "/" +
                                     std::string(prefix) + " holds more than " +
                                     std::to_string(max_entries) + " entries");
    }
    if (!page->truncated) return listing;
    if (page->next_continuation_token == token) {
      return Status::IOError(Describe(request) + ": the server repeated its continuation token");
    }
    token = page->next_continuation_token;
  }
}

Status S3Client::DeleteObject(const ObjectUrl& url) const {
  Request request = MakeRequest("DeleteObject", "DELETE", url.bucket, url.key);
  request.accepted_statuses = {404};
  return Send(request).status();
}

}  // namespace cohort
