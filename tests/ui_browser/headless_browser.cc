#include "ui_browser/headless_browser.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <vector>

#include "kube/client/base64.h"

namespace cohort::testing {
namespace {

using nlohmann::json;

std::string FindChromium() {
  for (const char* name : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (access(name, X_OK) == 0) return name;
  }
  return "";
}

}  // namespace

HeadlessBrowser::HeadlessBrowser(int width, int height) {
  std::string chromium = FindChromium();
  if (chromium.empty()) {
    error_ = "chromium is not installed (scripts/setup.sh installs Debian's chromium)";
    return;
  }
  int commands[2], answers[2];
  if (pipe2(commands, O_CLOEXEC) != 0 || pipe2(answers, O_CLOEXEC) != 0) {
    error_ = "pipe failed";
    return;
  }
  std::vector<std::string> arguments = {
      chromium,
      "--headless=new",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-dev-shm-usage",
      "--disable-extensions",
      "--remote-debugging-pipe",
      "--window-size=" + std::to_string(width) + "," + std::to_string(height),
      "--user-data-dir=" + profile_.path().string(),
      "about:blank"};
  pid_ = fork();
  if (pid_ == 0) {
    // fd 3: what the browser reads; fd 4: what it writes. dup2 clears close-on-exec.
    int read_end = dup(commands[0]);
    int write_end = dup(answers[1]);
    dup2(read_end, 3);
    dup2(write_end, 4);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
    std::vector<char*> raw;
    for (std::string& argument : arguments) raw.push_back(argument.data());
    raw.push_back(nullptr);
    execv(raw[0], raw.data());
    _exit(127);
  }
  close(commands[0]);
  close(answers[1]);
  to_browser_ = commands[1];
  from_browser_ = answers[0];
  StatusOr<json> targets = Call("Target.getTargets", json::object(), true);
  if (!targets.ok()) {
    error_ = "chromium did not answer: " + targets.status().message();
    return;
  }
  std::string target;
  for (const json& info : (*targets)["targetInfos"]) {
    if (info.value("type", "") == "page") target = info["targetId"];
  }
  if (target.empty()) {
    StatusOr<json> created = Call("Target.createTarget", {{"url", "about:blank"}}, true);
    if (!created.ok()) {
      error_ = created.status().message();
      return;
    }
    target = (*created)["targetId"];
  }
  StatusOr<json> attached =
      Call("Target.attachToTarget", {{"targetId", target}, {"flatten", true}}, true);
  if (!attached.ok()) {
    error_ = attached.status().message();
    return;
  }
  session_ = (*attached)["sessionId"];
  if (StatusOr<json> enabled = Call("Page.enable", json::object()); !enabled.ok()) {
    error_ = enabled.status().message();
    return;
  }
  // Confirmation dialogs (delete) are answered by the test, never left open.
}

HeadlessBrowser::~HeadlessBrowser() {
  if (to_browser_ >= 0) close(to_browser_);
  if (from_browser_ >= 0) close(from_browser_);
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

StatusOr<json> HeadlessBrowser::Receive(std::chrono::steady_clock::time_point deadline) {
  while (true) {
    size_t end = pending_.find('\0');
    if (end != std::string::npos) {
      std::string message = pending_.substr(0, end);
      pending_.erase(0, end + 1);
      json parsed = json::parse(message, nullptr, false);
      if (parsed.is_discarded()) return Status::Internal("chromium sent no JSON: " + message);
      return parsed;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Status::DeadlineExceeded("no answer from chromium in time");
    pollfd descriptor{from_browser_, POLLIN, 0};
    if (poll(&descriptor, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[65536];
    ssize_t n = read(from_browser_, buffer, sizeof(buffer));
    if (n <= 0) return Status::Unavailable("chromium closed its pipe (it exited)");
    pending_.append(buffer, static_cast<size_t>(n));
  }
}

StatusOr<json> HeadlessBrowser::Call(const std::string& method, const json& params,
                                     bool browser_level, std::chrono::seconds timeout) {
  int id = next_id_++;
  json command = {{"id", id}, {"method", method}, {"params", params}};
  if (!browser_level) command["sessionId"] = session_;
  std::string bytes = command.dump();
  bytes.push_back('\0');
  if (write(to_browser_, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
    return Status::Unavailable("cannot write to chromium's pipe");
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    StatusOr<json> message = Receive(deadline);
    if (!message.ok()) return Status::Unavailable(method + ": " + message.status().message());
    if (message->value("id", -1) != id) continue;  // an event, or another answer
    if (message->contains("error"))
      return Status::Internal(method + ": " + (*message)["error"].dump());
    return (*message)["result"];
  }
}

Status HeadlessBrowser::Open(const std::string& url) {
  StatusOr<json> navigated = Call("Page.navigate", {{"url", url}});
  if (!navigated.ok()) return navigated.status();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    StatusOr<json> state = Evaluate("document.readyState");
    if (state.ok() && *state == "complete") return Status::OK();
    usleep(100 * 1000);
  }
  return Status::DeadlineExceeded("the page " + url + " did not load in 30 s");
}

StatusOr<json> HeadlessBrowser::Evaluate(const std::string& expression) {
  StatusOr<json> result =
      Call("Runtime.evaluate",
           {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}});
  if (!result.ok()) return result.status();
  if (result->contains("exceptionDetails")) {
    return Status::Internal("the page threw: " + (*result)["exceptionDetails"].dump());
  }
  return (*result)["result"].value("value", json());
}

Status HeadlessBrowser::Screenshot(const std::filesystem::path& png) {
  StatusOr<json> shot = Call("Page.captureScreenshot", {{"format", "png"}});
  if (!shot.ok()) return shot.status();
  StatusOr<std::string> bytes =
      kube::DecodeBase64((*shot)["data"].get<std::string>(), "screenshot");
  if (!bytes.ok()) return bytes.status();
  std::ofstream(png, std::ios::binary) << *bytes;
  return Status::OK();
}

}  // namespace cohort::testing
