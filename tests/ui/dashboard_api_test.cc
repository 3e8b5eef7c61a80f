// The dashboard's API against real jobs: the real `cohort ui` process (ui_server.h) over a sandbox
// COHORT_HOME where the real `cohort` runs jobs of shell replicas (examples/hello, replica.sh).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "testing/cohort_runner.h"
#include "testing/wait.h"
#include "train/summary/event_file_writer.h"
#include "ui/ui_server.h"

namespace cohort::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kTfJobs = "/apis/kubeflow.org/v1/namespaces/default/tfjobs";

class UiApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<UiServer>(sandbox_);
    ASSERT_TRUE(server_->ok()) << server_->Output();
  }

  // Runs examples/hello to completion, after the server started: it must show without restart.
  void RunHello() {
    CommandResult run = sandbox_.Cohort(
        {"run", std::string(COHORT_SOURCE_DIR) + "/examples/hello/tfjob.yaml", "--image",
         "localhost/hello=" + std::string(COHORT_SOURCE_DIR) + "/examples/hello/replica.sh"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
  }

  json GetJson(const std::string& path, int expected_status = 200) {
    auto response = server_->Client()->Get(path);
    EXPECT_TRUE(response) << path;
    if (!response) return json();
    EXPECT_EQ(response->status, expected_status) << path << ": " << response->body;
    return json::parse(response->body, nullptr, false);
  }

  CohortSandbox sandbox_;
  std::unique_ptr<UiServer> server_;
};

TEST_F(UiApiTest, TfJobsAreWhatCohortGetPrintsAsJson) {
  RunHello();
  CommandResult one = sandbox_.Cohort({"get", "hello", "-o", "json"});
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(GetJson(kTfJobs + "/hello"), json::parse(one.output));
  CommandResult namespaced = sandbox_.Cohort({"get", "-o", "json"});
  EXPECT_EQ(GetJson(kTfJobs), json::parse(namespaced.output));
  CommandResult all = sandbox_.Cohort({"get", "-A", "-o", "json"});
  EXPECT_EQ(GetJson("/apis/kubeflow.org/v1/tfjobs"), json::parse(all.output));
  // The YAML form is `cohort get -o yaml`'s.
  CommandResult yaml = sandbox_.Cohort({"get", "hello", "-o", "yaml"});
  auto response = server_->Client()->Get(kTfJobs + "/hello", {{"Accept", "application/yaml"}});
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, yaml.output);
}

