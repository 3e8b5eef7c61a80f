// `cohort ... --kubernetes` through the real binary, with a kubeconfig written by the test, against
// a fake API server holding the cluster's objects in memory (fake_cluster.h).
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <thread>

#include "kube_cli/fake_cluster.h"
#include "testing/files.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"
#include "testing/wait.h"

namespace cohort::kube {
namespace {

using json = nlohmann::json;
using testing::FakeCluster;
using namespace std::chrono_literals;

constexpr char kTFJobs[] = "/apis/kubeflow.org/v1";
constexpr char kCore[] = "/api/v1";

const char kHelloManifest[] = R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: hello
spec:
  tfReplicaSpecs:
    PS:
      replicas: 1
      template:
        spec:
          containers:
            - name: tensorflow
              image: localhost/hello
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: tensorflow
              image: localhost/hello
)";

struct Result {
  int exit_code = -1;
  std::string out;  // standard output
  std::string err;  // standard error
};

class KubeCliTest : public ::testing::Test {
 protected:
  KubeCliTest() { WriteKubeconfig(cluster_.server().url()); }

  void WriteKubeconfig(const std::string& server) {
    cohort::testing::WriteText(
        scratch_.path() / "kubeconfig",
        "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: " + server +
            "\n    certificate-authority: " + testing::TestPki::Get().Path("ca.crt").string() +
            "\nusers:\n- name: bob\n  user:\n    token: t0k\ncontexts:\n- name: fake\n"
            "  context:\n    cluster: fake\n    user: bob\n    namespace: team\n"
            "current-context: fake\n");
  }

  std::string Write(const std::string& name, const std::string& text) {
    cohort::testing::WriteText(scratch_.path() / name, text);
    return (scratch_.path() / name).string();
  }

  // Runs `cohort ARGS` with the test's kubeconfig and an empty HOME and COHORT_HOME.
  Result Cohort(const std::string& arguments) {
    const std::string dir = scratch_.path().string();
    cohort::testing::CommandResult run = cohort::testing::RunCommand(
        "(cd " + dir + " && KUBECONFIG=" + dir + "/kubeconfig HOME=" + dir + " COHORT_HOME=" + dir +
        "/home timeout 60 " COHORT_BINARY_DIR "/apps/cohort/cohort " + arguments + " 2>" + dir +
        "/stderr)");
    return {run.exit_code, run.output, cohort::testing::ReadText(scratch_.path() / "stderr")};
  }

