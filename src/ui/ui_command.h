// `cohort ui`: starts the dashboard (dashboard_server.h) on the jobs in $COHORT_HOME, prints its
// address, and serves until SIGINT or SIGTERM.
//
//   cohort ui [--address 127.0.0.1] [--port 8080] [--token T | --token-file F]
#pragma once

#include <filesystem>
#include <ostream>
#include <string>

#include "base/status.h"

namespace cohort::ui {

struct UiFlags {
  std::string address = "127.0.0.1";
  int port = 8080;
  std::string token;
  std::string token_file;  // its first line is the token (at most 4 KiB)
};

// Returns once a signal stopped the server: OK; InvalidArgument for flags that do not go together
// or a bad token file; Unavailable when the address cannot be bound. `out` gets the address.
Status ServeDashboard(const UiFlags& flags, const std::filesystem::path& home, std::ostream& out);

}  // namespace cohort::ui
