#include "kube/client/http_api.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "testing/fake_apiserver.h"

namespace cohort::kube {
namespace {

using json = nlohmann::json;
using testing::FakeApiServer;
using testing::RecordedRequest;
using testing::SetJson;
using testing::SetStatus;
using namespace std::chrono_literals;

// A custom resource, as the operator reads its jobs.
Resource TFJobs() { return {"kubeflow.org", "v1", "tfjobs", "TFJob", true}; }

class HttpApiTest : public ::testing::Test {
 protected:
  HttpApiTest() {
    options_.connect_timeout = 5s;
    options_.request_timeout = 20s;
    options_.retry_backoff = 10ms;
  }

  HttpApi& api() {
    if (!api_)
      api_ = std::make_unique<HttpApi>(server_.Config(testing::TokenUser("t0k")), options_);
    return *api_;
  }

  FakeApiServer server_;
  HttpApiOptions options_;
  std::unique_ptr<HttpApi> api_;
};

// Answers every request with `object`.
FakeApiServer::Responder Echo(json object) {
  return
      [object](const RecordedRequest&, httplib::Response& response) { SetJson(response, object); };
}

TEST_F(HttpApiTest, GetReadsACorePodWithTheBearerToken) {
  server_.Respond(Echo({{"kind", "Pod"}, {"metadata", {{"name", "web-0"}}}}));
  StatusOr<json> pod = api().Get(PodResource(), "default", "web-0");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ((*pod)["metadata"]["name"], "web-0");
  RecordedRequest request = server_.last_request();
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.path, "/api/v1/namespaces/default/pods/web-0");
  EXPECT_EQ(request.authorization, "Bearer t0k");
}

TEST_F(HttpApiTest, PathsOfGroupAndClusterScopedResources) {
  server_.Respond(Echo({{"kind", "Thing"}}));
  ASSERT_TRUE(api().Get(TFJobs(), "team-a", "mnist").ok());
  EXPECT_EQ(server_.last_request().path, "/apis/kubeflow.org/v1/namespaces/team-a/tfjobs/mnist");
  ASSERT_TRUE(api().Get(LeaseResource(), "kube-system", "cohort-operator").ok());
  EXPECT_EQ(server_.last_request().path,
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cohort-operator");
  ASSERT_TRUE(api().Get(NamespaceResource(), "ignored", "team-a").ok());
  EXPECT_EQ(server_.last_request().path, "/api/v1/namespaces/team-a");
  EXPECT_EQ(CollectionPath(EventResource(), "default"), "/api/v1/namespaces/default/events");
  EXPECT_EQ(CollectionPath(TFJobs(), ""), "/apis/kubeflow.org/v1/tfjobs");
  EXPECT_EQ(ObjectPath(ServiceResource(), "a b", "x/y"), "/api/v1/namespaces/a%20b/services/x%2Fy");
}

TEST_F(HttpApiTest, ListSendsSelectorsAndReturnsItemsWithTheListsVersion) {
  server_.Respond(
      Echo({{"kind", "PodList"},
            {"metadata", {{"resourceVersion", "4711"}}},
            {"items", {{{"metadata", {{"name", "a"}}}}, {{"metadata", {{"name", "b"}}}}}}}));
  StatusOr<ObjectList> list =
      api().List(PodResource(), "",
                 {"training.kubeflow.org/job-name=mnist,tier in (a,b)", "spec.nodeName=node-1"});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->items[1]["metadata"]["name"], "b");
  EXPECT_EQ(list->resource_version, "4711");
  RecordedRequest request = server_.last_request();
  EXPECT_EQ(request.path, "/api/v1/pods");  // every namespace
  EXPECT_EQ(request.Param("labelSelector"), "training.kubeflow.org/job-name=mnist,tier in (a,b)");
  EXPECT_EQ(request.Param("fieldSelector"), "spec.nodeName=node-1");
}

TEST_F(HttpApiTest, CreatePostsTheObjectToItsCollection) {
  json job = {{"apiVersion", "kubeflow.org/v1"},
              {"kind", "TFJob"},
              {"metadata", {{"name", "mnist"}}},
              {"spec", {{"runPolicy", {{"cleanPodPolicy", "None"}}}}}};
  json stored = job;
  stored["metadata"]["uid"] = "u-1";
  server_.Respond(Echo(stored));
  StatusOr<json> created = api().Create(TFJobs(), "default", job);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ((*created)["metadata"]["uid"], "u-1");
  RecordedRequest request = server_.last_request();
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.path, "/apis/kubeflow.org/v1/namespaces/default/tfjobs");
  EXPECT_EQ(request.content_type, "application/json");
  EXPECT_EQ(json::parse(request.body), job);
}

