// The pods, services and PodGroups of kube/objects, field by field against what Kubeflow's
// training operator creates: names, labels, the controller reference, the template copied with
// its restart policy mapped, TF_CONFIG last in the tensorflow container, Cohort's additions
// (COHORT_TERMINATION_MESSAGE_PATH, COHORT_JOB_NAME, then COHORT_JOB_SECRET from the job's Secret,
// just before it; the Secret itself), headless services, and gang scheduling.
// Expected values are written out here, not produced by the code under test.
#include "kube/objects/objects.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "job/spec_parser.h"
#include "job/yaml_document.h"

namespace cohort::kube {
namespace {

using nlohmann::json;

const std::string kSourceDir = std::string(COHORT_TEST_DATA_DIR) + "/../..";

job::Job LoadFile(const std::string& path) {
  StatusOr<job::Job> job = job::LoadJobFile(path);
  EXPECT_TRUE(job.ok()) << job.status().message();
  return job.ok() ? *job : job::Job();
}

job::Job LoadText(const std::string& yaml) {
  StatusOr<job::Job> job = job::LoadJob(yaml, "test.yaml");
  EXPECT_TRUE(job.ok()) << job.status().message();
  return job.ok() ? *job : job::Job();
}

Owner OwnerOf(const job::Job& job, const std::string& uid = "0f5c-uid") {
  Owner owner;
  owner.name = job.metadata.name;
  owner.uid = uid;
  return owner;
}

json Pod(const job::Job& job, const std::string& type, int index, const ObjectOptions& options = {},
         const std::string& uid = "0f5c-uid") {
  StatusOr<json> pod = BuildPod(job, OwnerOf(job, uid), type, index, options);
  EXPECT_TRUE(pod.ok()) << pod.status().message();
  return pod.ok() ? *pod : json();
}

json Service(const job::Job& job, const std::string& type, int index) {
  StatusOr<json> service = BuildService(job, OwnerOf(job), type, index, {});
  EXPECT_TRUE(service.ok()) << service.status().message();
  return service.ok() ? *service : json();
}

const json& TensorflowContainer(const json& pod) {
  for (const json& container : pod["spec"]["containers"]) {
    if (container["name"] == "tensorflow") return container;
  }
  static const json none;
  ADD_FAILURE() << "no tensorflow container in " << pod.dump();
  return none;
}

// The value of the LAST env var of the tensorflow container, which must be TF_CONFIG.
std::string LastTfConfig(const json& pod) {
  const json& env = TensorflowContainer(pod)["env"];
  EXPECT_TRUE(env.is_array() && !env.empty()) << pod.dump();
  if (!env.is_array() || env.empty()) return "";
  EXPECT_EQ(env.back()["name"], "TF_CONFIG");
  EXPECT_EQ(env.back().size(), 2u) << "name and value only: " << env.back().dump();
  return env.back().value("value", "");
}

bool HasEnv(const json& container, const std::string& name) {
  if (!container.contains("env")) return false;
  for (const json& variable : container["env"]) {
    if (variable["name"] == name) return true;
  }
  return false;
}

// COHORT_JOB_SECRET as every replica of the TFJob `job` reads it: from the job's Secret.
json JobSecretVariable(const std::string& job) {
  return {{"name", "COHORT_JOB_SECRET"},
          {"valueFrom",
           {{"secretKeyRef", {{"name", job + "-tfjob-secret"}, {"key", "COHORT_JOB_SECRET"}}}}}};
}

const json kOwnerReference = {{"apiVersion", "kubeflow.org/v1"},
                              {"kind", "TFJob"},
                              {"name", "dist-mnist-for-e2e-test"},
                              {"uid", "0f5c-uid"},
                              {"controller", true},
                              {"blockOwnerDeletion", true}};

// ---- Kubeflow's dist-mnist example (2 PS, 4 workers, restartPolicy Never) ----

class DistMnistTest : public ::testing::Test {
 protected:
  job::Job job_ = LoadFile(std::string(COHORT_TEST_DATA_DIR) + "/specs/kubeflow/dist-mnist.yaml");
  const std::string ps_hosts_ =
      R"(["dist-mnist-for-e2e-test-ps-0.default.svc:2222","dist-mnist-for-e2e-test-ps-1.default.svc:2222"])";
  const std::string worker_hosts_ = R"(["dist-mnist-for-e2e-test-worker-0.default.svc:2222",)"
                                    R"("dist-mnist-for-e2e-test-worker-1.default.svc:2222",)"
                                    R"("dist-mnist-for-e2e-test-worker-2.default.svc:2222",)"
                                    R"("dist-mnist-for-e2e-test-worker-3.default.svc:2222"])";
};

TEST_F(DistMnistTest, WorkerPodIsTheOperatorsPod) {
  json pod = Pod(job_, "Worker", 1);
  EXPECT_EQ(pod["apiVersion"], "v1");
  EXPECT_EQ(pod["kind"], "Pod");
  EXPECT_EQ(pod["metadata"]["name"], "dist-mnist-for-e2e-test-worker-1");
  EXPECT_FALSE(pod["metadata"].contains("namespace")) << "the namespace is in the request path";
  EXPECT_EQ(pod["metadata"]["labels"],
            json({{"training.kubeflow.org/operator-name", "tfjob-controller"},
                  {"training.kubeflow.org/job-name", "dist-mnist-for-e2e-test"},
                  {"training.kubeflow.org/replica-type", "worker"},
                  {"training.kubeflow.org/replica-index", "1"}}));
  EXPECT_EQ(pod["metadata"]["ownerReferences"], json::array({kOwnerReference}));
  EXPECT_FALSE(pod["metadata"].contains("annotations"));
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  EXPECT_FALSE(pod["spec"].contains("schedulerName"));
  ASSERT_EQ(pod["spec"]["containers"].size(), 1u);
  const json& container = TensorflowContainer(pod);
  EXPECT_EQ(container["image"], "kubeflow/tf-dist-mnist-test:1.0");
  ASSERT_EQ(container["ports"].size(), 1u);
  EXPECT_EQ(container["ports"][0]["name"], "tfjob-port");
  EXPECT_EQ(container["ports"][0]["containerPort"], 2222);
  ASSERT_EQ(container["env"].size(), 4u);
  EXPECT_EQ(container["env"][0],
            json({{"name", "COHORT_TERMINATION_MESSAGE_PATH"}, {"value", "/dev/termination-log"}}));
  // For $(COHORT_JOB_NAME) in args, as a local replica has it.
  EXPECT_EQ(container["env"][1],
            json({{"name", "COHORT_JOB_NAME"}, {"value", "dist-mnist-for-e2e-test"}}));
  EXPECT_EQ(container["env"][2], JobSecretVariable("dist-mnist-for-e2e-test"));
  EXPECT_EQ(LastTfConfig(pod),
            R"({"cluster":{"ps":)" + ps_hosts_ + R"(,"worker":)" + worker_hosts_ +
                R"(},"task":{"type":"worker","index":1},"environment":"cloud"})");
}

TEST_F(DistMnistTest, WorkerZeroHasTheMasterRoleAndParameterServersNever) {
  EXPECT_EQ(Pod(job_, "Worker", 0)["metadata"]["labels"]["training.kubeflow.org/job-role"],
            "master");
  for (int index : {1, 2, 3}) {
    EXPECT_FALSE(Pod(job_, "Worker", index)["metadata"]["labels"].contains(
        "training.kubeflow.org/job-role"));
  }
  json ps = Pod(job_, "PS", 0);
  EXPECT_FALSE(ps["metadata"]["labels"].contains("training.kubeflow.org/job-role"));
  EXPECT_EQ(ps["metadata"]["labels"]["training.kubeflow.org/replica-type"], "ps");
  EXPECT_EQ(LastTfConfig(Pod(job_, "PS", 1)),
            R"({"cluster":{"ps":)" + ps_hosts_ + R"(,"worker":)" + worker_hosts_ +
                R"(},"task":{"type":"ps","index":1},"environment":"cloud"})");
}

TEST_F(DistMnistTest, ServiceIsHeadlessWithTheReplicaLabelsAsSelector) {
  const json labels = {{"training.kubeflow.org/operator-name", "tfjob-controller"},
                       {"training.kubeflow.org/job-name", "dist-mnist-for-e2e-test"},
                       {"training.kubeflow.org/replica-type", "worker"},
                       {"training.kubeflow.org/replica-index", "0"}};
  const json expected = {{"apiVersion", "v1"},
                         {"kind", "Service"},
                         {"metadata",
                          {{"name", "dist-mnist-for-e2e-test-worker-0"},
                           {"labels", labels},
                           {"ownerReferences", json::array({kOwnerReference})}}},
                         {"spec",
                          {{"clusterIP", "None"},
                           {"selector", labels},
                           {"ports", json::array({{{"name", "tfjob-port"}, {"port", 2222}}})}}}};
  EXPECT_EQ(Service(job_, "Worker", 0), expected) << "no job-role, targetPort or protocol";
}

TEST_F(DistMnistTest, TheJobSecretIsAnImmutableSecretOwnedByTheJob) {
  StatusOr<json> secret = BuildJobSecret(job_, OwnerOf(job_), "c0ffee");
  ASSERT_TRUE(secret.ok()) << secret.status().message();
  const json expected = {{"apiVersion", "v1"},
                         {"kind", "Secret"},
                         {"metadata",
                          {{"name", "dist-mnist-for-e2e-test-tfjob-secret"},
                           {"labels",
                            {{"training.kubeflow.org/operator-name", "tfjob-controller"},
                             {"training.kubeflow.org/job-name", "dist-mnist-for-e2e-test"}}},
                           {"ownerReferences", json::array({kOwnerReference})}}},
                         {"type", "Opaque"},
                         {"immutable", true},
                         {"data", {{"COHORT_JOB_SECRET", "YzBmZmVl"}}}};  // base64 of "c0ffee"
  EXPECT_EQ(*secret, expected);
  EXPECT_EQ(JobSecretName(job_), "dist-mnist-for-e2e-test-tfjob-secret");
  StatusOr<json> unowned = BuildJobSecret(job_, OwnerOf(job_, ""), "c0ffee");
  ASSERT_TRUE(unowned.ok());
  EXPECT_FALSE((*unowned)["metadata"].contains("ownerReferences"));
  StatusOr<json> empty = BuildJobSecret(job_, OwnerOf(job_), "");
  ASSERT_FALSE(empty.ok()) << "an empty secret would leave the job in open mode";
  EXPECT_NE(empty.status().message().find("dist-mnist-for-e2e-test"), std::string::npos);
}

TEST_F(DistMnistTest, EveryReplicasTensorflowContainerReadsTheJobSecret) {
  for (const auto& [type, count] :
       std::vector<std::pair<std::string, int>>{{"PS", 2}, {"Worker", 4}}) {
    for (int index = 0; index < count; ++index) {
      const json pod = Pod(job_, type, index);
      const json& env = TensorflowContainer(pod)["env"];
      EXPECT_EQ(env[env.size() - 2], JobSecretVariable("dist-mnist-for-e2e-test"))
          << type << " " << index << ": " << env.dump();
    }
  }
}

TEST(JobSecretTest, AContainerThatSetsItsOwnJobSecretKeepsIt) {
  job::Job job = LoadText(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: own}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: tensorflow
              image: trainer
              env:
                - name: COHORT_JOB_SECRET
                  valueFrom: {secretKeyRef: {name: mine, key: s}}
)");
  const json pod = Pod(job, "Worker", 1);
  const json& env = TensorflowContainer(pod)["env"];
  int secrets = 0;
  for (const json& variable : env) secrets += variable["name"] == "COHORT_JOB_SECRET";
  EXPECT_EQ(secrets, 1) << env.dump();
  EXPECT_EQ(env[0]["valueFrom"]["secretKeyRef"]["name"], "mine");
}

TEST_F(DistMnistTest, AllObjectsAreTheSecretPodsThenServicesWithoutAPodGroup) {
  StatusOr<std::vector<json>> objects = BuildJobObjects(job_, OwnerOf(job_), {}, "c0ffee");
  ASSERT_TRUE(objects.ok()) << objects.status().message();
  std::vector<std::string> names;
  for (const json& object : *objects) {
    names.push_back(object["kind"].get<std::string>() + " " +
                    object["metadata"]["name"].get<std::string>());
  }
  const std::string prefix = "dist-mnist-for-e2e-test-";
  std::vector<std::string> expected = {"Secret dist-mnist-for-e2e-test-tfjob-secret"};
  for (const char* kind : {"Pod ", "Service "}) {
    for (const char* replica : {"ps-0", "ps-1", "worker-0", "worker-1", "worker-2", "worker-3"}) {
      expected.push_back(kind + prefix + replica);
    }
  }
  EXPECT_EQ(names, expected);
  StatusOr<std::optional<json>> pod_group = BuildPodGroup(job_, OwnerOf(job_), {});
  ASSERT_TRUE(pod_group.ok());
  EXPECT_FALSE(pod_group->has_value());
}

TEST_F(DistMnistTest, ClusterDomainAndNamespaceGoIntoEveryHost) {
  job_.metadata.namespace_name = "ns2";
  ObjectOptions options;
  options.cluster_domain = "tf.training.org";
  std::string tf_config = LastTfConfig(Pod(job_, "PS", 0, options));
  EXPECT_NE(tf_config.find(R"("dist-mnist-for-e2e-test-ps-0.ns2.svc.tf.training.org:2222")"),
            std::string::npos)
      << tf_config;
  EXPECT_EQ(tf_config.find(".default."), std::string::npos) << tf_config;
}

TEST_F(DistMnistTest, NoOwnerReferencesWithoutAUid) {
  json pod = Pod(job_, "Worker", 0, {}, "");
  EXPECT_FALSE(pod["metadata"].contains("ownerReferences")) << pod["metadata"].dump();
  StatusOr<json> service = BuildService(job_, OwnerOf(job_, ""), "PS", 0, {});
  ASSERT_TRUE(service.ok());
  EXPECT_FALSE((*service)["metadata"].contains("ownerReferences"));
}

TEST_F(DistMnistTest, AReplicaThatDoesNotExistIsAnErrorNamingIt) {
  StatusOr<json> pod = BuildPod(job_, OwnerOf(job_), "Worker", 4, {});
  ASSERT_FALSE(pod.ok());
  EXPECT_NE(pod.status().message().find("Worker index 4"), std::string::npos)
      << pod.status().message();
  StatusOr<json> service = BuildService(job_, OwnerOf(job_), "Chief", 0, {});
  ASSERT_FALSE(service.ok());
  EXPECT_NE(service.status().message().find("Chief"), std::string::npos);
}

// ---- The examples ----

TEST(ExamplesTest, HelloKeepsEachReplicasPolicyAndPutsTfConfigAfterTheTemplatesEnv) {
  job::Job job = LoadFile(kSourceDir + "/examples/hello/tfjob.yaml");
  json ps = Pod(job, "PS", 0);
  EXPECT_EQ(ps["spec"]["restartPolicy"], "Always");
  EXPECT_EQ(TensorflowContainer(ps)["args"], json::array({"serve"}));
  json worker = Pod(job, "Worker", 1);
  EXPECT_EQ(worker["spec"]["restartPolicy"], "OnFailure");
  const json& env = TensorflowContainer(worker)["env"];
  ASSERT_EQ(env.size(), 5u);
  EXPECT_EQ(env[0], json({{"name", "GREETING"}, {"value", "hello from a TFJob"}}));
  EXPECT_EQ(env[1]["name"], "COHORT_TERMINATION_MESSAGE_PATH");
  EXPECT_EQ(env[2], json({{"name", "COHORT_JOB_NAME"}, {"value", "hello"}}));
  EXPECT_EQ(env[3], JobSecretVariable("hello"));
  EXPECT_EQ(
      LastTfConfig(worker),
      R"({"cluster":{"ps":["hello-ps-0.default.svc:2222"],"worker":["hello-worker-0.default.svc:2222","hello-worker-1.default.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"})");
  EXPECT_EQ(Pod(job, "Worker", 0)["metadata"]["labels"]["training.kubeflow.org/job-role"],
            "master");
}

// examples/mnist/tfjob-s3.yaml: the flagship with every path in a bucket, its credentials from the
// user's Secret (examples/mnist/s3-credentials.yaml) by secretKeyRef, which reach every worker's
// pod as written, beside the job secret from the job's own Secret.
TEST(ExamplesTest, MnistOnS3ReadsItsCredentialsFromTheUsersSecret) {
  StatusOr<std::string> secret_text =
      job::ReadYamlFile(kSourceDir + "/examples/mnist/s3-credentials.yaml");
  ASSERT_TRUE(secret_text.ok()) << secret_text.status().ToString();
  StatusOr<std::vector<job::YamlDocument>> documents =
      job::ReadYamlDocuments(*secret_text, "s3-credentials.yaml");
  ASSERT_TRUE(documents.ok()) << documents.status().ToString();
  ASSERT_EQ(documents->size(), 1u);
  const json& secret = documents->front().root;
  EXPECT_EQ(secret["apiVersion"], "v1");
  EXPECT_EQ(secret["kind"], "Secret");
  const std::string secret_name = secret["metadata"]["name"];
  std::set<std::string> keys;
  for (const auto& [key, value] : secret["stringData"].items()) keys.insert(key);
  EXPECT_EQ(keys, (std::set<std::string>{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}));

  job::Job job = LoadFile(kSourceDir + "/examples/mnist/tfjob-s3.yaml");
  ASSERT_EQ(job.replica_specs.at("Worker").replicas, 3);
  for (int index = 0; index < 3; ++index) {
    const json pod = Pod(job, "Worker", index);
    const json& container = TensorflowContainer(pod);
    std::map<std::string, json> env;
    for (const json& variable : container["env"]) env[variable["name"]] = variable;
    for (const std::string key : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}) {
      ASSERT_TRUE(env.count(key)) << index << " " << key;
      EXPECT_EQ(env[key]["valueFrom"]["secretKeyRef"], json({{"name", secret_name}, {"key", key}}))
          << "the key the Secret holds, by the Secret's name";
    }
    EXPECT_EQ(env["COHORT_JOB_SECRET"], JobSecretVariable("mnist-s3"));
    EXPECT_TRUE(env["AWS_REGION"].contains("value"));
    EXPECT_TRUE(env["AWS_ENDPOINT_URL_S3"].contains("value"));
    // Every path is in it, under the job's own prefix.
    std::vector<std::string> bucket_args;
    for (const json& arg : container["args"]) {
      const std::string text = arg;
      if (text.find("s3://") != std::string::npos) bucket_args.push_back(text);
    }
    EXPECT_EQ(bucket_args,
              (std::vector<std::string>{
                  "--saved_model_path=s3://my-bucket/mnist/$(COHORT_JOB_NAME)/saved_model",
                  "--checkpoint_path=s3://my-bucket/mnist/$(COHORT_JOB_NAME)/backup",
                  "--tensorboard_dir=s3://my-bucket/mnist/$(COHORT_JOB_NAME)/logs"}))
        << container["args"].dump();
  }
}

