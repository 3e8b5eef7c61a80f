// The real prediction server, cohort-serve, started as a process over a registry in a scratch
// $COHORT_HOME (or one --model_path), asked over HTTP as TensorFlow Serving's and AI Platform's
// clients ask; and its `predict` subcommand, gcloud ai-platform predict's form.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "exec/model_registry.h"
#include "serve/image_decoding.h"
#include "serve_test_support.h"
#include "testing/files.h"
#include "testing/host.h"
#include "testing/processes.h"
#include "testing/scratch_directory.h"
#include "testing/wait.h"
#include "train/data/image_dataset.h"
#include "train/saved_model.h"

namespace cohort::serve {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::ImageJson;

const std::string kServe = std::string(COHORT_BINARY_DIR) + "/apps/cohort-serve/cohort-serve";
const std::string kTrain = std::string(COHORT_BINARY_DIR) + "/apps/cohort-train/cohort-train";

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// cohort-serve running as a child, its output in a file; SIGTERMed and reaped at the end.
class ServerProcess {
 public:
  ServerProcess(const fs::path& home, const std::vector<std::string>& flags) {
    log_ = home / ("serve-" + std::to_string(++started_) + ".log");
    pid_ = fork();
    if (pid_ == 0) {
      const int out = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out, 1);
      dup2(out, 2);
      setenv("COHORT_HOME", home.c_str(), 1);
      std::vector<std::string> words = {kServe, "--port", "0", "--threads", "1"};
      words.insert(words.end(), flags.begin(), flags.end());
      std::vector<char*> argv;
      for (std::string& word : words) argv.push_back(word.data());
      argv.push_back(nullptr);
      execv(kServe.c_str(), argv.data());
      _exit(127);
    }
  }
  ~ServerProcess() {
    if (pid_ > 0 && exit_code_ < 0) {
      kill(pid_, SIGTERM);
      cohort::testing::WaitForChildOrSignal(pid_, 30s, SIGKILL);
    }
  }
  // The port it serves on, once it says so; 0 when it exited or said nothing for 60 s.
  int WaitForPort() {
    const std::regex serving("serving on http://127\\.0\\.0\\.1:([0-9]+)");
    int port = 0;
    cohort::testing::WaitUntil(
        [&] {
          std::smatch match;
          const std::string text = Output();
          if (std::regex_search(text, match, serving)) port = std::stoi(match[1]);
          return port > 0 || !cohort::testing::ProcessAlive(pid_);
        },
        60s);
    return port;
  }
  int WaitForExit() {
    exit_code_ = cohort::testing::WaitForChildOrSignal(pid_, 60s, SIGKILL);
    return exit_code_;
  }
  // SIGTERM, as a pod's stop: the server finishes and exits 0.
  int Stop() {
    kill(pid_, SIGTERM);
    return WaitForExit();
  }
  std::string Output() const { return ReadText(log_); }

 private:
  static inline int started_ = 0;
  fs::path log_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new cohort::testing::ScratchDirectory("cohort-serve");
    testing::SaveSmallClassifier((scratch_->path() / "v1").string(), 5);
    testing::SaveSmallClassifier((scratch_->path() / "v2").string(), 9);
  }
  static void TearDownTestSuite() { delete scratch_; }

  // A scratch $COHORT_HOME whose registry has model `fashion` with versions v1 (the default)
  // and v2.
  void SetUp() override {
    home_ = std::make_unique<cohort::testing::ScratchDirectory>("cohort-serve-home");
    exec::ModelRegistry registry(home_->path() / "models");
    exec::ModelRecord model;
    model.name = "fashion";
    ASSERT_TRUE(registry.CreateModel(model).ok());
    for (const char* version : {"v1", "v2"}) {
      StatusOr<exec::VersionRecord> record =
          exec::ReadSavedModelOrigin((scratch_->path() / version).string());
      ASSERT_TRUE(record.ok()) << record.status().ToString();
      record->name = version;
      ASSERT_TRUE(registry.CreateVersion("fashion", *record).ok());
    }
  }

  std::string PredictBody(size_t count) {
    nlohmann::json instances = nlohmann::json::array();
    for (const auto& image : testing::SmallTestImages(count)) instances.push_back(ImageJson(image));
    return nlohmann::json{{"instances", instances}}.dump();
  }

  static cohort::testing::ScratchDirectory* scratch_;
  std::unique_ptr<cohort::testing::ScratchDirectory> home_;
};
cohort::testing::ScratchDirectory* ServerTest::scratch_ = nullptr;