TEST_F(HttpApiTest, UpdatePutsTheObjectOrItsStatus) {
  json job = {{"metadata", {{"name", "mnist"}, {"resourceVersion", "7"}}},
              {"status", {{"conditions", json::array()}}}};
  server_.Respond(Echo(job));
  ASSERT_TRUE(api().Update(TFJobs(), "default", job).ok());
  RecordedRequest request = server_.last_request();
  EXPECT_EQ(request.method, "PUT");
  EXPECT_EQ(request.path, "/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist");
  EXPECT_EQ(json::parse(request.body), job);
  ASSERT_TRUE(api().Update(TFJobs(), "default", job, /*status_subresource=*/true).ok());
  EXPECT_EQ(server_.last_request().path,
            "/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist/status");
}

TEST_F(HttpApiTest, PatchSendsAJsonMergePatch) {
  server_.Respond(Echo({{"metadata", {{"name", "mnist"}}}}));
  json patch = {{"spec", {{"runPolicy", {{"suspend", true}}}}}};
  ASSERT_TRUE(api().Patch(TFJobs(), "default", "mnist", patch).ok());
  RecordedRequest request = server_.last_request();
  EXPECT_EQ(request.method, "PATCH");
  EXPECT_EQ(request.path, "/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist");
  EXPECT_EQ(request.content_type, "application/merge-patch+json");
  EXPECT_EQ(json::parse(request.body), patch);
  ASSERT_TRUE(api().Patch(PodResource(), "default", "w", {{"status", {}}}, true).ok());
  EXPECT_EQ(server_.last_request().path, "/api/v1/namespaces/default/pods/w/status");
}

TEST_F(HttpApiTest, DeleteSendsPropagationPolicyAndUidPrecondition) {
  server_.Respond(Echo({{"kind", "Status"}, {"status", "Success"}}));
  ASSERT_TRUE(api().Delete(PodResource(), "default", "w-0", {"Foreground", "uid-42"}).ok());
  RecordedRequest request = server_.last_request();
  EXPECT_EQ(request.method, "DELETE");
  EXPECT_EQ(request.path, "/api/v1/namespaces/default/pods/w-0");
  json body = json::parse(request.body);
  EXPECT_EQ(body["kind"], "DeleteOptions");
  EXPECT_EQ(body["propagationPolicy"], "Foreground");
  EXPECT_EQ(body["preconditions"]["uid"], "uid-42");
  ASSERT_TRUE(api().Delete(PodResource(), "default", "w-1").ok());
  EXPECT_FALSE(json::parse(server_.last_request().body).contains("propagationPolicy"));
  EXPECT_FALSE(json::parse(server_.last_request().body).contains("preconditions"));
  EXPECT_FALSE(json::parse(server_.last_request().body).contains("gracePeriodSeconds"));
  DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(api().Delete(PodResource(), "default", "w-2", now).ok());
  EXPECT_EQ(json::parse(server_.last_request().body)["gracePeriodSeconds"], 0);
}

TEST_F(HttpApiTest, PodLogAsksForContainerPreviousTailAndSince) {
  server_.Respond([](const RecordedRequest&, httplib::Response& response) {
    response.set_content("line 1\nline 2\n", "text/plain");
  });
  LogOptions options;
  options.container = "tensorflow";
  options.previous = true;
  options.tail_lines = 10;
  options.since_seconds = 60;
  StatusOr<std::string> log = api().PodLog("default", "mnist-worker-0", options);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(*log, "line 1\nline 2\n");
  RecordedRequest request = server_.last_request();
  EXPECT_EQ(request.path, "/api/v1/namespaces/default/pods/mnist-worker-0/log");
  EXPECT_EQ(request.Param("container"), "tensorflow");
  EXPECT_EQ(request.Param("previous"), "true");
  EXPECT_EQ(request.Param("tailLines"), "10");
  EXPECT_EQ(request.Param("sinceSeconds"), "60");
  ASSERT_TRUE(api().PodLog("default", "p", {}).ok());
  EXPECT_EQ(server_.last_request().Param("previous"), "<absent>");
  EXPECT_EQ(server_.last_request().Param("container"), "<absent>");
}