TEST(ExamplesTest, MnistWorkersShareOneClusterOfThree) {
  job::Job job = LoadFile(kSourceDir + "/examples/mnist/tfjob.yaml");
  for (int index = 0; index < 3; ++index) {
    json pod = Pod(job, "Worker", index);
    EXPECT_EQ(pod["metadata"]["name"], "mnist-worker-" + std::to_string(index));
    EXPECT_EQ(pod["spec"]["restartPolicy"], "OnFailure");
    EXPECT_EQ(
        LastTfConfig(pod),
        R"({"cluster":{"worker":["mnist-worker-0.default.svc:2222","mnist-worker-1.default.svc:2222","mnist-worker-2.default.svc:2222"]},"task":{"type":"worker","index":)" +
            std::to_string(index) + R"(},"environment":"cloud"})");
    EXPECT_EQ(TensorflowContainer(pod)["args"][0], "--epochs=3");
  }
}

TEST(ExamplesTest, TaxiChiefHasTheMasterRoleAndTheEvaluatorStandsOutsideTheCluster) {
  job::Job job = LoadFile(kSourceDir + "/examples/taxi/tfjob.yaml");
  EXPECT_EQ(Pod(job, "Chief", 0)["metadata"]["labels"]["training.kubeflow.org/job-role"], "master");
  EXPECT_FALSE(
      Pod(job, "Worker", 0)["metadata"]["labels"].contains("training.kubeflow.org/job-role"));
  const std::string cluster =
      R"({"chief":["taxi-chief-0.default.svc:2222"],)"
      R"("ps":["taxi-ps-0.default.svc:2222","taxi-ps-1.default.svc:2222"],)"
      R"("worker":["taxi-worker-0.default.svc:2222","taxi-worker-1.default.svc:2222","taxi-worker-2.default.svc:2222"]})";
  json evaluator = Pod(job, "Evaluator", 0);
  EXPECT_EQ(evaluator["metadata"]["name"], "taxi-evaluator-0");
  EXPECT_EQ(evaluator["metadata"]["labels"]["training.kubeflow.org/replica-type"], "evaluator");
  EXPECT_EQ(LastTfConfig(evaluator),
            R"({"cluster":)" + cluster +
                R"(,"task":{"type":"evaluator","index":0},"environment":"cloud"})");
  EXPECT_EQ(
      LastTfConfig(Pod(job, "PS", 1)),
      R"({"cluster":)" + cluster + R"(,"task":{"type":"ps","index":1},"environment":"cloud"})");
  json service = Service(job, "Evaluator", 0);
  EXPECT_EQ(service["metadata"]["name"], "taxi-evaluator-0");
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
}

