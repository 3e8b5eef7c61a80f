// `cohort ui`: starts the dashboard (dashboard_server.h) on the jobs a view::JobClient reads (the
// jobs in $COHORT_HOME, or with --kubernetes a cluster's jobs of every kind), prints its address,
// and serves until SIGINT or SIGTERM.
//
//   cohort ui [--address 127.0.0.1] [--port 8080] [--token T | --token-file F]
//             [--kubernetes [--context C] [--kubeconfig F]]
#pragma once

#include <filesystem>
#include <ostream>
#include <string>

#include "base/status.h"
#include "view/job_client.h"

namespace cohort::ui {

struct UiFlags {
  std::string address = "127.0.0.1";
  int port = 8080;
  std::string token;
  std::string token_file;  // its first line is the token (at most 4 KiB)
};

// Whose jobs the dashboard serves.
struct DashboardJobs {
  view::JobClient* client = nullptr;  // not owned
  // $COHORT_HOME when the client's jobs are this machine's (logs served from their files, training
  // curves from their summaries); empty for a cluster's.
  std::filesystem::path home;
  std::string description;  // "the jobs of /home/u/.cohort", for the line printed at start
};

// Returns once a signal stopped the server: OK; InvalidArgument for flags that do not go together
// or a bad token file; Unavailable when the address cannot be bound. `out` gets the address.
Status ServeDashboard(const UiFlags& flags, const DashboardJobs& jobs, std::ostream& out);

}  // namespace cohort::ui