TEST_F(UiApiTest, ReplicasPodsEventsAndLogsOfARealJob) {
  RunHello();
  json replicas = GetJson(kTfJobs + "/hello/replicas");
  ASSERT_EQ(replicas["items"].size(), 3u) << replicas.dump();
  json worker = replicas["items"][1];
  EXPECT_EQ(worker["name"], "worker-0");
  EXPECT_EQ(worker["phase"], "Succeeded");
  EXPECT_EQ(worker["exitCode"], 0);
  EXPECT_EQ(worker["reason"], "Completed");
  EXPECT_GT(worker["port"].get<int>(), 0);
  EXPECT_TRUE(worker.contains("startedAt"));

  json pods = GetJson(
      "/api/v1/namespaces/default/pods?labelSelector=training.kubeflow.org/"
      "replica-type%3Dworker");
  ASSERT_EQ(pods["kind"], "PodList");
  // The workers `cohort get pods` lists (cleanPodPolicy Running removes one still running when
  // worker 0 ends the job).
  json cli_pods = json::parse(sandbox_.Cohort({"get", "pods", "-o", "json"}).output);
  json cli_workers = json::array();
  for (const json& pod : cli_pods["items"]) {
    if (pod["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "worker") {
      cli_workers.push_back(pod);
    }
  }
  EXPECT_FALSE(cli_workers.empty());
  EXPECT_EQ(pods["items"], cli_workers);
  // includeRemoved=true: every worker replica, the removed ones too (the jobs page's restarts).
  json with_removed = GetJson(
      "/api/v1/namespaces/default/pods?includeRemoved=true&labelSelector=training.kubeflow.org/"
      "replica-type%3Dworker");
  size_t workers = 0;
  for (const json& replica : replicas["items"]) workers += replica["replicaType"] == "worker";
  EXPECT_EQ(with_removed["items"].size(), workers) << with_removed.dump();
  EXPECT_GE(with_removed["items"].size(), pods["items"].size());
  GetJson("/api/v1/pods?includeRemoved=maybe", 400);
  CommandResult cli_pod = sandbox_.Cohort({"get", "pod", "hello-worker-0", "-o", "json"});
  EXPECT_EQ(GetJson("/api/v1/namespaces/default/pods/hello-worker-0"), json::parse(cli_pod.output));

  // Selectors unencoded, as a person types them.
  json events =
      GetJson("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name=hello");
  ASSERT_EQ(events["kind"], "EventList");
  ASSERT_FALSE(events["items"].empty());
  EXPECT_EQ(events["items"][0]["involvedObject"]["name"], "hello");
  EXPECT_EQ(GetJson(kTfJobs + "/hello/events")["items"].size(), events["items"].size());
  EXPECT_TRUE(
      GetJson("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name=other")["items"]
          .empty());

  auto log = server_->Client()->Get("/api/v1/namespaces/default/pods/hello-worker-0/log");
  ASSERT_TRUE(log);
  EXPECT_EQ(log->status, 200);
  CommandResult cli_log = sandbox_.Cohort({"logs", "hello-worker-0"});
  EXPECT_EQ(log->body, cli_log.output);
  auto tail =
      server_->Client()->Get("/api/v1/namespaces/default/pods/hello-worker-0/log?tailLines=2");
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->body, "step 3/3\ndone\n");
  auto limited =
      server_->Client()->Get("/api/v1/namespaces/default/pods/hello-worker-0/log?limitBytes=5");
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->body, "hello");
  // No restart, no previous run: kubectl's 400.
  json previous = GetJson("/api/v1/namespaces/default/pods/hello-worker-0/log?previous=true", 400);
  EXPECT_NE(previous["message"].get<std::string>().find("previous"), std::string::npos);
}

TEST_F(UiApiTest, PreviousRunAndRestartLinesOfARestartedReplica) {
  std::string manifest = Manifest(
      "restarted", ReplicaSpec("Worker", 1, "OnFailure",
                               {{"FAIL_INDEX", "0"}, {"FAIL_CODE", "3"}, {"FAIL_ONCE_DIR", "."}}));
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("job.yaml", manifest).string()});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string log = "/api/v1/namespaces/default/pods/restarted-worker-0/log";
  auto latest = server_->Client()->Get(log);
  auto previous = server_->Client()->Get(log + "?previous=true");
  auto all = server_->Client()->Get(log + "?allRuns=true");
  ASSERT_TRUE(latest && previous && all);
  EXPECT_EQ(previous->status, 200) << previous->body;
  EXPECT_EQ(latest->body, sandbox_.Cohort({"logs", "restarted-worker-0"}).output);
  EXPECT_EQ(previous->body, sandbox_.Cohort({"logs", "restarted-worker-0", "--previous"}).output);
  EXPECT_NE(previous->body.find("failing with"), std::string::npos) << previous->body;
  EXPECT_EQ(latest->body.rfind("===== cohort: restart 1 of worker-0", 0), 0u) << latest->body;
  EXPECT_EQ(all->body, previous->body + latest->body);
  EXPECT_EQ(GetJson(kTfJobs + "/restarted/replicas")["items"][0]["restarts"], 1);
}

