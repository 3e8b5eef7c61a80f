#include "cluster/tf_config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace cohort::cluster {
namespace {

// The operator's TF_CONFIG for worker 1 of job mnist in namespace kubeflow
// (docs/behaviour.md §2.3).
constexpr const char* kMnistWorker1 =
    R"({"cluster":{"chief":["mnist-chief-0.kubeflow.svc:2222"],)"
    R"("ps":["mnist-ps-0.kubeflow.svc:2222","mnist-ps-1.kubeflow.svc:2222"],)"
    R"("worker":["mnist-worker-0.kubeflow.svc:2222","mnist-worker-1.kubeflow.svc:2222"]},)"
    R"("task":{"type":"worker","index":1},"environment":"cloud"})";

TfConfig MnistWorker1() {
  TfConfig config;
  config.cluster.jobs["chief"] = {"mnist-chief-0.kubeflow.svc:2222"};
  config.cluster.jobs["ps"] = {"mnist-ps-0.kubeflow.svc:2222", "mnist-ps-1.kubeflow.svc:2222"};
  config.cluster.jobs["worker"] = {"mnist-worker-0.kubeflow.svc:2222",
                                   "mnist-worker-1.kubeflow.svc:2222"};
  config.task = {"worker", 1};
  config.environment = "cloud";
  return config;
}

// The message of a parse that must fail.
std::string ParseError(const std::string& json) {
  StatusOr<TfConfig> parsed = ParseTfConfig(json);
  EXPECT_FALSE(parsed.ok()) << json;
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), Status::Code::kInvalidArgument);
  return parsed.status().message();
}

TfConfig ParseOk(const std::string& json) {
  StatusOr<TfConfig> parsed = ParseTfConfig(json);
  EXPECT_TRUE(parsed.ok()) << json << " -> " << parsed.status().ToString();
  return parsed.ok() ? *parsed : TfConfig{};
}

// ---- FormatTfConfig ----

TEST(FormatTfConfig, WritesTheOperatorsBytes) {
  EXPECT_EQ(FormatTfConfig(MnistWorker1()), kMnistWorker1);
}

TEST(FormatTfConfig, SortsJobsIncludingEvaluatorAndMaster) {
  TfConfig config;
  config.cluster.jobs["worker"] = {"w:1"};
  config.cluster.jobs["evaluator"] = {"e:1"};
  config.cluster.jobs["master"] = {"m:1"};
  config.cluster.jobs["ps"] = {"p:1"};
  config.task = {"evaluator", 0};
  config.environment = "cloud";
  EXPECT_EQ(FormatTfConfig(config),
            R"({"cluster":{"evaluator":["e:1"],"master":["m:1"],"ps":["p:1"],"worker":["w:1"]},)"
            R"("task":{"type":"evaluator","index":0},"environment":"cloud"})");
}

TEST(FormatTfConfig, WritesAnEmptyJobAsAnEmptyList) {
  TfConfig config;
  config.cluster.jobs["ps"] = {};
  config.cluster.jobs["worker"] = {"w:1", "w:2"};
  config.task = {"worker", 0};
  config.environment = "cloud";
  EXPECT_EQ(FormatTfConfig(config), R"({"cluster":{"ps":[],"worker":["w:1","w:2"]},)"
                                    R"("task":{"type":"worker","index":0},"environment":"cloud"})");
}

TEST(FormatTfConfig, LeavesOutWhatIsNotSet) {
  EXPECT_EQ(FormatTfConfig(TfConfig{}), R"({"cluster":{}})");
  TfConfig config;
  config.cluster.jobs["worker"] = {"w:1"};
  config.task = {"worker", 0};
  config.rpc_layer = "grpc";
  EXPECT_EQ(FormatTfConfig(config),
            R"({"cluster":{"worker":["w:1"]},"task":{"type":"worker","index":0},)"
            R"("rpc_layer":"grpc"})");
}

