#include "base/s3_settings.h"

#include <cstdlib>
#include <filesystem>

#include "base/file.h"
#include "base/google_credentials.h"

namespace cohort {
namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\r')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

// The profile's files are small; anything larger is not one.
constexpr size_t kMaxProfileFileBytes = size_t{1} << 20;

// The file's text, nullopt when it does not exist; an error when it exists and cannot be read.
StatusOr<std::optional<std::string>> ReadOptionalFile(const std::string& path) {
  StatusOr<std::string> text = ReadWholeFile(path, kMaxProfileFileBytes);
  if (text.ok()) return std::optional<std::string>(*std::move(text));
  if (text.status().code() == Status::Code::kNotFound) return std::optional<std::string>();
  return text.status();
}

Status CheckEndpoint(const std::string& endpoint, const std::string& source) {
  const bool http = endpoint.starts_with("http://") || endpoint.starts_with("https://");
  const size_t host_start = endpoint.find("://") + 3;
  if (!http || endpoint.size() <= host_start ||
      endpoint.find('/', host_start) != std::string::npos) {
    return Status::InvalidArgument("endpoint '" + endpoint + "' from " + source +
                                   " is not an http:// or https:// URL of a host (and port)");
  }
  return Status::OK();
}

}  // namespace

EnvironmentLookup ProcessEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
}

std::optional<std::string> IniValue(std::string_view text, std::string_view section,
                                    std::string_view key) {
  bool in_section = false;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!line.empty() && (line.front() == ' ' || line.front() == '\t')) continue;  // nested
    line = Trim(line);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[') {
      const size_t close = line.find(']');
      in_section = close != std::string_view::npos && Trim(line.substr(1, close - 1)) == section;
      continue;
    }
    if (!in_section) continue;
    const size_t equals = line.find('=');
    if (equals == std::string_view::npos) continue;
    if (Trim(line.substr(0, equals)) == key) return std::string(Trim(line.substr(equals + 1)));
  }
  return std::nullopt;
}

