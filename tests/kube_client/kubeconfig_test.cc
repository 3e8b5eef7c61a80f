#include "kube/client/kubeconfig.h"

#include <gtest/gtest.h>

#include "kube/client/base64.h"
#include "testing/files.h"
#include "testing/scratch_directory.h"

namespace cohort::kube {
namespace {

using cohort::testing::ScratchDirectory;
using cohort::testing::WriteText;

const char kConfig[] = R"(apiVersion: v1
kind: Config
current-context: kind
clusters:
- name: kind-cluster
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: Q0EgUEVN
    tls-server-name: kubernetes
- name: gke-cluster
  cluster:
    server: https://34.1.2.3
    insecure-skip-tls-verify: true
users:
- name: kind-admin
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: gke-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      args: [--verbosity, debug]
      env:
      - name: CLOUDSDK_CORE_PROJECT
        value: ml-team
      installHint: Install gke-gcloud-auth-plugin
      provideClusterInfo: true
contexts:
- name: kind
  context:
    cluster: kind-cluster
    user: kind-admin
- name: gke
  context:
    cluster: gke-cluster
    user: gke-user
    namespace: training
)";

StatusOr<ConnectionConfig> Parse(const std::string& text, const std::string& context = "") {
  return ParseKubeconfigs({{"/home/u/.kube/config", text}}, context);
}

TEST(KubeconfigTest, CurrentContextWithEmbeddedCertificates) {
  StatusOr<ConnectionConfig> config = Parse(kConfig);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->cluster.server, "https://127.0.0.1:6443");
  EXPECT_EQ(config->cluster.certificate_authority_pem, "CA PEM");
  EXPECT_EQ(config->cluster.tls_server_name, "kubernetes");
  EXPECT_FALSE(config->cluster.insecure_skip_tls_verify);
  EXPECT_EQ(config->user.client_certificate_pem, "CERT");
  EXPECT_EQ(config->user.client_key_pem, "KEY");
  EXPECT_EQ(config->namespace_name, "default");
  EXPECT_NE(config->description.find("context \"kind\""), std::string::npos);
}

TEST(KubeconfigTest, ChosenContextWithAnExecPlugin) {
  StatusOr<ConnectionConfig> config = Parse(kConfig, "gke");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->namespace_name, "training");
  EXPECT_TRUE(config->cluster.insecure_skip_tls_verify);
  ASSERT_TRUE(config->user.exec.has_value());
  const ExecPluginConfig& exec = *config->user.exec;
  EXPECT_EQ(exec.api_version, "client.authentication.k8s.io/v1beta1");
  EXPECT_EQ(exec.command, "gke-gcloud-auth-plugin");  // a bare name: looked up on PATH
  EXPECT_EQ(exec.args, (std::vector<std::string>{"--verbosity", "debug"}));
  ASSERT_EQ(exec.env.size(), 1u);
  EXPECT_EQ(exec.env[0].first, "CLOUDSDK_CORE_PROJECT");
  EXPECT_EQ(exec.env[0].second, "ml-team");
  EXPECT_TRUE(exec.provide_cluster_info);
  EXPECT_EQ(exec.user_name, "gke-user");
}

TEST(KubeconfigTest, FilesMergeAsKubectlMergesThem) {
  // The first file to name an entry or set current-context wins; entries only the later file
  // has are used.
  const std::string first =
      "current-context: a\n"
      "contexts:\n- name: a\n  context: {cluster: c1, user: u2}\n"
      "clusters:\n- name: c1\n  cluster: {server: 'https://first'}\n";
  const std::string second =
      "current-context: b\n"
      "contexts:\n- name: a\n  context: {cluster: c2, user: u2}\n"
      "- name: b\n  context: {cluster: c2, user: u2, namespace: nb}\n"
      "clusters:\n- name: c1\n  cluster: {server: 'https://second'}\n"
      "- name: c2\n  cluster: {server: 'https://other'}\n"
      "users:\n- name: u2\n  user: {token: secret}\n";
  StatusOr<ConnectionConfig> config =
      ParseKubeconfigs({{"/a/config", first}, {"/b/config", second}}, "");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->cluster.server, "https://first");
  EXPECT_EQ(config->user.token, "secret");
  StatusOr<ConnectionConfig> b =
      ParseKubeconfigs({{"/a/config", first}, {"/b/config", second}}, "b");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->cluster.server, "https://other");
  EXPECT_EQ(b->namespace_name, "nb");
}

