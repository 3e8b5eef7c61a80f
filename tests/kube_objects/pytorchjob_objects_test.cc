// The pods, services and CRD of a PyTorchJob, field by field against what Kubeflow's training
// operator creates: the kind's environment appended to EVERY container (sidecars included, init
// containers not), Cohort's termination-message variable in the pytorch container only,
// init-pytorch after the template's own init containers on workers of a job with a Master, the
// pytorchjob-controller labels, and the pytorchjobs.kubeflow.org CRD with elasticPolicy's schema.
// Expected values are written out here, not produced by the code under test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job/pytorchjob.h"
#include "job/spec_parser.h"
#include "kube/objects/crd.h"
#include "kube/objects/objects.h"

namespace cohort::kube {
namespace {

using nlohmann::json;

constexpr const char* kJob = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: mnist
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: torch:2.3
              env:
                - name: LOGLEVEL
                  value: DEBUG
    Worker:
      replicas: 2
      restartPolicy: ExitCode
      template:
        spec:
          initContainers:
            - name: fetch-data
              image: busybox
          containers:
            - name: log-shipper
              image: fluent-bit:3
            - name: pytorch
              image: torch:2.3
)";

job::Job Load(const std::string& text) {
  StatusOr<job::Job> job = job::LoadJob(text, "test.yaml");
  EXPECT_TRUE(job.ok()) << job.status().message();
  return job.ok() ? *job : job::NewPyTorchJob();
}

json Pod(const job::Job& job, const std::string& type, int index) {
  Owner owner;
  owner.kind = "PyTorchJob";
  owner.name = job.metadata.name;
  owner.uid = "uid-1";
  StatusOr<json> pod = BuildPod(job, owner, type, index, {});
  EXPECT_TRUE(pod.ok()) << pod.status().message();
  return pod.ok() ? *pod : json();
}

json Variables(std::vector<std::pair<std::string, std::string>> pairs) {
  json env = json::array();
  for (const auto& [name, value] : pairs) env.push_back({{"name", name}, {"value", value}});
  return env;
}

// COHORT_JOB_SECRET from the job's Secret, before the kind's environment in every container.
const json kJobSecret = json::array(
    {{{"name", "COHORT_JOB_SECRET"},
      {"valueFrom",
       {{"secretKeyRef", {{"name", "mnist-pytorchjob-secret"}, {"key", "COHORT_JOB_SECRET"}}}}}}});

const json kMasterEnvironment = Variables({{"PYTHONUNBUFFERED", "1"},
                                           {"MASTER_PORT", "23456"},
                                           {"PET_MASTER_PORT", "23456"},
                                           {"MASTER_ADDR", "mnist-master-0"},
                                           {"PET_MASTER_ADDR", "mnist-master-0"},
                                           {"WORLD_SIZE", "3"},
                                           {"RANK", "0"},
                                           {"PET_NODE_RANK", "0"},
                                           {"PET_NPROC_PER_NODE", "auto"},
                                           {"PET_NNODES", "3"}});

json Concatenated(json first, const json& second) {
  for (const json& item : second) first.push_back(item);
  return first;
}

TEST(PyTorchJobPodTest, TheMasterPodHasTheOperatorsLabelsAndEnvironment) {
  json pod = Pod(Load(kJob), "Master", 0);
  EXPECT_EQ(pod["metadata"]["name"], "mnist-master-0");
  EXPECT_EQ(pod["metadata"]["labels"],
            json({{"training.kubeflow.org/operator-name", "pytorchjob-controller"},
                  {"training.kubeflow.org/job-name", "mnist"},
                  {"training.kubeflow.org/replica-type", "master"},
                  {"training.kubeflow.org/replica-index", "0"},
                  {"training.kubeflow.org/job-role", "master"}}));
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["kind"], "PyTorchJob");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "OnFailure");
  EXPECT_FALSE(pod["spec"].contains("initContainers")) << "the master waits for nobody";
  ASSERT_EQ(pod["spec"]["containers"].size(), 1u);
  const json& container = pod["spec"]["containers"][0];
  EXPECT_EQ(
      container["ports"],
      json::array({{{"name", "pytorchjob-port"}, {"containerPort", 23456}, {"protocol", "TCP"}}}));
  EXPECT_EQ(container["env"],
            Concatenated(Variables({{"LOGLEVEL", "DEBUG"},
                                    {"COHORT_TERMINATION_MESSAGE_PATH", "/dev/termination-log"},
                                    {"COHORT_JOB_NAME", "mnist"}}),
                         Concatenated(kJobSecret, kMasterEnvironment)));
}