TEST(FormatTfConfig, EscapesStringsAsGoDoes) {
  TfConfig config;
  config.cluster.jobs["a<b>&\"\\"] = {};
  config.environment = std::string("\t\n\r\b\f\x01\x7f") + "\xe2\x80\xa8" + "\xc3\xa9" + "\xff";
  EXPECT_EQ(FormatTfConfig(config), R"({"cluster":{"a\u003cb\u003e\u0026\"\\":[]},)"
                                    R"("environment":"\t\n\r\b\f\u0001)"
                                    "\x7f"
                                    R"(\u2028)"
                                    "\xc3\xa9"
                                    R"(\ufffd"})");
}

TEST(FormatTfConfig, SparseWorkerSeesItselfAndEveryPs) {
  TfConfig config;
  config.sparse = true;
  config.sparse_workers[1] = "w1:2222";
  config.sparse_ps = {"p0:2222", "p1:2222"};
  config.task = {"worker", 1};
  EXPECT_EQ(FormatTfConfig(config),
            R"({"sparseCluster":{"worker":{"1":"w1:2222"},"ps":["p0:2222","p1:2222"]},)"
            R"("task":{"type":"worker","index":1}})");
}

TEST(FormatTfConfig, SparseWorkerWithoutPsWritesNullAsTheOperatorDoes) {
  TfConfig config;
  config.sparse = true;
  config.sparse_workers[0] = "w0:2222";
  config.task = {"worker", 0};
  EXPECT_EQ(FormatTfConfig(config), R"({"sparseCluster":{"worker":{"0":"w0:2222"},"ps":null},)"
                                    R"("task":{"type":"worker","index":0}})");
}

TEST(FormatTfConfig, SparseChiefSeesNobody) {
  TfConfig config;
  config.sparse = true;
  config.task = {"chief", 0};
  EXPECT_EQ(FormatTfConfig(config),
            R"({"sparseCluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}})");
}

TEST(FormatTfConfig, SparseWorkersAreInGoKeyOrder) {
  TfConfig config;
  config.sparse = true;
  config.sparse_workers = {{2, "a:1"}, {10, "b:1"}};
  EXPECT_EQ(FormatTfConfig(config),
            R"({"sparseCluster":{"worker":{"10":"b:1","2":"a:1"},"ps":[]}})");
}

// ---- ParseTfConfig: what TensorFlow accepts ----

TEST(ParseTfConfig, ReadsTheOperatorsOutput) { EXPECT_EQ(ParseOk(kMnistWorker1), MnistWorker1()); }

TEST(ParseTfConfig, RoundTripsTheOperatorsOutput) {
  EXPECT_EQ(FormatTfConfig(ParseOk(kMnistWorker1)), kMnistWorker1);
}

TEST(ParseTfConfig, AcceptsWhitespaceAndAnyKeyOrder) {
  TfConfig config = ParseOk(R"( { "environment" : "cloud",
      "task": {"index": 1, "type": "worker"},
      "cluster": {"worker": ["mnist-worker-0.kubeflow.svc:2222",
                             "mnist-worker-1.kubeflow.svc:2222"],
                  "ps": ["mnist-ps-0.kubeflow.svc:2222", "mnist-ps-1.kubeflow.svc:2222"],
                  "chief": ["mnist-chief-0.kubeflow.svc:2222"]} } )");
  EXPECT_EQ(config, MnistWorker1());
}

TEST(ParseTfConfig, AcceptsTheDictFormOfAJob) {
  TfConfig config =
      ParseOk(R"({"cluster":{"worker":{"1":"b:2","0":"a:1"}},"task":{"type":"worker","index":1}})");
  EXPECT_EQ(config.cluster.jobs.at("worker"), (std::vector<std::string>{"a:1", "b:2"}));
}

TEST(ParseTfConfig, AcceptsAnIndexWrittenAsAString) {
  TfConfig config =
      ParseOk(R"({"cluster":{"worker":["a:1","b:1"]},"task":{"type":"worker","index":"1"}})");
  EXPECT_EQ(config.task, (TaskId{"worker", 1}));
  config = ParseOk(R"({"cluster":{"worker":["a:1","b:1"]},"task":{"type":"worker","index":1.0}})");
  EXPECT_EQ(config.task, (TaskId{"worker", 1}));
}