  // A TFJob in team/hello as the operator leaves it running: created 3h30m ago, the PS running
  // and worker-0 done after two restarts, with Events of the job and of a pod.
  void PutRunningHello() {
    const Time created = Clock::now() - 210min;
    json tfjob = {{"apiVersion", "kubeflow.org/v1"},
                  {"kind", "TFJob"},
                  {"metadata",
                   {{"name", "hello"},
                    {"namespace", "team"},
                    {"uid", "uid-hello"},
                    {"creationTimestamp", FormatTime(created)}}},
                  {"spec",
                   {{"tfReplicaSpecs",
                     {{"PS", {{"replicas", 1}, {"template", Template()}}},
                      {"Worker", {{"replicas", 1}, {"template", Template()}}}}}}},
                  {"status", RunningStatus(created)}};
    cluster_.Put(kTFJobs, "tfjobs", tfjob);
    cluster_.Put(kCore, "pods",
                 Pod("ps", 0, created, "Running",
                     {{"name", "tensorflow"},
                      {"ready", true},
                      {"restartCount", 0},
                      {"state", {{"running", {{"startedAt", FormatTime(created)}}}}}}));
    cluster_.Put(kCore, "pods",
                 Pod("worker", 0, created, "Succeeded",
                     {{"name", "tensorflow"},
                      {"ready", false},
                      {"restartCount", 2},
                      {"state", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}}}}));
    cluster_.Put(kCore, "events",
                 Event("hello.1", "TFJob", "hello", "Normal", "SuccessfulCreatePod",
                       "Created pod: hello-worker-0", created, created, 1));
    cluster_.Put(kCore, "events",
                 Event("hello.2", "Pod", "hello-worker-0", "Warning", "BackOff",
                       "Back-off restarting failed container", created, created + 10min, 3));
    cluster_.Put(kCore, "events",
                 Event("other.1", "Pod", "other-worker-0", "Normal", "Pulled", "not ours", created,
                       created, 1));
  }

  static json Template() {
    return {{"spec", {{"containers", {{{"name", "tensorflow"}, {"image", "localhost/hello"}}}}}}};
  }

  static json RunningStatus(Time created) {
    return {{"conditions",
             {{{"type", "Created"},
               {"status", "True"},
               {"reason", "TFJobCreated"},
               {"message", "TFJob hello is created."},
               {"lastUpdateTime", FormatTime(created)},
               {"lastTransitionTime", FormatTime(created)}},
              {{"type", "Running"},
               {"status", "True"},
               {"reason", "TFJobRunning"},
               {"message", "TFJob team/hello is running."},
               {"lastUpdateTime", FormatTime(created)},
               {"lastTransitionTime", FormatTime(created)}}}},
            {"replicaStatuses", {{"PS", {{"active", 1}}}, {"Worker", {{"succeeded", 1}}}}},
            {"startTime", FormatTime(created)}};
  }

  static json Pod(const std::string& type, int index, Time created, const std::string& phase,
                  const json& container_status) {
    std::string name = "hello-" + type + "-" + std::to_string(index);
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"name", name},
              {"namespace", "team"},
              {"creationTimestamp", FormatTime(created)},
              {"labels",
               {{"training.kubeflow.org/job-name", "hello"},
                {"training.kubeflow.org/replica-type", type},
                {"training.kubeflow.org/replica-index", std::to_string(index)}}}}},
            {"spec",
             {{"nodeName", "node-1"},
              {"containers",
               {{{"name", "tensorflow"},
                 {"ports", {{{"name", "tfjob-port"}, {"containerPort", 2222}}}}}}}}},
            {"status",
             {{"phase", phase},
              {"podIP", "10.0.0." + std::to_string(type == "ps" ? 1 : 2)},
              {"startTime", FormatTime(created)},
              {"containerStatuses", {container_status}}}}};
  }

  static json Event(const std::string& name, const std::string& kind, const std::string& object,
                    const std::string& type, const std::string& reason, const std::string& message,
                    Time first, Time last, int count) {
    return {{"apiVersion", "v1"},
            {"kind", "Event"},
            {"metadata", {{"name", name}, {"namespace", "team"}}},
            {"involvedObject", {{"kind", kind}, {"name", object}, {"namespace", "team"}}},
            {"type", type},
            {"reason", reason},
            {"message", message},
            {"firstTimestamp", FormatTime(first)},
            {"lastTimestamp", FormatTime(last)},
            {"count", count}};
  }

  json StoredHello() { return *cluster_.Find(kTFJobs, "tfjobs", "team", "hello"); }
  json StoredTorch(const std::string& name = "torch") {
    return *cluster_.Find(kTFJobs, "pytorchjobs", "team", name);
  }

  // A PyTorchJob in team/NAME as the operator leaves it running: its master's pod (owned by the
  // PyTorchJob) and an Event of the job.
  void PutRunningTorch(const std::string& name) {
    const Time created = Clock::now() - 90min;
    json container = {
        {"spec", {{"containers", {{{"name", "pytorch"}, {"image", "cohort/torch"}}}}}}};
    json status = RunningStatus(created);
    for (json& condition : status["conditions"]) {
      condition["reason"] = "PyTorchJob" + condition["type"].get<std::string>();
    }
    status["replicaStatuses"] = {{"Master", {{"active", 1}}}};
    cluster_.Put(
        kTFJobs, "pytorchjobs",
        {{"apiVersion", "kubeflow.org/v1"},
         {"kind", "PyTorchJob"},
         {"metadata",
          {{"name", name},
           {"namespace", "team"},
           {"uid", "uid-" + name},
           {"creationTimestamp", FormatTime(created)}}},
         {"spec",
          {{"pytorchReplicaSpecs", {{"Master", {{"replicas", 1}, {"template", container}}}}}}},
         {"status", status}});
    json pod = Pod("master", 0, created, "Running",
                   {{"name", "pytorch"},
                    {"ready", true},
                    {"restartCount", 1},
                    {"state", {{"running", {{"startedAt", FormatTime(created)}}}}}});
    pod["metadata"]["name"] = name + "-master-0";
    pod["metadata"]["labels"]["training.kubeflow.org/job-name"] = name;
    pod["metadata"]["ownerReferences"] = {{{"apiVersion", "kubeflow.org/v1"},
                                           {"kind", "PyTorchJob"},
                                           {"name", name},
                                           {"controller", true}}};
    pod["spec"]["containers"] = {
        {{"name", "pytorch"},
         {"ports", {{{"name", "pytorchjob-port"}, {"containerPort", 23456}}}}}};
    cluster_.Put(kCore, "pods", pod);
    cluster_.Put(kCore, "events",
                 Event(name + ".1", "PyTorchJob", name, "Normal", "SuccessfulCreatePod",
                       "Created pod: " + name + "-master-0", created, created, 1));
  }

  // Sets the stored job's last condition, as the operator does when it finishes.
  void Finish(const std::string& type) {
    json tfjob = StoredHello();
    tfjob["status"]["conditions"].push_back({{"type", type},
                                             {"status", "True"},
                                             {"reason", "TFJob" + type},
                                             {"message", "TFJob team/hello " + type + "."},
                                             {"lastUpdateTime", FormatTime(Clock::now())},
                                             {"lastTransitionTime", FormatTime(Clock::now())}});
    cluster_.Put(kTFJobs, "tfjobs", tfjob);
  }

  std::vector<testing::RecordedRequest> Requests(const std::string& method) {
    std::vector<testing::RecordedRequest> found;
    for (const testing::RecordedRequest& request : cluster_.server().requests()) {
      if (request.method == method) found.push_back(request);
    }
    return found;
  }

  cohort::testing::ScratchDirectory scratch_{"cohort-kube-cli"};
  FakeCluster cluster_;
};

