// A real browser for the dashboard's tests: headless Chromium (Debian's `chromium`) driven over the
// DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages ending in '\0', commands on
// the browser's fd 3, answers and events on its fd 4), so that a test opens a page once and looks
// at its live DOM as often as it likes, without reloading it.
//
//   HeadlessBrowser browser;                 // ok() is false where no chromium is installed
//   browser.Open("http://127.0.0.1:8080/#/jobs/default/mnist");
//   StatusOr<nlohmann::json> rows = browser.Evaluate("document.querySelectorAll('tr').length");
//   browser.Screenshot("job.png");
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"
#include "testing/scratch_directory.h"

namespace cohort::testing {

class HeadlessBrowser {
 public:
  // Starts chromium (the first of chromium, chromium-browser on PATH) with a profile of its own.
  HeadlessBrowser(int width = 1280, int height = 900);
  ~HeadlessBrowser();
  HeadlessBrowser(const HeadlessBrowser&) = delete;
  HeadlessBrowser& operator=(const HeadlessBrowser&) = delete;

  bool ok() const { return pid_ > 0 && !session_.empty(); }
  const std::string& error() const { return error_; }

  // Navigates the one page to `url` and waits (bounded) for its load event.
  Status Open(const std::string& url);
  // The value of a JavaScript expression in the page (returned by value; promises awaited).
  StatusOr<nlohmann::json> Evaluate(const std::string& expression);
  // Writes a PNG of the page's viewport.
  Status Screenshot(const std::filesystem::path& png);

 private:
  // Sends a command (on the page's session unless `browser_level`) and waits for its answer.
  StatusOr<nlohmann::json> Call(const std::string& method, const nlohmann::json& params,
                                bool browser_level = false,
                                std::chrono::seconds timeout = std::chrono::seconds(30));
  // The next message from the browser, or an error when none comes before `deadline`.
  StatusOr<nlohmann::json> Receive(std::chrono::steady_clock::time_point deadline);

  ScratchDirectory profile_{"chromium-profile"};
  pid_t pid_ = -1;
  int to_browser_ = -1;
  int from_browser_ = -1;
  int next_id_ = 1;
  std::string session_;
  std::string pending_;  // bytes received after the last whole message
  std::string error_;
};

}  // namespace cohort::testing