TEST(ParseTfConfig, ReadsRpcLayerAndEnvironment) {
  TfConfig config = ParseOk(R"({"cluster":{"worker":["a:1"]},"task":{"type":"worker","index":0},)"
                            R"("rpc_layer":"grpc+verbs","environment":"google"})");
  EXPECT_EQ(config.rpc_layer, "grpc+verbs");
  EXPECT_EQ(config.environment, "google");
  config = ParseOk(R"({"rpc_layer":null,"environment":null})");
  EXPECT_EQ(config.rpc_layer, "");
  EXPECT_EQ(config.environment, "");
}

TEST(ParseTfConfig, IgnoresKeysCohortDoesNotUse) {
  TfConfig config = ParseOk(
      R"({"cluster":{"worker":["a:1"]},"task":{"type":"worker","index":0,"trial":"3",)"
      R"("job":{"args":[[[1]]]}},"session_master":"grpc://x:1","model_dir":"/m","service":{}})");
  EXPECT_EQ(config.task, (TaskId{"worker", 0}));
}

TEST(ParseTfConfig, AnEmptyObjectIsASingleProcess) {
  TfConfig config = ParseOk("{}");
  EXPECT_TRUE(config.cluster.jobs.empty());
  EXPECT_TRUE(config.task.type.empty());
  EXPECT_TRUE(IsChief(config));
}

TEST(ParseTfConfig, AClusterNeedsNoTask) {
  TfConfig config = ParseOk(R"({"cluster":{"worker":["a:1","b:1"]}})");
  EXPECT_EQ(config.cluster.NumTasks("worker"), 2);
  EXPECT_TRUE(config.task.type.empty());
  EXPECT_EQ(ParseOk(R"({"cluster":{"worker":["a:1"]},"task":{}})").task, TaskId{});
}

TEST(ParseTfConfig, ATaskWithoutClusterIsNotChecked) {
  // TF2's parameter-server tutorial gives a side-car evaluator only its task.
  EXPECT_EQ(ParseOk(R"({"task":{"type":"evaluator","index":0}})").task, (TaskId{"evaluator", 0}));
  // Estimator's local mode: the index defaults to 0.
  EXPECT_EQ(ParseOk(R"({"task":{"type":"worker"}})").task, (TaskId{"worker", 0}));
}

TEST(ParseTfConfig, AnEvaluatorMayStandOutsideTheCluster) {
  TfConfig config = ParseOk(
      R"({"cluster":{"chief":["c:1"],"worker":["w:1"]},"task":{"type":"evaluator","index":0}})");
  EXPECT_EQ(config.task, (TaskId{"evaluator", 0}));
  EXPECT_FALSE(config.cluster.jobs.count("evaluator"));
}

TEST(ParseTfConfig, AcceptsEndpointShapes) {
  TfConfig config = ParseOk(R"({"cluster":{"worker":["[::1]:2222","10.0.0.1:1","localhost:65535",)"
                            R"("[fe80::1:2]:80","a_b-c.d:2222"]}})");
  EXPECT_EQ(config.cluster.NumTasks("worker"), 5);
}

TEST(ParseTfConfig, AcceptsUnknownJobNames) {
  TfConfig config = ParseOk(
      R"({"cluster":{"custom":["x:1"],"worker":["w:1"]},"task":{"type":"custom","index":0}})");
  EXPECT_EQ(config.task, (TaskId{"custom", 0}));
}

TEST(ParseTfConfig, ReadsTheSparseForm) {
  TfConfig config =
      ParseOk(R"({"sparseCluster":{"worker":{"1":"w1:2222"},"ps":["p0:2222","p1:2222"]},)"
              R"("task":{"type":"worker","index":1}})");
  EXPECT_TRUE(config.sparse);
  EXPECT_TRUE(config.cluster.jobs.empty());
  EXPECT_EQ(config.sparse_workers, (std::map<int, std::string>{{1, "w1:2222"}}));
  EXPECT_EQ(config.sparse_ps, (std::vector<std::string>{"p0:2222", "p1:2222"}));
  config = ParseOk(
      R"({"sparseCluster":{"worker":{"0":"w0:2222"},"ps":null},"task":{"type":"worker","index":0}})");
  EXPECT_TRUE(config.sparse_ps.empty());
  // A ps sees only itself, whatever its index.
  config =
      ParseOk(R"({"sparseCluster":{"worker":{},"ps":["p1:2222"]},"task":{"type":"ps","index":1}})");
  EXPECT_EQ(config.task, (TaskId{"ps", 1}));
}

TEST(ParseTfConfig, SparseFormRoundTrips) {
  for (
      const char* text :
      {R"({"sparseCluster":{"worker":{"1":"w1:2222"},"ps":["p0:2222"]},"task":{"type":"worker","index":1}})",
       R"({"sparseCluster":{"worker":{"0":"w0:2222"},"ps":null},"task":{"type":"worker","index":0}})",
       R"({"sparseCluster":{"worker":{},"ps":["p1:2222"]},"task":{"type":"ps","index":1}})",
       R"({"sparseCluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}})"}) {
    EXPECT_EQ(FormatTfConfig(ParseOk(text)), text);
  }
}

