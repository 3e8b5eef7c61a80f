#include "testing/kube_test_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <thread>

#include "base/file.h"
#include "testing/processes.h"
#include "testing/wait.h"

namespace cohort::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kBuildScript = "scripts/build-kube-apiserver.sh";
constexpr size_t kMaxLogBytes = size_t{64} << 20;
constexpr seconds kKubectlTimeout{120};
constexpr seconds kStopTimeout{10};

std::string Base64(const std::string& bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string encoded;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n = (uint32_t(uint8_t(bytes[i])) << 16) |
                       (uint32_t(uint8_t(bytes[i + 1])) << 8) | uint32_t(uint8_t(bytes[i + 2]));
    encoded += kAlphabet[(n >> 18) & 63];
    encoded += kAlphabet[(n >> 12) & 63];
    encoded += kAlphabet[(n >> 6) & 63];
    encoded += kAlphabet[n & 63];
  }
  if (i + 1 == bytes.size()) {
    const uint32_t n = uint32_t(uint8_t(bytes[i])) << 16;
    encoded += kAlphabet[(n >> 18) & 63];
    encoded += kAlphabet[(n >> 12) & 63];
    encoded += "==";
  } else if (i + 2 == bytes.size()) {
    const uint32_t n = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8);
    encoded += kAlphabet[(n >> 18) & 63];
    encoded += kAlphabet[(n >> 12) & 63];
    encoded += kAlphabet[(n >> 6) & 63];
    encoded += '=';
  }
  return encoded;
}

// 32 hexadecimal digits from the kernel's random source.
StatusOr<std::string> RandomToken() {
  unsigned char bytes[16];
  if (::getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
    return Status::IOError("getrandom: " + ErrnoMessage(errno));
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char byte : bytes) {
    token += kHex[byte >> 4];
    token += kHex[byte & 15];
  }
  return token;
}

// A loopback TCP port that nothing listens on now and that `taken` does not hold. Another process
// could take it before the server binds it; the server then fails to start and says so.
StatusOr<int> FreeLoopbackPort(std::set<int>& taken) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status::IOError("socket: " + ErrnoMessage(errno));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    int port = -1;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port = ntohs(address.sin_port);
    }
    ::close(fd);
    if (port > 0 && taken.insert(port).second) return port;
  }
  return Status::Unavailable("no free loopback port after 20 tries");
}

bool AcceptsConnections(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return connected;
}

bool IsExecutable(const fs::path& path) {
  std::error_code error;
  return fs::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

// `name` in a directory of $PATH, or "" when there is none.
fs::path FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream directories(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string directory; std::getline(directories, directory, ':');) {
    if (directory.empty()) continue;
    const fs::path candidate = fs::path(directory) / name;
    if (IsExecutable(candidate)) return candidate;
  }
  return {};
}

std::string LastLines(const std::string& text, int lines) {
  size_t start = text.size();
  if (start > 0 && text[start - 1] == '\n') --start;
  for (int seen = 0; start > 0; --start) {
    if (text[start - 1] == '\n' && ++seen == lines) break;
  }
  return text.substr(start);
}

std::string Kubeconfig(const std::string& server, const std::string& ca_pem,
                       const std::string& user, const std::string& token) {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "clusters:\n"
         "- name: cohort-test\n"
         "  cluster:\n"
         "    server: " +
         server +
         "\n"
         "    certificate-authority-data: " +
         Base64(ca_pem) +
         "\n"
         "users:\n"
         "- name: " +
         user +
         "\n"
         "  user:\n"
         "    token: " +
         token +
         "\n"
         "contexts:\n"
         "- name: cohort-test\n"
         "  context:\n"
         "    cluster: cohort-test\n"
         "    user: " +
         user +
         "\n"
         "current-context: cohort-test\n";
}

}  // namespace

std::string KubectlResult::Describe() const {
  return "kubectl " + arguments + ": exit " + std::to_string(exit_code) + ": " + err;
}