TEST(ExamplesTest, EvaluatorIsInTheClusterByDefault) {
  job::Job job = LoadFile(kSourceDir + "/examples/taxi/tfjob.yaml");
  job.metadata.annotations.clear();
  std::string tf_config = LastTfConfig(Pod(job, "Worker", 0));
  EXPECT_NE(tf_config.find(R"("evaluator":["taxi-evaluator-0.default.svc:2222"])"),
            std::string::npos)
      << tf_config;
}

// ---- The template ----

const char* kTemplateJob = R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: tmpl
  namespace: team
spec:
  tfReplicaSpecs:
    Chief:
      restartPolicy: ExitCode
      template:
        metadata:
          labels:
            app: mine
            training.kubeflow.org/replica-index: "7"
          annotations:
            example.com/note: kept
          finalizers: [example.com/hold]
        spec:
          restartPolicy: Always
          nodeSelector: {pool: gpu}
          initContainers:
            - name: init
              image: busybox
          containers:
            - name: sidecar
              image: envoy
            - name: tensorflow
              image: trainer
              resources:
                requests: {cpu: 500m, memory: 1Gi}
              ports:
                - name: tfjob-port
                  containerPort: 3333
                - name: metrics
                  containerPort: 9090
          volumes:
            - name: data
              emptyDir: {}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: tensorflow
              image: trainer
              resources:
                limits: {cpu: "2", nvidia.com/gpu: 1}
)";