TEST_F(HttpApiTest, PodLogKeepsTheEndOfALongLog) {
  std::string log;
  for (int i = 0; i < 20000; ++i) log += "line " + std::to_string(i) + "\n";
  server_.Respond([log](const RecordedRequest&, httplib::Response& response) {
    response.set_content(log, "text/plain");
  });
  LogOptions options;
  options.limit_bytes = 100;
  StatusOr<std::string> tail = api().PodLog("default", "p", options);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_EQ(*tail, log.substr(log.size() - 100));
}

struct ErrorCase {
  int http_code;
  std::string reason;
  Status::Code expected;
};

TEST_F(HttpApiTest, ServerErrorsMapToStatusCodesNamingVerbObjectAndServerMessage) {
  options_.get_attempts = 1;
  for (const ErrorCase& error :
       std::vector<ErrorCase>{{404, "NotFound", Status::Code::kNotFound},
                              {409, "AlreadyExists", Status::Code::kAlreadyExists},
                              {409, "Conflict", Status::Code::kAborted},
                              {410, "Expired", Status::Code::kOutOfRange},
                              {422, "Invalid", Status::Code::kInvalidArgument},
                              {400, "BadRequest", Status::Code::kInvalidArgument},
                              {403, "Forbidden", Status::Code::kFailedPrecondition},
                              {500, "InternalError", Status::Code::kUnavailable},
                              {429, "TooManyRequests", Status::Code::kUnavailable}}) {
    SCOPED_TRACE(error.http_code);
    server_.Respond([&](const RecordedRequest&, httplib::Response& response) {
      SetStatus(response, error.http_code, error.reason, "the server says " + error.reason);
    });
    json pod = {{"metadata", {{"name", "web-0"}}}};
    StatusOr<json> updated = api().Update(PodResource(), "team-a", pod);
    ASSERT_FALSE(updated.ok());
    EXPECT_EQ(updated.status().code(), error.expected) << updated.status().ToString();
    EXPECT_NE(updated.status().message().find("update Pod team-a/web-0"), std::string::npos)
        << updated.status().message();
    EXPECT_NE(updated.status().message().find("the server says " + error.reason), std::string::npos)
        << updated.status().message();
  }
}

TEST_F(HttpApiTest, AnErrorWithoutAStatusBodyQuotesWhatTheServerSaid) {
  options_.get_attempts = 1;
  server_.Respond([](const RecordedRequest&, httplib::Response& response) {
    response.status = 502;
    response.set_content("upstream connect error", "text/plain");
  });
  StatusOr<json> pod = api().Get(PodResource(), "default", "web-0");
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(pod.status().message().find("HTTP 502: upstream connect error"), std::string::npos)
      << pod.status().message();
}

TEST_F(HttpApiTest, A401WithAFixedTokenIsNotTriedAgainAndNamesTheConfig) {
  server_.Respond([](const RecordedRequest&, httplib::Response& response) {
    SetStatus(response, 401, "Unauthorized", "Unauthorized");
  });
  StatusOr<json> pod = api().Get(PodResource(), "default", "web-0");
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(pod.status().message().find("did not accept the credentials of the fake API server's "
                                        "test config"),
            std::string::npos)
      << pod.status().message();
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(HttpApiTest, GetWaitsAsRetryAfterSaysThenTriesAgain) {
  std::atomic<int> calls{0};
  server_.Respond([&](const RecordedRequest&, httplib::Response& response) {
    if (++calls == 1) {
      SetStatus(response, 429, "TooManyRequests", "slow down");
      response.set_header("Retry-After", "1");
    } else {
      SetJson(response, {{"metadata", {{"name", "web-0"}}}});
    }
  });
  auto start = std::chrono::steady_clock::now();
  StatusOr<json> pod = api().Get(PodResource(), "default", "web-0");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(calls.load(), 2);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1s);  // not the 10 ms backoff
}

