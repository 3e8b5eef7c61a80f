// Google's Application Default Credentials for gs:// paths: OAuth access tokens, which Cloud
// Storage's XML API takes as "Authorization: Bearer <token>" instead of an HMAC signature.
//
// Two sources, found as Google's own client libraries find them (after gs://'s HMAC keys, which
// s3_settings.h prefers when set):
//
//   1. A service-account key file named by GOOGLE_APPLICATION_CREDENTIALS (the JSON file the
//      Cloud console or `gcloud iam service-accounts keys create` writes). The token comes from
//      the key's token_uri in exchange for a JWT the key signs (RS256, RFC 7523's jwt-bearer
//      grant): claims iss = the account's e-mail, scope, aud = token_uri, iat, exp = iat + 1 h.
//   2. The metadata server of a Compute Engine VM or a GKE pod (Workload Identity):
//      GET
//      http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token
//      with "Metadata-Flavor: Google". Used when GCE_METADATA_HOST names its host[:port] (as
//      Google's libraries read it; tests point it at their own server), or when this machine says
//      it is a Google Compute Engine one (/sys/class/dmi/id/product_name starts with "Google",
//      true on GCE VMs and GKE nodes), so that nothing is tried on other machines.
//
// A token is kept until 5 minutes before it expires, then fetched again; every answer is bounded
// (64 KiB) and every request has a time limit; errors name the source and the URL, never a
// token or the key.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/s3_settings.h"
#include "base/status.h"

namespace cohort {

// What a service-account key file holds that the token exchange needs.
struct ServiceAccountKey {
  std::string client_email;
  std::string private_key;  // PEM, PKCS#8
  std::string private_key_id;
  std::string token_uri;  // https://oauth2.googleapis.com/token in Google's key files
};

// Parses a key file's JSON (`origin` names it in errors): InvalidArgument when it is not JSON,
// not of type "service_account", or lacks a field, or when the private key does not load.
StatusOr<ServiceAccountKey> ParseServiceAccountKey(std::string_view json,
                                                   const std::string& origin);

// The compact JWT (header.claims.signature, base64url) that asks `key.token_uri` for a token of
// `scope`, issued at `issued_at` (seconds since the epoch) and valid for an hour, signed RS256.
StatusOr<std::string> SignServiceAccountJwt(const ServiceAccountKey& key, std::string_view scope,
                                            int64_t issued_at);

// Cloud Storage's read-write scope, what gs:// asks for.
inline constexpr char kStorageReadWriteScope[] =
    "https://www.googleapis.com/auth/devstorage.read_write";

// An OAuth access token, kept until near its expiry. Thread-safe.
class OAuthTokenSource {
 public:
  virtual ~OAuthTokenSource() = default;

  // A token valid for at least 5 more minutes (fetched again when the kept one is not).
  StatusOr<std::string> AccessToken();

  // "service account x@p.iam.gserviceaccount.com (key file /k.json from
  // GOOGLE_APPLICATION_CREDENTIALS)": what errors name as the source of the credentials.
  virtual std::string Describe() const = 0;

  // How many tokens were fetched (not served from the cache), for tests.
  int fetch_count() const;

 protected:
  struct Token {
    std::string access_token;
    std::chrono::seconds expires_in{0};
  };
  // Asks the source for a new token.
  virtual StatusOr<Token> Fetch() = 0;

 private:
  mutable std::mutex mutex_;
  std::string token_;
  std::chrono::steady_clock::time_point expires_{};
  int fetches_ = 0;
};

// Tokens from `key` (key file `origin`).
std::shared_ptr<OAuthTokenSource> MakeServiceAccountTokenSource(ServiceAccountKey key,
                                                                std::string origin);

// Tokens from the metadata server at `host` ("metadata.google.internal", or "127.0.0.1:8080").
std::shared_ptr<OAuthTokenSource> MakeMetadataServerTokenSource(std::string host);

// The Application Default Credentials `environment` names (see above): a service-account key
// file's source (the file read and checked now), else the metadata server's when it applies,
// else nullptr. InvalidArgument for an unreadable or malformed key file, naming it.
StatusOr<std::shared_ptr<OAuthTokenSource>> ResolveGoogleApplicationDefaultCredentials(
    const EnvironmentLookup& environment);

// The answer of a token endpoint or the metadata server ({"access_token": ..., "expires_in": n,
// "token_type": "Bearer"}); `origin` names it in errors. Exposed for tests.
StatusOr<std::pair<std::string, int64_t>> ParseOAuthTokenAnswer(std::string_view json,
                                                                const std::string& origin);

}  // namespace cohort