TEST(KubeconfigTest, RelativePathsAreRelativeToTheirFile) {
  ScratchDirectory scratch("cohort-kubeconfig");
  std::filesystem::create_directories(scratch.path() / "kube" / "certs");
  WriteText(scratch.path() / "kube" / "certs" / "ca.crt", "CA FROM FILE");
  WriteText(scratch.path() / "kube" / "certs" / "user.crt", "CERT FROM FILE");
  WriteText(scratch.path() / "kube" / "certs" / "user.key", "KEY FROM FILE");
  WriteText(scratch.path() / "kube" / "config",
            "current-context: c\n"
            "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
            "clusters: [{name: k, cluster: {server: 'https://k:6443', certificate-authority: "
            "certs/ca.crt}}]\n"
            "users: [{name: u, user: {client-certificate: certs/user.crt, client-key: "
            "certs/user.key, tokenFile: certs/token, exec: {apiVersion: "
            "client.authentication.k8s.io/v1, command: ./bin/plugin}}}]\n");
  StatusOr<ConnectionConfig> config = LoadKubeconfig({scratch.path() / "kube" / "config"}, "");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->cluster.certificate_authority_pem, "CA FROM FILE");
  EXPECT_EQ(config->user.client_certificate_pem, "CERT FROM FILE");
  EXPECT_EQ(config->user.client_key_pem, "KEY FROM FILE");
  EXPECT_EQ(config->user.token_file, scratch.path() / "kube" / "certs" / "token");
  EXPECT_EQ(config->user.exec->command, (scratch.path() / "kube" / "bin" / "plugin").string());
}

TEST(KubeconfigTest, DefaultPathsFollowKubeconfigThenHome) {
  const char* saved_kubeconfig = getenv("KUBECONFIG");
  std::string saved = saved_kubeconfig ? saved_kubeconfig : "";
  setenv("KUBECONFIG", "/a/config::/b/config", 1);
  EXPECT_EQ(DefaultKubeconfigPaths(),
            (std::vector<std::filesystem::path>{"/a/config", "/b/config"}));
  unsetenv("KUBECONFIG");
  std::vector<std::filesystem::path> home = DefaultKubeconfigPaths();
  ASSERT_EQ(home.size(), 1u);
  EXPECT_EQ(home[0].filename(), "config");
  EXPECT_EQ(home[0].parent_path().filename(), ".kube");
  if (saved_kubeconfig) setenv("KUBECONFIG", saved.c_str(), 1);
}

TEST(KubeconfigTest, NoFileIsNotFoundNamingTheFilesTried) {
  StatusOr<ConnectionConfig> config = LoadKubeconfig({"/nonexistent/a", "/nonexistent/b"}, "");
  EXPECT_EQ(config.status().code(), Status::Code::kNotFound);
  EXPECT_NE(config.status().message().find("/nonexistent/a, /nonexistent/b"), std::string::npos)
      << config.status().message();
}

struct BadInput {
  std::string text;
  std::string context;
  Status::Code code;
  std::string expected;  // in the message
};

