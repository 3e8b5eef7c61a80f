#include "base/google_credentials.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cctype>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "base/file.h"

namespace cohort {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxTokenAnswerBytes = size_t{64} << 10;
constexpr size_t kMaxKeyFileBytes = size_t{64} << 10;
constexpr auto kRefreshMargin = std::chrono::minutes(5);
constexpr int kFetchAttempts = 3;

std::string Base64Url(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string text;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n =
        (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) text += kAlphabet[(n >> shift) & 63];
  }
  if (i + 1 == bytes.size()) {
    const uint32_t n = uint8_t(bytes[i]) << 16;
    text += kAlphabet[(n >> 18) & 63];
    text += kAlphabet[(n >> 12) & 63];
  } else if (i + 2 == bytes.size()) {
    const uint32_t n = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    for (int shift : {18, 12, 6}) text += kAlphabet[(n >> shift) & 63];
  }
  return text;  // no '=' padding in a JWT
}

StatusOr<EVP_PKEY*> LoadPrivateKey(const std::string& pem, const std::string& origin) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return Status::Internal("BIO_new_mem_buf failed");
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (key == nullptr) {
    return Status::InvalidArgument(origin + ": private_key is not a PEM private key");
  }
  return key;
}

size_t AppendBounded(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<std::string*>(user);
  if (body->size() + size * count > kMaxTokenAnswerBytes) return 0;  // stops the transfer
  body->append(data, size * count);
  return size * count;
}

struct HttpAnswer {
  long status = 0;
  std::string body;
};

// One request with a time limit and a bounded answer; transport errors and 5xx are tried again
// (kFetchAttempts in all, 200 ms then 400 ms apart). `what` names the request in errors.
StatusOr<HttpAnswer> Exchange(const std::string& what, const std::string& url,
                              const std::vector<std::string>& headers, const std::string* post) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::string last_error;
  for (int attempt = 1; attempt <= kFetchAttempts; ++attempt) {
    if (attempt > 1) std::this_thread::sleep_for(std::chrono::milliseconds(100 << attempt));
    CURL* curl = curl_easy_init();
    if (curl == nullptr) return Status::Internal(what + ": curl_easy_init failed");
    curl_slist* list = nullptr;
    for (const std::string& header : headers) list = curl_slist_append(list, header.c_str());
    HttpAnswer answer;
    char error_buffer[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBounded);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_PROXY, "");  // the metadata server is never behind a proxy
    if (post != nullptr) {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, post->data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(post->size()));
    }
    const CURLcode result = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
    curl_easy_cleanup(curl);
    curl_slist_free_all(list);
    if (result == CURLE_WRITE_ERROR) {
      return Status::IOError(what + " (" + url + "): the answer is larger than " +
                             std::to_string(kMaxTokenAnswerBytes) + " bytes");
    }
    if (result != CURLE_OK) {
      last_error = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(result);
      continue;
    }
    if (answer.status >= 500) {
      last_error = "HTTP " + std::to_string(answer.status);
      continue;
    }
    if (answer.status != 200) {
      return Status::IOError(what + " (" + url + ") failed: HTTP " + std::to_string(answer.status) +
                             ": " + answer.body.substr(0, 300));
    }
    return answer;
  }
  return Status::Unavailable(what + " (" + url + ") failed after " +
                             std::to_string(kFetchAttempts) + " attempts: " + last_error);
}

std::string FormEncode(std::string_view text) {
  std::string encoded;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      encoded += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      encoded += hex;
    }
  }
  return encoded;
}

class ServiceAccountTokenSource : public OAuthTokenSource {
 public:
  ServiceAccountTokenSource(ServiceAccountKey key, std::string origin)
      : key_(std::move(key)), origin_(std::move(origin)) {}

  std::string Describe() const override {
    return "service account " + key_.client_email + " (key file " + origin_ + ")";
  }