TEST_F(HttpApiTest, GetIsTriedAgainAfter5xxAndSucceeds) {
  std::atomic<int> calls{0};
  server_.Respond([&](const RecordedRequest&, httplib::Response& response) {
    if (++calls < 3) {
      SetStatus(response, 503, "ServiceUnavailable", "etcd is busy");
    } else {
      SetJson(response, {{"metadata", {{"name", "web-0"}}}});
    }
  });
  StatusOr<json> pod = api().Get(PodResource(), "default", "web-0");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(calls.load(), 3);
}

TEST_F(HttpApiTest, GetRetriesAreBounded) {
  server_.Respond([](const RecordedRequest&, httplib::Response& response) {
    SetStatus(response, 500, "InternalError", "always broken");
  });
  StatusOr<json> pod = api().Get(PodResource(), "default", "web-0");
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.status().code(), Status::Code::kUnavailable);
  EXPECT_EQ(server_.requests().size(), 3u);  // options_.get_attempts
}

TEST_F(HttpApiTest, WritesAreNeverRepeated) {
  server_.Respond([](const RecordedRequest&, httplib::Response& response) {
    SetStatus(response, 503, "ServiceUnavailable", "try later");
  });
  json pod = {{"metadata", {{"name", "web-0"}}}};
  EXPECT_EQ(api().Create(PodResource(), "default", pod).status().code(),
            Status::Code::kUnavailable);
  EXPECT_EQ(api().Delete(PodResource(), "default", "web-0").code(), Status::Code::kUnavailable);
  EXPECT_EQ(api().Patch(PodResource(), "default", "web-0", pod).status().code(),
            Status::Code::kUnavailable);
  EXPECT_EQ(server_.requests().size(), 3u);
}

TEST_F(HttpApiTest, UpdateWithRetryReadsAgainAfterAConflict) {
  // The server holds one TFJob; a writer elsewhere bumps it once, between our first read and
  // our first write.
  std::mutex mutex;
  json stored = {{"metadata", {{"name", "mnist"}, {"resourceVersion", "1"}}},
                 {"spec", {{"replicas", 1}}}};
  bool bumped = false;
  server_.Respond([&](const RecordedRequest& request, httplib::Response& response) {
    std::lock_guard<std::mutex> lock(mutex);
    if (request.method == "GET") {
      SetJson(response, stored);
      return;
    }
    if (!bumped) {
      bumped = true;
      stored["metadata"]["resourceVersion"] = "2";
      stored["spec"]["replicas"] = 5;
    }
    json sent = json::parse(request.body);
    if (sent["metadata"]["resourceVersion"] != stored["metadata"]["resourceVersion"]) {
      SetStatus(response, 409, "Conflict",
                "Operation cannot be fulfilled on tfjobs.kubeflow.org \"mnist\": the object has "
                "been modified; please apply your changes to the latest version and try again");
      return;
    }
    stored = sent;
    stored["metadata"]["resourceVersion"] = "3";
    SetJson(response, stored);
  });
  StatusOr<json> updated = UpdateWithRetry(api(), TFJobs(), "default", "mnist", [](json& job) {
    job["spec"]["replicas"] = job["spec"]["replicas"].get<int>() + 1;
    return true;
  });
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ((*updated)["spec"]["replicas"], 6);  // 5 + 1: the change applied to a fresh read
  EXPECT_EQ((*updated)["metadata"]["resourceVersion"], "3");
  std::vector<std::string> methods;
  for (const RecordedRequest& request : server_.requests()) methods.push_back(request.method);
  EXPECT_EQ(methods, (std::vector<std::string>{"GET", "PUT", "GET", "PUT"}));
}

// A chunked answer that writes `pieces` in order, each as its own chunk.
void StreamPieces(httplib::Response& response, std::vector<std::string> pieces) {
  response.set_chunked_content_provider("application/json",
                                        [pieces](size_t, httplib::DataSink& sink) {
                                          for (const std::string& piece : pieces) {
                                            if (!sink.write(piece.data(), piece.size()))
                                              return false;
                                          }
                                          sink.done();
                                          return true;
                                        });
}