TEST_F(KubeCliTest, SubmitCreatesTheTFJobInTheContextsNamespaceAndSaysNoOperatorWasFound) {
  Result result = Cohort("submit --kubernetes " + Write("hello.yaml", kHelloManifest));
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.out, "hello\n");
  std::vector<testing::RecordedRequest> posts = Requests("POST");
  ASSERT_EQ(posts.size(), 1u);
  EXPECT_EQ(posts[0].path, "/apis/kubeflow.org/v1/namespaces/team/tfjobs");
  EXPECT_EQ(posts[0].authorization, "Bearer t0k");
  json body = json::parse(posts[0].body);
  EXPECT_EQ(body["kind"], "TFJob");
  EXPECT_EQ(body["apiVersion"], "kubeflow.org/v1");
  EXPECT_EQ(body["metadata"]["name"], "hello");
  EXPECT_EQ(body["metadata"]["namespace"], "team");
  EXPECT_FALSE(body["metadata"].contains("creationTimestamp"));  // the server's to set
  EXPECT_FALSE(body["spec"].contains("successPolicy"));  // "" locally; absent in Kubeflow's API
  EXPECT_EQ(body["spec"]["tfReplicaSpecs"]["Worker"]["replicas"], 2);
  EXPECT_EQ(body["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"], "OnFailure");
  EXPECT_EQ(body["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["image"],
            "localhost/hello");
  EXPECT_NE(result.err.find("TFJob team/hello created on " + cluster_.server().url()),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("no operator found (looked for deployments "
                            "cohort-system/cohort-operator and kubeflow/training-operator)"),
            std::string::npos)
      << result.err;
}

TEST_F(KubeCliTest, SubmitNamesTheOperatorWhoseDeploymentIsThere) {
  cluster_.Put("/apis/apps/v1", "deployments",
               {{"metadata", {{"name", "training-operator"}, {"namespace", "kubeflow"}}},
                {"status", {{"readyReplicas", 1}}}});
  Result result = Cohort("submit --kubernetes -n ml " + Write("hello.yaml", kHelloManifest));
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_TRUE(cluster_.Find(kTFJobs, "tfjobs", "ml", "hello").has_value());
  EXPECT_NE(result.err.find("Kubeflow's training-operator (deployment kubeflow/training-operator, "
                            "1 ready) will run it"),
            std::string::npos)
      << result.err;

  cluster_.Put("/apis/apps/v1", "deployments",
               {{"metadata", {{"name", "cohort-operator"}, {"namespace", "cohort-system"}}},
                {"status", {{"readyReplicas", 0}}}});
  result = Cohort("create --kubernetes -n ml2 -f " + Write("hello.yaml", kHelloManifest));
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.out, "tfjob.kubeflow.org/hello created\n");
  EXPECT_NE(result.err.find("Cohort's operator (deployment cohort-system/cohort-operator, 0 "
                            "ready) will run it, once one of its replicas is ready"),
            std::string::npos)
      << result.err;
}

TEST_F(KubeCliTest, AFileThatNamesItsNamespaceGoesThereUnlessDashNSaysOtherwise) {
  std::string manifest = kHelloManifest;
  manifest.replace(manifest.find("  name: hello\n"), 14, "  name: hello\n  namespace: ml\n");
  std::string file = Write("hello.yaml", manifest);
  ASSERT_EQ(Cohort("submit --kubernetes " + file).exit_code, 0);
  EXPECT_TRUE(cluster_.Find(kTFJobs, "tfjobs", "ml", "hello").has_value());
  Result other = Cohort("submit --kubernetes -n team " + file);
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("you must pass '--namespace=ml'"), std::string::npos) << other.err;
}

// One exit-code mapping for both clients (apps/cohort/exit_codes.h): a job file that is not
// there is invalid input (2), as locally; a job that is not there is 3, as locally.
TEST_F(KubeCliTest, ExitCodesAreTheLocalOnes) {
  Result missing_file = Cohort("submit --kubernetes " + scratch_.path().string() + "/none.yaml");
  EXPECT_EQ(missing_file.exit_code, 2) << missing_file.err;
  EXPECT_TRUE(Requests("POST").empty());
  PutRunningHello();
  for (const char* command : {"get tfjob absent", "describe absent", "wait absent --timeout 5",
                              "delete absent", "suspend absent"}) {
    Result missing_job = Cohort(std::string(command) + " --kubernetes");
    EXPECT_EQ(missing_job.exit_code, 3) << command << ": " << missing_job.err;
    EXPECT_NE(missing_job.err.find("absent"), std::string::npos)
        << command << ": " << missing_job.err;
  }
}

TEST_F(KubeCliTest, SubmitConvertsAnAiPlatformJobSpecFirst) {
  Result result =
      Cohort("submit --kubernetes " COHORT_TEST_DATA_DIR "/../../examples/taxi/ai-platform.yaml");
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.out, "taxi\n");
  std::optional<json> taxi = cluster_.Find(kTFJobs, "tfjobs", "team", "taxi");
  ASSERT_TRUE(taxi.has_value());
  EXPECT_EQ((*taxi)["kind"], "TFJob");
  const json& replicas = (*taxi)["spec"]["tfReplicaSpecs"];
  EXPECT_EQ(replicas["Chief"]["replicas"], 1);
  EXPECT_EQ(replicas["Worker"]["replicas"], 3);
  EXPECT_EQ(replicas["PS"]["replicas"], 2);
  EXPECT_EQ(replicas["Evaluator"]["replicas"], 1);
  EXPECT_EQ(replicas["Worker"]["template"]["spec"]["containers"][0]["image"],
            "localhost/taxi-train");
}