TEST(TemplateTest, IsCopiedWholeWithOnlyTheRestartPolicyMapped) {
  job::Job job = LoadText(kTemplateJob);
  json pod = Pod(job, "Chief", 0);
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never") << "ExitCode becomes Never, over Always";
  EXPECT_EQ(pod["spec"]["nodeSelector"], json({{"pool", "gpu"}}));
  EXPECT_EQ(pod["spec"]["volumes"][0]["name"], "data");
  EXPECT_EQ(pod["spec"]["initContainers"][0]["name"], "init");
  EXPECT_FALSE(HasEnv(pod["spec"]["initContainers"][0], "TF_CONFIG"));
  EXPECT_FALSE(HasEnv(pod["spec"]["containers"][0], "TF_CONFIG")) << "sidecars get none";
  EXPECT_FALSE(HasEnv(pod["spec"]["containers"][0], "COHORT_TERMINATION_MESSAGE_PATH"));
  EXPECT_EQ(TensorflowContainer(pod)["resources"]["requests"]["memory"], "1Gi");
  EXPECT_EQ(pod["metadata"]["labels"]["app"], "mine");
  EXPECT_EQ(pod["metadata"]["labels"]["training.kubeflow.org/replica-index"], "0")
      << "the operator's labels win";
  EXPECT_EQ(pod["metadata"]["labels"]["training.kubeflow.org/job-role"], "master");
  EXPECT_EQ(pod["metadata"]["annotations"], json({{"example.com/note", "kept"}}));
  EXPECT_EQ(pod["metadata"]["finalizers"], json::array({"example.com/hold"}));
  EXPECT_EQ(Pod(job, "Worker", 0)["spec"]["restartPolicy"], "Never") << "the default";
}