std::string Event(const std::string& type, const json& object) {
  return json({{"type", type}, {"object", object}}).dump() + "\n";
}

TEST_F(HttpApiTest, FollowPodLogHandsOnEachPieceUntilTheStreamEnds) {
  server_.Respond([](const RecordedRequest&, httplib::Response& response) {
    StreamPieces(response, {"step 1\nst", "ep 2\n", "step 3\n"});
  });
  LogOptions options;
  options.previous = true;
  options.tail_lines = 5;
  std::string text;
  int pieces = 0;
  Status followed =
      api().FollowPodLog("team", "mnist-worker-0", options, 30s, [&](std::string_view piece) {
        text.append(piece);
        ++pieces;
        return true;
      });
  ASSERT_TRUE(followed.ok()) << followed.ToString();
  EXPECT_EQ(text, "step 1\nstep 2\nstep 3\n");
  EXPECT_GE(pieces, 1);
  RecordedRequest request = server_.last_request();
  EXPECT_EQ(request.path, "/api/v1/namespaces/team/pods/mnist-worker-0/log");
  EXPECT_EQ(request.Param("follow"), "true");
  EXPECT_EQ(request.Param("previous"), "true");
  EXPECT_EQ(request.Param("tailLines"), "5");

  // The receiver can stop it, and a refused request is an error naming the pod.
  text.clear();
  followed = api().FollowPodLog("team", "mnist-worker-0", {}, 30s, [&](std::string_view piece) {
    text.append(piece);
    return false;
  });
  EXPECT_TRUE(followed.ok()) << followed.ToString();
  EXPECT_FALSE(text.empty());
  server_.Respond([](const RecordedRequest&, httplib::Response& response) {
    SetStatus(response, 400, "BadRequest", "container \"tensorflow\" is waiting to start");
  });
  followed =
      api().FollowPodLog("team", "mnist-worker-0", {}, 30s, [](std::string_view) { return true; });
  EXPECT_EQ(followed.code(), Status::Code::kInvalidArgument) << followed.ToString();
  EXPECT_NE(followed.message().find("follow the log of Pod team/mnist-worker-0"), std::string::npos)
      << followed.ToString();
}

TEST_F(HttpApiTest, WatchParsesEventsAndBookmarksSplitAcrossChunks) {
  std::string stream =
      Event("ADDED", {{"metadata", {{"name", "w-0"}, {"resourceVersion", "101"}}}}) +
      Event("BOOKMARK", {{"kind", "Pod"}, {"metadata", {{"resourceVersion", "150"}}}}) +
      Event("MODIFIED", {{"metadata", {{"name", "w-0"}, {"resourceVersion", "160"}}}}) +
      Event("DELETED", {{"metadata", {{"name", "w-0"}, {"resourceVersion", "170"}}}});
  server_.Respond([stream](const RecordedRequest&, httplib::Response& response) {
    // Cut the stream everywhere: in the middle of lines, at their ends, in a multi-byte spot.
    std::vector<std::string> pieces;
    for (size_t at = 0, size = 1; at < stream.size(); at += size, size = size % 37 + 5) {
      pieces.push_back(stream.substr(at, size));
    }
    StreamPieces(response, pieces);
  });
  std::vector<WatchEvent> events;
  Status watched = api().Watch(PodResource(), "default", {"app=mnist", ""}, "100", 30s,
                               [&](const WatchEvent& event) {
                                 events.push_back(event);
                                 return true;
                               });
  ASSERT_TRUE(watched.ok()) << watched.ToString();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].type, WatchEvent::Type::kAdded);
  EXPECT_EQ(events[1].type, WatchEvent::Type::kBookmark);
  EXPECT_EQ(events[1].object["metadata"]["resourceVersion"], "150");
  EXPECT_EQ(events[2].type, WatchEvent::Type::kModified);
  EXPECT_EQ(events[3].type, WatchEvent::Type::kDeleted);
  EXPECT_EQ(events[3].object["metadata"]["resourceVersion"], "170");
  RecordedRequest request = server_.last_request();
  EXPECT_EQ(request.path, "/api/v1/namespaces/default/pods");
  EXPECT_EQ(request.Param("watch"), "true");
  EXPECT_EQ(request.Param("allowWatchBookmarks"), "true");
  EXPECT_EQ(request.Param("resourceVersion"), "100");
  EXPECT_EQ(request.Param("timeoutSeconds"), "30");
  EXPECT_EQ(request.Param("labelSelector"), "app=mnist");
}