// ---- ParseTfConfig: what it refuses, and how it says so ----

TEST(ParseTfConfigErrors, InvalidJsonGivesTheOffset) {
  EXPECT_EQ(ParseError(R"({"cluster":{"worker":["a:1",]}})"),
            "TF_CONFIG: invalid JSON at byte 29: parse error at line 1, column 29: syntax error "
            "while parsing value - unexpected ']'; expected '[', '{', or a literal");
  EXPECT_EQ(ParseError(""), "TF_CONFIG is set but empty; leave it unset for a single process");
  EXPECT_EQ(ParseError("  \n"), "TF_CONFIG is set but empty; leave it unset for a single process");
}

TEST(ParseTfConfigErrors, TopLevelMustBeAnObject) {
  EXPECT_EQ(ParseError("[1,2]"), "TF_CONFIG: expected a JSON object, got [1,2]");
  EXPECT_EQ(ParseError("null"), "TF_CONFIG: expected a JSON object, got null");
}

TEST(ParseTfConfigErrors, EndpointsMustBeStrings) {
  EXPECT_EQ(ParseError(R"({"cluster":{"worker":["a:1",42]}})"),
            "TF_CONFIG: cluster.worker[1]: expected a string \"host:port\", got 42");
  EXPECT_EQ(ParseError(R"({"cluster":{"worker":{"0":null}}})"),
            "TF_CONFIG: cluster.worker[\"0\"]: expected a string \"host:port\", got null");
}