 protected:
  StatusOr<Token> Fetch() override {
    StatusOr<std::string> jwt = SignServiceAccountJwt(key_, kStorageReadWriteScope,
                                                      static_cast<int64_t>(std::time(nullptr)));
    if (!jwt.ok()) return jwt.status();
    const std::string form =
        "grant_type=" + FormEncode("urn:ietf:params:oauth:grant-type:jwt-bearer") +
        "&assertion=" + *jwt;
    StatusOr<HttpAnswer> answer =
        Exchange("token request for " + Describe(), key_.token_uri,
                 {"Content-Type: application/x-www-form-urlencoded"}, &form);
    if (!answer.ok()) return answer.status();
    auto parsed = ParseOAuthTokenAnswer(answer->body, key_.token_uri);
    if (!parsed.ok()) return parsed.status();
    return Token{parsed->first, std::chrono::seconds(parsed->second)};
  }

 private:
  ServiceAccountKey key_;
  std::string origin_;
};

class MetadataServerTokenSource : public OAuthTokenSource {
 public:
  explicit MetadataServerTokenSource(std::string host) : host_(std::move(host)) {}

  std::string Describe() const override {
    return "the metadata server's default service account (" + Url() + ")";
  }

 protected:
  StatusOr<Token> Fetch() override {
    StatusOr<HttpAnswer> answer = Exchange("token request to the metadata server", Url(),
                                           {"Metadata-Flavor: Google"}, nullptr);
    if (!answer.ok()) return answer.status();
    auto parsed = ParseOAuthTokenAnswer(answer->body, Url());
    if (!parsed.ok()) return parsed.status();
    return Token{parsed->first, std::chrono::seconds(parsed->second)};
  }

 private:
  std::string Url() const {
    return "http://" + host_ + "/computeMetadata/v1/instance/service-accounts/default/token";
  }
  std::string host_;
};

}  // namespace

StatusOr<ServiceAccountKey> ParseServiceAccountKey(std::string_view text,
                                                   const std::string& origin) {
  const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    return Status::InvalidArgument(origin + " is not a JSON object (a service-account key file)");
  }
  const auto field = [&](const char* name) -> std::string {
    const auto found = parsed.find(name);
    return found != parsed.end() && found->is_string() ? found->get<std::string>() : "";
  };
  if (field("type") != "service_account") {
    return Status::InvalidArgument(
        origin + ": type is '" + field("type") +
        "'; only service-account key files (type service_account) are supported");
  }
  ServiceAccountKey key{field("client_email"), field("private_key"), field("private_key_id"),
                        field("token_uri")};
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string*>{"client_email", &key.client_email},
        {"private_key", &key.private_key},
        {"token_uri", &key.token_uri}}) {
    if (value->empty()) return Status::InvalidArgument(origin + " has no " + name);
  }
  if (!key.token_uri.starts_with("https://") && !key.token_uri.starts_with("http://")) {
    return Status::InvalidArgument(origin + ": token_uri '" + key.token_uri +
                                   "' is not an http(s) URL");
  }
  StatusOr<EVP_PKEY*> loaded = LoadPrivateKey(key.private_key, origin);
  if (!loaded.ok()) return loaded.status();
  EVP_PKEY_free(*loaded);
  return key;
}