TEST_F(HttpApiTest, WatchHandsOnEachEventAsItArrives) {
  std::atomic<bool> first_seen{false};
  std::atomic<bool> first_seen_before_second_sent{false};
  server_.Respond([&](const RecordedRequest&, httplib::Response& response) {
    response.set_chunked_content_provider("application/json", [&](size_t, httplib::DataSink& sink) {
      std::string first = Event("ADDED", {{"metadata", {{"name", "a"}}}});
      sink.write(first.data(), first.size());
      first_seen_before_second_sent =
          cohort::testing::WaitUntil([&] { return first_seen.load(); }, 20s);
      std::string second = Event("ADDED", {{"metadata", {{"name", "b"}}}});
      sink.write(second.data(), second.size());
      sink.done();
      return true;
    });
  });
  int events = 0;
  Status watched = api().Watch(PodResource(), "default", {}, "1", 30s, [&](const WatchEvent&) {
    first_seen = true;
    ++events;
    return true;
  });
  ASSERT_TRUE(watched.ok()) << watched.ToString();
  EXPECT_EQ(events, 2);
  EXPECT_TRUE(first_seen_before_second_sent.load());
}

TEST_F(HttpApiTest, WatchEndsWhenTheCallbackSaysSo) {
  server_.Respond([](const RecordedRequest&, httplib::Response& response) {
    StreamPieces(response, {Event("ADDED", {{"metadata", {{"name", "a"}}}}),
                            Event("ADDED", {{"metadata", {{"name", "b"}}}}),
                            Event("ADDED", {{"metadata", {{"name", "c"}}}})});
  });
  int events = 0;
  Status watched = api().Watch(PodResource(), "default", {}, "1", 30s, [&](const WatchEvent&) {
    ++events;
    return false;
  });
  EXPECT_TRUE(watched.ok()) << watched.ToString();
  EXPECT_EQ(events, 1);
}

TEST_F(HttpApiTest, WatchErrorEvent410IsOutOfRange) {
  server_.Respond([](const RecordedRequest&, httplib::Response& response) {
    StreamPieces(response, {Event("ADDED", {{"metadata", {{"name", "a"}}}}),
                            Event("ERROR", {{"kind", "Status"},
                                            {"code", 410},
                                            {"reason", "Expired"},
                                            {"message", "too old resource version: 1 (500)"}})});
  });
  int events = 0;
  Status watched = api().Watch(PodResource(), "default", {}, "1", 30s, [&](const WatchEvent&) {
    ++events;
    return true;
  });
  EXPECT_EQ(watched.code(), Status::Code::kOutOfRange) << watched.ToString();
  EXPECT_NE(watched.message().find("too old resource version"), std::string::npos);
  EXPECT_NE(watched.message().find("watch Pod objects in namespace default"), std::string::npos)
      << watched.message();
  EXPECT_EQ(events, 1);
}

TEST_F(HttpApiTest, WatchHttp410IsOutOfRange) {
  server_.Respond([](const RecordedRequest&, httplib::Response& response) {
    SetStatus(response, 410, "Gone", "too old resource version");
  });
  Status watched = api().Watch(TFJobs(), "", {}, "1", 30s, [](const WatchEvent&) { return true; });
  EXPECT_EQ(watched.code(), Status::Code::kOutOfRange) << watched.ToString();
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(server_.last_request().path, "/apis/kubeflow.org/v1/tfjobs");
}