TEST(ParseTfConfigErrors, EndpointsMustBeHostAndPort) {
  EXPECT_EQ(ParseError(R"({"cluster":{"worker":["localhost"]}})"),
            "TF_CONFIG: cluster.worker[0]: \"localhost\" is not \"host:port\": the port is "
            "missing");
  EXPECT_EQ(ParseError(R"({"cluster":{"ps":["h:0"]}})"),
            "TF_CONFIG: cluster.ps[0]: \"h:0\" is not \"host:port\": port 0 is out of range "
            "1-65535");
  EXPECT_EQ(ParseError(R"({"cluster":{"ps":["h:65536"]}})"),
            "TF_CONFIG: cluster.ps[0]: \"h:65536\" is not \"host:port\": port 65536 is out of "
            "range 1-65535");
  EXPECT_EQ(ParseError(R"({"cluster":{"ps":["h:http"]}})"),
            "TF_CONFIG: cluster.ps[0]: \"h:http\" is not \"host:port\": port \"http\" is not a "
            "number");
  EXPECT_EQ(ParseError(R"({"cluster":{"ps":[":2222"]}})"),
            "TF_CONFIG: cluster.ps[0]: \":2222\" is not \"host:port\": the host is missing");
  EXPECT_EQ(ParseError(R"({"cluster":{"ps":["::1:2222"]}})"),
            "TF_CONFIG: cluster.ps[0]: \"::1:2222\" is not \"host:port\": an IPv6 host needs "
            "brackets, as in [::1]:2222");
  EXPECT_EQ(ParseError(R"({"cluster":{"ps":["[::1]"]}})"),
            "TF_CONFIG: cluster.ps[0]: \"[::1]\" is not \"host:port\": the port is missing");
  EXPECT_EQ(ParseError(R"({"cluster":{"ps":["[::1:2222"]}})"),
            "TF_CONFIG: cluster.ps[0]: \"[::1:2222\" is not \"host:port\": the IPv6 host has no "
            "closing ']'");
  EXPECT_EQ(ParseError(R"({"cluster":{"ps":["grpc://h:2222"]}})"),
            "TF_CONFIG: cluster.ps[0]: \"grpc://h:2222\" is not \"host:port\": write it without "
            "the \"grpc://\" scheme");
  EXPECT_EQ(ParseError(R"({"cluster":{"ps":["h/x:2222"]}})"),
            "TF_CONFIG: cluster.ps[0]: \"h/x:2222\" is not \"host:port\": the host has \"/\", "
            "which no host name has");
  EXPECT_EQ(ParseError(R"({"cluster":{"ps":["h w:2222"]}})"),
            "TF_CONFIG: cluster.ps[0]: \"h w:2222\" is not \"host:port\": the host has \" \", "
            "which no host name has");
}

TEST(ParseTfConfigErrors, ClusterShape) {
  EXPECT_EQ(ParseError(R"({"cluster":["a:1"]})"),
            "TF_CONFIG: cluster: expected an object mapping task type to \"host:port\" list, got "
            "[\"a:1\"]");
  EXPECT_EQ(ParseError(R"({"cluster":null})"),
            "TF_CONFIG: cluster: expected an object mapping task type to \"host:port\" list, got "
            "null");
  EXPECT_EQ(ParseError(R"({"cluster":{"worker":"a:1"}})"),
            "TF_CONFIG: cluster.worker: expected a list of \"host:port\", got \"a:1\"");
  EXPECT_EQ(ParseError(R"({"cluster":{"":["a:1"]}})"),
            "TF_CONFIG: cluster: a task type is the empty string");
  EXPECT_EQ(ParseError(R"({"cluster":{"my job":[1]}})"),
            "TF_CONFIG: cluster[\"my job\"][0]: expected a string \"host:port\", got 1");
}

TEST(ParseTfConfigErrors, DictFormNeedsEveryIndex) {
  EXPECT_EQ(ParseError(R"({"cluster":{"worker":{"0":"a:1","2":"c:1"}}})"),
            "TF_CONFIG: cluster.worker: task 1 is missing; Cohort needs every index from 0 up (a "
            "sparse cluster belongs in \"sparseCluster\")");
  EXPECT_EQ(ParseError(R"({"cluster":{"worker":{"x":"a:1"}}})"),
            "TF_CONFIG: cluster.worker.x: expected a task index (decimal digits) as key, got "
            "\"x\"");
  EXPECT_EQ(ParseError(R"({"cluster":{"worker":{"0":"a:1","00":"b:1"}}})"),
            "TF_CONFIG: cluster.worker: task index 0 is written twice");
}

TEST(ParseTfConfigErrors, RolesThatMayAppearOnce) {
  EXPECT_EQ(ParseError(R"({"cluster":{"chief":["a:1","b:1"]}})"),
            "TF_CONFIG: cluster.chief: 2 tasks; there can be at most one chief");
  EXPECT_EQ(ParseError(R"({"cluster":{"master":["a:1","b:1"]}})"),
            "TF_CONFIG: cluster.master: 2 tasks; there can be at most one master");
  EXPECT_EQ(ParseError(R"({"cluster":{"evaluator":["a:1","b:1"]}})"),
            "TF_CONFIG: cluster.evaluator: 2 tasks; there can be at most one evaluator");
  EXPECT_EQ(ParseError(R"({"cluster":{"chief":["a:1"],"master":["b:1"]}})"),
            "TF_CONFIG: cluster has both chief and master; they are two names for one role");
}

TEST(ParseTfConfigErrors, TaskTypeMustBeInTheCluster) {
  EXPECT_EQ(ParseError(R"({"cluster":{"chief":["c:1"],"worker":["w:1"]},)"
                       R"("task":{"type":"wrker","index":0}})"),
            "TF_CONFIG: task.type \"wrker\" is not in cluster (chief, worker)");
}

TEST(ParseTfConfigErrors, TaskIndexMustBeInRange) {
  EXPECT_EQ(
      ParseError(R"({"cluster":{"worker":["a:1","b:1"]},"task":{"type":"worker","index":3}})"),
      "TF_CONFIG: task.index 3 is out of range: cluster.worker has 2 tasks");
  EXPECT_EQ(ParseError(R"({"cluster":{"chief":["a:1"]},"task":{"type":"chief","index":1}})"),
            "TF_CONFIG: task.index 1 is out of range: cluster.chief has 1 task");
  EXPECT_EQ(
      ParseError(R"({"cluster":{"evaluator":["e:1"]},"task":{"type":"evaluator","index":1}})"),
      "TF_CONFIG: task.index 1 is out of range: cluster.evaluator has 1 task");
  EXPECT_EQ(ParseError(R"({"cluster":{"worker":["a:1"]},"task":{"type":"worker","index":-1}})"),
            "TF_CONFIG: task.index -1 is negative");
  EXPECT_EQ(ParseError(R"({"cluster":{"worker":["a:1"]},"task":{"type":"worker","index":"-2"}})"),
            "TF_CONFIG: task.index -2 is negative");
}

TEST(ParseTfConfigErrors, TaskShape) {
  const std::string cluster = R"({"cluster":{"worker":["a:1"]},)";
  EXPECT_EQ(ParseError(cluster + R"("task":"worker:0"})"),
            "TF_CONFIG: task: expected an object {\"type\": ..., \"index\": ...}, got "
            "\"worker:0\"");
  EXPECT_EQ(ParseError(cluster + R"("task":null})"),
            "TF_CONFIG: task: expected an object {\"type\": ..., \"index\": ...}, got null");
  EXPECT_EQ(ParseError(cluster + R"("task":{"type":"worker"}})"),
            "TF_CONFIG: task.index is missing");
  EXPECT_EQ(ParseError(cluster + R"("task":{"index":0}})"), "TF_CONFIG: task.type is missing");
  EXPECT_EQ(ParseError(cluster + R"("task":{"type":"","index":0}})"),
            "TF_CONFIG: task.type is empty");
  EXPECT_EQ(ParseError(cluster + R"("task":{"type":1,"index":0}})"),
            "TF_CONFIG: task.type: expected a string, got 1");
  EXPECT_EQ(ParseError(cluster + R"("task":{"type":"worker","index":0.5}})"),
            "TF_CONFIG: task.index: expected an integer, got 0.5");
  EXPECT_EQ(ParseError(cluster + R"("task":{"type":"worker","index":true}})"),
            "TF_CONFIG: task.index: expected an integer, got true");
  EXPECT_EQ(ParseError(cluster + R"("task":{"type":"worker","index":"one"}})"),
            "TF_CONFIG: task.index: expected an integer, got \"one\"");
  EXPECT_EQ(ParseError(cluster + R"("task":{"type":"worker","index":4294967296}})"),
            "TF_CONFIG: task.index 4294967296 is too large");
  EXPECT_EQ(ParseError(cluster + R"("task":{"type":"worker","index":"99999999999"}})"),
            "TF_CONFIG: task.index \"99999999999\" is too large");
}

TEST(ParseTfConfigErrors, StringsMustBeStrings) {
  EXPECT_EQ(ParseError(R"({"rpc_layer":1})"), "TF_CONFIG: rpc_layer: expected a string, got 1");
  EXPECT_EQ(ParseError(R"({"environment":["cloud"]})"),
            "TF_CONFIG: environment: expected a string, got [\"cloud\"]");
}

TEST(ParseTfConfigErrors, SparseShape) {
  EXPECT_EQ(ParseError(R"({"cluster":{},"sparseCluster":{}})"),
            "TF_CONFIG: has both \"cluster\" and \"sparseCluster\"; write one");
  EXPECT_EQ(ParseError(R"({"sparseCluster":{"chief":["c:1"]}})"),
            "TF_CONFIG: sparseCluster.chief: a sparse cluster lists only \"worker\" and \"ps\"");
  EXPECT_EQ(ParseError(R"({"sparseCluster":{"worker":["w:1"]}})"),
            "TF_CONFIG: sparseCluster.worker: expected an object mapping task index to "
            "\"host:port\", got [\"w:1\"]");
  EXPECT_EQ(ParseError(R"({"sparseCluster":{"ps":[5]}})"),
            "TF_CONFIG: sparseCluster.ps[0]: expected a string \"host:port\", got 5");
  EXPECT_EQ(ParseError(R"({"sparseCluster":{"worker":{"1":"w:1"}},"task":{"type":"worker"}})"),
            "TF_CONFIG: task.index is missing");
  EXPECT_EQ(ParseError(R"({"sparseCluster":{"worker":{"1":"w:1"}},)"
                       R"("task":{"type":"worker","index":2}})"),
            "TF_CONFIG: task worker:2 is not in sparseCluster.worker");
}

TEST(ParseTfConfigErrors, LongValuesAreShortenedInMessages) {
  EXPECT_EQ(ParseError(R"({"rpc_layer":[1111111111,2222222222,3333333333,4444444444]})"),
            "TF_CONFIG: rpc_layer: expected a string, got "
            "[1111111111,2222222222,3333333333,444444...");
}

TEST(ParseTfConfigErrors, ShorteningKeepsWholeCharacters) {
  std::string e_acute_20;
  for (int i = 0; i < 20; ++i) e_acute_20 += "\xc3\xa9";
  std::string e_acute_18 = e_acute_20.substr(0, 36);
  EXPECT_EQ(ParseError(R"({"rpc_layer":["a)" + e_acute_20 + R"("]})"),
            "TF_CONFIG: rpc_layer: expected a string, got [\"a" + e_acute_18 + "...");
}

TEST(ParseTfConfigErrors, RefusesDeepNestingBeforeParsing) {
  std::string deep = R"({"x":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(ParseError(deep), "TF_CONFIG: JSON nested deeper than 64 levels at byte 68");
  // Brackets inside strings do not count.
  std::string quoted = R"({"x":")" + std::string(1000, '[') + R"(\"")" + "}";
  ParseOk(quoted);
}