TEST(PyTorchJobPodTest, EveryContainerOfAWorkerGetsTheEnvironmentAndInitContainersDoNot) {
  json pod = Pod(Load(kJob), "Worker", 1);
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never") << "ExitCode is the operator's own";
  EXPECT_FALSE(pod["metadata"]["labels"].contains("training.kubeflow.org/job-role"));
  const json worker_environment = Variables({{"PYTHONUNBUFFERED", "1"},
                                             {"MASTER_PORT", "23456"},
                                             {"PET_MASTER_PORT", "23456"},
                                             {"MASTER_ADDR", "mnist-master-0"},
                                             {"PET_MASTER_ADDR", "mnist-master-0"},
                                             {"WORLD_SIZE", "3"},
                                             {"RANK", "2"},
                                             {"PET_NODE_RANK", "2"},
                                             {"PET_NPROC_PER_NODE", "auto"},
                                             {"PET_NNODES", "3"}});
  const json& containers = pod["spec"]["containers"];
  ASSERT_EQ(containers.size(), 2u);
  EXPECT_EQ(containers[0]["name"], "log-shipper");
  EXPECT_EQ(containers[0]["env"], Concatenated(kJobSecret, worker_environment))
      << "a sidecar gets it too";
  EXPECT_FALSE(containers[0].contains("ports"));
  EXPECT_EQ(containers[1]["name"], "pytorch");
  EXPECT_EQ(containers[1]["env"],
            Concatenated(Variables({{"COHORT_TERMINATION_MESSAGE_PATH", "/dev/termination-log"},
                                    {"COHORT_JOB_NAME", "mnist"}}),
                         Concatenated(kJobSecret, worker_environment)));

  const json& init = pod["spec"]["initContainers"];
  ASSERT_EQ(init.size(), 2u);
  EXPECT_EQ(init[0], json({{"name", "fetch-data"}, {"image", "busybox"}}))
      << "the template's own first, untouched";
  EXPECT_EQ(init[1], json::parse(R"({
    "name": "init-pytorch",
    "image": "alpine:3.10",
    "imagePullPolicy": "IfNotPresent",
    "resources": {"limits": {"cpu": "100m", "memory": "20Mi"},
                  "requests": {"cpu": "50m", "memory": "10Mi"}},
    "command": ["sh", "-c", "err=1;for i in $(seq 100); do if nslookup mnist-master-0; then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err"]
  })"));
}

TEST(PyTorchJobPodTest, WithoutAMasterWorkerZeroHasTheRoleAndNoWorkerWaits) {
  job::Job job = Load(std::string(kJob).substr(0, std::string(kJob).find("    Master:")) +
                      std::string(kJob).substr(std::string(kJob).find("    Worker:")));
  json worker = Pod(job, "Worker", 0);
  EXPECT_EQ(worker["metadata"]["labels"]["training.kubeflow.org/job-role"], "master");
  ASSERT_EQ(worker["spec"]["initContainers"].size(), 1u);
  EXPECT_EQ(worker["spec"]["initContainers"][0]["name"], "fetch-data");
  EXPECT_EQ(worker["spec"]["containers"][1]["env"],
            Concatenated(Variables({{"COHORT_TERMINATION_MESSAGE_PATH", "/dev/termination-log"},
                                    {"COHORT_JOB_NAME", "mnist"}}),
                         Concatenated(kJobSecret, Variables({{"PYTHONUNBUFFERED", "1"},
                                                             {"PET_NPROC_PER_NODE", "auto"},
                                                             {"PET_NNODES", "2"}}))));
}

TEST(PyTorchJobPodTest, ServicesExposeThePytorchjobPort) {
  job::Job job = Load(kJob);
  StatusOr<json> service = BuildService(job, Owner{}, "Worker", 0, {});
  ASSERT_TRUE(service.ok()) << service.status().message();
  EXPECT_EQ((*service)["metadata"]["name"], "mnist-worker-0");
  EXPECT_EQ((*service)["spec"]["ports"],
            json::array({{{"name", "pytorchjob-port"}, {"port", 23456}}}));
}

// ---- The CRD ----

const json kCrd = CustomResourceDefinition(job::PyTorchJobKind());

const json& SpecSchema() {
  return kCrd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
}

TEST(PyTorchJobCrdTest, NamesAreKubeflows) {
  EXPECT_EQ(kCrd["metadata"]["name"], "pytorchjobs.kubeflow.org");
  EXPECT_EQ(kCrd["spec"]["names"], json({{"kind", "PyTorchJob"},
                                         {"listKind", "PyTorchJobList"},
                                         {"plural", "pytorchjobs"},
                                         {"singular", "pytorchjob"}}));
  EXPECT_EQ(SpecSchema()["required"], json::array({"pytorchReplicaSpecs"}));
}

TEST(PyTorchJobCrdTest, SpecFieldsHaveTheOperatorsTypes) {
  const json& properties = SpecSchema()["properties"];
  EXPECT_EQ(properties["nprocPerNode"]["type"], "string");
  const json& elastic = properties["elasticPolicy"];
  EXPECT_EQ(elastic["type"], "object");
  const json& fields = elastic["properties"];
  for (const char* name :
       {"minReplicas", "maxReplicas", "rdzvPort", "nProcPerNode", "maxRestarts"}) {
    EXPECT_EQ(fields[name]["type"], "integer") << name;
    EXPECT_EQ(fields[name]["format"], "int32") << name;
  }
  for (const char* name : {"rdzvBackend", "rdzvHost", "rdzvId"}) {
    EXPECT_EQ(fields[name]["type"], "string") << name;
  }
  EXPECT_EQ(fields["standalone"]["type"], "boolean");
  EXPECT_EQ(fields["rdzvConf"]["type"], "array");
  EXPECT_EQ(fields["rdzvConf"]["items"]["properties"],
            json({{"key", {{"type", "string"}}}, {"value", {{"type", "string"}}}}));
  EXPECT_EQ(fields["metrics"]["type"], "array");
  EXPECT_EQ(fields["metrics"]["items"],
            json({{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}));
  const json& replica = properties["pytorchReplicaSpecs"]["additionalProperties"]["properties"];
  EXPECT_EQ(replica["restartPolicy"]["description"],
            "Always, OnFailure (the default), Never or ExitCode.");
}

}  // namespace
}  // namespace cohort::kube