TEST_F(KubeCliTest, CreateTwiceIsRefusedAndApplyReplacesOnlyAChangedSpec) {
  std::string file = Write("hello.yaml", kHelloManifest);
  ASSERT_EQ(Cohort("create --kubernetes -f " + file).exit_code, 0);
  Result again = Cohort("create --kubernetes -f " + file);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("\"hello\" already exists"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("namespace team; context \"fake\""), std::string::npos) << again.err;

  Result unchanged = Cohort("apply --kubernetes -f " + file);
  ASSERT_EQ(unchanged.exit_code, 0) << unchanged.err;
  EXPECT_EQ(unchanged.out, "tfjob.kubeflow.org/hello unchanged\n");
  EXPECT_TRUE(Requests("PUT").empty());

  std::string more = kHelloManifest;
  more.replace(more.find("replicas: 2"), 11, "replicas: 4");
  Result configured = Cohort("apply --kubernetes -f " + Write("more.yaml", more));
  ASSERT_EQ(configured.exit_code, 0) << configured.err;
  EXPECT_EQ(configured.out, "tfjob.kubeflow.org/hello configured\n");
  EXPECT_EQ(StoredHello()["spec"]["tfReplicaSpecs"]["Worker"]["replicas"], 4);
  EXPECT_EQ(StoredHello()["metadata"]["uid"], "uid-hello");  // the same object, updated

  ASSERT_EQ(Cohort("delete --kubernetes hello").exit_code, 0);
  Result created = Cohort("apply --kubernetes -f " + file);
  EXPECT_EQ(created.out, "tfjob.kubeflow.org/hello created\n");
}

TEST_F(KubeCliTest, GetPrintsTheLocalColumns) {
  PutRunningHello();
  Result get = Cohort("get --kubernetes");
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ(get.out,
            "NAME    STATE     AGE\n"
            "hello   Running   3h\n");
  Result wide = Cohort("get tfjobs hello --kubernetes -o wide");
  ASSERT_EQ(wide.exit_code, 0) << wide.err;
  EXPECT_EQ(wide.out,
            "NAME    STATE     AGE   ACTIVE   SUCCEEDED   FAILED   RESTARTS   REPLICAS        "
            "MESSAGE\n"
            "hello   Running   3h    1        1           0        2          PS=1,Worker=1   "
            "TFJob team/hello is running.\n");
  Result all = Cohort("get -A --kubernetes");
  EXPECT_EQ(all.out,
            "NAMESPACE   NAME    STATE     AGE\n"
            "team        hello   Running   3h\n");
  EXPECT_EQ(Cohort("get tfjobs --kubernetes -o name").out, "tfjob.kubeflow.org/hello\n");
  Result object = Cohort("get tfjob hello --kubernetes -o json");
  ASSERT_EQ(object.exit_code, 0) << object.err;
  EXPECT_EQ(json::parse(object.out), StoredHello());  // the server's object, as kubectl prints
  EXPECT_EQ(Cohort("get tfjob hello --kubernetes -o 'jsonpath={.status.conditions[1].type}'").out,
            "Running");

  Result none = Cohort("get --kubernetes -n empty");
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(none.err, "No resources found in empty namespace.\n");
}

TEST_F(KubeCliTest, GetPodsPrintsKubectlsColumns) {
  PutRunningHello();
  Result pods = Cohort("get pods --kubernetes");
  ASSERT_EQ(pods.exit_code, 0) << pods.err;
  EXPECT_EQ(pods.out,
            "NAME             READY   STATUS      RESTARTS   AGE\n"
            "hello-ps-0       1/1     Running     0          3h\n"
            "hello-worker-0   0/1     Completed   2          3h\n");
  Result wide = Cohort("get pods hello-worker-0 --kubernetes -o wide");
  EXPECT_EQ(wide.out,
            "NAME             READY   STATUS      RESTARTS   AGE   IP         NODE     NOMINATED "
            "NODE   READINESS GATES\n"
            "hello-worker-0   0/1     Completed   2          3h    10.0.0.2   node-1   <none>      "
            "     <none>\n");
  EXPECT_EQ(Requests("GET").back().Param("labelSelector"), "<absent>");
  Cohort("get pods --kubernetes");
  EXPECT_EQ(Requests("GET").back().Param("labelSelector"), "training.kubeflow.org/job-name");
}