StatusOr<KubeBinaries> FindKubeBinaries() {
  KubeBinaries binaries;
  binaries.etcd = FindOnPath("etcd");
  if (binaries.etcd.empty()) {
    return Status::NotFound("etcd is not on PATH (Debian package etcd-server)");
  }
  fs::path directory;
  const char* from_environment = std::getenv("COHORT_KUBE_APISERVER_DIR");
  if (from_environment != nullptr && *from_environment != '\0') {
    directory = from_environment;
  } else {
    const char* cache = std::getenv("COHORT_KUBE_CACHE");
    const fs::path cache_root =
        cache != nullptr && *cache != '\0' ? cache : "/var/cache/cohort/kube-apiserver";
    // One folder per source package version; the last in name order is as good as any.
    std::error_code error;
    std::vector<fs::path> versions;
    for (const auto& entry : fs::directory_iterator(cache_root, error)) {
      if (IsExecutable(entry.path() / "kube-apiserver") &&
          IsExecutable(entry.path() / "kube-controller-manager")) {
        versions.push_back(entry.path());
      }
    }
    std::sort(versions.begin(), versions.end());
    if (versions.empty()) {
      return Status::NotFound("no kube-apiserver: COHORT_KUBE_APISERVER_DIR is unset and " +
                              cache_root.string() + " holds no built version; run " + kBuildScript +
                              " (about 10 minutes, once)");
    }
    directory = versions.back();
  }
  binaries.kube_apiserver = directory / "kube-apiserver";
  binaries.kube_controller_manager = directory / "kube-controller-manager";
  for (const fs::path& binary : {binaries.kube_apiserver, binaries.kube_controller_manager}) {
    if (!IsExecutable(binary)) {
      return Status::NotFound(binary.string() + " is missing or not executable; run " +
                              kBuildScript +
                              " and set COHORT_KUBE_APISERVER_DIR to the folder it "
                              "prints");
    }
  }
  return binaries;
}

KubeTestCluster::KubeTestCluster() : scratch_("cohort-kube-cluster") {}

KubeTestCluster::~KubeTestCluster() { StopServers(); }

StatusOr<std::unique_ptr<KubeTestCluster>> KubeTestCluster::Start(const KubeBinaries& binaries,
                                                                  seconds timeout) {
  const auto started = Clock::now();
  std::unique_ptr<KubeTestCluster> cluster(new KubeTestCluster());
  Status status = cluster->StartServers(binaries, started + timeout);
  if (status.ok()) status = cluster->WaitUntilReady(started + timeout);
  if (!status.ok()) {
    const std::string logs = cluster->LogTails();
    cluster->StopServers();
    return Status::Unavailable("starting the Kubernetes test cluster: " + status.ToString() + "\n" +
                               logs);
  }
  cluster->startup_duration_ = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
  return cluster;
}