TEST_F(UiApiTest, FollowedLogStreamsAsServerSentEventsUntilTheJobEnds) {
  fs::path release = sandbox_.root() / "release";
  std::string manifest =
      Manifest("follow", ReplicaSpec("Worker", 1, "Never", {{"RUN_UNTIL_FILE", release.string()}}));
  CommandResult submit =
      sandbox_.Cohort({"submit", sandbox_.WriteFile("job.yaml", manifest).string()});
  ASSERT_EQ(submit.exit_code, 0) << submit.output;
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto pod = server_->Client()->Get("/api/v1/namespaces/default/pods/follow-worker-0/log");
        return pod && pod->status == 200 && pod->body.find("starting") != std::string::npos;
      },
      30s));
  std::string received;
  std::mutex mutex;
  std::atomic<bool> ended{false};
  std::thread reader([&] {
    auto client = server_->Client();
    client->Get("/api/v1/namespaces/default/pods/follow-worker-0/log?follow=true",
                {{"Accept", "text/event-stream"}}, [&](const char* data, size_t length) {
                  std::lock_guard<std::mutex> lock(mutex);
                  received.append(data, length);
                  return true;
                });
    ended = true;
  });
  auto text = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return received;
  };
  EXPECT_TRUE(WaitUntil(
      [&] { return text().find("data: replica worker-0 pid") != std::string::npos; }, 30s))
      << text();
  EXPECT_FALSE(ended);
  std::ofstream(release) << "go\n";
  EXPECT_TRUE(WaitUntil([&] { return ended.load(); }, 60s))
      << "the stream did not end with the job";
  reader.join();
  EXPECT_NE(text().find("id: "), std::string::npos);
  // The stream's last event says the log will not grow, so that the page stops instead of
  // reconnecting; a reconnect after the end gets that event alone.
  const std::string end_event = "event: end\ndata: \n\n";
  const std::string all = text();
  ASSERT_GE(all.size(), end_event.size());
  EXPECT_EQ(all.substr(all.size() - end_event.size()), end_event);
  EXPECT_EQ(sandbox_.Cohort({"wait", "follow", "--timeout", "60"}).exit_code, 0);
  const size_t last_id = all.rfind("id: ");
  const std::string resume_at = all.substr(last_id + 4, all.find('\n', last_id) - last_id - 4);
  auto again =
      server_->Client()->Get("/api/v1/namespaces/default/pods/follow-worker-0/log?follow=true",
                             {{"Accept", "text/event-stream"}, {"Last-Event-ID", resume_at}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body, end_event);
}

TEST_F(UiApiTest, EveryKindHasItsOwnRoutesObjectsEventsAndMessages) {
  std::string manifest =
      Manifest("torch", ReplicaSpec("Master", 1, "Never") + ReplicaSpec("Worker", 1, "Never"));
  manifest.replace(manifest.find("kind: TFJob"), 11, "kind: PyTorchJob");
  manifest.replace(manifest.find("tfReplicaSpecs"), 14, "pytorchReplicaSpecs");
  for (size_t at; (at = manifest.find("name: tensorflow")) != std::string::npos;) {
    manifest.replace(at, 16, "name: pytorch");
  }
  CommandResult run = sandbox_.Cohort({"run", sandbox_.WriteFile("torch.yaml", manifest).string()});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string torches = "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs";

  json resources = GetJson("/apis/kubeflow.org/v1");
  EXPECT_EQ(resources["kind"], "APIResourceList");
  std::vector<std::string> plurals;
  for (const json& resource : resources["resources"]) plurals.push_back(resource["name"]);
  EXPECT_EQ(plurals, (std::vector<std::string>{"tfjobs", "pytorchjobs"}));

  CommandResult one = sandbox_.Cohort({"get", "pytorchjob", "torch", "-o", "json"});
  ASSERT_EQ(one.exit_code, 0) << one.output;
  json object = GetJson(torches + "/torch");
  EXPECT_EQ(object, json::parse(one.output));
  EXPECT_EQ(object["kind"], "PyTorchJob");
  EXPECT_EQ(GetJson("/apis/kubeflow.org/v1/pytorchjobs")["items"].size(), 1u);
  EXPECT_TRUE(GetJson("/apis/kubeflow.org/v1/tfjobs")["items"].empty());
  json status = GetJson(kTfJobs + "/torch", 404);
  EXPECT_EQ(status["message"], "tfjobs.kubeflow.org \"torch\" not found");
  EXPECT_EQ(GetJson(torches + "/torch/replicas")["items"].size(), 2u);

  json events = GetJson(torches + "/torch/events");
  ASSERT_FALSE(events["items"].empty()) << events.dump();
  EXPECT_EQ(events["items"][0]["involvedObject"]["kind"], "PyTorchJob");
  EXPECT_EQ(events["items"][0]["involvedObject"]["apiVersion"], "kubeflow.org/v1");
  json selected =
      GetJson("/api/v1/namespaces/default/events?fieldSelector=involvedObject.kind%3DPyTorchJob");
  EXPECT_EQ(selected["items"].size(), events["items"].size());

  auto client = server_->Client();
  const std::string token = server_->PageToken();
  auto suspended =
      client->Post(torches + "/torch/suspend", {{"X-Cohort-Token", token}}, "", "text/plain");
  ASSERT_TRUE(suspended);
  EXPECT_EQ(suspended->status, 409) << suspended->body;
  EXPECT_NE(suspended->body.find("pytorchjob torch has already Succeeded"), std::string::npos)
      << suspended->body;
  auto deleted = client->Delete(torches + "/torch", {{"X-Cohort-Token", token}});
  ASSERT_TRUE(deleted);
  ASSERT_EQ(deleted->status, 200) << deleted->body;
  json body = json::parse(deleted->body);
  EXPECT_EQ(body["message"], "pytorchjob \"torch\" deleted");
  EXPECT_EQ(body["details"]["kind"], "pytorchjobs");
  GetJson(torches + "/torch", 404);
}