TEST_F(ServerTest, ANewDefaultVersionIsSwappedInUnderLoadWithoutDroppingARequest) {
  ServerProcess server(home_->path(), {"--poll_interval_s", "0.1", "--max_batch", "8"});
  const int port = server.WaitForPort();
  ASSERT_GT(port, 0) << server.Output();
  const std::string body = PredictBody(2);
  std::atomic<bool> stop = false;
  std::atomic<int> answered = 0, failed = 0;
  std::mutex mutex;
  std::string first_failure;
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&] {
      httplib::Client client("127.0.0.1", port);
      client.set_read_timeout(30, 0);
      while (!stop) {
        httplib::Result result =
            client.Post("/v1/models/fashion:predict", body, "application/json");
        if (result && result->status == 200 &&
            nlohmann::json::parse(result->body)["predictions"].size() == 2) {
          ++answered;
          continue;
        }
        ++failed;
        std::lock_guard lock(mutex);
        if (first_failure.empty()) {
          first_failure = result ? std::to_string(result->status) + " " + result->body
                                 : httplib::to_string(result.error());
        }
      }
    });
  }
  httplib::Client client("127.0.0.1", port);
  auto served_version = [&] {
    httplib::Result result = client.Get("/v1/models/fashion/metadata");
    return result && result->status == 200
               ? nlohmann::json::parse(result->body)["model_spec"]["version"].get<std::string>()
               : std::string("none");
  };
  ASSERT_TRUE(cohort::testing::WaitUntil([&] { return answered > 50; }, 60s));
  EXPECT_EQ(served_version(), "v1");
  exec::ModelRegistry registry(home_->path() / "models");
  ASSERT_TRUE(registry.SetDefaultVersion("fashion", "v2").ok());
  EXPECT_TRUE(cohort::testing::WaitUntil([&] { return served_version() == "v2"; }, 30s));
  const int at_swap = answered;
  EXPECT_TRUE(cohort::testing::WaitUntil([&] { return answered > at_swap + 50; }, 60s));
  stop = true;
  for (std::thread& thread : clients) thread.join();
  EXPECT_EQ(failed, 0) << first_failure;

  // The old version is still there when named; /metrics counted both.
  httplib::Result v1 =
      client.Post("/v1/models/fashion/versions/v1:predict", body, "application/json");
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->status, 200) << v1->body;
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find(
                "cohort_serve_requests_total{model=\"fashion\",version=\"v1\",code=\"200\"}"),
            std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find(
                "cohort_serve_requests_total{model=\"fashion\",version=\"v2\",code=\"200\"}"),
            std::string::npos);
  EXPECT_NE(metrics->body.find("cohort_serve_batch_size_bucket{model=\"fashion\",le=\"8\"}"),
            std::string::npos);
  EXPECT_NE(metrics->body.find("cohort_serve_request_duration_seconds_count{model=\"fashion\"}"),
            std::string::npos);
  EXPECT_EQ(server.Stop(), 0) << server.Output();
}