TEST_F(KubeCliTest, DescribeShowsThePodsPhasesRestartsAndTheEvents) {
  PutRunningHello();
  Result describe = Cohort("describe tfjob hello --kubernetes");
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  const std::string& text = describe.out;
  EXPECT_EQ(text.rfind("Name:         hello\nNamespace:    team\n", 0), 0u) << text;
  EXPECT_NE(text.find("Kind:         TFJob\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    Running   True     TFJobRunning"), std::string::npos) << text;
  EXPECT_NE(
      text.find("Replicas:\n"
                "  NAME       PHASE       RESTARTS   EXIT CODE   PORT   PID   LOG\n"
                "  ps-0       Running     0                      2222         pod/hello-ps-0\n"
                "  worker-0   Succeeded   2          0           2222         "
                "pod/hello-worker-0\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("  Normal    SuccessfulCreatePod   3h "), std::string::npos) << text;
  EXPECT_NE(text.find("Created pod: hello-worker-0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  Warning   BackOff               3h (x3 over 3h)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("pod/hello-worker-0: Back-off restarting failed container\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("not ours"), std::string::npos) << text;
}

TEST_F(KubeCliTest, LogsComeFromTheReplicasPods) {
  PutRunningHello();
  cluster_.SetLog("hello-ps-0", "serving\n");
  cluster_.SetLog("hello-worker-0", "step 1\nstep 2\n");
  cluster_.SetLog("hello-worker-0", "crashed\n", /*previous=*/true);
  Result job = Cohort("logs hello --kubernetes");
  ASSERT_EQ(job.exit_code, 0) << job.err;
  EXPECT_EQ(job.out, "[ps-0] serving\n[worker-0] step 1\n[worker-0] step 2\n");
  Result replica = Cohort("logs hello --replica worker-0 --kubernetes --tail 1");
  EXPECT_EQ(replica.out, "step 1\nstep 2\n");  // the fake ignores tailLines; the request has it
  EXPECT_EQ(Requests("GET").back().path, "/api/v1/namespaces/team/pods/hello-worker-0/log");
  EXPECT_EQ(Requests("GET").back().Param("tailLines"), "1");
  Result previous = Cohort("logs hello-worker-0 --kubernetes --previous");
  ASSERT_EQ(previous.exit_code, 0) << previous.err;
  EXPECT_EQ(previous.out, "crashed\n");
  EXPECT_EQ(Requests("GET").back().Param("previous"), "true");
  Result none = Cohort("logs hello-ps-0 -p --kubernetes");
  EXPECT_EQ(none.exit_code, 2);  // the server refused the request (400), as a local logs error
  EXPECT_NE(none.err.find("previous terminated container"), std::string::npos) << none.err;
}

// Follows both pods at once: text appended after the follow began arrives, a line split across
// pieces is printed whole, and the command ends when both streams end.
TEST_F(KubeCliTest, LogsFollowPrintsTheLogsAsTheyGrowUntilTheContainersEnd) {
  PutRunningHello();
  cluster_.SetLog("hello-ps-0", "serving\n");
  cluster_.SetLog("hello-worker-0", "step 1\n");
  Result result;
  std::thread follower([&] { result = Cohort("logs hello -f --kubernetes"); });
  auto following = [&](const std::string& pod) {
    for (const testing::RecordedRequest& request : Requests("GET")) {
      if (request.path == "/api/v1/namespaces/team/pods/" + pod + "/log" &&
          request.Param("follow") == "true") {
        return true;
      }
    }
    return false;
  };
  bool started = cohort::testing::WaitUntil(
      [&] { return following("hello-ps-0") && following("hello-worker-0"); }, 30s);
  cluster_.AppendLog("hello-worker-0", "step ");
  cluster_.AppendLog("hello-worker-0", "2\n");
  cluster_.EndLog("hello-ps-0");
  cluster_.EndLog("hello-worker-0");
  follower.join();
  ASSERT_TRUE(started);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  // The two pods' streams interleave in any order; each pod's own lines come whole and in order.
  auto lines_of = [&](const std::string& prefix) {
    std::string lines;
    std::istringstream out(result.out);
    for (std::string line; std::getline(out, line);) {
      if (line.rfind(prefix, 0) == 0) lines += line + "\n";
    }
    return lines;
  };
  EXPECT_EQ(lines_of("[ps-0] "), "[ps-0] serving\n") << result.out;
  EXPECT_EQ(lines_of("[worker-0] "), "[worker-0] step 1\n[worker-0] step 2\n") << result.out;
}

// Runs `cohort wait` in the background until the watch is open, then lets the job finish.
TEST_F(KubeCliTest, WaitWatchesUntilTheJobFinishesWithTheExitStatusOfALocalWait) {
  for (const auto& [type, exit_code] :
       {std::pair<std::string, int>{"Succeeded", 0}, std::pair<std::string, int>{"Failed", 1}}) {
    PutRunningHello();
    size_t watches_before = 0;
    for (const testing::RecordedRequest& request : Requests("GET")) {
      watches_before += request.Param("watch") == "true";
    }
    Result result;
    std::thread waiter([&] { result = Cohort("wait hello --kubernetes --timeout 60"); });
    bool watching = cohort::testing::WaitUntil(
        [&] {
          size_t watches = 0;
          for (const testing::RecordedRequest& request : Requests("GET")) {
            watches += request.Param("watch") == "true";
          }
          return watches > watches_before;
        },
        30s);
    Finish(type);
    waiter.join();
    ASSERT_TRUE(watching);
    EXPECT_EQ(result.exit_code, exit_code) << result.err;
    EXPECT_EQ(result.out, "hello " + type + "\n");
    EXPECT_EQ(Requests("GET").back().Param("fieldSelector"), "metadata.name=hello");
  }
}

TEST_F(KubeCliTest, WaitTimesOutSayingWhatItWaitedFor) {
  PutRunningHello();
  auto start = std::chrono::steady_clock::now();
  Result result = Cohort("wait hello --kubernetes --timeout 2");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("timed out after 2s waiting for TFJob team/hello to finish"),
            std::string::npos)
      << result.err;
}

TEST_F(KubeCliTest, DeleteRemovesTheTFJobInTheBackground) {
  PutRunningHello();
  Result deleted = Cohort("delete tfjob hello --kubernetes");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_EQ(deleted.out, "tfjob.kubeflow.org \"hello\" deleted\n");
  std::vector<testing::RecordedRequest> deletes = Requests("DELETE");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].path, "/apis/kubeflow.org/v1/namespaces/team/tfjobs/hello");
  EXPECT_EQ(json::parse(deletes[0].body)["propagationPolicy"], "Background");
  EXPECT_FALSE(cluster_.Find(kTFJobs, "tfjobs", "team", "hello").has_value());

  Result missing = Cohort("delete hello --kubernetes");
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("not found"), std::string::npos) << missing.err;
  EXPECT_EQ(Cohort("delete hello --kubernetes --ignore-not-found").exit_code, 0);
  Result by_file = Cohort("delete --kubernetes -n team -f " + Write("hello.yaml", kHelloManifest) +
                          " --ignore-not-found");
  EXPECT_EQ(by_file.exit_code, 0) << by_file.err;
}