TEST(ParseTfConfigErrors, RefusesHugeInput) {
  std::string huge = R"({"x":")" + std::string(2 << 20, 'a') + R"("})";
  EXPECT_EQ(ParseError(huge),
            "TF_CONFIG: 2097160 bytes is more than the 1048576 a TF_CONFIG may have");
}

TEST(ParseTfConfigErrors, NumbersTooLargeForTheLibrary) {
  EXPECT_EQ(ParseError(R"({"x":1e999})").rfind("TF_CONFIG: invalid JSON", 0), 0u);
}

// ---- TfConfigFromEnvironment ----

TEST(TfConfigFromEnvironment, AbsentMeansASingleProcess) {
  ::unsetenv("TF_CONFIG");
  StatusOr<TfConfig> config = TfConfigFromEnvironment();
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(*config, TfConfig{});
  EXPECT_TRUE(IsChief(*config));
}

TEST(TfConfigFromEnvironment, ReadsTheVariable) {
  ::setenv("TF_CONFIG", kMnistWorker1, 1);
  StatusOr<TfConfig> config = TfConfigFromEnvironment();
  ::unsetenv("TF_CONFIG");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(*config, MnistWorker1());
}

TEST(TfConfigFromEnvironment, SetButEmptyIsAnError) {
  ::setenv("TF_CONFIG", "", 1);
  StatusOr<TfConfig> config = TfConfigFromEnvironment();
  ::unsetenv("TF_CONFIG");
  EXPECT_FALSE(config.ok());
}