Status KubeTestCluster::WriteCredentials() {
  const fs::path dir = scratch_.path() / "pki";
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return Status::IOError("cannot create " + dir.string() + ": " + error.message());
  ca_file_ = dir / "ca.crt";
  const std::string d = ShellQuote(dir.string()) + "/";
  // A CA, a serving certificate it signs for the loopback address, and the key pair that signs
  // and verifies service-account tokens.
  const std::vector<std::pair<std::string, std::string>> steps = {
      {"the test CA",
       "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
       "-subj /CN=cohort-test-ca -addext basicConstraints=critical,CA:TRUE "
       "-addext keyUsage=critical,keyCertSign,cRLSign -keyout " +
           d + "ca.key -out " + d + "ca.crt"},
      {"the API server's key and signing request",
       "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
       "-subj /CN=kube-apiserver -keyout " +
           d + "server.key -out " + d + "server.csr"},
      {"the extensions of the API server's certificate",
       "printf '%s\\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc' "
       "'extendedKeyUsage=serverAuth' 'keyUsage=critical,digitalSignature' > " +
           d + "server.ext"},
      {"the API server's certificate",
       "openssl x509 -req -days 2 -in " + d + "server.csr -CA " + d + "ca.crt -CAkey " + d +
           "ca.key -CAcreateserial -extfile " + d + "server.ext -out " + d + "server.crt"},
      {"the service-account signing key", "openssl genrsa -out " + d + "sa.key 2048"},
      {"the service-account verification key",
       "openssl rsa -in " + d + "sa.key -pubout -out " + d + "sa.pub"},
  };
  for (const auto& [what, command] : steps) {
    const CommandResult result = RunCommand(command);
    if (result.exit_code != 0) {
      return Status::Internal("openssl could not make " + what + " (exit " +
                              std::to_string(result.exit_code) + "): " + result.output);
    }
  }

  StatusOr<std::string> admin = RandomToken();
  StatusOr<std::string> controller_manager = RandomToken();
  StatusOr<std::string> unprivileged = RandomToken();
  for (const auto* token : {&admin, &controller_manager, &unprivileged}) {
    if (!token->ok()) return token->status().WithContext("making a bearer token");
  }
  admin_token_ = *admin;
  // token,user,uid,"groups"
  const std::string tokens = *admin + ",cohort-test-admin,cohort-test-admin,\"system:masters\"\n" +
                             *controller_manager +
                             ",system:kube-controller-manager,system:kube-controller-manager,"
                             "\"system:masters\"\n" +
                             *unprivileged + ",cohort-test-nobody,cohort-test-nobody\n";
  COHORT_RETURN_IF_ERROR(WriteFileAtomically(dir / "tokens.csv", tokens, 0600));

  StatusOr<std::string> ca_pem = ReadWholeFile(ca_file_, 1 << 20);
  if (!ca_pem.ok()) return ca_pem.status();
  admin_kubeconfig_ = scratch_.path() / "admin.kubeconfig";
  unprivileged_kubeconfig_ = scratch_.path() / "unprivileged.kubeconfig";
  controller_manager_kubeconfig_ = scratch_.path() / "controller-manager.kubeconfig";
  COHORT_RETURN_IF_ERROR(WriteFileAtomically(
      admin_kubeconfig_, Kubeconfig(server_, *ca_pem, "cohort-test-admin", *admin), 0600));
  COHORT_RETURN_IF_ERROR(
      WriteFileAtomically(unprivileged_kubeconfig_,
                          Kubeconfig(server_, *ca_pem, "cohort-test-nobody", *unprivileged), 0600));
  COHORT_RETURN_IF_ERROR(WriteFileAtomically(
      controller_manager_kubeconfig_,
      Kubeconfig(server_, *ca_pem, "system:kube-controller-manager", *controller_manager), 0600));
  return Status::OK();
}

Status KubeTestCluster::Launch(const std::string& name, const std::vector<std::string>& argv) {
  const fs::path log = scratch_.path() / (name + ".log");
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<char*> arguments;
  for (const std::string& argument : argv) arguments.push_back(const_cast<char*>(argument.c_str()));
  arguments.push_back(nullptr);
  const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0)
    return Status::IOError("cannot create " + log.string() + ": " + ErrnoMessage(errno));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Die with the thread that started the cluster, even when the test process crashes.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execv(arguments[0], arguments.data());
    static constexpr char kExecFailed[] = "exec failed\n";
    [[maybe_unused]] ssize_t ignored = ::write(STDERR_FILENO, kExecFailed, sizeof(kExecFailed) - 1);
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  if (pid < 0)
    return Status::Unavailable("cannot fork for " + name + ": " + ErrnoMessage(fork_errno));
  servers_.push_back(Server{name, pid, -1, log});
  return Status::OK();
}