TEST_F(KubeCliTest, SuspendAndResumePatchRunPolicySuspend) {
  PutRunningHello();
  Result suspended = Cohort("suspend hello --kubernetes");
  ASSERT_EQ(suspended.exit_code, 0) << suspended.err;
  EXPECT_EQ(suspended.out, "tfjob.kubeflow.org/hello suspended\n");
  std::vector<testing::RecordedRequest> patches = Requests("PATCH");
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].content_type, "application/merge-patch+json");
  EXPECT_EQ(json::parse(patches[0].body),
            json::parse(R"({"spec":{"runPolicy":{"suspend":true}}})"));
  EXPECT_EQ(StoredHello()["spec"]["runPolicy"]["suspend"], true);

  Result resumed = Cohort("resume hello --kubernetes");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(resumed.out, "tfjob.kubeflow.org/hello resumed\n");
  EXPECT_EQ(StoredHello()["spec"]["runPolicy"]["suspend"], false);

  Finish("Succeeded");
  Result finished = Cohort("suspend hello --kubernetes");
  EXPECT_EQ(finished.exit_code, 2);
  EXPECT_NE(finished.err.find("has already Succeeded; a finished job cannot be suspended"),
            std::string::npos)
      << finished.err;
  EXPECT_EQ(Requests("PATCH").size(), 2u);
}