// ---- Roles ----

ClusterSpec Cluster(std::map<std::string, int> counts) {
  ClusterSpec cluster;
  for (const auto& [type, count] : counts) {
    for (int i = 0; i < count; ++i) {
      cluster.jobs[type].push_back(type + std::to_string(i) + ":2222");
    }
  }
  return cluster;
}

TEST(ChiefTask, ChiefThenMasterThenWorkerZero) {
  EXPECT_EQ(ChiefTask(Cluster({{"chief", 1}, {"worker", 2}, {"ps", 1}})), (TaskId{"chief", 0}));
  EXPECT_EQ(ChiefTask(Cluster({{"master", 1}, {"worker", 2}})), (TaskId{"master", 0}));
  EXPECT_EQ(ChiefTask(Cluster({{"worker", 3}, {"ps", 2}})), (TaskId{"worker", 0}));
  EXPECT_EQ(ChiefTask(Cluster({{"ps", 2}})), TaskId{});
  EXPECT_EQ(ChiefTask(ClusterSpec{}), TaskId{});
}

TfConfig ConfigFor(ClusterSpec cluster, TaskId task) {
  TfConfig config;
  config.cluster = std::move(cluster);
  config.task = std::move(task);
  return config;
}

TEST(IsChief, FollowsMultiWorkerUtil) {
  const ClusterSpec with_chief = Cluster({{"chief", 1}, {"worker", 2}, {"ps", 1}});
  EXPECT_TRUE(IsChief(ConfigFor(with_chief, {"chief", 0})));
  EXPECT_FALSE(IsChief(ConfigFor(with_chief, {"worker", 0})));
  EXPECT_FALSE(IsChief(ConfigFor(with_chief, {"ps", 0})));
  const ClusterSpec workers_only = Cluster({{"worker", 2}});
  EXPECT_TRUE(IsChief(ConfigFor(workers_only, {"worker", 0})));
  EXPECT_FALSE(IsChief(ConfigFor(workers_only, {"worker", 1})));
  // Estimator's legacy master plays the chief; worker 0 then does not.
  const ClusterSpec with_master = Cluster({{"master", 1}, {"worker", 2}});
  EXPECT_TRUE(IsChief(ConfigFor(with_master, {"master", 0})));
  EXPECT_FALSE(IsChief(ConfigFor(with_master, {"worker", 0})));
  // The evaluator is the chief of its own one-task cluster.
  EXPECT_TRUE(IsChief(ConfigFor(with_chief, {"evaluator", 0})));
  // A single process leads itself.
  EXPECT_TRUE(IsChief(ConfigFor(ClusterSpec{}, {"worker", 0})));
}