Status KubeTestCluster::StartServers(const KubeBinaries& binaries, Clock::time_point deadline) {
  std::set<int> taken;
  StatusOr<int> etcd_client = FreeLoopbackPort(taken);
  StatusOr<int> etcd_peer = FreeLoopbackPort(taken);
  StatusOr<int> secure = FreeLoopbackPort(taken);
  for (const auto* port : {&etcd_client, &etcd_peer, &secure}) {
    if (!port->ok()) return port->status();
  }
  secure_port_ = *secure;
  server_ = "https://127.0.0.1:" + std::to_string(secure_port_);
  COHORT_RETURN_IF_ERROR(WriteCredentials());

  const std::string etcd_url = "http://127.0.0.1:" + std::to_string(*etcd_client);
  const std::string peer_url = "http://127.0.0.1:" + std::to_string(*etcd_peer);
  COHORT_RETURN_IF_ERROR(Launch(
      "etcd",
      {binaries.etcd.string(), "--name=cohort-test",
       "--data-dir=" + (scratch_.path() / "etcd").string(), "--listen-client-urls=" + etcd_url,
       "--advertise-client-urls=" + etcd_url, "--listen-peer-urls=" + peer_url,
       "--initial-advertise-peer-urls=" + peer_url, "--initial-cluster=cohort-test=" + peer_url}));
  // The API server retries etcd on its own, but an etcd that cannot bind its ports should say so
  // here rather than as an API server that never becomes ready.
  if (!WaitUntil([&] { return AcceptsConnections(*etcd_client) || !CheckServersRunning().ok(); },
                 std::chrono::duration_cast<milliseconds>(deadline - Clock::now()),
                 milliseconds(50))) {
    return Status::DeadlineExceeded("etcd never accepted connections on " + etcd_url);
  }
  COHORT_RETURN_IF_ERROR(CheckServersRunning());

  const fs::path pki = scratch_.path() / "pki";
  COHORT_RETURN_IF_ERROR(Launch(
      "kube-apiserver",
      {binaries.kube_apiserver.string(), "--etcd-servers=" + etcd_url, "--bind-address=127.0.0.1",
       "--advertise-address=127.0.0.1", "--secure-port=" + std::to_string(secure_port_),
       "--insecure-port=0", "--cert-dir=" + pki.string(),
       "--tls-cert-file=" + (pki / "server.crt").string(),
       "--tls-private-key-file=" + (pki / "server.key").string(),
       "--token-auth-file=" + (pki / "tokens.csv").string(), "--authorization-mode=RBAC",
       // There is no Endpoints object for the `kubernetes` Service to keep: nothing runs in pods.
       "--endpoint-reconciler-type=none", "--service-account-issuer=https://kubernetes.default.svc",
       "--service-account-key-file=" + (pki / "sa.pub").string(),
       "--service-account-signing-key-file=" + (pki / "sa.key").string(),
       "--service-cluster-ip-range=10.96.0.0/16", "--profiling=false"}));

  COHORT_RETURN_IF_ERROR(Launch(
      "kube-controller-manager",
      {binaries.kube_controller_manager.string(),
       "--kubeconfig=" + controller_manager_kubeconfig_.string(), "--leader-elect=false",
       // Service accounts and their token secrets, garbage collection, namespace deletion.
       "--controllers=serviceaccount,serviceaccount-token,garbagecollector,namespace",
       "--service-account-private-key-file=" + (pki / "sa.key").string(),
       "--root-ca-file=" + ca_file_.string(), "--use-service-account-credentials=false",
       // No metrics or health endpoints: nothing here scrapes them, and they would need ports.
       "--port=0", "--secure-port=0", "--profiling=false"}));
  return Status::OK();
}

Status KubeTestCluster::CheckServersRunning() {
  for (Server& server : servers_) {
    int status = 0;
    if (server.pid > 0 && ::waitpid(server.pid, &status, WNOHANG) == server.pid) {
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      server.pid = -1;
      server.exit_code = code;
    }
    if (server.exit_code >= 0) {
      return Status::Unavailable(server.name + " exited with status " +
                                 std::to_string(server.exit_code));
    }
  }
  return Status::OK();
}