TEST(TemplateTest, PortsComeFromTheTensorflowContainerOfEachType) {
  job::Job job = LoadText(kTemplateJob);
  EXPECT_EQ(
      LastTfConfig(Pod(job, "Worker", 1)),
      R"({"cluster":{"chief":["tmpl-chief-0.team.svc:3333"],"worker":["tmpl-worker-0.team.svc:2222","tmpl-worker-1.team.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"})");
  json service = Service(job, "Chief", 0);
  // The operator collects the ports through a map: their order is not part of the contract.
  std::vector<json> ports = service["spec"]["ports"].get<std::vector<json>>();
  EXPECT_THAT(ports, ::testing::UnorderedElementsAre(json({{"name", "tfjob-port"}, {"port", 3333}}),
                                                     json({{"name", "metrics"}, {"port", 9090}})));
  EXPECT_FALSE(
      Pod(job, "Worker", 0)["metadata"]["labels"].contains("training.kubeflow.org/job-role"))
      << "with a chief, worker 0 is not the master";
}

TEST(TemplateTest, OneReplicaJobGetsNoTfConfig) {
  job::Job job = LoadText(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: single}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers:
            - name: tensorflow
              image: trainer
              env: [{name: A, value: b}]
              terminationMessagePath: /tmp/last-words
)");
  json pod = Pod(job, "Worker", 0);
  // The termination-message variable, naming the container's own path, the job's name and the
  // job secret.
  EXPECT_EQ(
      TensorflowContainer(pod)["env"],
      json::array({{{"name", "A"}, {"value", "b"}},
                   {{"name", "COHORT_TERMINATION_MESSAGE_PATH"}, {"value", "/tmp/last-words"}},
                   {{"name", "COHORT_JOB_NAME"}, {"value", "single"}},
                   JobSecretVariable(job.metadata.name)}));
  EXPECT_EQ(pod["metadata"]["labels"]["training.kubeflow.org/job-role"], "master");
}