TEST(IsChief, SparseFormOnlyTheChief) {
  TfConfig config;
  config.sparse = true;
  config.task = {"chief", 0};
  EXPECT_TRUE(IsChief(config));
  config.task = {"worker", 0};
  config.sparse_workers[0] = "w0:1";
  EXPECT_FALSE(IsChief(config));
}

TEST(WorkerTasks, ChiefFirstThenWorkersByIndex) {
  const ClusterSpec cluster = Cluster({{"chief", 1}, {"worker", 2}, {"ps", 2}, {"evaluator", 1}});
  EXPECT_EQ(WorkerTasks(cluster),
            (std::vector<TaskId>{{"chief", 0}, {"worker", 0}, {"worker", 1}}));
  EXPECT_EQ(NumWorkers(cluster), 3);
  EXPECT_EQ(WorkerRank(cluster, {"chief", 0}), 0);
  EXPECT_EQ(WorkerRank(cluster, {"worker", 1}), 2);
  EXPECT_EQ(WorkerRank(cluster, {"ps", 0}), std::nullopt);
  EXPECT_EQ(WorkerRank(cluster, {"evaluator", 0}), std::nullopt);
  EXPECT_EQ(NumWorkers(ClusterSpec{}), 0);
}

}  // namespace
}  // namespace cohort::cluster