Status KubeTestCluster::WaitUntilReady(Clock::time_point deadline) {
  const auto remaining = [&] {
    return std::max(milliseconds(0),
                    std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
  };
  Status server_status;
  // A listening port first (cheap to poll), then /readyz: every post-start hook has run and
  // etcd answers.
  if (!WaitUntil(
          [&] {
            server_status = CheckServersRunning();
            return !server_status.ok() || AcceptsConnections(secure_port_);
          },
          remaining(), milliseconds(100))) {
    return Status::DeadlineExceeded("kube-apiserver never accepted connections on " + server_);
  }
  COHORT_RETURN_IF_ERROR(server_status);
  KubectlResult readyz;
  if (!WaitUntil(
          [&] {
            server_status = CheckServersRunning();
            if (!server_status.ok()) return true;
            readyz = Kubectl("get --raw /readyz --request-timeout=5s");
            return readyz.ok() && readyz.out.rfind("ok", 0) == 0;
          },
          remaining(), milliseconds(500))) {
    return Status::DeadlineExceeded("kube-apiserver's /readyz never answered ok at " + server_ +
                                    "; last answer: " + readyz.Describe() + readyz.out);
  }
  COHORT_RETURN_IF_ERROR(server_status);

  // The API server admits no pod into a namespace without a default ServiceAccount. The
  // controller-manager makes it soon; making it here is a race it may win, which is as good.
  KubectlResult created = Kubectl("create serviceaccount default -n default");
  if (!created.ok() && created.err.find("AlreadyExists") == std::string::npos &&
      created.err.find("already exists") == std::string::npos) {
    return Status::Unavailable("cannot create the default ServiceAccount: " + created.Describe());
  }
  return Status::OK();
}

KubectlResult KubeTestCluster::RunKubectl(const fs::path& kubeconfig, const std::string& arguments,
                                          const std::string& stdin_text) const {
  static std::atomic<int> next_call{0};
  const int call = next_call++;
  const fs::path input = scratch_.path() / ("kubectl-" + std::to_string(call) + ".in");
  const fs::path errors = scratch_.path() / ("kubectl-" + std::to_string(call) + ".err");
  KubectlResult result;
  result.arguments = arguments;
  if (!WriteFileAtomically(input, stdin_text).ok()) {
    result.err = "cannot write " + input.string();
    return result;
  }
  // kubectl's discovery cache goes into the scratch directory, not $HOME.
  const std::string command =
      "( timeout -k 5 " + std::to_string(kKubectlTimeout.count()) +
      " kubectl --kubeconfig=" + ShellQuote(kubeconfig.string()) +
      " --cache-dir=" + ShellQuote((scratch_.path() / "kubectl-cache").string()) + " " + arguments +
      " < " + ShellQuote(input.string()) + " 2> " + ShellQuote(errors.string()) + " )";
  const CommandResult run = RunCommand(command);
  result.exit_code = run.exit_code;
  result.out = run.output;
  StatusOr<std::string> err = ReadWholeFile(errors, kMaxLogBytes);
  if (err.ok()) result.err = *err;
  std::error_code ignored;
  fs::remove(input, ignored);
  fs::remove(errors, ignored);
  return result;
}

KubectlResult KubeTestCluster::Kubectl(const std::string& arguments,
                                       const std::string& stdin_text) const {
  return RunKubectl(admin_kubeconfig_, arguments, stdin_text);
}

KubectlResult KubeTestCluster::KubectlUnprivileged(const std::string& arguments) const {
  return RunKubectl(unprivileged_kubeconfig_, arguments, "");
}

HttpAnswer KubeTestCluster::Request(const std::string& method, const std::string& path,
                                    const std::string& content_type,
                                    const std::string& body) const {
  static std::atomic<int> next_request{0};
  const std::string id = std::to_string(next_request++);
  const fs::path request_body = scratch_.path() / ("request-" + id + ".body");
  const fs::path answer_body = scratch_.path() / ("request-" + id + ".answer");
  const fs::path headers = scratch_.path() / ("request-" + id + ".headers");
  HttpAnswer answer;
  std::string header_lines = "Authorization: Bearer " + admin_token_ + "\n";
  if (!content_type.empty()) header_lines += "Content-Type: " + content_type + "\n";
  // The token goes in a file, not on the command line where `ps` would show it.
  if (!WriteFileAtomically(headers, header_lines, 0600).ok() ||
      !WriteFileAtomically(request_body, body).ok()) {
    answer.body = "cannot write the request files in " + scratch_.path().string();
    return answer;
  }
  const CommandResult run = RunCommand(
      "curl --silent --show-error --max-time 60 --cacert " + ShellQuote(ca_file_.string()) +
      " --header @" + ShellQuote(headers.string()) + " --request " + ShellQuote(method) +
      (body.empty() ? std::string() : " --data-binary @" + ShellQuote(request_body.string())) +
      " --output " + ShellQuote(answer_body.string()) + " --write-out '%{http_code}' " +
      ShellQuote(server_ + path));
  StatusOr<std::string> received = ReadWholeFile(answer_body, kMaxLogBytes);
  if (run.exit_code == 0) {
    answer.status = std::atoi(run.output.c_str());
    answer.body = received.ok() ? *received : "";
  } else {
    answer.body = "curl exited with " + std::to_string(run.exit_code) + ": " + run.output;
  }
  std::error_code ignored;
  for (const fs::path& file : {request_body, answer_body, headers}) fs::remove(file, ignored);
  return answer;
}

Status KubeTestCluster::CreateNamespace(const std::string& name) const {
  KubectlResult created = Kubectl("create namespace " + ShellQuote(name));
  if (!created.ok()) return Status::Unavailable("cannot create namespace: " + created.Describe());
  KubectlResult account;
  if (!WaitUntil(
          [&] {
            account = Kubectl("get serviceaccount default -o name -n " + ShellQuote(name));
            return account.ok();
          },
          seconds(60), milliseconds(250))) {
    return Status::DeadlineExceeded("namespace " + name +
                                    " got no default ServiceAccount in 60 s (is "
                                    "kube-controller-manager running?): " +
                                    account.Describe());
  }
  return Status::OK();
}

std::string KubeTestCluster::LogTails(int lines) const {
  std::string tails;
  for (const Server& server : servers_) {
    StatusOr<std::string> log = ReadWholeFile(server.log, kMaxLogBytes);
    tails += "--- the last lines of " + server.name + "'s log:\n";
    tails += log.ok() ? LastLines(*log, lines) : log.status().ToString();
    if (!tails.empty() && tails.back() != '\n') tails += '\n';
  }
  return tails;
}

void KubeTestCluster::StopServers() {
  for (const Server& server : servers_) {
    if (server.pid > 0) ::kill(server.pid, SIGTERM);
  }
  const auto deadline = Clock::now() + kStopTimeout;
  for (auto it = servers_.rbegin(); it != servers_.rend(); ++it) {
    if (it->pid <= 0) continue;
    const auto left = std::max(milliseconds(0),
                               std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
    WaitForChildOrSignal(it->pid, left, SIGKILL);
    it->pid = -1;
  }
}

StatusOr<KubeTestCluster*> SharedKubeTestCluster() {
  static std::unique_ptr<KubeTestCluster> cluster;
  static Status start_error;
  static bool tried = false;
  if (!tried) {
    tried = true;
    StatusOr<KubeBinaries> binaries = FindKubeBinaries();
    if (!binaries.ok()) {
      start_error = binaries.status();
    } else {
      StatusOr<std::unique_ptr<KubeTestCluster>> started =
          KubeTestCluster::Start(*binaries, seconds(180));
      if (started.ok()) {
        cluster = std::move(started).value();
        std::fprintf(stderr, "kube test cluster: ready at %s in %.1f s\n",
                     cluster->server().c_str(), cluster->startup_duration().count() / 1000.0);
      } else {
        start_error = started.status();
      }
    }
  }
  if (!start_error.ok()) return start_error;
  return cluster.get();
}

}  // namespace cohort::testing