TEST_F(UiApiTest, UnknownJobIsA404WithAMessage) {
  for (const std::string& path :
       {kTfJobs + "/nope", kTfJobs + "/nope/replicas", kTfJobs + "/nope/events",
        kTfJobs + "/nope/scalars", std::string("/api/v1/namespaces/default/pods/nope-worker-0"),
        std::string("/api/v1/namespaces/default/pods/nope-worker-0/log")}) {
    json status = GetJson(path, 404);
    EXPECT_EQ(status["kind"], "Status") << path;
    EXPECT_EQ(status["code"], 404) << path;
    EXPECT_NE(status["message"].get<std::string>().find("nope"), std::string::npos) << path;
  }
}

TEST_F(UiApiTest, PathTraversalInLogAndPodNamesIsRefused) {
  RunHello();
  for (const std::string& path :
       {std::string("/api/v1/namespaces/default/pods/..%2F..%2F..%2Fetc%2Fpasswd/log"),
        std::string("/api/v1/namespaces/default/pods/../../../../etc/passwd"),
        std::string("/api/v1/namespaces/..%2F..%2Fetc/pods/hello-worker-0/log"),
        std::string("/api/v1/namespaces/default/pods/hello-worker-0%2F..%2F..%2Fspec.json/log"),
        std::string("/api/v1/namespaces/default/pods/..hello-worker-0/log"),
        kTfJobs + "/..%2Fhello/replicas"}) {
    auto response = server_->Client()->Get(path);
    ASSERT_TRUE(response) << path;
    EXPECT_TRUE(response->status == 400 || response->status == 404)
        << path << " answered " << response->status << ": " << response->body;
    EXPECT_EQ(response->body.find("root:"), std::string::npos) << path;
    EXPECT_EQ(response->body.find("tfReplicaSpecs"), std::string::npos) << path;
  }
}

