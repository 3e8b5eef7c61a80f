// How HttpApi proves who it is, and checks whom it speaks to: client certificates, the server's
// certificate and name, bearer tokens, token files that rotate, exec credential plugins and the
// in-cluster service account.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "base/file.h"
#include "base/time.h"
#include "kube/client/http_api.h"
#include "testing/fake_apiserver.h"

namespace cohort::kube {
namespace {

using json = nlohmann::json;
using cohort::testing::ReadText;
using cohort::testing::ScratchDirectory;
using cohort::testing::WriteText;
using testing::FakeApiServer;
using testing::RecordedRequest;
using testing::SetJson;
using testing::SetStatus;
using testing::TestPki;
using namespace std::chrono_literals;

void AnswerWithAPod(FakeApiServer& server) {
  server.Respond([](const RecordedRequest&, httplib::Response& response) {
    SetJson(response, {{"kind", "Pod"}});
  });
}

HttpApiOptions QuickOptions() {
  HttpApiOptions options;
  options.connect_timeout = 5s;
  options.request_timeout = 20s;
  options.retry_backoff = 10ms;
  options.get_attempts = 1;
  return options;
}

UserConfig Alice() {
  UserConfig user;
  user.client_certificate_pem = TestPki::Get().Pem("client.crt");
  user.client_key_pem = TestPki::Get().Pem("client.key");
  return user;
}

TEST(ClientCertificateTest, ServerThatRequiresOneSeesWhoWeAre) {
  FakeApiServer server({.require_client_certificate = true, .named_certificate = false});
  AnswerWithAPod(server);
  HttpApi api(server.Config(Alice()), QuickOptions());
  StatusOr<json> pod = api.Get(PodResource(), "default", "web-0");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(server.last_request().client_common_name, "alice");
  EXPECT_EQ(server.last_request().authorization, "");
}

TEST(ClientCertificateTest, WithoutOneOrWithAnUntrustedOneTheServerRefuses) {
  FakeApiServer server({.require_client_certificate = true, .named_certificate = false});
  AnswerWithAPod(server);
  HttpApi anonymous(server.Config(), QuickOptions());
  EXPECT_FALSE(anonymous.Get(PodResource(), "default", "web-0").ok());
  UserConfig mallory;
  mallory.client_certificate_pem = TestPki::Get().Pem("rogue-client.crt");
  mallory.client_key_pem = TestPki::Get().Pem("rogue-client.key");
  HttpApi rogue(server.Config(mallory), QuickOptions());
  StatusOr<json> pod = rogue.Get(PodResource(), "default", "web-0");
  EXPECT_FALSE(pod.ok());
  EXPECT_TRUE(server.requests().empty());
}

TEST(ServerCertificateTest, AServerTheAuthorityDidNotSignIsRefused) {
  FakeApiServer server;
  AnswerWithAPod(server);
  ConnectionConfig config = server.Config(testing::TokenUser("t"));
  config.cluster.certificate_authority_pem = TestPki::Get().Pem("rogue-ca.crt");
  HttpApi api(config, QuickOptions());
  StatusOr<json> pod = api.Get(PodResource(), "default", "web-0");
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(pod.status().message().find("certificate"), std::string::npos)
      << pod.status().message();
  EXPECT_TRUE(server.requests().empty());  // the token never left
  config.cluster.insecure_skip_tls_verify = true;
  HttpApi insecure(config, QuickOptions());
  EXPECT_TRUE(insecure.Get(PodResource(), "default", "web-0").ok());
}

TEST(ServerCertificateTest, TlsServerNameChecksTheCertificateAgainstThatName) {
  FakeApiServer server({.require_client_certificate = false, .named_certificate = true});
  AnswerWithAPod(server);
  ConnectionConfig config = server.Config();
  HttpApi by_address(config, QuickOptions());
  EXPECT_FALSE(by_address.Get(PodResource(), "default", "web-0").ok());
  config.cluster.tls_server_name = "apiserver.test";
  HttpApi by_name(config, QuickOptions());
  StatusOr<json> pod = by_name.Get(PodResource(), "default", "web-0");
  EXPECT_TRUE(pod.ok()) << pod.status().ToString();
}

TEST(TokenFileTest, ARotatedTokenIsReadForTheNextRequest) {
  FakeApiServer server;
  AnswerWithAPod(server);
  ScratchDirectory scratch("cohort-kube-token");
  std::filesystem::path token = scratch.path() / "token";
  WriteText(token, "first-token\n");
  UserConfig user;
  user.token_file = token;
  HttpApi api(server.Config(user), QuickOptions());
  ASSERT_TRUE(api.Get(PodResource(), "default", "web-0").ok());
  EXPECT_EQ(server.last_request().authorization, "Bearer first-token");
  // The kubelet replaces the file (a new inode) when it rotates the token.
  ASSERT_TRUE(WriteFileAtomically(token, "second-token\n", 0600).ok());
  ASSERT_TRUE(api.Get(PodResource(), "default", "web-0").ok());
  EXPECT_EQ(server.last_request().authorization, "Bearer second-token");
}

TEST(TokenFileTest, A401ReadsTheFileAgainOnce) {
  FakeApiServer server;
  ScratchDirectory scratch("cohort-kube-token");
  std::filesystem::path token = scratch.path() / "token";
  WriteText(token, "old");
  server.Respond([](const RecordedRequest& request, httplib::Response& response) {
    if (request.authorization != "Bearer fresh") {
      SetStatus(response, 401, "Unauthorized", "Unauthorized");
      return;
    }
    SetJson(response, {{"kind", "Pod"}});
  });
  UserConfig user;
  user.token_file = token;
  HttpApi api(server.Config(user), QuickOptions());
  StatusOr<json> refused = api.Get(PodResource(), "default", "web-0");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(server.requests().size(), 2u);  // once more with the file read again, not more
  WriteText(token, "fresh");                // a token the server accepts, for the next request
  EXPECT_TRUE(api.Get(PodResource(), "default", "web-0").ok());
}

// An exec plugin written by the test: a shell script that counts its runs in `runs`, records its
// arguments, environment and KUBERNETES_EXEC_INFO, and prints `credential` (a file).
class ExecPluginTest : public ::testing::Test {
 protected:
  ExecPluginTest() : scratch_("cohort-kube-exec") {
    WriteText(path("plugin.sh"),
              "#!/bin/sh\n"
              "echo run >> '" +
                  path("runs") +
                  "'\n"
                  "printf '%s\\n' \"$@\" > '" +
                  path("args") +
                  "'\n"
                  "printf '%s' \"$KUBERNETES_EXEC_INFO\" > '" +
                  path("exec-info") +
                  "'\n"
                  "printf '%s' \"$CLOUDSDK_CORE_PROJECT\" > '" +
                  path("plugin-env") +
                  "'\n"
                  "n=$(wc -l < '" +
                  path("runs") +
                  "')\n"
                  "if [ -f '" +
                  path("fail") + "' ]; then cat '" + path("fail") +
                  "' >&2; exit 3; fi\n"
                  "if [ -f '" +
                  path("hang") +
                  "' ]; then sleep 60; fi\n"
                  "sed \"s/RUN/$n/\" '" +
                  path("credential") + "'\n");
    chmod(path("plugin.sh").c_str(), 0755);
    plugin_.api_version = "client.authentication.k8s.io/v1beta1";
    plugin_.command = path("plugin.sh");
    plugin_.args = {"--use_application_default_credentials", "two words"};
    plugin_.env = {{"CLOUDSDK_CORE_PROJECT", "cohort-test"}};
    plugin_.user_name = "gke_user";
    plugin_.install_hint = "Install gke-gcloud-auth-plugin for use with kubectl";
    options_ = QuickOptions();
    options_.plugin_timeout = 10s;
  }