StatusOr<S3Settings> ResolveS3Settings(std::string_view scheme,
                                       const EnvironmentLookup& environment) {
  S3Settings settings;
  settings.scheme = std::string(scheme);
  const auto env = [&](const char* name) { return environment(name); };
  const std::optional<std::string> addressing = env("COHORT_S3_ADDRESSING_STYLE");
  if (addressing && *addressing != "path" && *addressing != "virtual") {
    return Status::InvalidArgument("COHORT_S3_ADDRESSING_STYLE is '" + *addressing +
                                   "'; expected path or virtual");
  }
  if (scheme == "gs") {
    const auto id = env("GS_ACCESS_KEY_ID");
    const auto secret = env("GS_SECRET_ACCESS_KEY");
    if (id && secret) {
      settings.credentials = {*id, *secret, "", "GS_ACCESS_KEY_ID/GS_SECRET_ACCESS_KEY"};
    } else {
      StatusOr<std::shared_ptr<OAuthTokenSource>> adc =
          ResolveGoogleApplicationDefaultCredentials(environment);
      if (!adc.ok()) return adc.status();
      if (*adc == nullptr) {
        return Status::InvalidArgument(
            "no Cloud Storage credentials for gs://: set GS_ACCESS_KEY_ID and "
            "GS_SECRET_ACCESS_KEY (an HMAC key of a service account), or "
            "GOOGLE_APPLICATION_CREDENTIALS (a service-account key file), or run on GCE or GKE "
            "(the metadata server; GCE_METADATA_HOST names another) (docs/storage.md)");
      }
      settings.oauth = *adc;
      settings.credentials.source = settings.oauth->Describe();
    }
    settings.region = "auto";
    const auto endpoint = env("GS_ENDPOINT_URL");
    settings.endpoint = endpoint.value_or("https://storage.googleapis.com");
    settings.endpoint_source = endpoint ? "GS_ENDPOINT_URL" : "Cloud Storage's default";
    Status checked = CheckEndpoint(settings.endpoint, settings.endpoint_source);
    if (!checked.ok()) return checked;
    settings.path_style = addressing ? *addressing == "path" : endpoint.has_value();
    return settings;
  }
  if (scheme != "s3")
    return Status::InvalidArgument("no settings for scheme " + std::string(scheme));

  const std::string profile = env("AWS_PROFILE").value_or("default");
  const std::optional<std::string> home = env("HOME");
  const std::string credentials_path =
      env("AWS_SHARED_CREDENTIALS_FILE").value_or(home ? *home + "/.aws/credentials" : "");
  const std::string config_path =
      env("AWS_CONFIG_FILE").value_or(home ? *home + "/.aws/config" : "");
  std::optional<std::string> credentials_text, config_text;
  if (!credentials_path.empty()) {
    StatusOr<std::optional<std::string>> text = ReadOptionalFile(credentials_path);
    if (!text.ok()) return text.status();
    credentials_text = *text;
  }
  if (!config_path.empty()) {
    StatusOr<std::optional<std::string>> text = ReadOptionalFile(config_path);
    if (!text.ok()) return text.status();
    config_text = *text;
  }
  const std::string config_section = profile == "default" ? "default" : "profile " + profile;
  const auto config_value = [&](std::string_view key) -> std::optional<std::string> {
    if (!config_text) return std::nullopt;
    return IniValue(*config_text, config_section, key);
  };

  // Credentials: the environment, then the credentials file, then the config file.
  const auto id = env("AWS_ACCESS_KEY_ID");
  const auto secret = env("AWS_SECRET_ACCESS_KEY");
  if (id && secret) {
    settings.credentials = {*id, *secret, env("AWS_SESSION_TOKEN").value_or(""),
                            "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"};
  } else {
    const auto from_file = [&](const std::optional<std::string>& text, const std::string& section,
                               const std::string& path) -> bool {
      if (!text) return false;
      const auto file_id = IniValue(*text, section, "aws_access_key_id");
      const auto file_secret = IniValue(*text, section, "aws_secret_access_key");
      if (!file_id || !file_secret) return false;
      settings.credentials = {*file_id, *file_secret,
                              IniValue(*text, section, "aws_session_token").value_or(""),
                              "profile '" + profile + "' in " + path};
      return true;
    };
    if (!from_file(credentials_text, profile, credentials_path) &&
        !from_file(config_text, config_section, config_path)) {
      return Status::InvalidArgument(
          "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give profile '" +
          profile + "' aws_access_key_id and aws_secret_access_key in " +
          (credentials_path.empty() ? std::string("~/.aws/credentials") : credentials_path) +
          " or " + (config_path.empty() ? std::string("~/.aws/config") : config_path));
    }
  }

  if (auto region = env("AWS_REGION")) {
    settings.region = *region;
  } else if (auto default_region = env("AWS_DEFAULT_REGION")) {
    settings.region = *default_region;
  } else if (auto file_region = config_value("region")) {
    settings.region = *file_region;
  }
  for (char c : settings.region) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
      return Status::InvalidArgument("region '" + settings.region +
                                     "' may hold only lower-case letters, digits and '-'");
    }
  }

  bool user_endpoint = true;
  if (auto endpoint = env("AWS_ENDPOINT_URL_S3")) {
    settings.endpoint = *endpoint;
    settings.endpoint_source = "AWS_ENDPOINT_URL_S3";
  } else if (auto general = env("AWS_ENDPOINT_URL")) {
    settings.endpoint = *general;
    settings.endpoint_source = "AWS_ENDPOINT_URL";
  } else if (auto file_endpoint = config_value("endpoint_url")) {
    settings.endpoint = *file_endpoint;
    settings.endpoint_source = "endpoint_url of profile '" + profile + "' in " + config_path;
  } else {
    settings.endpoint = "https://s3." + settings.region + ".amazonaws.com";
    settings.endpoint_source = "AWS's default for region " + settings.region;
    user_endpoint = false;
  }
  while (settings.endpoint.ends_with('/')) settings.endpoint.pop_back();
  Status checked = CheckEndpoint(settings.endpoint, settings.endpoint_source);
  if (!checked.ok()) return checked;
  settings.path_style = addressing ? *addressing == "path" : user_endpoint;
  return settings;
}

}  // namespace cohort