TEST_F(UiApiTest, StateChangesNeedTheTokenAndTheSameOrigin) {
  fs::path release = sandbox_.root() / "release";
  std::string manifest = Manifest(
      "actions", ReplicaSpec("Worker", 1, "Never", {{"RUN_UNTIL_FILE", release.string()}}));
  ASSERT_EQ(
      sandbox_.Cohort({"submit", sandbox_.WriteFile("job.yaml", manifest).string()}).exit_code, 0);
  const std::string token = server_->PageToken();
  ASSERT_EQ(token.size(), 64u);
  auto client = server_->Client();
  const std::string suspend = kTfJobs + "/actions/suspend";
  auto no_token = client->Post(suspend);
  ASSERT_TRUE(no_token);
  EXPECT_EQ(no_token->status, 401) << no_token->body;
  auto wrong = client->Post(suspend, {{"X-Cohort-Token", std::string(64, 'a')}}, "", "text/plain");
  EXPECT_EQ(wrong->status, 401);
  // The cookie alone is not enough for a change.
  auto cookie = client->Post(suspend, {{"Cookie", "cohort_token=" + token}}, "", "text/plain");
  EXPECT_EQ(cookie->status, 401);
  auto cross = client->Post(suspend, {{"X-Cohort-Token", token}, {"Origin", "http://evil.example"}},
                            "", "text/plain");
  EXPECT_EQ(cross->status, 403) << cross->body;
  auto cross_site = client->Post(
      suspend, {{"X-Cohort-Token", token}, {"Sec-Fetch-Site", "cross-site"}}, "", "text/plain");
  EXPECT_EQ(cross_site->status, 403);
  EXPECT_FALSE(GetJson(kTfJobs + "/actions")["spec"]["runPolicy"].value("suspend", false));

  const std::string origin = "http://127.0.0.1:" + std::to_string(server_->port());
  auto suspended =
      client->Post(suspend, {{"X-Cohort-Token", token}, {"Origin", origin}}, "", "text/plain");
  ASSERT_EQ(suspended->status, 200) << suspended->body;
  EXPECT_TRUE(json::parse(suspended->body)["spec"]["runPolicy"]["suspend"].get<bool>());
  EXPECT_TRUE(WaitUntil(
      [&] {
        return sandbox_.Cohort({"get", "actions"}).output.find("Suspended") != std::string::npos;
      },
      60s));
  auto resumed = client->Post(kTfJobs + "/actions/resume", {{"Authorization", "Bearer " + token}},
                              "", "text/plain");
  ASSERT_EQ(resumed->status, 200) << resumed->body;
  EXPECT_FALSE(json::parse(resumed->body)["spec"]["runPolicy"].value("suspend", false));

  auto deleted = client->Delete(kTfJobs + "/actions", {{"X-Cohort-Token", token}});
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->status, 200) << deleted->body;
  GetJson(kTfJobs + "/actions", 404);
  EXPECT_NE(sandbox_.Cohort({"get", "actions"}).exit_code, 0);
}

TEST_F(UiApiTest, ALoopbackServerRefusesOtherHostNames) {
  auto response = server_->Client()->Get(kTfJobs, {{"Host", "rebound.example:80"}});
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 403) << response->body;
  auto local = server_->Client()->Get(kTfJobs, {{"Host", "localhost:8080"}});
  EXPECT_EQ(local->status, 200);
}

TEST_F(UiApiTest, PagesAndMetricsAreServedFromTheBinary) {
  RunHello();
  auto page = server_->Client()->Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("/assets/app.js"), std::string::npos);
  EXPECT_EQ(page->get_header_value("X-Frame-Options"), "DENY");
  auto script = server_->Client()->Get("/assets/app.js");
  ASSERT_TRUE(script);
  EXPECT_EQ(script->status, 200);
  EXPECT_GT(script->body.size(), 10000u);  // the app and uPlot, bundled
  auto metrics = server_->Client()->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("cohort_jobs{"), std::string::npos) << metrics->body;
  EXPECT_EQ(server_->Client()->Get("/no/such/page")->status, 404);
  EXPECT_EQ(server_->Client()->Get("/api/v1/nothing")->status, 404);
}

TEST_F(UiApiTest, HugeAndMalformedEventFilesAreReportedNotFatal) {
  RunHello();
  fs::path run = sandbox_.home() / "jobs/default/hello/summaries/worker-0/train";
  fs::create_directories(run);
  {
    std::ofstream garbage(run / "events.out.tfevents.1.garbage", std::ios::binary);
    for (int i = 0; i < 4096; ++i) garbage << static_cast<char>((i * 7919) % 251);
  }
  {
    // 4 GiB, sparse: far past any bound on what is read of one file.
    std::ofstream huge(run / "events.out.tfevents.2.huge", std::ios::binary);
  }
  fs::resize_file(run / "events.out.tfevents.2.huge", uint64_t{4} << 30);
  json scalars = GetJson(kTfJobs + "/hello/scalars");
  ASSERT_EQ(scalars["kind"], "List") << scalars.dump();
  EXPECT_TRUE(scalars["items"].empty());
  EXPECT_FALSE(scalars["notes"].empty()) << scalars.dump();
  // The server is still there.
  EXPECT_EQ(GetJson(kTfJobs + "/hello")["metadata"]["name"], "hello");
  EXPECT_EQ(server_->Client()->Get("/metrics")->status, 200);
}