TEST_F(KubeCliTest, AMissingCrdIsNamedWithHowToInstallIt) {
  cluster_.RemoveTFJobType();
  Result result = Cohort("submit --kubernetes " + Write("hello.yaml", kHelloManifest));
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("the server could not find the requested resource"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("(namespace team; context \"fake\" of kubeconfig " +
                            (scratch_.path() / "kubeconfig").string() + ", server " +
                            cluster_.server().url() + ")"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("kubectl apply -k deploy/kubernetes"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("cohort crd | kubectl apply -f -"), std::string::npos) << result.err;
  // A job that is simply absent is not blamed on the CRD.
  FakeCluster with_crd;
  WriteKubeconfig(with_crd.server().url());
  Result absent = Cohort("describe nothing --kubernetes");
  EXPECT_EQ(absent.exit_code, 3);
  EXPECT_NE(absent.err.find("not found"), std::string::npos) << absent.err;
  EXPECT_EQ(absent.err.find("kubectl apply -k"), std::string::npos) << absent.err;
}

TEST_F(KubeCliTest, ForbiddenSaysWhoWasRefusedWhere) {
  cluster_.Forbid();
  Result result = Cohort("get tfjobs --kubernetes");
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("User \"bob\" cannot GET resource \"tfjobs\""), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("context \"fake\""), std::string::npos) << result.err;
}

TEST_F(KubeCliTest, AServerThatNeverAnswersFailsWithinTheRequestTimeout) {
  testing::SilentServer silent;
  WriteKubeconfig(silent.url());
  auto start = std::chrono::steady_clock::now();
  Result result = Cohort("get --kubernetes --request-timeout 1");
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_LT(took, 30s);
  EXPECT_NE(result.err.find("server " + silent.url()), std::string::npos) << result.err;
}

TEST_F(KubeCliTest, UiServesTheClustersJobsOfEveryKind) {
  PutRunningHello();
  PutRunningTorch("torch");
  // `cohort ui --kubernetes --port 0` in the background, its output in a file.
  const std::string dir = scratch_.path().string();
  const std::string output = dir + "/ui.out";
  const std::string command = "KUBECONFIG=" + dir + "/kubeconfig HOME=" + dir +
                              " COHORT_HOME=" + dir +
                              "/home exec " COHORT_BINARY_DIR
                              "/apps/cohort/cohort ui --kubernetes --context fake --port 0 >" +
                              output + " 2>&1";
  pid_t pid = fork();  // the child only execs: the server's threads hold no lock it needs
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int port = 0;
  std::regex address("at http://127\\.0\\.0\\.1:([0-9]+)/");
  bool started = cohort::testing::WaitUntil(
      [&] {
        std::smatch match;
        std::string text = cohort::testing::ReadText(output);
        if (!std::regex_search(text, match, address)) return false;
        port = std::stoi(match[1]);
        return true;
      },
      30s);
  // The server is stopped however the test ends, and its exit status checked when it passes.
  struct Stop {
    pid_t pid;
    int Now() {
      if (pid <= 0) return -1;
      kill(pid, SIGTERM);
      int status = cohort::testing::WaitForChildOrSignal(pid, 20s, SIGKILL);
      pid = -1;
      return status;
    }
    ~Stop() { Now(); }
  } stop{pid};
  std::string printed = cohort::testing::ReadText(output);
  ASSERT_TRUE(started) << printed;
  EXPECT_NE(printed.find("serving the jobs of context \"fake\""), std::string::npos) << printed;
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(30, 0);
  auto all = client.Get("/apis/kubeflow.org/v1/tfjobs");
  auto one = client.Get("/apis/kubeflow.org/v1/namespaces/team/tfjobs/hello");
  auto pods = client.Get("/api/v1/namespaces/team/pods");
  auto resources = client.Get("/apis/kubeflow.org/v1");
  auto torches = client.Get("/apis/kubeflow.org/v1/pytorchjobs");
  auto torch = client.Get("/apis/kubeflow.org/v1/namespaces/team/pytorchjobs/torch");
  auto torch_events = client.Get("/apis/kubeflow.org/v1/namespaces/team/pytorchjobs/torch/events");
  auto not_a_tfjob = client.Get("/apis/kubeflow.org/v1/namespaces/team/tfjobs/torch");
  EXPECT_EQ(stop.Now(), 0);  // SIGTERM: a clean stop
  ASSERT_TRUE(all);
  ASSERT_EQ(all->status, 200) << all->body;
  json list = json::parse(all->body);
  ASSERT_EQ(list["items"].size(), 1u) << all->body;
  EXPECT_EQ(list["items"][0], StoredHello());  // the server's object, as `get -o json` prints it
  ASSERT_TRUE(one);
  ASSERT_EQ(one->status, 200) << one->body;
  EXPECT_EQ(json::parse(one->body)["status"]["conditions"][1]["type"], "Running");
  ASSERT_TRUE(pods);
  ASSERT_EQ(pods->status, 200) << pods->body;
  std::vector<std::string> names;
  json pod_list = json::parse(pods->body);
  for (const json& pod : pod_list["items"]) names.push_back(pod["metadata"]["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"hello-ps-0", "hello-worker-0", "torch-master-0"}))
      << pods->body;
  // Every kind under its own plural, with its own apiVersion and kind.
  ASSERT_TRUE(resources && torches && torch && torch_events && not_a_tfjob);
  ASSERT_EQ(resources->status, 200) << resources->body;
  std::vector<std::string> plurals;
  json resource_list = json::parse(resources->body);
  for (const json& resource : resource_list["resources"]) plurals.push_back(resource["name"]);
  EXPECT_EQ(plurals, (std::vector<std::string>{"tfjobs", "pytorchjobs"}));
  ASSERT_EQ(torches->status, 200) << torches->body;
  json torch_list = json::parse(torches->body);
  ASSERT_EQ(torch_list["items"].size(), 1u) << torches->body;
  EXPECT_EQ(torch_list["items"][0], StoredTorch());
  ASSERT_EQ(torch->status, 200) << torch->body;
  EXPECT_EQ(json::parse(torch->body)["kind"], "PyTorchJob");
  ASSERT_EQ(torch_events->status, 200) << torch_events->body;
  json torch_event_list = json::parse(torch_events->body);
  ASSERT_FALSE(torch_event_list["items"].empty()) << torch_events->body;
  EXPECT_EQ(torch_event_list["items"][0]["involvedObject"]["kind"], "PyTorchJob");
  EXPECT_EQ(not_a_tfjob->status, 404) << not_a_tfjob->body;
  EXPECT_EQ(json::parse(not_a_tfjob->body)["message"], "tfjobs.kubeflow.org \"torch\" not found");
  // Read from the cluster, with the kubeconfig user's token.
  bool listed = false;
  for (const testing::RecordedRequest& request : Requests("GET")) {
    if (request.path == "/apis/kubeflow.org/v1/tfjobs") listed = true;
    EXPECT_EQ(request.authorization, "Bearer t0k") << request.path;
  }
  EXPECT_TRUE(listed);
}

TEST_F(KubeCliTest, GetListsEveryKindAndEachKindByItsOwnNames) {
  PutRunningHello();
  PutRunningTorch("torch");
  Result every = Cohort("get --kubernetes");
  ASSERT_EQ(every.exit_code, 0) << every.err;
  EXPECT_EQ(every.out,
            "NAME    STATE     AGE\n"
            "hello   Running   3h\n"
            "torch   Running   90m\n");
  Result torches = Cohort("get pytorchjobs --kubernetes");
  EXPECT_EQ(torches.out,
            "NAME    STATE     AGE\n"
            "torch   Running   90m\n");
  EXPECT_EQ(Cohort("get --kubernetes -o name").out,
            "tfjob.kubeflow.org/hello\npytorchjob.kubeflow.org/torch\n");
  Result object = Cohort("get pytorchjob.kubeflow.org/torch --kubernetes -o json");
  ASSERT_EQ(object.exit_code, 0) << object.err;
  EXPECT_EQ(json::parse(object.out), StoredTorch());
  Result yaml = Cohort("get pytorchjob torch --kubernetes -o yaml");
  EXPECT_NE(yaml.out.find("kind: PyTorchJob\n"), std::string::npos) << yaml.out;
  EXPECT_EQ(Cohort("get tfjobs torch --kubernetes").exit_code, 3);

  Result describe = Cohort("describe pytorchjob torch --kubernetes");
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_NE(describe.out.find("Kind:         PyTorchJob\n"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("  master-0   Running   1                      23456         "
                              "pod/torch-master-0\n"),
            std::string::npos)
      << describe.out;
  EXPECT_NE(describe.out.find("Created pod: torch-master-0\n"), std::string::npos) << describe.out;

  Result env = Cohort("env pytorchjob torch --replica master-0 --kubernetes");
  ASSERT_EQ(env.exit_code, 0) << env.err;
  EXPECT_NE(env.out.find("\nMASTER_ADDR=torch-master-0\n"), std::string::npos) << env.out;
  EXPECT_NE(env.out.find("\nWORLD_SIZE=1\n"), std::string::npos) << env.out;

  cluster_.SetLog("torch-master-0", "epoch 1\n");
  Result logs = Cohort("logs pytorchjob/torch --kubernetes");
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "[master-0] epoch 1\n");
}

TEST_F(KubeCliTest, ANameTwoKindsHoldIsRefusedUntilTheKindIsNamed) {
  PutRunningHello();
  PutRunningTorch("hello");
  Result ambiguous = Cohort("delete hello --kubernetes");
  EXPECT_EQ(ambiguous.exit_code, 2);
  EXPECT_NE(ambiguous.err.find("job team/hello is both a TFJob and a PyTorchJob; name the kind: "
                               "cohort delete tfjob hello, or cohort delete pytorchjob hello"),
            std::string::npos)
      << ambiguous.err;
  EXPECT_TRUE(Requests("DELETE").empty());
  EXPECT_EQ(Cohort("wait hello --kubernetes --timeout 1").exit_code, 2);
  EXPECT_EQ(Cohort("describe hello --kubernetes").exit_code, 2);
  // Listing every kind shows the first and says why the other is left out.
  Result listed = Cohort("get --kubernetes");
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.err.find("PyTorchJob team/hello is not shown"), std::string::npos) << listed.err;

  Result suspended = Cohort("suspend pytorchjob hello --kubernetes");
  ASSERT_EQ(suspended.exit_code, 0) << suspended.err;
  EXPECT_EQ(suspended.out, "pytorchjob.kubeflow.org/hello suspended\n");
  ASSERT_EQ(Requests("PATCH").size(), 1u);
  EXPECT_EQ(Requests("PATCH")[0].path, "/apis/kubeflow.org/v1/namespaces/team/pytorchjobs/hello");
  EXPECT_EQ(StoredTorch("hello")["spec"]["runPolicy"]["suspend"], true);

  Result deleted = Cohort("delete pytorchjobs/hello --kubernetes");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_EQ(deleted.out, "pytorchjob.kubeflow.org \"hello\" deleted\n");
  ASSERT_EQ(Requests("DELETE").size(), 1u);
  EXPECT_EQ(Requests("DELETE")[0].path, "/apis/kubeflow.org/v1/namespaces/team/pytorchjobs/hello");
  EXPECT_TRUE(cluster_.Find(kTFJobs, "tfjobs", "team", "hello").has_value());
  // One kind left: the name alone is enough again.
  Result resumed = Cohort("resume hello --kubernetes");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(resumed.out, "tfjob.kubeflow.org/hello resumed\n");
}

TEST_F(KubeCliTest, WaitAndSubmitUseTheJobsKind) {
  PutRunningTorch("torch");
  json torch = StoredTorch();
  torch["status"]["conditions"].push_back(
      {{"type", "Succeeded"},
       {"status", "True"},
       {"reason", "PyTorchJobSucceeded"},
       {"message", "PyTorchJob team/torch is successfully completed."},
       {"lastUpdateTime", FormatTime(Clock::now())},
       {"lastTransitionTime", FormatTime(Clock::now())}});
  cluster_.Put(kTFJobs, "pytorchjobs", torch);
  Result wait = Cohort("wait torch --kubernetes --timeout 10");
  EXPECT_EQ(wait.exit_code, 0) << wait.err;
  EXPECT_EQ(wait.out, "torch Succeeded\n");

  Result submitted =
      Cohort("submit --kubernetes " COHORT_TEST_DATA_DIR "/specs/pytorchjob/mnist.yaml");
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  EXPECT_EQ(submitted.out, "pytorch-mnist\n");
  EXPECT_NE(submitted.err.find("PyTorchJob kubeflow/pytorch-mnist created on"), std::string::npos)
      << submitted.err;
  std::optional<json> stored = cluster_.Find(kTFJobs, "pytorchjobs", "kubeflow", "pytorch-mnist");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ((*stored)["kind"], "PyTorchJob");
  EXPECT_TRUE((*stored)["spec"].contains("pytorchReplicaSpecs")) << stored->dump();
}

TEST_F(KubeCliTest, AKindWhoseCrdIsMissingIsLeftOutOfAListingButNamedWhenAskedFor) {
  PutRunningHello();
  cluster_.RemoveJobType("pytorchjobs");
  Result every = Cohort("get --kubernetes");
  ASSERT_EQ(every.exit_code, 0) << every.err;
  EXPECT_EQ(every.out,
            "NAME    STATE     AGE\n"
            "hello   Running   3h\n");
  Result asked = Cohort("get pytorchjobs --kubernetes");
  EXPECT_EQ(asked.exit_code, 3);
  EXPECT_NE(asked.err.find("The cluster has no PyTorchJob resource type (kubeflow.org/v1 "
                           "pytorchjobs): install the CRD"),
            std::string::npos)
      << asked.err;
  EXPECT_EQ(asked.err.find("no TFJob resource type"), std::string::npos) << asked.err;
  // A name is still found in the kinds the cluster has.
  EXPECT_EQ(Cohort("describe hello --kubernetes").exit_code, 0);
}

TEST_F(KubeCliTest, ClusterFlagsWithoutKubernetesAreRefused) {
  Result result = Cohort("get --context fake");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--context requires --kubernetes"), std::string::npos) << result.err;
  EXPECT_TRUE(cluster_.server().requests().empty());
}

TEST_F(KubeCliTest, AMissingContextIsNamed) {
  Result result = Cohort("get --kubernetes --context nowhere");
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("nowhere"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace cohort::kube
