// The client's fault handling against a scripted HTTP server on loopback (cpp-httplib), where a
// real server cannot be made to fail on cue: 5xx and SlowDown are retried with back-off and the
// request then succeeds; a server that keeps failing is given up on after the bound; a 4xx is
// never retried; and a multipart upload whose part fails is aborted, so that nothing partial is
// left behind.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "base/s3_client.h"

namespace cohort {
namespace {

// An HTTP server on a free loopback port, serving `routes`' handlers until destroyed.
class ScriptedServer {
 public:
  explicit ScriptedServer(const std::function<void(httplib::Server&)>& routes) {
    routes(server_);
    port_ = server_.bind_to_any_port("127.0.0.1");
    // The socket listens from here on: requests wait in its backlog until the loop accepts them.
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~ScriptedServer() {
    server_.stop();
    thread_.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

S3Settings SettingsFor(const ScriptedServer& server) {
  S3Settings settings;
  settings.credentials = {"id", "secret", "", "a test"};
  settings.endpoint = server.endpoint();
  settings.endpoint_source = "the test";
  settings.path_style = true;
  return settings;
}

S3ClientOptions QuickRetries(int attempts) {
  S3ClientOptions options;
  options.retry.max_attempts = attempts;
  options.retry.initial_backoff = std::chrono::milliseconds(10);
  options.retry.max_total = std::chrono::milliseconds(20000);
  return options;
}

void Error(httplib::Response& response, int status, const std::string& code) {
  response.status = status;
  response.set_content("<Error><Code>" + code + "</Code><Message>scripted</Message></Error>",
                       "application/xml");
}

TEST(S3RetryTest, ServerErrorsAndSlowDownAreRetriedUntilTheRequestSucceeds) {
  std::atomic<int> requests{0};
  ScriptedServer server([&](httplib::Server& routes) {
    routes.Get("/bucket/key", [&](const httplib::Request& request, httplib::Response& response) {
      EXPECT_TRUE(request.has_header("x-amz-content-sha256"));
      EXPECT_TRUE(request.has_header("Authorization"));
      const int attempt = ++requests;
      if (attempt == 1) return Error(response, 503, "SlowDown");
      if (attempt == 2) return Error(response, 500, "InternalError");
      response.set_content("payload", "application/octet-stream");
    });
  });
  const S3Client client(SettingsFor(server), QuickRetries(5));
  StatusOr<std::string> read = client.GetObject({"s3", "bucket", "key"}, 100);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(*read, "payload");
  EXPECT_EQ(requests.load(), 3);
}

TEST(S3RetryTest, AServerThatKeepsFailingIsGivenUpOnAfterTheBound) {
  std::atomic<int> requests{0};
  ScriptedServer server([&](httplib::Server& routes) {
    routes.Put("/bucket/key", [&](const httplib::Request&, httplib::Response& response) {
      ++requests;
      Error(response, 503, "ServiceUnavailable");
    });
  });
  const S3Client client(SettingsFor(server), QuickRetries(4));
  const Status status = client.PutObject({"s3", "bucket", "key"}, "x");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_NE(status.message().find("failed after 4 attempts"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("503 ServiceUnavailable"), std::string::npos) << status.message();
  EXPECT_EQ(requests.load(), 4);
}

TEST(S3RetryTest, AClientErrorIsNeverRetried) {
  std::atomic<int> requests{0};
  ScriptedServer server([&](httplib::Server& routes) {
    routes.Get("/bucket/key", [&](const httplib::Request&, httplib::Response& response) {
      ++requests;
      Error(response, 403, "ExpiredToken");
    });
  });
  const S3Client client(SettingsFor(server), QuickRetries(5));
  StatusOr<std::string> read = client.GetObject({"s3", "bucket", "key"}, 100);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Status::Code::kIOError);
  EXPECT_NE(read.status().message().find("403 ExpiredToken: scripted"), std::string::npos)
      << read.status().message();
  EXPECT_EQ(requests.load(), 1);
}

TEST(S3RetryTest, AnOversizedAnswerIsCutOff) {
  ScriptedServer server([&](httplib::Server& routes) {
    routes.Get("/bucket", [&](const httplib::Request&, httplib::Response& response) {
      response.set_content(std::string(kMaxS3XmlAnswerBytes + 1, 'x'), "application/xml");
    });
  });
  const S3Client client(SettingsFor(server), QuickRetries(2));
  StatusOr<S3Client::Listing> listing = client.ListObjects("bucket", "", "");
  ASSERT_FALSE(listing.ok());
  EXPECT_NE(listing.status().message().find("larger than"), std::string::npos)
      << listing.status().message();
}

TEST(S3RetryTest, AMultipartUploadWhosePartFailsIsAborted) {
  std::mutex mutex;
  std::vector<std::string> calls;
  ScriptedServer server([&](httplib::Server& routes) {
    routes.Post("/bucket/big", [&](const httplib::Request& request, httplib::Response& response) {
      std::lock_guard<std::mutex> lock(mutex);
      if (request.has_param("uploads")) {
        calls.push_back("create");
        response.set_content(
            "<InitiateMultipartUploadResult><UploadId>u-1</UploadId>"
            "</InitiateMultipartUploadResult>",
            "application/xml");
      } else {
        calls.push_back("complete");
      }
    });
    routes.Put("/bucket/big", [&](const httplib::Request& request, httplib::Response& response) {
      std::lock_guard<std::mutex> lock(mutex);
      calls.push_back("part " + request.get_param_value("partNumber"));
      if (request.get_param_value("partNumber") == "2") return Error(response, 400, "InvalidPart");
      response.set_header("ETag", "\"e\"");
    });
    routes.Delete("/bucket/big", [&](const httplib::Request& request, httplib::Response& response) {
      std::lock_guard<std::mutex> lock(mutex);
      calls.push_back("abort " + request.get_param_value("uploadId"));
      response.status = 204;
    });
  });
  S3ClientOptions options = QuickRetries(3);
  options.multipart_threshold = size_t{5} << 20;
  options.part_size = size_t{5} << 20;
  options.parallel_parts = 1;  // parts in order, so that the calls are known
  const S3Client client(SettingsFor(server), options);
  const Status status =
      client.PutObject({"s3", "bucket", "big"}, std::string(size_t{11} << 20, 'b'));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("UploadPart"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("InvalidPart"), std::string::npos) << status.message();
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_EQ(calls, (std::vector<std::string>{"create", "part 1", "part 2", "abort u-1"}));
}

}  // namespace
}  // namespace cohort