TEST_F(UiApiTest, AnAnswerOfHundredsOfThousandsOfPointsArrivesWhole) {
  // 300,000 points as one series: an answer of about 10 MB, which the server sends in pieces from
  // the body it owns and then hands its memory back (src/ui/freed_memory.h).
  RunHello();
  fs::path run = sandbox_.home() / "jobs/default/hello/summaries/worker-0/train";
  {
    StatusOr<std::unique_ptr<train::EventFileWriter>> writer =
        train::EventFileWriter::Create(run.string());
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    for (int64_t step = 0; step < 300000; ++step) {
      ASSERT_TRUE((*writer)->WriteScalars(step, {{"batch_loss", 1.0f / (1 + step)}}).ok());
    }
    // JSON has no NaN: a gap in the curve is null.
    ASSERT_TRUE((*writer)->WriteScalars(7, {{"gap", std::nanf("")}, {"gap", 0.25f}}).ok());
    ASSERT_TRUE((*writer)->Flush().ok());
  }
  const std::string path = kTfJobs + "/hello/scalars?tag=batch_loss&max_points=1000000";
  for (int round = 0; round < 2; ++round) {  // read from the files, then from the cache
    auto response = server_->Client()->Get(path);
    ASSERT_TRUE(response);
    ASSERT_EQ(response->status, 200) << response->body.substr(0, 200);
    EXPECT_GT(response->body.size(), size_t{8} << 20);
    EXPECT_EQ(response->get_header_value("Content-Type"), "application/json");
    json scalars = json::parse(response->body, nullptr, false);
    ASSERT_FALSE(scalars.is_discarded()) << response->body.substr(response->body.size() - 200);
    ASSERT_EQ(scalars["items"].size(), 1u) << scalars["notes"].dump();
    const json& series = scalars["items"][0];
    EXPECT_EQ(series["totalPoints"], 300000);
    ASSERT_EQ(series["points"].size(), 300000u);
    EXPECT_EQ(series["points"][0][0], 0);
    EXPECT_EQ(series["points"][299999][0], 299999);
    for (int step : {0, 1, 2, 12345, 299999}) {
      EXPECT_FLOAT_EQ(series["points"][step][2].get<float>(), 1.0f / (1 + step)) << step;
      EXPECT_GT(series["points"][step][1].get<double>(), 1.7e9) << step;  // seconds since 1970
    }
  }
  json gap = GetJson(kTfJobs + "/hello/scalars?tag=gap");
  ASSERT_EQ(gap["items"].size(), 1u) << gap.dump();
  EXPECT_EQ(gap["items"][0]["points"].dump().substr(0, 4), "[[7,") << gap.dump();
  EXPECT_TRUE(gap["items"][0]["points"][0][2].is_null()) << gap.dump();
  EXPECT_EQ(gap["items"][0]["points"][1][2], 0.25) << gap.dump();
  // A filter that matches nothing says what the job has.
  json nothing = GetJson(kTfJobs + "/hello/scalars?tag=loss&replica=worker-0");
  EXPECT_TRUE(nothing["items"].empty()) << nothing.dump();
  ASSERT_EQ(nothing["notes"].size(), 1u) << nothing.dump();
  EXPECT_EQ(nothing["notes"][0],
            "no series matches tag=loss replica=worker-0; this job has tags: batch_loss, gap; "
            "replicas: worker-0; runs: train");
  EXPECT_EQ(GetJson(kTfJobs + "/hello")["metadata"]["name"], "hello");
}

TEST(UiServerTest, APortAnotherDashboardHoldsIsRefused) {
  CohortSandbox sandbox;
  UiServer first(sandbox);
  ASSERT_TRUE(first.ok()) << first.Output();
  CommandResult second = sandbox.Cohort({"ui", "--port", std::to_string(first.port())}, 30s);
  EXPECT_EQ(second.exit_code, 3) << second.output;
  EXPECT_NE(second.output.find("cannot listen on 127.0.0.1:" + std::to_string(first.port())),
            std::string::npos)
      << second.output;
}