StatusOr<std::string> SignServiceAccountJwt(const ServiceAccountKey& key, std::string_view scope,
                                            int64_t issued_at) {
  json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  if (!key.private_key_id.empty()) header["kid"] = key.private_key_id;
  const json claims = {{"iss", key.client_email},
                       {"scope", std::string(scope)},
                       {"aud", key.token_uri},
                       {"iat", issued_at},
                       {"exp", issued_at + 3600}};
  const std::string signed_part = Base64Url(header.dump()) + "." + Base64Url(claims.dump());
  StatusOr<EVP_PKEY*> private_key = LoadPrivateKey(key.private_key, key.client_email);
  if (!private_key.ok()) return private_key.status();
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  size_t length = 0;
  std::string signature;
  bool ok = context != nullptr &&
            EVP_DigestSignInit(context, nullptr, EVP_sha256(), nullptr, *private_key) == 1 &&
            EVP_DigestSign(context, nullptr, &length,
                           reinterpret_cast<const unsigned char*>(signed_part.data()),
                           signed_part.size()) == 1;
  if (ok) {
    signature.resize(length);
    ok = EVP_DigestSign(context, reinterpret_cast<unsigned char*>(signature.data()), &length,
                        reinterpret_cast<const unsigned char*>(signed_part.data()),
                        signed_part.size()) == 1;
    signature.resize(length);
  }
  EVP_MD_CTX_free(context);
  EVP_PKEY_free(*private_key);
  if (!ok) return Status::Internal("signing the token request of " + key.client_email + " failed");
  return signed_part + "." + Base64Url(signature);
}

StatusOr<std::pair<std::string, int64_t>> ParseOAuthTokenAnswer(std::string_view text,
                                                                const std::string& origin) {
  const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    return Status::IOError("the token answer of " + origin + " is not a JSON object");
  }
  const auto token = parsed.find("access_token");
  const auto expires = parsed.find("expires_in");
  if (token == parsed.end() || !token->is_string() || token->get<std::string>().empty()) {
    return Status::IOError("the token answer of " + origin + " has no access_token");
  }
  if (expires == parsed.end() || !expires->is_number_integer() || expires->get<int64_t>() <= 0) {
    return Status::IOError("the token answer of " + origin + " has no positive integer expires_in");
  }
  const auto type = parsed.find("token_type");
  if (type != parsed.end() && (!type->is_string() || type->get<std::string>() != "Bearer")) {
    return Status::IOError("the token answer of " + origin + " is not of token_type Bearer");
  }
  return std::make_pair(token->get<std::string>(), expires->get<int64_t>());
}

StatusOr<std::string> OAuthTokenSource::AccessToken() {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (!token_.empty() && now + kRefreshMargin < expires_) return token_;
  StatusOr<Token> fetched = Fetch();
  if (!fetched.ok()) return fetched.status();
  ++fetches_;
  token_ = fetched->access_token;
  expires_ = now + fetched->expires_in;
  return token_;
}

int OAuthTokenSource::fetch_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fetches_;
}

std::shared_ptr<OAuthTokenSource> MakeServiceAccountTokenSource(ServiceAccountKey key,
                                                                std::string origin) {
  return std::make_shared<ServiceAccountTokenSource>(std::move(key), std::move(origin));
}

std::shared_ptr<OAuthTokenSource> MakeMetadataServerTokenSource(std::string host) {
  return std::make_shared<MetadataServerTokenSource>(std::move(host));
}

StatusOr<std::shared_ptr<OAuthTokenSource>> ResolveGoogleApplicationDefaultCredentials(
    const EnvironmentLookup& environment) {
  if (const auto path = environment("GOOGLE_APPLICATION_CREDENTIALS")) {
    const std::string origin = *path + " from GOOGLE_APPLICATION_CREDENTIALS";
    StatusOr<std::string> text = ReadWholeFile(*path, kMaxKeyFileBytes);
    if (!text.ok()) {
      return Status::InvalidArgument("cannot read the key file " + origin + ": " +
                                     text.status().message());
    }
    StatusOr<ServiceAccountKey> key = ParseServiceAccountKey(*text, origin);
    if (!key.ok()) return key.status();
    return MakeServiceAccountTokenSource(*std::move(key), origin);
  }
  if (const auto host = environment("GCE_METADATA_HOST")) {
    return MakeMetadataServerTokenSource(*host);
  }
  StatusOr<std::string> product = ReadWholeFile("/sys/class/dmi/id/product_name", 4096);
  if (product.ok() && product->starts_with("Google")) {
    return MakeMetadataServerTokenSource("metadata.google.internal");
  }
  return std::shared_ptr<OAuthTokenSource>();
}

}  // namespace cohort