TEST_F(ServerTest, UnknownModelsAre404sMalformedInstances400sAndTheHostMustBeLoopback) {
  ServerProcess server(home_->path(), {});
  const int port = server.WaitForPort();
  ASSERT_GT(port, 0) << server.Output();
  httplib::Client client("127.0.0.1", port);
  httplib::Result unknown =
      client.Post("/v1/models/shoes:predict", PredictBody(1), "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(nlohmann::json::parse(unknown->body)["error"],
            "no model shoes is served (served: fashion)");
  nlohmann::json body = nlohmann::json::parse(PredictBody(3));
  body["instances"][2][4][7] = 3.5;
  httplib::Result bad = client.Post("/v1/models/fashion:predict", body.dump(), "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(nlohmann::json::parse(bad->body)["error"].get<std::string>().rfind(
                "instance 2[4][7]: pixel 3.5", 0),
            0u)
      << bad->body;
  httplib::Result huge =
      client.Post("/v1/models/fashion:predict", std::string(17 << 20, ' '), "application/json");
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->status, 413);
  httplib::Result rebound = client.Get("/v1/models/fashion", {{"Host", "evil.example:80"}});
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 403);
  // AI Platform's online prediction path.
  httplib::Result online = client.Post("/v1/projects/demo/models/fashion/versions/v2:predict",
                                       PredictBody(1), "application/json");
  ASSERT_TRUE(online);
  EXPECT_EQ(online->status, 200) << online->body;
  EXPECT_EQ(nlohmann::json::parse(online->body)["predictions"].size(), 1u);
}

TEST_F(ServerTest, OffLoopbackEveryRequestNeedsTheToken) {
  ServerProcess refused(home_->path(), {"--address", "0.0.0.0"});
  EXPECT_EQ(refused.WaitForExit(), 2);
  EXPECT_NE(refused.Output().find("--address 0.0.0.0 is not a loopback address: give --token"),
            std::string::npos)
      << refused.Output();
  const std::string token = "0123456789abcdef0123";
  cohort::testing::WriteText(home_->path() / "token", token + "\n");
  ServerProcess server(home_->path(), {"--token-file", (home_->path() / "token").string()});
  const int port = server.WaitForPort();
  ASSERT_GT(port, 0) << server.Output();
  httplib::Client client("127.0.0.1", port);
  httplib::Result without = client.Get("/v1/models/fashion");
  ASSERT_TRUE(without);
  EXPECT_EQ(without->status, 401);
  httplib::Result with = client.Get("/v1/models/fashion", {{"Authorization", "Bearer " + token}});
  ASSERT_TRUE(with);
  EXPECT_EQ(with->status, 200) << with->body;
}