// Sends `request` as is to 127.0.0.1:port and returns what came back until `until` showed or the
// server closed the connection (at most 64 KiB, 10 s).
std::string RawExchange(int port, const std::string& request, const std::string& until) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    ssize_t got;
    while (answer.size() < 65536 && answer.find(until) == std::string::npos &&
           (got = recv(fd, buffer, sizeof(buffer), 0)) > 0) {
      answer.append(buffer, static_cast<size_t>(got));
    }
  }
  close(fd);
  return answer;
}

TEST(UiServerTest, APostWithoutContentLengthGetsAStatusSayingSo) {
  CohortSandbox sandbox;
  UiServer server(sandbox);
  ASSERT_TRUE(server.ok()) << server.Output();
  const std::string token = server.PageToken();
  ASSERT_FALSE(token.empty());
  // What `curl -X POST URL` sends: no body and no Content-Length.
  std::string answer = RawExchange(server.port(),
                                   "POST " + kTfJobs +
                                       "/nosuch/suspend HTTP/1.1\r\n"
                                       "Host: 127.0.0.1\r\nX-Cohort-Token: " +
                                       token + "\r\nConnection: close\r\n\r\n",
                                   "\"status\":\"Failure\"}");
  EXPECT_EQ(answer.rfind("HTTP/1.1 411", 0), 0u) << answer;
  EXPECT_NE(answer.find("\"kind\":\"Status\""), std::string::npos) << answer;
  EXPECT_NE(answer.find("needs a Content-Length header"), std::string::npos) << answer;
}

TEST(UiServerTest, ABodyOverTheLimitGetsAStatusSayingSo) {
  CohortSandbox sandbox;
  UiServer server(sandbox);
  ASSERT_TRUE(server.ok()) << server.Output();
  const std::string body(70 * 1024, 'x');  // the limit is 64 KiB
  std::string answer = RawExchange(server.port(),
                                   "POST " + kTfJobs + "/nosuch/suspend HTTP/1.1\r\n" +
                                       "Host: 127.0.0.1\r\nX-Cohort-Token: " + server.PageToken() +
                                       "\r\nContent-Length: " + std::to_string(body.size()) +
                                       "\r\nConnection: close\r\n\r\n" + body,
                                   "\"status\":\"Failure\"}");
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer.substr(0, 300);
  EXPECT_NE(answer.find("\"reason\":\"RequestEntityTooLarge\""), std::string::npos)
      << answer.substr(0, 600);
  EXPECT_NE(answer.find("over 65536 bytes"), std::string::npos) << answer.substr(0, 600);
}

TEST(UiTokenTest, ANonLoopbackAddressNeedsTheTokenOnEveryRequest) {
  CohortSandbox sandbox;
  CommandResult refused = sandbox.Cohort({"ui", "--address", "0.0.0.0", "--port", "0"}, 30s);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("--token"), std::string::npos) << refused.output;

  const std::string token = "a-token-for-the-test-0123456789";
  fs::path token_file = sandbox.WriteFile("token", token + "\n");
  UiServer server(sandbox, {"--address", "0.0.0.0", "--token-file", token_file.string()});
  ASSERT_TRUE(server.ok()) << server.Output();
  auto client = server.Client();
  for (const std::string& path :
       {std::string("/"), std::string("/assets/app.js"), kTfJobs, std::string("/metrics")}) {
    auto response = client->Get(path);
    ASSERT_TRUE(response) << path;
    EXPECT_EQ(response->status, 401) << path;
  }
  EXPECT_EQ(client->Get(kTfJobs, {{"Authorization", "Bearer wrong-token-0123456789"}})->status,
            401);
  EXPECT_EQ(client->Get(kTfJobs, {{"Authorization", "Bearer " + token}})->status, 200);
  auto first_visit = client->Get("/?token=" + token);
  ASSERT_TRUE(first_visit);
  EXPECT_EQ(first_visit->status, 200);
  EXPECT_NE(first_visit->get_header_value("Set-Cookie").find("HttpOnly"), std::string::npos);
  EXPECT_EQ(client->Get(kTfJobs, {{"Cookie", "cohort_token=" + token}})->status, 200);
  EXPECT_EQ(
      client->Post(kTfJobs + "/x/suspend", {{"Cookie", "cohort_token=" + token}}, "", "text/plain")
          ->status,
      401);
}

}  // namespace
}  // namespace cohort::testing
