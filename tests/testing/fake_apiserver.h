// What the kube_api and kube_cli tests run HttpApi and `cohort --kubernetes` against: a fake API
// server in-process (cpp-httplib over TLS) that records every request and answers as the test
// says, the certificates it needs (made with the openssl command at test time, in a scratch
// directory), and a server that never answers. Tests that include it link cpp-httplib and OpenSSL.
#pragma once

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kube/client/kubeconfig.h"
#include "testing/files.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"
#include "testing/wait.h"

namespace cohort::kube::testing {

// A certificate authority, server certificates it signed (one for 127.0.0.1 and localhost, one
// only for the name apiserver.test), a client certificate (CN alice) it signed, and a second,
// untrusted authority with a client certificate of its own. Made once per test binary.
class TestPki {
 public:
  static const TestPki& Get() {
    static const TestPki pki;  // its directory is removed when the binary exits
    return pki;
  }

  std::filesystem::path Path(const std::string& name) const { return scratch_.path() / name; }
  std::string Pem(const std::string& name) const { return cohort::testing::ReadText(Path(name)); }

 private:
  TestPki() : scratch_("cohort-kube-pki") {
    const std::string dir = scratch_.path().string();
    const std::string key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
    auto run = [&](const std::string& command) {
      cohort::testing::CommandResult result =
          cohort::testing::RunCommand("cd " + dir + " && " + command);
      if (result.exit_code != 0) {
        throw std::runtime_error("openssl failed: " + command + "\n" + result.output);
      }
    };
    auto authority = [&](const std::string& name) {
      run("openssl req -x509 -new" + key + "-keyout " + name + ".key -out " + name +
          ".crt -subj /CN=" + name + " -days 2");
    };
    auto signed_by = [&](const std::string& ca, const std::string& name, const std::string& subject,
                         const std::string& extension) {
      cohort::testing::WriteText(scratch_.path() / (name + ".ext"), extension + "\n");
      run("openssl req -new" + key + "-keyout " + name + ".key -out " + name + ".csr -subj " +
          subject);
      run("openssl x509 -req -in " + name + ".csr -CA " + ca + ".crt -CAkey " + ca +
          ".key -set_serial " + std::to_string(++serial_) + " -days 2 -out " + name +
          ".crt -extfile " + name + ".ext");
    };
    authority("ca");
    authority("rogue-ca");
    signed_by("ca", "server", "/CN=apiserver", "subjectAltName=DNS:localhost,IP:127.0.0.1");
    signed_by("ca", "named-server", "/CN=apiserver", "subjectAltName=DNS:apiserver.test");
    signed_by("ca", "client", "/O=cohort-testers/CN=alice", "extendedKeyUsage=clientAuth");
    signed_by("rogue-ca", "rogue-client", "/CN=mallory", "extendedKeyUsage=clientAuth");
  }

  cohort::testing::ScratchDirectory scratch_;
  int serial_ = 1;
};

// A request as the fake server received it.
struct RecordedRequest {
  std::string method;
  std::string path;    // without the query
  std::string target;  // with it, as sent
  std::multimap<std::string, std::string> params;
  std::string body;
  std::string authorization;  // the Authorization header
  std::string content_type;
  std::string client_common_name;  // of the client certificate, "" when none

  std::string Param(const std::string& key) const {
    auto found = params.find(key);
    return found == params.end() ? "<absent>" : found->second;
  }
};

inline UserConfig TokenUser(const std::string& token) {
  UserConfig user;
  user.token = token;
  return user;
}

// Writes a metav1.Status answer, as the API server sends with every error.
inline void SetStatus(httplib::Response& response, int code, const std::string& reason,
                      const std::string& message) {
  nlohmann::json status = {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                           {"message", message}, {"reason", reason},   {"code", code}};
  response.status = code;
  response.set_content(status.dump(), "application/json");
}

inline void SetJson(httplib::Response& response, const nlohmann::json& body) {
  response.status = 200;
  response.set_content(body.dump(), "application/json");
}

class FakeApiServer {
 public:
  using Responder = std::function<void(const RecordedRequest&, httplib::Response&)>;

  struct Options {
    bool require_client_certificate;  // and trust only the test CA's
    bool named_certificate;           // serve the apiserver.test certificate
  };

  FakeApiServer() : FakeApiServer(Options{false, false}) {}
  explicit FakeApiServer(Options options) {
    const TestPki& pki = TestPki::Get();
    std::string certificate =
        pki.Path(options.named_certificate ? "named-server.crt" : "server.crt");
    std::string key = pki.Path(options.named_certificate ? "named-server.key" : "server.key");
    std::string client_ca = pki.Path("ca.crt");
    server_ = std::make_unique<httplib::SSLServer>(
        certificate.c_str(), key.c_str(),
        options.require_client_certificate ? client_ca.c_str() : nullptr);
    if (!server_->is_valid()) throw std::runtime_error("the fake API server's TLS set-up failed");
    auto handler = [this](const httplib::Request& request, httplib::Response& response) {
      RecordedRequest recorded{request.method,
                               request.path,
                               request.target,
                               {request.params.begin(), request.params.end()},
                               request.body,
                               request.get_header_value("Authorization"),
                               request.get_header_value("Content-Type"),
                               CommonName(request.ssl)};
      Responder responder;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        requests_.push_back(recorded);
        responder = responder_;
      }
      if (responder) {
        responder(recorded, response);
      } else {
        SetStatus(response, 404, "NotFound", "the fake server was given no answer");
      }
    };
    server_->Get(".*", handler);
    server_->Post(".*", handler);
    server_->Put(".*", handler);
    server_->Patch(".*", handler);
    server_->Delete(".*", handler);
    port_ = server_->bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("the fake API server cannot bind");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    if (!cohort::testing::WaitUntil([&] { return server_->is_running(); },
                                    std::chrono::seconds(10))) {
      throw std::runtime_error("the fake API server did not start within 10 s");
    }
  }

  ~FakeApiServer() {
    server_->stop();
    thread_.join();
  }

  int port() const { return port_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

  void Respond(Responder responder) {
    std::lock_guard<std::mutex> lock(mutex_);
    responder_ = std::move(responder);
  }

  std::vector<RecordedRequest> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }
  RecordedRequest last_request() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_.empty() ? RecordedRequest{} : requests_.back();
  }

  // A connection config for this server, trusting the test CA, with `user`'s credentials.
  ConnectionConfig Config(UserConfig user = {}) const {
    ConnectionConfig config;
    config.description = "the fake API server's test config";
    config.cluster.server = url();
    config.cluster.certificate_authority_pem = TestPki::Get().Pem("ca.crt");
    config.user = std::move(user);
    return config;
  }

 private:
  static std::string CommonName(const SSL* ssl) {
    if (ssl == nullptr) return "";
    X509* certificate = SSL_get1_peer_certificate(ssl);
    if (certificate == nullptr) return "";
    char name[256] = {0};
    X509_NAME_get_text_by_NID(X509_get_subject_name(certificate), NID_commonName, name,
                              sizeof(name));
    X509_free(certificate);
    return name;
  }

  std::unique_ptr<httplib::SSLServer> server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mutex_;
  Responder responder_;
  std::vector<RecordedRequest> requests_;
};

// A TCP port that accepts connections (the kernel completes the handshake) and never says a
// word: a server that never answers.
class SilentServer {
 public:
  SilentServer() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      throw std::runtime_error("the silent server cannot listen");
    }
    port_ = ntohs(address.sin_port);
  }
  ~SilentServer() { close(fd_); }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace cohort::kube::testing