  std::string path(const std::string& name) const { return (scratch_.path() / name).string(); }
  int runs() const {
    std::string text = ReadText(path("runs"));
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }

  // The plugin prints a token "token-<run>" that expires at `expiry` (none when empty).
  void IssueTokens(const std::string& expiry) {
    json status = {{"token", "token-RUN"}};
    if (!expiry.empty()) status["expirationTimestamp"] = expiry;
    WriteText(
        path("credential"),
        json({{"apiVersion", plugin_.api_version}, {"kind", "ExecCredential"}, {"status", status}})
            .dump());
  }

  UserConfig User() const {
    UserConfig user;
    user.exec = plugin_;
    return user;
  }

  ScratchDirectory scratch_;
  ExecPluginConfig plugin_;
  HttpApiOptions options_;
};

TEST_F(ExecPluginTest, TokenIsCachedWhileItHasNotExpired) {
  FakeApiServer server;
  AnswerWithAPod(server);
  IssueTokens(FormatTime(Clock::now() + 1h));
  HttpApi api(server.Config(User()), options_);
  ASSERT_TRUE(api.Get(PodResource(), "default", "a").ok());
  ASSERT_TRUE(api.Get(PodResource(), "default", "b").ok());
  EXPECT_EQ(server.last_request().authorization, "Bearer token-1");
  EXPECT_EQ(runs(), 1);
  EXPECT_EQ(ReadText(path("args")), "--use_application_default_credentials\ntwo words\n");
  EXPECT_EQ(ReadText(path("plugin-env")), "cohort-test");
  json info = json::parse(ReadText(path("exec-info")));
  EXPECT_EQ(info["apiVersion"], "client.authentication.k8s.io/v1beta1");
  EXPECT_EQ(info["kind"], "ExecCredential");
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_FALSE(info["spec"].contains("cluster"));
}

TEST_F(ExecPluginTest, AnExpiredTokenIsFetchedAgain) {
  FakeApiServer server;
  AnswerWithAPod(server);
  IssueTokens(FormatTime(Clock::now() - 1min));
  plugin_.provide_cluster_info = true;
  HttpApi api(server.Config(User()), options_);
  ASSERT_TRUE(api.Get(PodResource(), "default", "a").ok());
  EXPECT_EQ(server.last_request().authorization, "Bearer token-1");
  ASSERT_TRUE(api.Get(PodResource(), "default", "b").ok());
  EXPECT_EQ(server.last_request().authorization, "Bearer token-2");
  EXPECT_EQ(runs(), 2);
  json info = json::parse(ReadText(path("exec-info")));
  EXPECT_EQ(info["spec"]["cluster"]["server"], server.url());
  EXPECT_FALSE(info["spec"]["cluster"]["certificate-authority-data"].get<std::string>().empty());
}

TEST_F(ExecPluginTest, A401RunsThePluginAgainOnce) {
  FakeApiServer server;
  server.Respond([](const RecordedRequest& request, httplib::Response& response) {
    if (request.authorization == "Bearer token-1") {
      SetStatus(response, 401, "Unauthorized", "Unauthorized");
      return;
    }
    SetJson(response, {{"kind", "Pod"}});
  });
  IssueTokens("");  // never expires: only the 401 says it is stale
  HttpApi api(server.Config(User()), options_);
  StatusOr<json> pod = api.Get(PodResource(), "default", "a");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(runs(), 2);
  EXPECT_EQ(server.requests().size(), 2u);
  // A server that refuses every credential: one more run, then the 401 is the answer.
  server.Respond([](const RecordedRequest&, httplib::Response& response) {
    SetStatus(response, 401, "Unauthorized", "Unauthorized");
  });
  StatusOr<json> refused = api.Create(PodResource(), "default", {{"metadata", {{"name", "b"}}}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(runs(), 3);
  EXPECT_EQ(server.requests().size(), 4u);
}

TEST_F(ExecPluginTest, ThreadsCallingAtOnceShareOneRunOfThePlugin) {
  FakeApiServer server;
  AnswerWithAPod(server);
  IssueTokens(FormatTime(Clock::now() + 1h));
  HttpApi api(server.Config(User()), options_);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        if (!api.Get(PodResource(), "default", "w-" + std::to_string(i)).ok()) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(server.requests().size(), 30u);
  EXPECT_EQ(runs(), 1);
  for (const RecordedRequest& request : server.requests()) {
    EXPECT_EQ(request.authorization, "Bearer token-1");
  }
}

TEST_F(ExecPluginTest, AFailingPluginIsReportedWithItsStandardError) {
  FakeApiServer server;
  AnswerWithAPod(server);
  IssueTokens("");
  WriteText(path("fail"), "ERROR: gcloud crashed: You do not currently have an active account\n");
  HttpApi api(server.Config(User()), options_);
  StatusOr<json> pod = api.Get(PodResource(), "default", "a");
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.status().code(), Status::Code::kFailedPrecondition);
  const std::string& message = pod.status().message();
  EXPECT_NE(message.find(plugin_.command), std::string::npos) << message;
  EXPECT_NE(message.find("user \"gke_user\""), std::string::npos) << message;
  EXPECT_NE(message.find("exit code 3"), std::string::npos) << message;
  EXPECT_NE(message.find("You do not currently have an active account"), std::string::npos)
      << message;
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(ExecPluginTest, AHangingPluginIsKilledAtItsTimeout) {
  FakeApiServer server;
  AnswerWithAPod(server);
  IssueTokens("");
  WriteText(path("hang"), "");
  options_.plugin_timeout = 500ms;
  HttpApi api(server.Config(User()), options_);
  auto start = std::chrono::steady_clock::now();
  StatusOr<json> pod = api.Get(PodResource(), "default", "a");
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.status().code(), Status::Code::kDeadlineExceeded) << pod.status().ToString();
  EXPECT_NE(pod.status().message().find("did not finish within 500 ms"), std::string::npos)
      << pod.status().message();
  EXPECT_LT(took, 10s);
}

TEST_F(ExecPluginTest, AMissingPluginShowsTheInstallHint) {
  plugin_.command = "cohort-no-such-auth-plugin";
  FakeApiServer server;
  HttpApi api(server.Config(User()), options_);
  StatusOr<json> pod = api.Get(PodResource(), "default", "a");
  ASSERT_FALSE(pod.ok());
  EXPECT_NE(pod.status().message().find("Install gke-gcloud-auth-plugin"), std::string::npos)
      << pod.status().message();
  EXPECT_NE(pod.status().message().find("not found"), std::string::npos);
}

TEST_F(ExecPluginTest, APluginCanIssueAClientCertificate) {
  FakeApiServer server({.require_client_certificate = true, .named_certificate = false});
  AnswerWithAPod(server);
  plugin_.api_version = "client.authentication.k8s.io/v1";
  WriteText(path("credential"), json({{"apiVersion", "client.authentication.k8s.io/v1"},
                                      {"kind", "ExecCredential"},
                                      {"status",
                                       {{"clientCertificateData", TestPki::Get().Pem("client.crt")},
                                        {"clientKeyData", TestPki::Get().Pem("client.key")}}}})
                                    .dump());
  HttpApi api(server.Config(User()), options_);
  StatusOr<json> pod = api.Get(PodResource(), "default", "a");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(server.last_request().client_common_name, "alice");
}

TEST(ExecCredentialParseTest, OutputThatIsNotACredentialIsRefusedClearly) {
  ExecPluginConfig plugin;
  plugin.api_version = "client.authentication.k8s.io/v1";
  plugin.command = "p";
  plugin.user_name = "u";
  EXPECT_NE(ParseExecCredential("not json", plugin).status().message().find("not JSON"),
            std::string::npos);
  json wrong_version = {{"apiVersion", "client.authentication.k8s.io/v1beta1"},
                        {"kind", "ExecCredential"},
                        {"status", {{"token", "t"}}}};
  EXPECT_NE(ParseExecCredential(wrong_version.dump(), plugin).status().message().find("v1beta1"),
            std::string::npos);
  json empty = {{"apiVersion", plugin.api_version}, {"kind", "ExecCredential"}, {"status", {}}};
  EXPECT_FALSE(ParseExecCredential(empty.dump(), plugin).ok());
  json bad_time = {{"apiVersion", plugin.api_version},
                   {"kind", "ExecCredential"},
                   {"status", {{"token", "t"}, {"expirationTimestamp", "tomorrow"}}}};
  EXPECT_NE(ParseExecCredential(bad_time.dump(), plugin).status().message().find("tomorrow"),
            std::string::npos);
  json good = {{"apiVersion", plugin.api_version},
               {"kind", "ExecCredential"},
               {"status", {{"token", "t"}, {"expirationTimestamp", "2030-01-02T03:04:05Z"}}}};
  StatusOr<ExecCredential> credential = ParseExecCredential(good.dump(), plugin);
  ASSERT_TRUE(credential.ok()) << credential.status().ToString();
  EXPECT_EQ(credential->token, "t");
  EXPECT_EQ(FormatTime(*credential->expiration), "2030-01-02T03:04:05Z");
}

// Sets environment variables for one test and puts back what was there.
class ScopedEnvironment {
 public:
  void Set(const std::string& name, const std::string& value) {
    Remember(name);
    setenv(name.c_str(), value.c_str(), 1);
  }
  void Unset(const std::string& name) {
    Remember(name);
    unsetenv(name.c_str());
  }
  ~ScopedEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

 private:
  void Remember(const std::string& name) {
    if (saved_.count(name) != 0) return;
    const char* value = getenv(name.c_str());
    saved_[name] = value ? std::optional<std::string>(value) : std::nullopt;
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(InClusterTest, ConnectsWithTheServiceAccountOfThePod) {
  FakeApiServer server;
  AnswerWithAPod(server);
  ScratchDirectory account("cohort-kube-sa");
  WriteText(account.path() / "token", "sa-token\n");
  WriteText(account.path() / "ca.crt", TestPki::Get().Pem("ca.crt"));
  WriteText(account.path() / "namespace", "training");
  ScopedEnvironment environment;
  environment.Set("KUBERNETES_SERVICE_HOST", "127.0.0.1");
  environment.Set("KUBERNETES_SERVICE_PORT", std::to_string(server.port()));
  StatusOr<ConnectionConfig> config = LoadInClusterConfig(account.path());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->namespace_name, "training");
  EXPECT_EQ(config->cluster.server, server.url());
  StatusOr<std::unique_ptr<Api>> api = ConnectInCluster(QuickOptions(), account.path());
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  ASSERT_TRUE((*api)->Get(PodResource(), "training", "w-0").ok());
  EXPECT_EQ(server.last_request().authorization, "Bearer sa-token");
}

TEST(InClusterTest, OutsideAPodOrWithoutTheFilesItSaysWhy) {
  ScopedEnvironment environment;
  environment.Unset("KUBERNETES_SERVICE_HOST");
  StatusOr<ConnectionConfig> outside = LoadInClusterConfig("/nonexistent");
  EXPECT_EQ(outside.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(outside.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  environment.Set("KUBERNETES_SERVICE_HOST", "10.0.0.1");
  environment.Set("KUBERNETES_SERVICE_PORT", "443");
  ScratchDirectory account("cohort-kube-sa");
  StatusOr<ConnectionConfig> missing = LoadInClusterConfig(account.path());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find("ca.crt"), std::string::npos)
      << missing.status().message();
}

TEST(ConnectTest, InAPodWithoutAKubeconfigTheServiceAccountIsUsed) {
  ScratchDirectory home("cohort-kube-home");
  ScopedEnvironment environment;
  environment.Set("KUBECONFIG", (home.path() / "missing").string());
  environment.Set("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  environment.Set("KUBERNETES_SERVICE_PORT", "443");
  StatusOr<ConnectionConfig> config = LoadConnectionConfig("");
  // This machine is no pod: the service account's files are missing, and the message says
  // which it looked for.
  if (config.ok()) {
    EXPECT_EQ(config->cluster.server, "https://10.96.0.1:443");
  } else {
    EXPECT_NE(config.status().message().find(kServiceAccountDirectory), std::string::npos)
        << config.status().message();
  }
  // A context named on the command line means a kubeconfig, in a pod or not.
  StatusOr<ConnectionConfig> named = LoadConnectionConfig("kind");
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.status().message().find("no kubeconfig"), std::string::npos)
      << named.status().message();
}

TEST(ConnectTest, KubeconfigFromTheEnvironmentWithAClientCertificate) {
  FakeApiServer server({.require_client_certificate = true, .named_certificate = false});
  AnswerWithAPod(server);
  ScratchDirectory home("cohort-kube-home");
  // The second file's context and user win nothing: the first names them.
  WriteText(home.path() / "first",
            "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
            "clusters:\n- name: fake\n  cluster:\n    server: " +
                server.url() +
                "\n    certificate-authority: " + TestPki::Get().Path("ca.crt").string() +
                "\ncontexts:\n- name: test\n  context: {cluster: fake, user: alice, namespace: "
                "ml}\n");
  WriteText(home.path() / "second",
            "users:\n- name: alice\n  user:\n    client-certificate: " +
                TestPki::Get().Path("client.crt").string() +
                "\n    client-key: " + TestPki::Get().Path("client.key").string() +
                "\ncontexts:\n- name: test\n  context: {cluster: nowhere, user: nobody}\n");
  ScopedEnvironment environment;
  environment.Set("KUBECONFIG", (home.path() / "missing").string() + ":" +
                                    (home.path() / "first").string() + ":" +
                                    (home.path() / "second").string());
  StatusOr<ConnectionConfig> config = LoadConnectionConfig("");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->namespace_name, "ml");
  StatusOr<std::unique_ptr<Api>> api = ConnectFromKubeconfig("", QuickOptions());
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  StatusOr<json> pod = (*api)->Get(PodResource(), "ml", "w-0");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(server.last_request().client_common_name, "alice");
  StatusOr<std::unique_ptr<Api>> unknown = Connect("staging", QuickOptions());
  EXPECT_EQ(unknown.status().code(), Status::Code::kNotFound);
  EXPECT_NE(unknown.status().message().find("\"staging\""), std::string::npos);
}

}  // namespace
}  // namespace cohort::kube
