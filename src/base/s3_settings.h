// Which S3 endpoint to talk to and with which keys, found the way every AWS tool finds them, so a
// job configured for the AWS CLI or boto3 needs nothing more for Cohort:
//
//   credentials  AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), else the
//                profile AWS_PROFILE (or "default") in the shared credentials file
//                (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials), else in the config file
//                (AWS_CONFIG_FILE, else ~/.aws/config; section "[profile NAME]" or "[default]").
//   region       AWS_REGION, else AWS_DEFAULT_REGION, else the profile's `region` in the config
//                file, else us-east-1.
//   endpoint     AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else the profile's `endpoint_url`,
//                else https://s3.<region>.amazonaws.com.
//
// gs:// reads Cloud Storage's HMAC keys from GS_ACCESS_KEY_ID + GS_SECRET_ACCESS_KEY, its endpoint
// from GS_ENDPOINT_URL (default https://storage.googleapis.com) and signs for region "auto".
// Without HMAC keys it takes Google's Application Default Credentials (google_credentials.h: a
// service-account key file named by GOOGLE_APPLICATION_CREDENTIALS, or the metadata server on
// GCE and GKE) and sends their OAuth token as "Authorization: Bearer" instead of signing.
//
// Addressing: COHORT_S3_ADDRESSING_STYLE = path | virtual; by default virtual-hosted
// (bucket.host) on AWS's and Google's own endpoints for buckets without dots, path-style
// (host/bucket) on any endpoint named by the user (radosgw, MinIO and the like expect it).
//
// Every setting records where it came from, so that errors name the source of the credentials
// ("credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"); the secret itself is never part
// of a message.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace cohort {

class OAuthTokenSource;  // google_credentials.h

// The value of an environment variable, or nullopt when unset (or empty). Tests pass their own.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment (getenv), empty values as unset.
EnvironmentLookup ProcessEnvironment();

struct StorageCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty unless temporary credentials
  std::string source;         // "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY", "profile 'x' in /f"
};

struct S3Settings {
  std::string scheme = "s3";  // "s3" or "gs"
  StorageCredentials credentials;
  std::string region = "us-east-1";
  // scheme://host[:port] with no path; "http" is allowed for local servers.
  std::string endpoint;
  std::string endpoint_source;
  bool path_style = false;  // host/bucket/key instead of bucket.host/key
  // gs:// without HMAC keys: the source of OAuth tokens (Authorization: Bearer); credentials
  // then holds only its description in `source`.
  std::shared_ptr<OAuthTokenSource> oauth;
};

// The settings for `scheme` ("s3" or "gs") from `environment` and the files it names.
// InvalidArgument when no credentials are found (the message lists where it looked), when a
// named file cannot be parsed, or when an endpoint is not an http(s) URL.
StatusOr<S3Settings> ResolveS3Settings(std::string_view scheme,
                                       const EnvironmentLookup& environment);

// The sections of an INI file as the AWS tools write them ("[name]", "key = value", '#' and ';'
// comments; indented lines continue a nested block and are skipped): value of `key` in `section`,
// nullopt when absent. `text` is the whole file; exposed for tests.
std::optional<std::string> IniValue(std::string_view text, std::string_view section,
                                    std::string_view key);

}  // namespace cohort