// ---- Gang scheduling ----

TEST(GangTest, VolcanoPodGroupAndPodDecorations) {
  job::Job job = LoadText(kTemplateJob);
  job.metadata.annotations["example.com/team"] = "a";
  ObjectOptions options;
  options.gang_scheduler = "volcano";
  StatusOr<std::optional<json>> group = BuildPodGroup(job, OwnerOf(job), options);
  ASSERT_TRUE(group.ok()) << group.status().message();
  ASSERT_TRUE(group->has_value());
  const json& pod_group = **group;
  EXPECT_EQ(pod_group["apiVersion"], "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ(pod_group["kind"], "PodGroup");
  EXPECT_EQ(pod_group["metadata"]["name"], "tmpl");
  EXPECT_EQ(pod_group["metadata"]["namespace"], "team");
  EXPECT_EQ(pod_group["metadata"]["annotations"], json({{"example.com/team", "a"}}));
  EXPECT_EQ(pod_group["metadata"]["ownerReferences"][0]["controller"], true);
  // Chief requests 500m + 1Gi; each worker has limits only (cpu 2, one GPU): 500m + 2 + 2.
  const json expected_spec = {
      {"minMember", 3},
      {"queue", "default"},
      {"minResources", {{"cpu", "4500m"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "2"}}}};
  EXPECT_EQ(pod_group["spec"], expected_spec);

  json pod = Pod(job, "Worker", 1, options);
  EXPECT_EQ(pod["spec"]["schedulerName"], "volcano");
  EXPECT_EQ(pod["metadata"]["annotations"],
            json({{"scheduling.k8s.io/group-name", "tmpl"}, {"volcano.sh/task-spec", "worker"}}));
}

TEST(GangTest, SchedulingPolicyOverridesTheComputedValues) {
  job::Job job = LoadText(kTemplateJob);
  job.run_policy.scheduling_policy = {{"minAvailable", 2},
                                      {"queue", "research"},
                                      {"priorityClass", "high"},
                                      {"minResources", {{"cpu", "3"}}}};
  ObjectOptions options;
  options.gang_scheduler = "volcano";
  StatusOr<std::optional<json>> group = BuildPodGroup(job, OwnerOf(job), options);
  ASSERT_TRUE(group.ok());
  EXPECT_EQ((**group)["spec"], json({{"minMember", 2},
                                     {"queue", "research"},
                                     {"priorityClassName", "high"},
                                     {"minResources", {{"cpu", "3"}}}}));
  job.run_policy.scheduling_policy = {{"minAvailable", 1}};
  group = BuildPodGroup(job, OwnerOf(job), options);
  ASSERT_TRUE(group.ok());
  EXPECT_EQ((**group)["spec"]["minResources"], json({{"cpu", "500m"}, {"memory", "1Gi"}}))
      << "only the first pod (the chief) counts";
  job.run_policy.scheduling_policy = {{"minAvailable", "two"}};
  group = BuildPodGroup(job, OwnerOf(job), options);
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.status().message().find("schedulingPolicy.minAvailable"), std::string::npos);
}

