// DashboardServer: `cohort ui`, the web dashboard's HTTP server (cpp-httplib), serving the pages
// (web_assets.h) and the JSON API (dashboard_api.h) over the jobs a view::JobClient reads: those
// in $COHORT_HOME, or a cluster's.
//
//   StatusOr<std::unique_ptr<DashboardServer>> server = DashboardServer::Start(options);
//   std::cout << (*server)->Url() << "\n";
//   (*server)->Wait();  // until Stop() (from a signal handler's thread, say)
//
// Every request passes access_control.h's rules first (401/403 otherwise) and is bounded: a body
// of at most 64 KiB, 10 s to read the request and 30 s per write, at most 100 requests per
// connection; only a followed log lasts longer, up to ApiOptions::max_follow. Responses carry
// headers that keep the pages from being framed or sniffed.
//
// Memory: Start limits what the C library keeps of freed memory (freed_memory.h, a setting of the
// whole process: the server is what `cohort ui` runs); an answer of 8 MiB or more is sent in
// pieces from the body it owns, whose memory goes back to the system once it is sent; the event
// files read are cached within view::ScalarCache's byte budget.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "base/status.h"
#include "ui/access_control.h"
#include "ui/dashboard_api.h"

namespace httplib {
class Server;
}

namespace cohort::ui {

struct ServerOptions {
  std::string address = "127.0.0.1";
  int port = 8080;                  // 0: any free port
  std::string token;                // required for a non-loopback address; made up when empty
  view::JobClient* jobs = nullptr;  // whose jobs (not owned; outlives the server)
  std::filesystem::path home;       // $COHORT_HOME for this machine's jobs; empty for a cluster's
  int threads = 48;                 // requests served at once (followed logs hold one each)
};

class DashboardServer {
 public:
  // Binds and starts serving on a thread of its own. InvalidArgument for a non-loopback address
  // without a token (or a token shorter than 16 characters); Unavailable when the address cannot
  // be bound (the port is taken).
  static StatusOr<std::unique_ptr<DashboardServer>> Start(ServerOptions options);
  ~DashboardServer();

  int port() const { return port_; }
  // The address to open: http://ADDRESS:PORT/ (and what to add for the token).
  std::string Url() const;
  const AccessPolicy& policy() const { return policy_; }

  // Blocks until Stop().
  void Wait();
  void Stop();

 private:
  DashboardServer() = default;
  void Route();

  ServerOptions options_;
  AccessPolicy policy_;
  int port_ = 0;
  std::unique_ptr<DashboardApi> api_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace cohort::ui
