// A real `cohort ui` process for the dashboard's tests: started in a CohortSandbox's COHORT_HOME
// on a free port, its address read from the line it prints, stopped (SIGTERM) at the end.
#pragma once

#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "testing/cohort_runner.h"
#include "testing/wait.h"

namespace cohort::testing {

class UiServer {
 public:
  // Starts `cohort ui --port 0 EXTRA...`; ok() says whether it printed its address within 30 s.
  UiServer(const CohortSandbox& sandbox, std::vector<std::string> extra = {})
      : output_(sandbox.root() / ("ui-" + std::to_string(++count_) + ".out")) {
    std::vector<std::string> arguments = {"ui", "--port", "0"};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    pid_ = sandbox.StartCohort(arguments, output_);
    std::regex address("at http://([^ :/]+|\\[[^\\]]+\\]):([0-9]+)/");
    WaitUntil(
        [&] {
          std::smatch match;
          std::string text = Output();
          if (!std::regex_search(text, match, address)) return false;
          port_ = std::stoi(match[2]);
          return true;
        },
        std::chrono::seconds(30));
  }
  ~UiServer() { Stop(); }

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }
  std::string Output() const {
    std::ifstream in(output_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // A client of the server on 127.0.0.1, with bounded waits.
  std::unique_ptr<httplib::Client> Client() const {
    auto client = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client->set_connection_timeout(5, 0);
    client->set_read_timeout(60, 0);
    return client;
  }
  // The token the index page embeds, for the requests that change state.
  std::string PageToken(const httplib::Headers& headers = {}) const {
    auto response = Client()->Get("/", headers);
    if (!response) return "";
    std::smatch match;
    std::regex meta("name=\"cohort-token\" content=\"([0-9a-zA-Z_-]+)\"");
    return std::regex_search(response->body, match, meta) ? match[1].str() : "";
  }
  // Stops it with SIGTERM and returns its exit status (-1 if it was not running).
  int Stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int status = WaitForChildOrStop(pid_, std::chrono::seconds(20));
    pid_ = -1;
    return status;
  }

 private:
  static inline int count_ = 0;
  std::filesystem::path output_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace cohort::testing