TEST(KubeconfigTest, BadInputGetsAClearErrorNamingFileAndField) {
  const std::string context = "contexts: [{name: c, context: {cluster: k, user: u}}]\n";
  const std::string cluster = "clusters: [{name: k, cluster: {server: 'https://k'}}]\n";
  for (const BadInput& bad : std::vector<BadInput>{
           {"clusters: [unclosed\n", "c", Status::Code::kInvalidArgument,
            "/home/u/.kube/config:2:1: not a kubeconfig"},
           {"- just a list\n", "c", Status::Code::kInvalidArgument, "must be a mapping"},
           {"clusters: {a: b}\n", "c", Status::Code::kInvalidArgument,
            "/home/u/.kube/config:1:11: clusters: must be a list"},
           {"users: [{user: {token: x}}]\n", "c", Status::Code::kInvalidArgument,
            "users[0].name: must be a non-empty string"},
           {context + cluster, "", Status::Code::kNotFound, "sets no current-context"},
           {context + cluster, "other", Status::Code::kNotFound,
            "context \"other\" is not defined in kubeconfig /home/u/.kube/config"},
           {context + "users: [{name: u, user: {}}]\n", "c", Status::Code::kInvalidArgument,
            "contexts[c].context.cluster: names cluster \"k\", which no kubeconfig file defines"},
           {context + cluster, "c", Status::Code::kInvalidArgument,
            "contexts[c].context.user: names user \"u\""},
           {context + "clusters: [{name: k, cluster: {server: 'k:6443'}}]\n", "c",
            Status::Code::kInvalidArgument, "clusters[k].cluster.server: must be an https://"},
           {context + cluster + "users: [{name: u, user: {client-key-data: '!!not base64'}}]\n",
            "c", Status::Code::kInvalidArgument, "users[u].user.client-key-data is not base64"},
           {context + cluster + "users: [{name: u, user: {client-key-data: S0VZ}}]\n", "c",
            Status::Code::kInvalidArgument,
            "users[u].user.client-certificate: must be set with client-key"},
           {context + cluster +
                "users: [{name: u, user: {client-certificate: /nonexistent.crt, "
                "client-key: /nonexistent.key}}]\n",
            "c", Status::Code::kNotFound, "users[u].user.client-certificate"},
           {context + cluster + "users: [{name: u, user: {exec: {command: x}}}]\n", "c",
            Status::Code::kInvalidArgument,
            "users[u].user.exec.apiVersion: must be client.authentication.k8s.io/v1"},
           {context + cluster +
                "users: [{name: u, user: {exec: {apiVersion: "
                "client.authentication.k8s.io/v1}}}]\n",
            "c", Status::Code::kInvalidArgument, "users[u].user.exec.command: must be set"},
           {context + cluster +
                "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
                "command: x, env: [{value: 1}]}}}]\n",
            "c", Status::Code::kInvalidArgument, "users[u].user.exec.env[0]"},
           {context + cluster + "users: [{name: u, user: {auth-provider: {name: gcp}}}]\n", "c",
            Status::Code::kInvalidArgument, "gke-gcloud-auth-plugin"},
           {context + "clusters: [{name: k, cluster: {server: 'https://k', "
                      "insecure-skip-tls-verify: perhaps}}]\nusers: [{name: u}]\n",
            "c", Status::Code::kInvalidArgument,
            "clusters[k].cluster.insecure-skip-tls-verify: must be true or false"},
       }) {
    SCOPED_TRACE(bad.text);
    StatusOr<ConnectionConfig> config = Parse(bad.text, bad.context);
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.status().code(), bad.code) << config.status().ToString();
    EXPECT_NE(config.status().message().find(bad.expected), std::string::npos)
        << config.status().message();
    EXPECT_NE(config.status().message().find("/home/u/.kube/config"), std::string::npos)
        << config.status().message();
  }
}

TEST(Base64Test, RoundTripsAndRefusesWhatIsNotBase64) {
  for (std::string bytes : {"", "a", "ab", "abc", "abcd", "\xff\x00\x10 binary"}) {
    StatusOr<std::string> decoded = DecodeBase64(EncodeBase64(bytes), "x");
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, bytes);
  }
  EXPECT_EQ(EncodeBase64("CA PEM"), "Q0EgUEVN");
  EXPECT_EQ(*DecodeBase64("Q0Eg\nUEVN\n", "x"), "CA PEM");  // wrapped lines
  EXPECT_FALSE(DecodeBase64("Q0E=x", "x").ok());
  EXPECT_FALSE(DecodeBase64("Q", "x").ok());
  EXPECT_NE(DecodeBase64("a*bc", "users[u].user.token")
                .status()
                .message()
                .find("users[u].user.token is not base64"),
            std::string::npos);
}

}  // namespace
}  // namespace cohort::kube