TEST_F(HttpApiTest, WatchThatOutlivesItsTimeoutEndsOk) {
  options_.connect_timeout = 1s;
  // Shared with the server's thread, which may still wait on it after this test body returns.
  auto released = std::make_shared<std::atomic<bool>>(false);
  server_.Respond([released](const RecordedRequest&, httplib::Response& response) {
    response.set_chunked_content_provider(
        "application/json", [released](size_t, httplib::DataSink& sink) {
          std::string event = Event("ADDED", {{"metadata", {{"name", "a"}}}});
          sink.write(event.data(), event.size());
          cohort::testing::WaitUntil([&] { return released->load(); }, 30s);
          sink.done();
          return true;
        });
  });
  int events = 0;
  auto start = std::chrono::steady_clock::now();
  Status watched = api().Watch(PodResource(), "default", {}, "1", 1s, [&](const WatchEvent&) {
    ++events;
    return true;
  });
  auto took = std::chrono::steady_clock::now() - start;
  *released = true;
  EXPECT_TRUE(watched.ok()) << watched.ToString();
  EXPECT_EQ(events, 1);
  EXPECT_LT(took, 15s);
}

TEST_F(HttpApiTest, WatchRefusesAnEventOverTheBound) {
  options_.max_watch_event_bytes = 1024;
  server_.Respond([](const RecordedRequest&, httplib::Response& response) {
    StreamPieces(response, {Event("ADDED", {{"metadata", {{"name", std::string(4096, 'x')}}}})});
  });
  Status watched =
      api().Watch(PodResource(), "default", {}, "1", 30s, [](const WatchEvent&) { return true; });
  EXPECT_EQ(watched.code(), Status::Code::kInvalidArgument) << watched.ToString();
  EXPECT_NE(watched.message().find("1024 bytes"), std::string::npos) << watched.message();
}

TEST_F(HttpApiTest, AnswerOverTheBoundIsRefused) {
  options_.max_response_bytes = 1024;
  server_.Respond(Echo({{"metadata", {{"name", std::string(10000, 'x')}}}}));
  StatusOr<json> pod = api().Get(PodResource(), "default", "big");
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.status().code(), Status::Code::kInternal);
  EXPECT_NE(pod.status().message().find("larger than 1024 bytes"), std::string::npos)
      << pod.status().message();
}

TEST_F(HttpApiTest, MissingNameOrNamespaceIsRefusedBeforeAnyRequest) {
  EXPECT_EQ(api().Get(PodResource(), "default", "").status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(api().Get(PodResource(), "", "web-0").status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(api().Update(PodResource(), "default", {{"spec", {}}}).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_TRUE(server_.requests().empty());
}

TEST(HttpApiTimeoutTest, ServerThatNeverAnswersTimesOut) {
  testing::SilentServer silent;
  ConnectionConfig config;
  config.description = "a silent server";
  config.cluster.server = silent.url();
  config.cluster.insecure_skip_tls_verify = true;
  HttpApiOptions options;
  options.request_timeout = 500ms;
  options.get_attempts = 3;  // a timeout is not tried again
  HttpApi api(config, options);
  auto start = std::chrono::steady_clock::now();
  StatusOr<json> pod = api.Get(PodResource(), "default", "web-0");
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.status().code(), Status::Code::kDeadlineExceeded) << pod.status().ToString();
  EXPECT_NE(pod.status().message().find("within 500 ms"), std::string::npos);
  EXPECT_LT(took, 10s);
  // A watch that never got an answer is a timeout too, not an empty watch.
  options.connect_timeout = 500ms;
  HttpApi watcher(config, options);
  Status watched =
      watcher.Watch(PodResource(), "default", {}, "1", 1s, [](const WatchEvent&) { return true; });
  EXPECT_EQ(watched.code(), Status::Code::kDeadlineExceeded) << watched.ToString();
}

TEST(HttpApiTimeoutTest, ServerThatIsNotThereIsUnavailable) {
  int port;
  {
    testing::SilentServer closed;  // its port is free again once it is gone
    port = std::stoi(closed.url().substr(closed.url().rfind(':') + 1));
  }
  ConnectionConfig config;
  config.description = "a server that is gone";
  config.cluster.server = "https://127.0.0.1:" + std::to_string(port);
  HttpApiOptions options;
  options.get_attempts = 2;
  options.retry_backoff = 10ms;
  HttpApi api(config, options);
  StatusOr<json> pod = api.Get(PodResource(), "default", "web-0");
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.status().code(), Status::Code::kUnavailable) << pod.status().ToString();
  EXPECT_NE(pod.status().message().find("a server that is gone"), std::string::npos);
}

}  // namespace
}  // namespace cohort::kube
