// gs:// with Application Default Credentials (base/google_credentials.h), against servers written
// here on loopback (cpp-httplib, real HTTP): a token endpoint that accepts a JWT only if its RS256
// signature verifies with the service account's public key and its claims are Google's; a metadata
// server that answers only requests with "Metadata-Flavor: Google"; and an XML API that serves
// objects only to "Authorization: Bearer <the token it issued>" with a matching Content-MD5.
// No Google endpoint is reachable from here (docs/storage.md says what that leaves untested).
#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <atomic>
#include <ctime>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "base/file.h"
#include "base/google_credentials.h"
#include "base/s3_client.h"
#include "base/s3_settings.h"
#include "testing/scratch_directory.h"

namespace cohort {
namespace {

using json = nlohmann::json;

// A fresh RSA key pair as PEM: (PKCS#8 private key, public key).
std::pair<std::string, std::string> MakeKeyPair() {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  EXPECT_NE(key, nullptr);
  const auto pem = [&](bool is_private) {
    BIO* bio = BIO_new(BIO_s_mem());
    if (is_private) {
      PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
    } else {
      PEM_write_bio_PUBKEY(bio, key);
    }
    char* data = nullptr;
    const long length = BIO_get_mem_data(bio, &data);
    std::string text(data, static_cast<size_t>(length));
    BIO_free(bio);
    return text;
  };
  std::pair<std::string, std::string> pair{pem(true), pem(false)};
  EVP_PKEY_free(key);
  return pair;
}

std::string Base64UrlDecode(std::string_view text) {
  std::string standard(text);
  for (char& c : standard) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  while (standard.size() % 4 != 0) standard += '=';
  std::string decoded(standard.size() / 4 * 3, '\0');
  const int length = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                                     reinterpret_cast<const unsigned char*>(standard.data()),
                                     static_cast<int>(standard.size()));
  if (length < 0) return "";
  decoded.resize(static_cast<size_t>(length) - (text.size() % 4 == 2 ? 2 : text.size() % 4 == 3));
  return decoded;
}

bool VerifyRs256(const std::string& public_pem, std::string_view signed_part,
                 const std::string& signature) {
  BIO* bio = BIO_new_mem_buf(public_pem.data(), static_cast<int>(public_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (key == nullptr) return false;
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  const bool ok =
      EVP_DigestVerifyInit(context, nullptr, EVP_sha256(), nullptr, key) == 1 &&
      EVP_DigestVerify(context, reinterpret_cast<const unsigned char*>(signature.data()),
                       signature.size(), reinterpret_cast<const unsigned char*>(signed_part.data()),
                       signed_part.size()) == 1;
  EVP_MD_CTX_free(context);
  EVP_PKEY_free(key);
  return ok;
}

std::string Md5Base64(std::string_view body) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(body.data(), body.size(), digest, &length, EVP_md5(), nullptr);
  unsigned char encoded[64];
  const int size = EVP_EncodeBlock(encoded, digest, static_cast<int>(length));
  return std::string(reinterpret_cast<char*>(encoded), size);
}

// Google's side, on a free loopback port: /token (the service account's token endpoint),
// /computeMetadata/v1/... (the metadata server) and /bucket/<key> (the XML API).
class FakeGoogle {
 public:
  FakeGoogle(std::string public_pem, std::string client_email, int64_t expires_in)
      : public_pem_(std::move(public_pem)),
        client_email_(std::move(client_email)),
        expires_in_(expires_in) {
    server_.Post("/token", [this](const httplib::Request& request, httplib::Response& response) {
      const std::string why = CheckTokenRequest(request);
      if (!why.empty()) {
        std::lock_guard<std::mutex> lock(mutex_);
        refusals_.push_back(why);
        response.status = 400;
        response.set_content(json{{"error", "invalid_grant"}, {"error_description", why}}.dump(),
                             "application/json");
        return;
      }
      Issue(response);
    });
    server_.Get("/computeMetadata/v1/instance/service-accounts/default/token",
                [this](const httplib::Request& request, httplib::Response& response) {
                  if (request.get_header_value("Metadata-Flavor") != "Google") {
                    response.status = 403;
                    return;
                  }
                  Issue(response);
                });
    const auto authorized = [this](const httplib::Request& request) {
      std::lock_guard<std::mutex> lock(mutex_);
      return tokens_.count(request.get_header_value("Authorization").substr(7)) == 1 &&
             request.get_header_value("Authorization").starts_with("Bearer ");
    };
    server_.Put(R"(/bucket/(.+))", [this, authorized](const httplib::Request& request,
                                                      httplib::Response& response) {
      if (!authorized(request)) {
        response.status = 401;
        return;
      }
      if (request.get_header_value("Content-MD5") != Md5Base64(request.body)) {
        response.status = 400;
        response.set_content("<Error><Code>BadDigest</Code></Error>", "application/xml");
        return;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      objects_[request.matches[1]] = request.body;
    });
    server_.Get(R"(/bucket/(.+))", [this, authorized](const httplib::Request& request,
                                                      httplib::Response& response) {
      if (!authorized(request)) {
        response.status = 401;
        response.set_content("<Error><Code>AuthenticationRequired</Code></Error>",
                             "application/xml");
        return;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      const auto found = objects_.find(request.matches[1]);
      if (found == objects_.end()) {
        response.status = 404;
        response.set_content("<Error><Code>NoSuchKey</Code></Error>", "application/xml");
        return;
      }
      response.set_content(found->second, "application/octet-stream");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeGoogle() {
    server_.stop();
    thread_.join();
  }

  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string endpoint() const { return "http://" + host(); }
  int issued() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(tokens_.size());
  }
  std::vector<std::string> refusals() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return refusals_;
  }

 private:
  // "" when the request is a jwt-bearer grant whose JWT verifies and says what Google requires.
  std::string CheckTokenRequest(const httplib::Request& request) const {
    if (request.get_param_value("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer") {
      return "grant_type is '" + request.get_param_value("grant_type") + "'";
    }
    const std::string jwt = request.get_param_value("assertion");
    const size_t first = jwt.find('.'), second = jwt.rfind('.');
    if (first == std::string::npos || first == second) return "the assertion is not a JWT";
    if (!VerifyRs256(public_pem_, std::string_view(jwt).substr(0, second),
                     Base64UrlDecode(std::string_view(jwt).substr(second + 1)))) {
      return "the JWT's signature does not verify with the account's public key";
    }
    const json header = json::parse(Base64UrlDecode(jwt.substr(0, first)), nullptr, false);
    const json claims =
        json::parse(Base64UrlDecode(jwt.substr(first + 1, second - first - 1)), nullptr, false);
    if (!header.is_object() || header.value("alg", "") != "RS256") return "alg is not RS256";
    if (header.value("kid", "") != "key-1") return "kid is not the key's id";
    if (!claims.is_object()) return "the claims are not a JSON object";
    if (claims.value("iss", "") != client_email_) return "iss is not the account";
    if (claims.value("aud", "") != endpoint() + "/token") return "aud is not the token_uri";
    if (claims.value("scope", "") != kStorageReadWriteScope) return "scope is not read_write";
    const int64_t iat = claims.value("iat", int64_t{0}), exp = claims.value("exp", int64_t{0});
    if (exp - iat != 3600) return "the JWT is not valid for an hour";
    if (std::llabs(iat - static_cast<int64_t>(std::time(nullptr))) > 300) return "iat is not now";
    return "";
  }

  void Issue(httplib::Response& response) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string token = "ya29.token-" + std::to_string(tokens_.size() + 1);
    tokens_.insert(token);
    response.set_content(
        json{{"access_token", token}, {"expires_in", expires_in_}, {"token_type", "Bearer"}}.dump(),
        "application/json");
  }

  const std::string public_pem_;
  const std::string client_email_;
  const int64_t expires_in_;
  mutable std::mutex mutex_;
  std::set<std::string> tokens_;
  std::vector<std::string> refusals_;
  std::map<std::string, std::string> objects_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

constexpr char kAccount[] = "trainer@project.iam.gserviceaccount.com";

EnvironmentLookup Environment(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const std::string& name) -> std::optional<std::string> {
    const auto found = values.find(name);
    if (found == values.end()) return std::nullopt;
    return found->second;
  };
}

class GsAuthTest : public ::testing::Test {
 protected:
  // A key file for kAccount with `private_pem`, token_uri on `google`.
  std::string WriteKeyFile(const FakeGoogle& google, const std::string& private_pem) {
    const std::string path = (scratch_.path() / "key.json").string();
    const json key = {{"type", "service_account"}, {"project_id", "project"},
                      {"private_key_id", "key-1"}, {"private_key", private_pem},
                      {"client_email", kAccount},  {"token_uri", google.endpoint() + "/token"}};
    EXPECT_TRUE(WriteFileAtomically(path, key.dump(2)).ok());
    return path;
  }

  cohort::testing::ScratchDirectory scratch_{"gs-auth"};
  const std::pair<std::string, std::string> keys_ = MakeKeyPair();
};

TEST_F(GsAuthTest, AServiceAccountKeyFileGetsATokenThatTheXmlApiTakes) {
  FakeGoogle google(keys_.second, kAccount, 3600);
  StatusOr<S3Settings> settings = ResolveS3Settings(
      "gs", Environment({{"GOOGLE_APPLICATION_CREDENTIALS", WriteKeyFile(google, keys_.first)},
                         {"GS_ENDPOINT_URL", google.endpoint()}}));
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  ASSERT_NE(settings->oauth, nullptr);
  EXPECT_NE(settings->credentials.source.find(kAccount), std::string::npos);
  const S3Client client(*settings);
  const ObjectUrl url{"gs", "bucket", "job/backup/ckpt-1.pt"};
  ASSERT_TRUE(client.PutObject(url, "checkpoint bytes").ok()) << google.refusals().size();
  StatusOr<std::string> read = client.GetObject(url, 1 << 20);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, "checkpoint bytes");
  // One token, kept for both requests: it is valid for an hour.
  EXPECT_EQ(google.issued(), 1);
  EXPECT_EQ(settings->oauth->fetch_count(), 1);
  EXPECT_TRUE(google.refusals().empty()) << google.refusals().front();
}

TEST_F(GsAuthTest, AJwtSignedWithAnotherKeyIsRefusedAndTheErrorNamesTheAccount) {
  FakeGoogle google(keys_.second, kAccount, 3600);
  const std::string other_key = MakeKeyPair().first;
  StatusOr<S3Settings> settings = ResolveS3Settings(
      "gs", Environment({{"GOOGLE_APPLICATION_CREDENTIALS", WriteKeyFile(google, other_key)},
                         {"GS_ENDPOINT_URL", google.endpoint()}}));
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  const Status put = S3Client(*settings).PutObject({"gs", "bucket", "k"}, "x");
  EXPECT_EQ(put.code(), Status::Code::kIOError) << put.ToString();
  EXPECT_NE(put.message().find("PutObject gs://bucket/k"), std::string::npos) << put.message();
  EXPECT_NE(put.message().find(kAccount), std::string::npos) << put.message();
  EXPECT_NE(put.message().find("HTTP 400"), std::string::npos) << put.message();
  EXPECT_EQ(google.issued(), 0);
  ASSERT_EQ(google.refusals().size(), 1u);  // a 4xx is not tried again
  EXPECT_NE(google.refusals()[0].find("signature does not verify"), std::string::npos);
}

TEST_F(GsAuthTest, TheMetadataServerIsAskedWithItsHeaderAndItsTokenKeptUntilNearExpiry) {
  {
    FakeGoogle google(keys_.second, kAccount, 3600);
    StatusOr<S3Settings> settings =
        ResolveS3Settings("gs", Environment({{"GCE_METADATA_HOST", google.host()},
                                             {"GS_ENDPOINT_URL", google.endpoint()}}));
    ASSERT_TRUE(settings.ok()) << settings.status().ToString();
    EXPECT_NE(settings->credentials.source.find("metadata server"), std::string::npos);
    const S3Client client(*settings);
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(client.PutObject({"gs", "bucket", "k" + std::to_string(i)}, "x").ok());
    }
    EXPECT_EQ(google.issued(), 1);
  }
  // A token with less than the 5-minute margin left is fetched again for every request.
  FakeGoogle google(keys_.second, kAccount, 60);
  StatusOr<S3Settings> settings = ResolveS3Settings(
      "gs",
      Environment({{"GCE_METADATA_HOST", google.host()}, {"GS_ENDPOINT_URL", google.endpoint()}}));
  ASSERT_TRUE(settings.ok());
  const S3Client client(*settings);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.PutObject({"gs", "bucket", "k" + std::to_string(i)}, "x").ok());
  }
  EXPECT_EQ(google.issued(), 3);
}

TEST_F(GsAuthTest, HmacKeysComeFirstAndBadKeyFilesAreRefusedBeforeAnyRequest) {
  FakeGoogle google(keys_.second, kAccount, 3600);
  const std::string key_file = WriteKeyFile(google, keys_.first);
  StatusOr<S3Settings> hmac =
      ResolveS3Settings("gs", Environment({{"GS_ACCESS_KEY_ID", "GOOG1E"},
                                           {"GS_SECRET_ACCESS_KEY", "s"},
                                           {"GOOGLE_APPLICATION_CREDENTIALS", key_file}}));
  ASSERT_TRUE(hmac.ok());
  EXPECT_EQ(hmac->oauth, nullptr);

  const std::string bad = (scratch_.path() / "bad.json").string();
  for (const std::string& text :
       {std::string("not json"), json{{"type", "authorized_user"}}.dump(),
        json{{"type", "service_account"}, {"client_email", kAccount}}.dump(),
        json{{"type", "service_account"},
             {"client_email", kAccount},
             {"private_key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"},
             {"token_uri", "https://oauth2.googleapis.com/token"}}
            .dump()}) {
    ASSERT_TRUE(WriteFileAtomically(bad, text).ok());
    StatusOr<S3Settings> refused =
        ResolveS3Settings("gs", Environment({{"GOOGLE_APPLICATION_CREDENTIALS", bad}}));
    EXPECT_EQ(refused.status().code(), Status::Code::kInvalidArgument) << text;
    EXPECT_NE(refused.status().message().find(bad + " from GOOGLE_APPLICATION_CREDENTIALS"),
              std::string::npos)
        << refused.status().message();
  }
  EXPECT_EQ(google.issued(), 0);
}

TEST(GoogleCredentialsTest, TokenAnswersAreChecked) {
  EXPECT_TRUE(
      ParseOAuthTokenAnswer(R"({"access_token":"t","expires_in":3599,"token_type":"Bearer"})", "x")
          .ok());
  for (const char* bad : {"[]", R"({"expires_in":3599})", R"({"access_token":"t"})",
                          R"({"access_token":"t","expires_in":-1})",
                          R"({"access_token":"t","expires_in":10,"token_type":"MAC"})"}) {
    EXPECT_EQ(ParseOAuthTokenAnswer(bad, "x").status().code(), Status::Code::kIOError) << bad;
  }
}

}  // namespace
}  // namespace cohort