TEST_F(ServerTest, PredictPrintsAsGcloudDoesAndSaysWhatIsWrong) {
  const fs::path instances = home_->path() / "instances.json";
  std::string lines;
  for (const auto& image : testing::SmallTestImages(2)) lines += ImageJson(image).dump() + "\n";
  cohort::testing::WriteText(instances, lines);
  const std::string prefix = "COHORT_HOME=" + home_->path().string() + " " + kServe + " predict ";
  cohort::testing::CommandResult table = cohort::testing::RunCommand(
      prefix + "--model fashion --json-instances " + instances.string());
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_EQ(table.output.rfind("CLASS  CLASS_ID  PROBABILITIES\n", 0), 0u) << table.output;
  EXPECT_EQ(std::count(table.output.begin(), table.output.end(), '\n'), 3);
  const fs::path request = home_->path() / "request.json";
  cohort::testing::WriteText(request, PredictBody(2));
  cohort::testing::CommandResult json =
      cohort::testing::RunCommand(prefix + "--model fashion --version v2 --json-request " +
                                  request.string() + " --format json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_EQ(nlohmann::json::parse(json.output)["predictions"].size(), 2u);

  std::string many;
  for (int i = 0; i < 101; ++i) many += "[0]\n";
  cohort::testing::WriteText(instances, many);
  cohort::testing::CommandResult over = cohort::testing::RunCommand(
      prefix + "--model fashion --json-instances " + instances.string());
  EXPECT_EQ(over.exit_code, 2);
  EXPECT_NE(over.output.find("Online prediction can process no more than 100 instances per "
                             "request."),
            std::string::npos)
      << over.output;
  cohort::testing::CommandResult unknown =
      cohort::testing::RunCommand(prefix + "--model shoes --json-request " + request.string());
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_NE(unknown.output.find("model shoes not found"), std::string::npos) << unknown.output;
  cohort::testing::CommandResult neither = cohort::testing::RunCommand(prefix + "--model fashion");
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_NE(neither.output.find("Exactly one of (--json-instances | --json-request) must be "
                                "specified."),
            std::string::npos);
}

// The flagship CNN, trained briefly by cohort-train on Fashion-MNIST: the server's answers for
// the whole test split are the saved model's, image by image, and their accuracy is what
// `cohort-train --evaluate` prints.
TEST(FlagshipModel, ServedPredictionsAreWhatEvaluateCounts) {
  const std::string data_dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(data_dir + "/t10k-images-idx3-ubyte.gz")) {
    COHORT_SKIP_OR_FAIL_IN_CI("no Fashion-MNIST in " + data_dir + " (scripts/setup.sh)");
  }
  const cohort::testing::ScratchDirectory scratch("cohort-flagship");
  const std::string model = (scratch.path() / "model").string();
  cohort::testing::CommandResult trained = cohort::testing::RunCommand(
      kTrain + " --epochs 1 --steps_per_epoch 20 --threads 2 --saved_model_path " + model);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  cohort::testing::CommandResult evaluated =
      cohort::testing::RunCommand(kTrain + " --evaluate --threads 2 --model_path " + model);
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.output;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(evaluated.output, match, std::regex("test accuracy ([0-9.]+)")))
      << evaluated.output;
  const std::string evaluate_accuracy = match[1];

  auto test = train::LoadImageDataset(data_dir, train::Split::kTest);
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  auto saved = train::SavedModel::Load(model);
  ASSERT_TRUE(saved.ok());
  ServerProcess server(scratch.path(), {"--model_path", model, "--model_name", "fashion"});
  const int port = server.WaitForPort();
  ASSERT_GT(port, 0) << server.Output();
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(120, 0);
  const int64_t pixels = 28 * 28;
  int64_t right = 0, differ = 0;
  constexpr int64_t kRequest = 500;
  for (int64_t begin = 0; begin < test->size(); begin += kRequest) {
    const int64_t count = std::min(kRequest, test->size() - begin);
    std::vector<float> images;
    nlohmann::json instances = nlohmann::json::array();
    for (int64_t i = begin; i < begin + count; ++i) {
      // Half as arrays of scaled pixels, half as PNGs: both are the same image.
      std::vector<float> image(pixels);
      for (int64_t p = 0; p < pixels; ++p) image[p] = test->pixels[i * pixels + p] / 255.0f;
      images.insert(images.end(), image.begin(), image.end());
      if (i % 2 == 0) {
        instances.push_back(ImageJson(image, 28));
      } else {
        GrayImage gray{28, 28,
                       std::vector<uint8_t>(test->pixels.begin() + i * pixels,
                                            test->pixels.begin() + (i + 1) * pixels)};
        instances.push_back({{"b64", EncodeBase64(*EncodePng(gray))}});
      }
    }
    httplib::Result result =
        client.Post("/v1/models/fashion:predict", nlohmann::json{{"instances", instances}}.dump(),
                    "application/json");
    ASSERT_TRUE(result);
    ASSERT_EQ(result->status, 200) << result->body.substr(0, 300);
    const nlohmann::json predictions = nlohmann::json::parse(result->body)["predictions"];
    auto expected = (*saved)->PredictClasses(images.data(), count);
    ASSERT_TRUE(expected.ok());
    for (int64_t i = 0; i < count; ++i) {
      const int served = predictions[i]["class_id"].get<int>();
      if (served != (*expected)[i]) ++differ;
      if (served == test->labels[begin + i]) ++right;
    }
  }
  EXPECT_EQ(differ, 0) << "images whose served class is not the saved model's";
  char accuracy[32];
  std::snprintf(accuracy, sizeof(accuracy), "%.4f",
                static_cast<double>(right) / static_cast<double>(test->size()));
  EXPECT_EQ(accuracy, evaluate_accuracy) << "served against --evaluate";
}

}  // namespace
}  // namespace cohort::serve