TEST(GangTest, SchedulerPluginsPodGroupAndPodLabel) {
  job::Job job = LoadText(kTemplateJob);
  job.run_policy.scheduling_policy = {{"scheduleTimeoutSeconds", 60}, {"queue", "ignored"}};
  ObjectOptions options;
  options.gang_scheduler = "scheduler-plugins-scheduler";
  StatusOr<std::optional<json>> group = BuildPodGroup(job, OwnerOf(job), options);
  ASSERT_TRUE(group.ok());
  EXPECT_EQ((**group)["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ((**group)["spec"]["minMember"], 3);
  EXPECT_EQ((**group)["spec"]["scheduleTimeoutSeconds"], 60);
  EXPECT_FALSE((**group)["spec"].contains("queue"));
  json pod = Pod(job, "Chief", 0, options);
  EXPECT_EQ(pod["spec"]["schedulerName"], "scheduler-plugins-scheduler");
  EXPECT_EQ(pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "tmpl");
  EXPECT_EQ(pod["metadata"]["annotations"], json({{"example.com/note", "kept"}}));
}

TEST(GangTest, ATemplatesOwnSchedulerIsKept) {
  job::Job job = LoadText(kTemplateJob);
  job.replica_specs["Worker"].template_spec.raw["spec"]["schedulerName"] = "mine";
  ObjectOptions options;
  options.gang_scheduler = "volcano";
  json pod = Pod(job, "Worker", 0, options);
  EXPECT_EQ(pod["spec"]["schedulerName"], "mine");
  EXPECT_EQ(pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "tmpl");
}

}  // namespace
}  // namespace cohort::kube
